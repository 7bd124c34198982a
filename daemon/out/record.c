#include "record.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavutil/crc.h>
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
    char *dir, *input_path;    /* copies: the writer and the end's manifest need them */
    struct trk_record_cfg cfg; /* strings point into the caller's: used at add only */
    int frames_fd;
    /* --record-storage copy (writer): frames.mjpeg, made at the first
     * JPEG, and its end. */
    int mjpeg_fd;
    uint64_t mjpeg_off;
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
    /* Writer (hash_input): the input file's size, SHA-256 ("" = none) and
     * block CRCs, read by close after joining it. */
    struct trk_record_input input;

    /* --record-rotate (writer): the folder holding the parts, this part's
     * number and the oldest one kept; the current part's first frame's
     * t_capture (part_t0_set: it has one). */
    char *root;
    int part, oldest;
    double part_t0;
    bool part_t0_set;
    /* The parts before, newest first, each still taking the texts of its
     * frames (the results lag the frames), finished at the first text of a
     * newer part's frame. Per part: its first frame (first_seq); need_base:
     * it has no object set yet (written at its first text: cur_set, the
     * newest set, from first_seq); want_state: it waits for the state
     * before first_seq (its state.bin). */
    struct trk_record *old;
    uint64_t first_seq;
    bool need_base, want_state;
    char *cur_set;
    /* States before frames not yet written, seq order. */
    struct trk_record_text *states;
    /* A finished part: the next part's name, for its manifest's end. */
    char next_part[32];
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
    /* Rotating, the limit is kept at frame boundaries (rotate_due). */
    if (!r->cfg.max_bytes || r->cfg.rotate || r->bytes + n <= r->cfg.max_bytes) return true;
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

/* Writer: frame s's index line; where: the keys saying where its bytes
 * are ("offset" and what follows it). */
static void put_index(struct trk_record *r, const struct trk_record_frame *s, const char *where)
{
    struct trk_plane_layout L;
    size_t size = 0;
    trk_image_plane_layout(s->fmt, s->width, s->height, &L);
    for (int p = 0; p < L.planes; p++)
        size += L.row_bytes[p] * (size_t)L.rows[p];
    char line[512];
    int n = snprintf(line, sizeof(line),
                     "{\"seq\":%llu,\"t_capture\":%.6f,\"pts\":%.6f,\"format\":\"%s\","
                     "\"width\":%d,\"height\":%d,\"matrix\":\"%s\",\"full_range\":%s,"
                     "%s,\"size\":%zu}",
                     (unsigned long long)s->seq, s->t_capture, s->pts, trk_pixfmt_name(s->fmt),
                     s->width, s->height, s->matrix == TRK_MATRIX_BT709 ? "bt709" : "bt601",
                     s->full_range ? "true" : "false", where, size);
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
    snprintf(where, len, "\"offset\":%llu,\"file\":\"%s\",\"packet\":%llu,\"packet_size\":%llu",
             (unsigned long long)off, r->ffv1_name, (unsigned long long)r->ffv1_packets++,
             (unsigned long long)bytes);
    return true;
}

/* Writer: s's bytes appended to fd at *off (name for errors); a failure
 * cuts the partial write off again, so the file ends at the last whole
 * frame, and stops recording. false after stopping. */
static bool append(struct trk_record *r, int fd, uint64_t *off, const char *name,
                   const struct trk_record_frame *s)
{
    if (!room_for(r, s->len + 256)) return false;
    int err = write_all(fd, s->buf, s->len);
    if (err) {
        if (ftruncate(fd, (off_t)*off) == 0) lseek(fd, (off_t)*off, SEEK_SET);
        stop_recording(r, err, "writing %s failed", name);
        return false;
    }
    r->bytes += s->len;
    *off += s->len;
    return true;
}

/* Writer, --record-storage copy: a JPEG into frames.mjpeg (made at the
 * first), where it is into where. false after stopping. */
static bool write_packet(struct trk_record *r, const struct trk_record_frame *s, char *where,
                         size_t len)
{
    if (r->mjpeg_fd < 0) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/frames.mjpeg", r->dir);
        r->mjpeg_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (r->mjpeg_fd < 0) {
            stop_recording(r, -errno, "cannot create %s", "frames.mjpeg");
            return false;
        }
    }
    const uint64_t at = r->mjpeg_off;
    if (!append(r, r->mjpeg_fd, &r->mjpeg_off, "frames.mjpeg", s)) return false;
    snprintf(where, len,
             "\"offset\":%llu,\"file\":\"frames.mjpeg\",\"copy\":\"mjpeg\",\"packet_size\":%zu",
             (unsigned long long)at, s->len);
    return true;
}

