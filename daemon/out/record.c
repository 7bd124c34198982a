#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavutil/mem.h>
#include <libavutil/sha.h>

#define LOG_TAG "record"
#include "exit.h"
#include "ffv1.h"
#include "log.h"
#include "objects.h"
#include "outputs.h"
#include "trk_buf.h"

/* Result lines and object sets the writer may be behind by; past it result
 * lines are dropped and counted (frames have their own slots). */
#define TEXT_MAX 4096

struct trk_record {
    char *dir;
    struct trk_record_cfg cfg; /* strings point into the caller's: used at add only */
    int frames_fd;
    /* --record-storage ffv1 (writer): the file being written, its name and
     * the packets in it, and how many files there are. */
    struct trk_ffv1_out *ffv1;
    char ffv1_name[32];
    uint64_t ffv1_packets;
    int ffv1_files;
    FILE *index, *results, *objects;
    pthread_t writer;
    bool have_writer;

    /* Processing thread: the last set seen (its JSON) and one not yet
     * written, tied to the next frame message's seq. */
    char *last_set, *pending_set;

    pthread_mutex_t lock;
    pthread_cond_t cond;  /* to the writer: work, or closing */
    pthread_cond_t freed; /* from the writer: a slot is free (wait_when_full) */
    /* A slot: one frame's copy for the writer. The capture thread fills a
     * free one; the writer owns it from the frame queue until it marks it
     * free again. */
    struct trk_record_frame slots[TRK_RECORD_SLOTS];
    bool busy[TRK_RECORD_SLOTS]; /* filled, waiting for or being written */
    int queue[TRK_RECORD_SLOTS]; /* slot numbers in capture order */
    int q_head, q_len;
    struct trk_record_text *t_head, *t_tail;
    int t_len;
    bool closing;

    /* Writer thread, read by the others without the lock. */
    atomic_bool stopped;
    char stop_reason[512];
    /* Counts: frames recorded / dropped (queue full) / lost after a stop;
     * result lines dropped (queue full). */
    _Atomic uint64_t frames, dropped, after_stop, lines, lines_dropped;
    _Atomic bool drop_logged;
    uint64_t bytes, frames_off; /* writer: bundle bytes, frames.raw's end */
    int versions;               /* writer: object set files written */
    double started_ms;          /* wall clock at the start, for the manifest */
    /* Writer (hash_input): the input file's SHA-256 in hex ("" = none) and
     * size, read by close after joining it. */
    char input_sha[65];
    uint64_t input_size;
};

/* Writer thread: recording ends here for good (the first error or the
 * byte limit); tracking and outputs are not told, only the log. */
static void stop_recording(struct trk_record *r, int err, const char *fmt, const char *what)
{
    if (atomic_load(&r->stopped)) return;
    snprintf(r->stop_reason, sizeof(r->stop_reason), fmt, what);
    if (err) {
        size_t n = strlen(r->stop_reason);
        snprintf(r->stop_reason + n, sizeof(r->stop_reason) - n, ": %s", trk_strerror(err));
    }
    atomic_store(&r->stopped, true);
    log_error("recording to %s stopped: %s; tracking and outputs go on, the bundle holds "
              "%llu frames",
              r->dir, r->stop_reason, (unsigned long long)atomic_load(&r->frames));
}