static int make_dir(const char *opt, const char *dir);
static struct trk_record *open_bundle(const char *opt, const struct trk_record_cfg *cfg);
static void record_free(struct trk_record *r);
static void write_state(struct trk_record *r, const void *data, size_t len);
static void write_set(struct trk_record *r, uint64_t seq, const char *data, size_t len);
static int write_manifest(struct trk_record *r, bool end);

/* Writer: whether frame s would pass a limit of the current part (its
 * first frame never does). Without rotation that stops recording. */
static bool limit_passed(struct trk_record *r, const struct trk_record_frame *s)
{
    const struct trk_record_cfg *c = &r->cfg;
    if (!r->part_t0_set) {
        r->part_t0 = s->t_capture;
        r->part_t0_set = true;
        return false;
    }
    if (c->max_seconds > 0 && s->t_capture - r->part_t0 >= c->max_seconds) {
        if (c->rotate) return true;
        char what[64];
        snprintf(what, sizeof(what), "%g s", c->max_seconds);
        stop_recording(r, 0, "the duration limit (--record-max-time) of %s is reached", what);
        return false;
    }
    return c->rotate && c->max_bytes && r->bytes + s->len + 256 > c->max_bytes;
}

#define SWAP(a, b)                                                                                 \
    do {                                                                                           \
        __typeof__(a) t_ = (a);                                                                    \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

/* The files and counts of one part, exchanged between a and b. */
static void swap_part(struct trk_record *a, struct trk_record *b)
{
    SWAP(a->dir, b->dir);
    SWAP(a->frames_fd, b->frames_fd);
    SWAP(a->mjpeg_fd, b->mjpeg_fd);
    SWAP(a->mjpeg_off, b->mjpeg_off);
    SWAP(a->ffv1, b->ffv1);
    SWAP(a->ffv1_packets, b->ffv1_packets);
    SWAP(a->ffv1_files, b->ffv1_files);
    SWAP(a->index, b->index);
    SWAP(a->results, b->results);
    SWAP(a->objects, b->objects);
    SWAP(a->bytes, b->bytes);
    SWAP(a->frames_off, b->frames_off);
    SWAP(a->versions, b->versions);
    SWAP(a->started_ms, b->started_ms);
    char name[sizeof(a->ffv1_name)];
    memcpy(name, a->ffv1_name, sizeof(name));
    memcpy(a->ffv1_name, b->ffv1_name, sizeof(name));
    memcpy(b->ffv1_name, name, sizeof(name));
    uint64_t n = atomic_load(&a->frames);
    atomic_store(&a->frames, atomic_load(&b->frames));
    atomic_store(&b->frames, n);
    n = atomic_load(&a->lines);
    atomic_store(&a->lines, atomic_load(&b->lines));
    atomic_store(&b->lines, n);
    a->cfg.dir = a->dir;
    b->cfg.dir = b->dir;
}

/* Removes dir's files and then dir (no deeper folders). 0 or -errno. */
static int remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -errno;
    int err = 0;
    char path[4600];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && !err) err = -errno;
    }
    closedir(d);
    if (!err && rmdir(dir) != 0) err = -errno;
    return err;
}

/* Writer: part k deleted (its objects/ first). */
static void remove_part(const struct trk_record *r, int k)
{
    char dir[4300], objs[4400];
    snprintf(dir, sizeof(dir), "%s/part-%04d", r->root, k);
    snprintf(objs, sizeof(objs), "%s/objects", dir);
    int err = remove_dir(objs);
    if (!err || err == -ENOENT) err = remove_dir(dir);
    if (err)
        log_warn_err(err, "--record-rotate: cannot delete the oldest part %s", dir);
    else
        log_info("--record-rotate: deleted the oldest part %s", dir);
}

/* Writer: o and the parts before it finished, oldest first. */
static void finish_chain(struct trk_record *r, struct trk_record *o)
{
    if (o->old) finish_chain(r, o->old);
    int err = write_manifest(o, true);
    if (err) log_error_err(err, "cannot finish %s/manifest.json", o->dir);
    log_info("recording: %s done (%llu frames); going on in %s", o->dir,
             (unsigned long long)atomic_load(&o->frames), r->dir);
    record_free(o);
}

/* Writer: the parts before p are done (a text of p's frames came, and
 * texts come in frame order): finished, then the parts past
 * --record-rotate deleted, oldest first, never one still open. */
static void finish_older(struct trk_record *r, struct trk_record *p)
{
    if (!p->old) return;
    finish_chain(r, p->old);
    p->old = NULL;
    int open = r->part;
    for (const struct trk_record *o = r->old; o; o = o->old)
        open = o->part;
    while (r->part - r->oldest + 1 > (int)r->cfg.rotate && r->oldest < open)
        remove_part(r, r->oldest++);
}

/* Writer: states before frames older than seq are of no use any more. */
static void drop_states(struct trk_record *r, uint64_t seq)
{
    for (struct trk_record_text *t; (t = r->states) && t->seq < seq;) {
        r->states = t->next;
        free(t);
    }
}

/* Writer: the state before frame seq, the new part's first: its state.bin
 * now if it came, else when it comes (keep_state). */
static void take_state(struct trk_record *r, uint64_t seq)
{
    struct trk_record_text *t = r->states;
    r->want_state = !t || t->seq != seq;
    if (r->want_state) return;
    r->states = t->next;
    write_state(r, t->data, t->len);
    free(t);
}

/* Writer: a state (owned from here) for the part waiting for it, or kept
 * for a frame not yet written. */
static void keep_state(struct trk_record *r, struct trk_record_text *t)
{
    for (struct trk_record *p = r; p; p = p->old) {
        if (!p->want_state || t->seq < p->first_seq) continue;
        p->want_state = false;
        if (t->seq == p->first_seq) {
            write_state(p, t->data, t->len);
            free(t);
            return;
        }
        /* Its state was lost to a full queue: the part replays, but its
         * tracked objects start over. */
        log_warn("%s has no state.bin (the state before its first frame was not kept): its "
                 "replay starts tracking over",
                 p->dir);
    }
    t->next = NULL;
    struct trk_record_text **p = &r->states;
    while (*p)
        p = &(*p)->next;
    *p = t;
}

/* Writer: the current part is closed at frame seq and recording goes on in
 * the next; the closed part takes the texts of the frames before seq
 * (finish_older). A part that cannot be made stops recording. */
static void rotate(struct trk_record *r, uint64_t seq)
{
    char name[32], dir[4300];
    snprintf(name, sizeof(name), "part-%04d", r->part + 1);
    snprintf(dir, sizeof(dir), "%s/%s", r->root, name);
    struct trk_record_cfg c = r->cfg;
    c.dir = dir;
    c.started_wall_ms = 0;
    struct trk_record *n = make_dir("--record", dir) ? NULL : open_bundle("--record", &c);
    if (!n) {
        stop_recording(r, 0, "the next part, %s, cannot be made", dir);
        return;
    }
    /* n keeps the input's identity for its manifest (copy storage, whose
     * block CRCs it would need, does not rotate). */
    n->input = r->input;
    n->input.crc = NULL, n->input.n_crc = 0;
    swap_part(r, n);
    snprintf(n->next_part, sizeof(n->next_part), "%s", name);
    n->part = r->part;
    n->first_seq = r->first_seq;
    n->need_base = r->need_base;
    n->want_state = r->want_state;
    n->old = r->old;
    r->old = n;
    r->part++;
    r->first_seq = seq;
    r->need_base = true;
    take_state(r, seq);
}

/* Writer: a result line or an object set into the part of its frame. */
static void write_text(struct trk_record *r, const struct trk_record_text *t)
{
    struct trk_record *to = r;
    while (to->old && t->seq < to->first_seq)
        to = to->old;
    finish_older(r, to);
    if (to->need_base) {
        /* A part starts with the set in force, unless one starts there. */
        to->need_base = false;
        if (r->cur_set && !(t->objects && t->seq == to->first_seq))
            write_set(to, to->first_seq, r->cur_set, strlen(r->cur_set));
    }
    if (t->objects) {
        if (r->cfg.rotate) {
            free(r->cur_set);
            r->cur_set = strdup(t->data);
        }
        write_set(to, t->seq, t->data, t->len);
    } else if (put_line(to, to->results, "results.ndjson", t->data, t->len)) {
        atomic_fetch_add(&to->lines, 1);
    }
}