static int write_all(int fd, const void *p, size_t len)
{
    const uint8_t *b = p;
    while (len) {
        ssize_t n = write(fd, b, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? -errno : -ENOSPC;
        b += n, len -= (size_t)n;
    }
    return 0;
}

/* Writer: whether n more bytes stay within --record-max (else stops). */
static bool room_for(struct trk_record *r, uint64_t n)
{
    if (!r->cfg.max_bytes || r->bytes + n <= r->cfg.max_bytes) return true;
    char what[64];
    snprintf(what, sizeof(what), "%llu bytes", (unsigned long long)r->cfg.max_bytes);
    stop_recording(r, 0, "the size limit (--record-max) of %s is reached", what);
    return false;
}

/* Writer: one line into f (flushed, so the bundle is readable at once and
 * a full disk shows here); false after stopping. */
static bool put_line(struct trk_record *r, FILE *f, const char *name, const char *s, size_t len)
{
    if (!room_for(r, len + 1)) return false;
    if (fwrite(s, 1, len, f) != len || fputc('\n', f) == EOF || fflush(f) != 0) {
        stop_recording(r, -errno, "writing %s failed", name);
        return false;
    }
    r->bytes += len + 1;
    return true;
}

/* Writer: frame s's index line; where: its "offset" value and what
 * follows it. */
static void put_index(struct trk_record *r, const struct trk_record_frame *s, const char *where)
{
    char line[512];
    int n = snprintf(line, sizeof(line),
                     "{\"seq\":%llu,\"t_capture\":%.6f,\"pts\":%.6f,\"format\":\"%s\","
                     "\"width\":%d,\"height\":%d,\"matrix\":\"%s\",\"full_range\":%s,"
                     "\"offset\":%s,\"size\":%zu}",
                     (unsigned long long)s->seq, s->t_capture, s->pts, trk_pixfmt_name(s->fmt),
                     s->width, s->height, s->matrix == TRK_MATRIX_BT709 ? "bt709" : "bt601",
                     s->full_range ? "true" : "false", where, s->len);
    if (put_line(r, r->index, "index.ndjson", line, (size_t)n)) atomic_fetch_add(&r->frames, 1);
}

/* Finishes the FFV1 file being written, if any (its trailer: the cues). */
static void close_ffv1(struct trk_record *r)
{
    if (r->ffv1 && trk_ffv1_out_close(&r->ffv1))
        log_warn("%s/%s: the Matroska trailer could not be written; its frames are there", r->dir,
                 r->ffv1_name);
}

/* Writer, --record-storage ffv1: the frame as the next packet of the
 * current file (a new one for another format or size); where it is into
 * where (the index line's keys after "offset"). false after stopping. */
static bool write_ffv1(struct trk_record *r, const struct trk_record_frame *s, char *where,
                       size_t len)
{
    char why[600], path[4300];
    int err = 0;
    if (!room_for(r, 256)) return false;
    if (!trk_ffv1_out_fits(r->ffv1, s->fmt, s->width, s->height)) {
        if (r->ffv1 && trk_ffv1_out_close(&r->ffv1))
            log_warn("%s/%s: the Matroska trailer could not be written; its frames are there",
                     r->dir, r->ffv1_name);
        snprintf(r->ffv1_name, sizeof(r->ffv1_name), "frames-%04d.mkv", ++r->ffv1_files);
        snprintf(path, sizeof(path), "%s/%s", r->dir, r->ffv1_name);
        r->ffv1_packets = 0;
        err = trk_ffv1_out_open(path, s->fmt, s->width, s->height, r->cfg.fps, &r->ffv1, why,
                                sizeof(why));
    }
    uint64_t off = 0, bytes = 0;
    if (!err) err = trk_ffv1_out_put(r->ffv1, s->buf, &off, &bytes, why, sizeof(why));
    if (err) {
        snprintf(path, sizeof(path), "writing %s failed (%s)", r->ffv1_name, why);
        stop_recording(r, 0, "%s", path);
        return false;
    }
    r->bytes += bytes;
    snprintf(where, len, "%llu,\"file\":\"%s\",\"packet\":%llu,\"packet_size\":%llu",
             (unsigned long long)off, r->ffv1_name, (unsigned long long)r->ffv1_packets++,
             (unsigned long long)bytes);
    return true;
}

/* Writer: frame bytes first, then its index line, so every index line
 * names bytes that are there. */
static void write_frame(struct trk_record *r, const struct trk_record_frame *s)
{
    char where[160];
    if (r->cfg.ffv1) {
        if (write_ffv1(r, s, where, sizeof(where))) put_index(r, s, where);
        return;
    }
    if (!room_for(r, s->len + 256)) return;
    int err = write_all(r->frames_fd, s->buf, s->len);
    if (err) {
        /* Cut the partial frame off again: the file ends at the last whole one. */
        if (ftruncate(r->frames_fd, (off_t)r->frames_off) == 0)
            lseek(r->frames_fd, (off_t)r->frames_off, SEEK_SET);
        stop_recording(r, err, "writing %s failed", "frames.raw");
        return;
    }
    r->bytes += s->len;
    snprintf(where, sizeof(where), "%llu", (unsigned long long)r->frames_off);
    r->frames_off += s->len;
    put_index(r, s, where);
}

/* Writer: objects/NNNN.json and its line in objects.ndjson. */
static void write_objects(struct trk_record *r, const struct trk_record_text *t)
{
    char name[64], path[4200];
    snprintf(name, sizeof(name), "objects/%04d.json", r->versions + 1);
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    if (!room_for(r, t->len)) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = fd < 0 ? -errno : write_all(fd, t->data, t->len);
    if (fd >= 0 && close(fd) != 0 && !err) err = -errno;
    if (err) {
        stop_recording(r, err, "writing %s failed", name);
        return;
    }
    r->bytes += t->len;
    r->versions++;
    char line[160];
    int n = snprintf(line, sizeof(line), "{\"version\":%d,\"first_seq\":%llu,\"file\":\"%s\"}",
                     r->versions, (unsigned long long)t->seq, name);
    put_line(r, r->objects, "objects.ndjson", line, (size_t)n);
}

/* Writes manifest.json (through a temporary file, so a reader sees the old
 * one or the new one); end: the closing account. 0 or -errno. */
static int write_manifest(struct trk_record *r, bool end)
{
    const struct trk_record_cfg *c = &r->cfg;
    struct trk_buf b = { 0 };
    trk_buf_printf(&b, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"trackd\": ",
                   TRK_BUNDLE_FORMAT, c->ffv1 ? TRK_BUNDLE_VERSION_FFV1 : TRK_BUNDLE_VERSION);
    trk_buf_json_str(&b, c->version ? c->version : "", SIZE_MAX);
    trk_buf_puts(&b, ",\n  \"command\": [");
    for (int i = 0; i < c->argc; i++) {
        if (i) trk_buf_puts(&b, ", ");
        trk_buf_json_str(&b, c->argv[i], SIZE_MAX);
    }
    trk_buf_printf(&b,
                   "],\n  \"started_wall_ms\": %.3f,\n  \"source\": {\"kind\": ", r->started_ms);
    trk_buf_json_str(&b, c->source_kind ? c->source_kind : "", SIZE_MAX);
    trk_buf_puts(&b, ", \"description\": ");
    trk_buf_json_str(&b, c->source_desc ? c->source_desc : "", SIZE_MAX);
    trk_buf_puts(&b, ", \"input\": ");
    if (c->input)
        trk_buf_json_str(&b, c->input, SIZE_MAX);
    else
        trk_buf_puts(&b, "null");
    if (r->input_sha[0])
        trk_buf_printf(&b, ", \"input_size\": %llu, \"input_sha256\": \"%s\"",
                       (unsigned long long)r->input_size, r->input_sha);
    trk_buf_printf(&b,
                   ", \"width\": %d, \"height\": %d, \"fps\": %.3f},\n"
                   "  \"frames\": {\"file\": \"%s\", \"storage\": \"%s\", "
                   "\"index\": \"index.ndjson\"},\n"
                   "  \"objects\": \"objects.ndjson\",\n  \"results\": \"results.ndjson\"",
                   c->width, c->height, c->fps, c->ffv1 ? "frames-*.mkv" : "frames.raw",
                   c->ffv1 ? "ffv1" : "raw");
    if (c->track_mode) trk_buf_printf(&b, ",\n  \"track_mode\": \"%s\"", c->track_mode);
    if (c->trigger) {
        trk_buf_puts(&b, ",\n  \"rewind\": {\"trigger\": ");
        trk_buf_json_str(&b, c->trigger, SIZE_MAX);
        trk_buf_printf(&b, ", \"seconds\": %.3f}", c->rewind_seconds);
    }
    if (end) {
        trk_buf_printf(&b,
                       ",\n  \"end\": {\"frames\": %llu, \"dropped\": %llu, \"after_stop\": %llu, "
                       "\"results\": %llu, \"results_dropped\": %llu, \"bytes\": %llu, "
                       "\"stopped\": ",
                       (unsigned long long)r->frames, (unsigned long long)r->dropped,
                       (unsigned long long)r->after_stop, (unsigned long long)r->lines,
                       (unsigned long long)r->lines_dropped, (unsigned long long)r->bytes);
        if (atomic_load(&r->stopped))
            trk_buf_json_str(&b, r->stop_reason, SIZE_MAX);
        else
            trk_buf_puts(&b, "null");
        trk_buf_puts(&b, "}");
    }
    trk_buf_puts(&b, "\n}\n");
    int err = b.failed ? TRK_ENOMEM : 0;
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/.manifest.json.tmp", r->dir);
    snprintf(path, sizeof(path), "%s/manifest.json", r->dir);
    int fd = err ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!err && fd < 0) err = -errno;
    if (!err) err = write_all(fd, b.data, b.len);
    if (fd >= 0 && close(fd) != 0 && !err) err = -errno;
    if (!err && rename(tmp, path) != 0) err = -errno;
    if (err && fd >= 0) unlink(tmp);
    trk_buf_free(&b);
    return err;
}