/* Writer: frame bytes first, then its index line, so every index line
 * names bytes that are there. A frame past a limit starts the next part
 * (or stops recording). */
static void write_frame(struct trk_record *r, const struct trk_record_frame *s)
{
    drop_states(r, s->seq);
    if (limit_passed(r, s)) {
        rotate(r, s->seq);
        r->part_t0 = s->t_capture;
    }
    if (atomic_load(&r->stopped)) return;
    char where[200];
    if (s->ref) {
        /* The input file holds it: the manifest names the file (its hash
         * was written before this line). */
        snprintf(where, sizeof(where), "\"copy\":\"input\",\"frame\":%llu",
                 (unsigned long long)s->src_index);
        put_index(r, s, where);
        return;
    }
    if (s->packet) {
        if (write_packet(r, s, where, sizeof(where))) put_index(r, s, where);
        return;
    }
    if (r->cfg.ffv1) {
        if (write_ffv1(r, s, where, sizeof(where))) put_index(r, s, where);
        return;
    }
    const uint64_t at = r->frames_off;
    if (!append(r, r->frames_fd, &r->frames_off, "frames.raw", s)) return;
    snprintf(where, sizeof(where), "\"offset\":%llu", (unsigned long long)at);
    put_index(r, s, where);
}

/* Writer: objects/NNNN.json (len bytes of data, the set applying from seq
 * on) and its line in objects.ndjson. */
static void write_set(struct trk_record *r, uint64_t seq, const char *data, size_t len)
{
    char name[64], path[4200];
    snprintf(name, sizeof(name), "objects/%04d.json", r->versions + 1);
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    if (!room_for(r, len)) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = fd < 0 ? -errno : write_all(fd, data, len);
    if (fd >= 0 && close(fd) != 0 && !err) err = -errno;
    if (err) {
        stop_recording(r, err, "writing %s failed", name);
        return;
    }
    r->bytes += len;
    r->versions++;
    char line[160];
    int n = snprintf(line, sizeof(line), "{\"version\":%d,\"first_seq\":%llu,\"file\":\"%s\"}",
                     r->versions, (unsigned long long)seq, name);
    put_line(r, r->objects, "objects.ndjson", line, (size_t)n);
}

/* Writes manifest.json (through a temporary file, so a reader sees the old
 * one or the new one); end: the closing account. 0 or -errno. */
static int write_manifest(struct trk_record *r, bool end)
{
    const struct trk_record_cfg *c = &r->cfg;
    struct trk_buf b = { 0 };
    trk_buf_printf(
        &b, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"trackd\": ", TRK_BUNDLE_FORMAT,
        c->copy   ? TRK_BUNDLE_VERSION_COPY
        : c->ffv1 ? TRK_BUNDLE_VERSION_FFV1
                  : TRK_BUNDLE_VERSION);
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
    const struct trk_record_input *in = &r->input;
    if (in->sha256[0])
        trk_buf_printf(&b, ", \"input_size\": %llu, \"input_sha256\": \"%s\"",
                       (unsigned long long)in->size, in->sha256);
    if (in->sha256[0] && c->input_ref) {
        trk_buf_printf(&b, ", \"input_blocks\": {\"block\": %llu, \"crc32\": [",
                       (unsigned long long)in->block);
        for (size_t i = 0; i < in->n_crc; i++)
            trk_buf_printf(&b, "%s\"%08x\"", i ? "," : "", (unsigned)in->crc[i]);
        trk_buf_printf(&b, "]}, \"input_loop\": %s", c->input_loop ? "true" : "false");
    }
    trk_buf_printf(&b,
                   ", \"width\": %d, \"height\": %d, \"fps\": %.3f},\n"
                   "  \"frames\": {\"file\": \"%s\", \"storage\": \"%s\", "
                   "\"index\": \"index.ndjson\"},\n"
                   "  \"objects\": \"objects.ndjson\",\n  \"results\": \"results.ndjson\"",
                   c->width, c->height, c->fps, c->ffv1 ? "frames-*.mkv" : "frames.raw",
                   c->copy   ? "copy"
                   : c->ffv1 ? "ffv1"
                             : "raw");
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
        if (r->next_part[0])
            trk_buf_printf(&b, "\"rotated\", \"next\": \"%s\"", r->next_part);
        else if (atomic_load(&r->stopped))
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

int trk_record_hash_input(const char *path, uint64_t block, struct trk_record_input *in)
{
    *in = (struct trk_record_input){ 0 };
    const AVCRC *table = av_crc_get_table(AV_CRC_32_IEEE_LE);
    /* O_NONBLOCK: a FIFO in the file's place must not block the open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        /* Not a regular file (a pipe, a device): reading it whole could
         * take its data or never end. */
        int err = fd >= 0 && !S_ISREG(sb.st_mode) ? -EINVAL : -errno;
        if (fd >= 0) close(fd);
        return err;
    }
    if (!block) { /* at most TRK_RECORD_MAX_BLOCKS, each a multiple of the least */
        uint64_t per = ((uint64_t)sb.st_size + TRK_RECORD_MAX_BLOCKS - 1) / TRK_RECORD_MAX_BLOCKS;
        block = (per + TRK_RECORD_BLOCK - 1) / TRK_RECORD_BLOCK * TRK_RECORD_BLOCK;
        if (!block) block = TRK_RECORD_BLOCK;
    }
    in->block = block;
    struct AVSHA *sha = av_sha_alloc();
    uint8_t *buf = malloc(1 << 16), digest[32];
    size_t cap = 0;
    uint64_t in_block = 0;
    uint32_t crc = UINT32_MAX;
    ssize_t n = 0;
    int err = !sha || !buf || av_sha_init(sha, 256) ? TRK_ENOMEM : 0;
    while (!err) {
        /* Never read across a block's end: each block's CRC is its own. */
        size_t want = (size_t)(block - in_block < (1 << 16) ? block - in_block : (1 << 16));
        n = read(fd, buf, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) err = -errno;
        if (n <= 0) break;
        av_sha_update(sha, buf, (size_t)n);
        crc = av_crc(table, crc, buf, (size_t)n);
        in->size += (uint64_t)n;
        in_block += (uint64_t)n;
        if (in_block < block) continue;
        if (in->n_crc == cap) {
            uint32_t *nc = realloc(in->crc, (cap = cap ? 2 * cap : 64) * sizeof(*nc));
            if (!nc)
                err = TRK_ENOMEM;
            else
                in->crc = nc;
        }
        if (!err) in->crc[in->n_crc++] = crc ^ UINT32_MAX;
        crc = UINT32_MAX, in_block = 0;
    }
    if (!err && in_block) { /* the last, shorter block */
        uint32_t *nc = realloc(in->crc, (in->n_crc + 1) * sizeof(*nc));
        if (!nc)
            err = TRK_ENOMEM;
        else
            (in->crc = nc)[in->n_crc++] = crc ^ UINT32_MAX;
    }
    if (!err) {
        av_sha_final(sha, digest);
        for (int i = 0; i < 32; i++)
            snprintf(in->sha256 + 2 * i, 3, "%02x", digest[i]);
    } else {
        free(in->crc);
        in->crc = NULL, in->n_crc = 0, in->sha256[0] = 0;
    }
    close(fd);
    free(buf);
    av_free(sha);
    return err;
}

/* Writer, first thing: the input file's size and SHA-256, for the manifest
 * (which file the frames came from). A file that cannot be read leaves
 * them out (logged); with input_ref its frames cannot be named then, so
 * recording stops. With input_ref the manifest is rewritten at once: no
 * index line names a frame of the file before the manifest identifies it. */