/* Writer, first thing: the input file's size and SHA-256, for the manifest
 * (which file the frames came from). A file that cannot be read leaves
 * them out (logged). */
static void hash_input(struct trk_record *r)
{
    const char *path = r->cfg.input;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct AVSHA *sha = av_sha_alloc();
    uint8_t buf[1 << 16], digest[32];
    uint64_t size = 0;
    ssize_t n = -1;
    if (fd >= 0 && sha && av_sha_init(sha, 256) == 0) {
        while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
            if (n > 0) av_sha_update(sha, buf, (size_t)n), size += (uint64_t)n;
    }
    if (n == 0) {
        av_sha_final(sha, digest);
        for (int i = 0; i < 32; i++)
            snprintf(r->input_sha + 2 * i, 3, "%02x", digest[i]);
        r->input_size = size;
    } else {
        log_warn_err(fd < 0 || n < 0 ? -errno : TRK_ENOMEM,
                     "cannot hash %s for the manifest; it names the file only", path);
    }
    if (fd >= 0) close(fd);
    av_free(sha);
}

static void *writer_main(void *arg)
{
    struct trk_record *r = arg;
    if (r->cfg.hash_input && r->cfg.input) hash_input(r);
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->q_len && !r->t_head && !r->closing)
            pthread_cond_wait(&r->cond, &r->lock);
        if (!r->q_len && !r->t_head) break; /* closing and drained */
        if (r->q_len) {
            const int k = r->queue[r->q_head];
            pthread_mutex_unlock(&r->lock);
            if (!atomic_load(&r->stopped)) write_frame(r, &r->slots[k]);
            if (atomic_load(&r->stopped)) atomic_fetch_add(&r->after_stop, 1);
            pthread_mutex_lock(&r->lock);
            r->q_head = (r->q_head + 1) % TRK_RECORD_SLOTS;
            r->q_len--;
            r->busy[k] = false;
            pthread_cond_signal(&r->freed);
        }
        struct trk_record_text *t = r->t_head;
        if (t) {
            r->t_head = t->next;
            if (!r->t_head) r->t_tail = NULL;
            r->t_len--;
            pthread_mutex_unlock(&r->lock);
            if (!atomic_load(&r->stopped)) {
                if (t->objects)
                    write_objects(r, t);
                else if (put_line(r, r->results, "results.ndjson", t->data, t->len))
                    atomic_fetch_add(&r->lines, 1);
            }
            free(t);
            pthread_mutex_lock(&r->lock);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int trk_record_pack(struct trk_record_frame *s, struct trk_frame *f)
{
    const struct trk_image *img = trk_frame_host(f);
    struct trk_plane_layout L;
    if (!img || trk_image_plane_layout(img->fmt, img->width, img->height, &L)) return TRK_EINVAL;
    size_t need = 0;
    for (int p = 0; p < L.planes; p++)
        need += L.row_bytes[p] * (size_t)L.rows[p];
    if (need > s->cap) {
        uint8_t *nb = realloc(s->buf, need);
        if (!nb) return TRK_ENOMEM;
        s->buf = nb, s->cap = need;
    }
    /* Tightly packed planes: the bundle holds the pixels, not the pitch. */
    uint8_t *d = s->buf;
    for (int p = 0; p < L.planes; p++)
        for (int y = 0; y < L.rows[p]; y++, d += L.row_bytes[p])
            memcpy(d, img->plane[p] + (size_t)y * img->pitch[p], L.row_bytes[p]);
    *s = (struct trk_record_frame){ .buf = s->buf,
                                    .cap = s->cap,
                                    .len = need,
                                    .seq = f->seq,
                                    .t_capture = f->t_capture,
                                    .pts = f->pts,
                                    .fmt = img->fmt,
                                    .width = img->width,
                                    .height = img->height,
                                    .matrix = img->matrix,
                                    .full_range = img->full_range };
    return 0;
}

void trk_record_frame(struct trk_record *r, struct trk_frame *f)
{
    if (!r) return;
    if (atomic_load(&r->stopped)) {
        atomic_fetch_add(&r->after_stop, 1);
        return;
    }
    if (!trk_frame_host(f)) return;
    pthread_mutex_lock(&r->lock);
    int k = -1;
    for (;;) {
        for (int i = 0; i < TRK_RECORD_SLOTS && k < 0; i++)
            if (!r->busy[i]) k = i;
        if (k >= 0 || !r->cfg.wait_when_full || atomic_load(&r->stopped)) break;
        pthread_cond_wait(&r->freed, &r->lock);
    }
    if (k >= 0) r->busy[k] = true;
    pthread_mutex_unlock(&r->lock);
    struct trk_record_frame *s = k >= 0 ? &r->slots[k] : NULL;
    if (!s || trk_record_pack(s, f)) {
        uint64_t n = atomic_fetch_add(&r->dropped, 1) + 1;
        log_once(r->drop_logged, TRK_LOG_WARN, 0,
                 "recording falls behind: frame %llu not recorded (%llu so far); tracking is "
                 "not slowed",
                 (unsigned long long)f->seq, (unsigned long long)n);
        if (s) {
            pthread_mutex_lock(&r->lock);
            r->busy[k] = false;
            pthread_mutex_unlock(&r->lock);
        }
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->queue[(r->q_head + r->q_len) % TRK_RECORD_SLOTS] = k;
    r->q_len++;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    trk_log_once_reset(r->drop_logged);
}

/* Processing thread: queues a text item; false when the queue is full. */
static bool push_text(struct trk_record *r, bool objects, uint64_t seq, const char *s, size_t len)
{
    struct trk_record_text *t = malloc(sizeof(*t) + len + 1);
    if (!t) return false;
    *t = (struct trk_record_text){ .objects = objects, .seq = seq, .len = len };
    memcpy(t->data, s, len);
    t->data[len] = 0;
    pthread_mutex_lock(&r->lock);
    bool ok = r->t_len < TEXT_MAX || objects;
    if (ok) {
        if (r->t_tail)
            r->t_tail->next = t;
        else
            r->t_head = t;
        r->t_tail = t;
        r->t_len++;
        pthread_cond_signal(&r->cond);
    }
    pthread_mutex_unlock(&r->lock);
    if (!ok) free(t);
    return ok;
}

static void rec_frame(void *ctx, const struct trk_frame_result *res, const char *json, size_t len)
{
    struct trk_record *r = ctx;
    if (atomic_load(&r->stopped)) return;
    if (r->pending_set) {
        /* Object sets are never dropped: replay needs every one. */
        push_text(r, true, res->meta.seq, r->pending_set, strlen(r->pending_set));
        free(r->pending_set);
        r->pending_set = NULL;
    }
    if (json && !push_text(r, false, res->meta.seq, json, len))
        atomic_fetch_add(&r->lines_dropped, 1);
}

void trk_record_set_changed(char **last, char **pending, const struct trk_objects *set)
{
    char *s = trk_objects_to_json(set);
    if (!s) {
        log_error("cannot keep an object set for the bundle (out of memory)");
        return;
    }
    /* The same set again (a grown backend re-applies it): no new version. */
    if (*last && !strcmp(*last, s)) {
        free(s);
        free(*pending);
        *pending = NULL;
        return;
    }
    free(*last);
    *last = s;
    free(*pending);
    *pending = strdup(s);
}

static void rec_objects(void *ctx, const struct trk_objects *set)
{
    struct trk_record *r = ctx;
    trk_record_set_changed(&r->last_set, &r->pending_set, set);
}

static void record_free(struct trk_record *r)
{
    close_ffv1(r);
    if (r->frames_fd >= 0) close(r->frames_fd);
    if (r->index) fclose(r->index);
    if (r->results) fclose(r->results);
    if (r->objects) fclose(r->objects);
    for (int i = 0; i < TRK_RECORD_SLOTS; i++)
        free(r->slots[i].buf);
    for (struct trk_record_text *t = r->t_head, *n; t; t = n) {
        n = t->next;
        free(t);
    }
    free(r->last_set);
    free(r->pending_set);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    pthread_cond_destroy(&r->freed);
    free(r->dir);
    free(r);
}

static int rec_close(void *ctx)
{
    struct trk_record *r = ctx;
    pthread_mutex_lock(&r->lock);
    r->closing = true;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (r->have_writer) pthread_join(r->writer, NULL);
    int err = write_manifest(r, true);
    if (err) log_error_err(err, "cannot finish %s/manifest.json", r->dir);
    log_info("recording %s: %llu frames, %llu result lines, %d object sets, %llu bytes; %llu "
             "frames dropped (queue full), %llu after it stopped",
             r->dir, (unsigned long long)r->frames, (unsigned long long)r->lines, r->versions,
             (unsigned long long)r->bytes, (unsigned long long)r->dropped,
             (unsigned long long)r->after_stop);
    record_free(r);
    return 0; /* a recording that stopped loses no results: the outputs have them */
}

static const struct trk_output_ops record_ops = {
    .name = "record",
    .json = true,
    .measured = true,
    .frame = rec_frame,
    .objects = rec_objects,
    .close = rec_close,
};

/* A file of the bundle for appending lines; NULL after logging. */
static FILE *open_part(const char *opt, const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    if (!f) log_error_err(-errno, "%s: cannot create %s", opt, path);
    return f;
}

/* DIR made or found empty, with its objects/ folder. 0 or -errno (logged). */
static int make_dir(const char *opt, const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        int err = -errno;
        log_error_err(err, "%s: cannot create the folder %s", opt, dir);
        return err;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    if (access(path, F_OK) == 0) {
        log_error("%s: %s already holds a bundle; give a new or empty folder", opt, dir);
        return -EEXIST;
    }
    snprintf(path, sizeof(path), "%s/objects", dir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        int err = -errno;
        log_error_err(err, "%s: cannot create %s", opt, path);
        return err;
    }
    return 0;
}

/* A new recorder for cfg->dir (made by make_dir) with the bundle's files
 * open and the first manifest written; no writer thread yet. NULL after
 * logging. */
static struct trk_record *open_bundle(const char *opt, const struct trk_record_cfg *cfg)
{
    struct trk_record *r = calloc(1, sizeof(*r));
    if (!r || !(r->dir = strdup(cfg->dir))) {
        free(r);
        log_error("%s: out of memory", opt);
        return NULL;
    }
    r->cfg = *cfg;
    r->frames_fd = -1;
    r->started_ms = cfg->started_wall_ms > 0 ? cfg->started_wall_ms : trk_wall_ms();
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    pthread_cond_init(&r->freed, NULL);
    char path[4200];
    snprintf(path, sizeof(path), "%s/frames.raw", cfg->dir);
    /* FFV1's files are made at the first frame: they need its format. */
    if (!cfg->ffv1) r->frames_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = r->frames_fd < 0 && !cfg->ffv1 ? -errno : 0;
    if (err) log_error_err(err, "%s: cannot create %s", opt, path);
    if (!err && (!(r->index = open_part(opt, cfg->dir, "index.ndjson")) ||
                 !(r->results = open_part(opt, cfg->dir, "results.ndjson")) ||
                 !(r->objects = open_part(opt, cfg->dir, "objects.ndjson"))))
        err = -EIO;
    if (!err && (err = write_manifest(r, false)))
        log_error_err(err, "%s: cannot write %s/manifest.json", opt, cfg->dir);
    if (err) {
        record_free(r);
        return NULL;
    }
    /* The strings were for the manifest; the end's rewrite needs them too. */
    r->cfg.dir = r->dir;
    return r;
}

/* The bundle cannot be started (said why): tracking goes on without it. */
static int not_recording(const char *dir)
{
    log_error("--record: nothing is recorded to %s; tracking and outputs go on", dir);
    return 0;
}

int trk_record_add(const struct trk_record_cfg *cfg, struct trk_outputs *o, struct trk_record **out)
{
    *out = NULL;
    if (strlen(cfg->dir) > 4000) {
        log_error("--record: the folder's path is too long");
        return TRK_EX_USAGE;
    }
    int made = make_dir("--record", cfg->dir);
    /* A bundle already there is kept (exit 66); a folder that cannot be
     * written (read-only, full) costs the recording, never the tracking. */
    if (made == -EEXIST) return TRK_EX_NOINPUT;
    if (made) return not_recording(cfg->dir);
    struct trk_record *r = open_bundle("--record", cfg);
    if (!r) return not_recording(cfg->dir);
    if (pthread_create(&r->writer, NULL, writer_main, r) != 0) {
        record_free(r);
        return not_recording(cfg->dir);
    }
    r->have_writer = true;
    if (trk_outputs_add(o, &record_ops, r)) return TRK_EX_SOFTWARE; /* closed it */
    log_info("recording to %s", r->dir);
    *out = r;
    return 0;
}

/* A rewind save's state.bin (written first: the bundle is whole or says
 * why not). */
static void write_state(struct trk_record *r, const void *data, size_t len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/state.bin", r->dir);
    int err = 0, fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) err = -errno;
    if (!err) err = write_all(fd, data, len);
    if (fd >= 0 && close(fd) && !err) err = -errno;
    if (!err) {
        r->bytes += len;
        return;
    }
    stop_recording(r, err, "cannot write %s", path);
}

int trk_record_write(const struct trk_record_cfg *cfg, struct trk_record_frame *const *frames,
                     size_t n, const struct trk_record_text *texts, char *why, size_t why_len)
{
    if (strlen(cfg->dir) > 4000) {
        snprintf(why, why_len, "the folder's path is too long");
        return TRK_EINVAL;
    }
    int err = make_dir("--rewind", cfg->dir);
    if (err) {
        snprintf(why, why_len, "%s: %s", cfg->dir,
                 err == -EEXIST ? "already holds a bundle" : trk_strerror(err));
        return err;
    }
    struct trk_record *r = open_bundle("--rewind", cfg);
    if (!r) {
        snprintf(why, why_len, "%s: cannot create the bundle's files", cfg->dir);
        return -EIO;
    }
    if (cfg->state) write_state(r, cfg->state, cfg->state_len);
    for (size_t i = 0; i < n && !atomic_load(&r->stopped); i++)
        write_frame(r, frames[i]);
    for (const struct trk_record_text *t = texts; t && !atomic_load(&r->stopped); t = t->next)
        if (t->objects)
            write_objects(r, t);
        else if (put_line(r, r->results, "results.ndjson", t->data, t->len))
            atomic_fetch_add(&r->lines, 1);
    err = write_manifest(r, true);
    if (atomic_load(&r->stopped)) {
        snprintf(why, why_len, "%s", r->stop_reason);
        err = -EIO;
    } else if (err) {
        snprintf(why, why_len, "cannot finish %s/manifest.json: %s", r->dir, trk_strerror(err));
    }
    record_free(r);
    return err;
}