static void hash_input(struct trk_record *r)
{
    int err = trk_record_hash_input(r->cfg.input, 0, &r->input);
    if (err && r->cfg.input_ref)
        stop_recording(r, err, "cannot read %s, which --record-storage copy refers to",
                       r->cfg.input);
    else if (err)
        log_warn_err(err, "cannot hash %s for the manifest; it names the file only", r->cfg.input);
    else if (r->cfg.input_ref && (err = write_manifest(r, false)))
        stop_recording(r, err, "cannot write %s", "manifest.json");
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
            if (!atomic_load(&r->stopped) && t->state)
                keep_state(r, t), t = NULL;
            else if (!atomic_load(&r->stopped))
                write_text(r, t);
            free(t);
            pthread_mutex_lock(&r->lock);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* s's index fields from f and its image; len bytes in s->buf. */
static void describe(struct trk_record_frame *s, const struct trk_frame *f,
                     const struct trk_image *img, size_t len)
{
    *s = (struct trk_record_frame){ .buf = s->buf,
                                    .cap = s->cap,
                                    .len = len,
                                    .seq = f->seq,
                                    .t_capture = f->t_capture,
                                    .pts = f->pts,
                                    .fmt = img->fmt,
                                    .width = img->width,
                                    .height = img->height,
                                    .matrix = img->matrix,
                                    .full_range = img->full_range,
                                    .src_index = f->src_index };
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
    describe(s, f, img, need);
    return 0;
}

/* --record-storage copy: f's compressed bytes into s (or, input_ref,
 * nothing but its number in the file); a frame without them (a raw
 * camera's) packed as trk_record_pack does. 0 or TRK_E*. */
static int pack_copy(const struct trk_record *r, struct trk_record_frame *s, struct trk_frame *f)
{
    if (!r->cfg.input_ref && !f->packet_len) return trk_record_pack(s, f);
    const struct trk_image *img = trk_frame_host(f);
    if (!img) return TRK_EINVAL;
    const size_t len = r->cfg.input_ref ? 0 : f->packet_len;
    if (len > s->cap) {
        uint8_t *nb = realloc(s->buf, len);
        if (!nb) return TRK_ENOMEM;
        s->buf = nb, s->cap = len;
    }
    if (len) memcpy(s->buf, f->packet, len);
    describe(s, f, img, len);
    s->packet = !r->cfg.input_ref;
    s->ref = r->cfg.input_ref;
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
    if (!s || (r->cfg.copy ? pack_copy(r, s, f) : trk_record_pack(s, f))) {
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
static bool push_text(struct trk_record *r, bool objects, bool state, uint64_t seq, const char *s,
                      size_t len)
{
    struct trk_record_text *t = malloc(sizeof(*t) + len + 1);
    if (!t) return false;
    *t = (struct trk_record_text){ .objects = objects, .state = state, .seq = seq, .len = len };
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
        push_text(r, true, false, res->meta.seq, r->pending_set, strlen(r->pending_set));
        free(r->pending_set);
        r->pending_set = NULL;
    }
    if (json && !push_text(r, false, false, res->meta.seq, json, len))
        atomic_fetch_add(&r->lines_dropped, 1);
}

bool trk_record_wants_state(const struct trk_record *r)
{
    return r && r->cfg.rotate;
}

void trk_record_state(struct trk_record *r, uint64_t seq, const void *data, size_t len)
{
    /* A state lost to a full queue costs only a part starting at seq its
     * state.bin (logged by the writer's replay check, not here). */
    if (r && !atomic_load(&r->stopped)) push_text(r, false, true, seq, data, len);
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
    if (r->mjpeg_fd >= 0) close(r->mjpeg_fd);
    free(r->input.crc);
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
    free(r->cur_set);
    drop_states(r, UINT64_MAX);
    free(r->root);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    pthread_cond_destroy(&r->freed);
    free(r->dir);
    free(r->input_path);
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
    finish_older(r, r);
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
    if (!r || !(r->dir = strdup(cfg->dir)) ||
        (cfg->input && !(r->input_path = strdup(cfg->input)))) {
        if (r) free(r->dir);
        free(r);
        log_error("%s: out of memory", opt);
        return NULL;
    }
    r->cfg = *cfg;
    r->frames_fd = r->mjpeg_fd = -1;
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
    r->cfg.input = r->input_path;
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
    /* Rotating, DIR holds the parts, the first DIR/part-0001. */
    struct trk_record_cfg c = *cfg;
    char first[4300];
    if (cfg->rotate) {
        snprintf(first, sizeof(first), "%s/part-0001", cfg->dir);
        c.dir = first;
        if (mkdir(cfg->dir, 0755) != 0 && errno != EEXIST) {
            log_error_err(-errno, "--record: cannot create the folder %s", cfg->dir);
            return not_recording(cfg->dir);
        }
    }
    int made = make_dir("--record", c.dir);
    /* A bundle already there is kept (exit 66); a folder that cannot be
     * written (read-only, full) costs the recording, never the tracking. */
    if (made == -EEXIST) return TRK_EX_NOINPUT;
    if (made) return not_recording(cfg->dir);
    struct trk_record *r = open_bundle("--record", &c);
    if (!r) return not_recording(cfg->dir);
    if (cfg->rotate && !(r->root = strdup(cfg->dir))) {
        record_free(r);
        return not_recording(cfg->dir);
    }
    r->part = r->oldest = 1;
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
            write_set(r, t->seq, t->data, t->len);
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
