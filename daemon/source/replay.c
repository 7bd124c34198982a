#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_TAG "replay"
#include "control/control.h"
#include "log.h"
#include "objects.h"
#include "out/outputs.h"
#include "out/ffv1.h"
#include "out/record.h"
#include "state.h"
#include "tracker.h"
#include "v4l2.h"
#include "replay_int.h"

/* copy: how far an input frame number may be past the one before it (a
 * frame the recorder could not keep); more is a damaged index. */
#define MAX_INPUT_GAP 1000

int trk_replay_fail(char *why, size_t len, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return code;
}

static int fmt_parse(const char *s)
{
    for (int f = 0; f < TRK_FMT_COUNT; f++)
        if (!strcmp(s, trk_pixfmt_name(f))) return f;
    return -1;
}

/* Each complete line of DIR/name, with its number and byte offset, to fn;
 * a last line without its newline (a recording cut by a failure) is left
 * out with a warning. 0, the first non-zero fn result, or an error. */
static int each_line(struct trk_replay *r, const char *name, char *why, size_t why_len,
                     int (*fn)(struct trk_replay *r, json_t *v, const char *where, char *why,
                               size_t why_len))
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    FILE *f = fopen(path, "re");
    if (!f)
        return trk_replay_fail(why, why_len, TRK_REPLAY_EDAMAGED, "%s: cannot open: %s", path,
                               strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long no = 0, off = 0;
    int rc = 0;
    while (!rc && (n = getline(&line, &cap, f)) > 0) {
        no++;
        char where[4300];
        snprintf(where, sizeof(where), "%s:%ld (byte %ld)", path, no, off);
        if (line[n - 1] != '\n') {
            log_warn("%s: the last line is cut (the recording stopped there): ignored", where);
            break;
        }
        json_error_t je;
        json_t *v = json_loadb(line, (size_t)n, 0, &je);
        if (!v || !json_is_object(v))
            rc = trk_replay_fail(why, why_len, TRK_REPLAY_EDAMAGED, "%s: not a JSON object: %s",
                                 where, v ? "another value" : je.text);
        else
            rc = fn(r, v, where, why, why_len);
        json_decref(v);
        off += n;
    }
    free(line);
    fclose(f);
    return rc;
}

/* ffv1: the number of the bundle's file name (added when new); -1 out of
 * memory. */
static int file_index(struct trk_replay *r, const char *name)
{
    for (int i = 0; i < r->n_files; i++)
        if (!strcmp(r->files[i].name, name)) return i;
    struct ffv1_file *nf = realloc(r->files, (size_t)(r->n_files + 1) * sizeof(*nf));
    if (!nf) return -1;
    r->files = nf;
    nf[r->n_files] = (struct ffv1_file){ 0 };
    snprintf(nf[r->n_files].name, sizeof(nf[0].name), "%s", name);
    return r->n_files++;
}

static int add_entry(struct trk_replay *r, json_t *v, const char *where, char *why, size_t len)
{
    json_t *seq = json_object_get(v, "seq"), *pts = json_object_get(v, "pts");
    json_t *off = json_object_get(v, "offset"), *size = json_object_get(v, "size");
    json_t *w = json_object_get(v, "width"), *h = json_object_get(v, "height");
    json_t *pkt = json_object_get(v, "packet");
    const char *copy = r->copy ? json_string_value(json_object_get(v, "copy")) : NULL;
    const bool by_ref = copy && !strcmp(copy, "input");
    if (by_ref) { /* the input holds it: its number there, no offset */
        off = json_integer(0);
        json_object_set_new(v, "offset", off);
        pkt = json_object_get(v, "frame");
    }
    const char *fs = json_string_value(json_object_get(v, "format"));
    const char *file = json_string_value(json_object_get(v, "file"));
    const char *ms = json_string_value(json_object_get(v, "matrix"));
    int fmt = fs ? fmt_parse(fs) : -1;
    if (!json_is_integer(seq) || !json_is_number(pts) || !json_is_integer(off) ||
        !json_is_integer(size) || !json_is_integer(w) || !json_is_integer(h) || fmt < 0 ||
        json_integer_value(off) < 0 || json_integer_value(w) <= 0 || json_integer_value(h) <= 0 ||
        json_integer_value(w) > 16384 || json_integer_value(h) > 16384)
        return trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            "%s: an index line needs seq, pts, format, width, height, offset, size", where);
    int fi = -1;
    if (copy && !by_ref) pkt = json_object_get(v, "packet_size");
    if (copy &&
        (strcmp(copy, by_ref ? "input" : "mjpeg") || !json_is_integer(pkt) ||
         json_integer_value(pkt) < 0 || (!by_ref && (!file || strcmp(file, "frames.mjpeg")))))
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED,
                               "%s: a copied frame's index line needs copy \"mjpeg\" with file "
                               "\"frames.mjpeg\" and packet_size, or copy \"input\" with frame",
                               where);
    if (r->ffv1) {
        if (!file || !json_is_integer(pkt) || json_integer_value(pkt) < 0 || strchr(file, '/') ||
            strlen(file) >= sizeof(r->files[0].name))
            return trk_replay_fail(
                why, len, TRK_REPLAY_EDAMAGED,
                "%s: an ffv1 bundle's index line needs file (a name in the folder) and "
                "packet",
                where);
        fi = file_index(r, file);
        if (fi < 0) return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory");
    }
    struct entry e = { .seq = (uint64_t)json_integer_value(seq),
                       .pts = json_number_value(pts),
                       .fmt = fmt,
                       .width = (int)json_integer_value(w),
                       .height = (int)json_integer_value(h),
                       .matrix = ms && !strcmp(ms, "bt709") ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601,
                       .full_range = json_is_true(json_object_get(v, "full_range")),
                       .offset = (uint64_t)json_integer_value(off),
                       .size = (uint64_t)json_integer_value(size),
                       .file = fi,
                       .packet = fi >= 0 || copy ? (uint64_t)json_integer_value(pkt) : 0,
                       .copy = !copy    ? COPY_NONE
                               : by_ref ? COPY_INPUT
                                        : COPY_MJPEG };
    struct trk_plane_layout L;
    trk_image_plane_layout(e.fmt, e.width, e.height, &L);
    uint64_t need = 0;
    for (int p = 0; p < L.planes; p++)
        need += L.row_bytes[p] * (uint64_t)L.rows[p];
    if (need != e.size)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED,
                               "%s: frame %llu says %llu bytes, but %s %dx%d is %llu", where,
                               (unsigned long long)e.seq, (unsigned long long)e.size, fs, e.width,
                               e.height, (unsigned long long)need);
    if (r->n && e.seq <= r->idx[r->n - 1].seq)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED,
                               "%s: frame %llu comes after frame %llu", where,
                               (unsigned long long)e.seq, (unsigned long long)r->idx[r->n - 1].seq);
    if ((r->n & (r->n - 1)) == 0) { /* grow at powers of two */
        struct entry *ni = realloc(r->idx, (r->n ? 2 * r->n : 64) * sizeof(*ni));
        if (!ni) return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory reading the index");
        r->idx = ni;
    }
    r->idx[r->n++] = e;
    return 0;
}

static int add_version(struct trk_replay *r, json_t *v, const char *where, char *why, size_t len)
{
    json_t *first = json_object_get(v, "first_seq");
    const char *file = json_string_value(json_object_get(v, "file"));
    if (!json_is_integer(first) || !file || strstr(file, ".."))
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: needs first_seq and file",
                               where);
    struct version *nv = realloc(r->ver, (size_t)(r->n_ver + 1) * sizeof(*nv));
    if (!nv) return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory");
    r->ver = nv;
    struct version *ver = &r->ver[r->n_ver];
    ver->first_seq = (uint64_t)json_integer_value(first);
    if (!(ver->set = malloc(sizeof(*ver->set))))
        return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory");
    r->n_ver++;
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", r->dir, file);
    struct trk_config_error cerr;
    if (trk_objects_load_file(path, ver->set, &cerr)) {
        char msg[600];
        trk_config_error_format(&cerr, msg, sizeof(msg));
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: %s", where, msg);
    }
    return 0;
}

/* The manifest: format and version, the source's size and rate. */
static int read_manifest(struct trk_replay *r, char *why, size_t len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/manifest.json", r->dir);
    struct stat sb;
    if (stat(r->dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || stat(path, &sb) != 0)
        return trk_replay_fail(why, len, TRK_REPLAY_ENOBUNDLE, "%s: no bundle there (%s)", r->dir,
                               stat(r->dir, &sb) != 0 ? strerror(errno)
                               : S_ISDIR(sb.st_mode)  ? "no manifest.json"
                                                      : "not a folder");
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    if (!m)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s:%d:%d (byte %d): %s", path,
                               je.line, je.column, je.position, je.text);
    const char *format = json_string_value(json_object_get(m, "format"));
    json_t *ver = json_object_get(m, "version");
    json_t *src = json_object_get(m, "source");
    const char *storage =
        json_string_value(json_object_get(json_object_get(m, "frames"), "storage"));
    int rc = 0;
    if (!format || strcmp(format, TRK_BUNDLE_FORMAT) || !json_is_integer(ver))
        rc = trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: not a %s manifest", path,
                             TRK_BUNDLE_FORMAT);
    else if (json_integer_value(ver) < TRK_BUNDLE_VERSION ||
             json_integer_value(ver) > TRK_BUNDLE_VERSION_COPY)
        rc = trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED,
                             "%s: bundle version %lld; this trackd reads versions %d to %d", path,
                             (long long)json_integer_value(ver), TRK_BUNDLE_VERSION,
                             TRK_BUNDLE_VERSION_COPY);
    else if (!storage ||
             (strcmp(storage, "raw") && strcmp(storage, "ffv1") && strcmp(storage, "copy")))
        rc = trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            "%s: frames.storage \"%s\": this trackd reads \"raw\", \"ffv1\" and \"copy\"", path,
            storage ? storage : "(none)");
    else {
        r->ffv1 = !strcmp(storage, "ffv1");
        r->copy = !strcmp(storage, "copy");
        const char *input = json_string_value(json_object_get(src, "input"));
        snprintf(r->input, sizeof(r->input), "%s", input ? input : "");
        r->input_loop = json_is_true(json_object_get(src, "input_loop"));
        r->input_want = json_incref(src);
        r->width = (int)json_integer_value(json_object_get(src, "width"));
        r->height = (int)json_integer_value(json_object_get(src, "height"));
        r->fps = json_number_value(json_object_get(src, "fps"));
        /* No "end": never closed (killed, or the disk was too full for the
         * manifest's rewrite); its results may end early as well. So may a
         * run stopped by a signal: the frames it had captured but not yet
         * processed are in the index without results (end.results <
         * end.frames). */
        json_t *end = json_object_get(m, "end");
        const json_int_t end_frames = json_integer_value(json_object_get(end, "frames"));
        const json_int_t end_results = json_integer_value(json_object_get(end, "results"));
        r->stopped_early =
            !end || json_is_string(json_object_get(end, "stopped")) || end_results < end_frames;
        r->mid_run = json_object_get(m, "rewind") != NULL;
        const char *kind = json_string_value(json_object_get(src, "kind"));
        r->live = kind && !strcmp(kind, "camera");
        const char *mode = json_string_value(json_object_get(m, "track_mode"));
        r->track_mode = mode ? trk_track_mode_parse(mode) : -1;
        const char *d = json_string_value(json_object_get(src, "description"));
        snprintf(r->desc, sizeof(r->desc), "%s", d ? d : "?");
    }
    json_decref(m);
    return rc;
}

/* ffv1: every file opens and holds the packets the index names, in
 * order. */
static int check_ffv1(struct trk_replay *r, char *why, size_t len)
{
    char path[4200], msg[600];
    for (int i = 0; i < r->n_files; i++) {
        struct ffv1_file *f = &r->files[i];
        uint64_t n = 0, next = 0;
        struct stat sb = { 0 };
        snprintf(path, sizeof(path), "%s/%s", r->dir, f->name);
        stat(path, &sb);
        if (trk_ffv1_in_open(path, &f->in, msg, sizeof(msg)) ||
            trk_ffv1_in_count(f->in, &n, msg, sizeof(msg)))
            return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: %s", path, msg);
        for (size_t k = 0; k < r->n; k++) {
            const struct entry *e = &r->idx[k];
            if (e->file != i) continue;
            if (e->packet != next || e->packet >= n)
                return trk_replay_fail(
                    why, len, TRK_REPLAY_EDAMAGED,
                    "%s: frame %llu is packet %llu, but %s (%llu packets in %lld bytes; "
                    "index.ndjson line %zu)",
                    path, (unsigned long long)e->seq, (unsigned long long)e->packet,
                    e->packet != next ? "the packets before it are not all named"
                                      : "the file ends before it",
                    (unsigned long long)n, (long long)sb.st_size, k + 1);
            next++;
            if (e->size > r->scratch_cap) r->scratch_cap = e->size;
        }
    }
    if (!(r->scratch = malloc(r->scratch_cap ? r->scratch_cap : 1)))
        return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory");
    return 0;
}

/* DIR/name opened into *fd, and every index entry stored there (copy
 * kind: frames.raw's COPY_NONE, frames.mjpeg's COPY_MJPEG) within its
 * length. */
static int check_stored(struct trk_replay *r, const char *name, int kind, int *fd, char *why,
                        size_t len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", r->dir, name);
    struct stat sb;
    if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(*fd, &sb) != 0)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: cannot open: %s", path,
                               strerror(errno));
    const uint64_t end = (uint64_t)sb.st_size;
    for (size_t i = 0; i < r->n; i++) {
        const struct entry *e = &r->idx[i];
        const uint64_t bytes = kind == COPY_MJPEG ? e->packet : e->size;
        if ((int)e->copy == kind && (bytes > end || e->offset > end - bytes))
            return trk_replay_fail(
                why, len, TRK_REPLAY_EDAMAGED,
                "%s: frame %llu is bytes %llu..%llu, but the file ends at byte %lld "
                "(index.ndjson line %zu)",
                path, (unsigned long long)e->seq, (unsigned long long)e->offset,
                (unsigned long long)(e->offset + bytes), (long long)sb.st_size, i + 1);
    }
    return 0;
}

/* Every index line names bytes frames.raw has. */
static int check_raw(struct trk_replay *r, char *why, size_t len)
{
    return check_stored(r, "frames.raw", COPY_NONE, &r->fd, why, len);
}

/* copy: frames.mjpeg holds every JPEG the index names, each starting as
 * a JPEG does; the software decoder the live run used. */
static int check_mjpeg(struct trk_replay *r, char *why, size_t len)
{
    int rc = check_stored(r, "frames.mjpeg", COPY_MJPEG, &r->mjpeg_fd, why, len);
    if (rc) return rc;
    for (size_t i = 0; i < r->n; i++) {
        const struct entry *e = &r->idx[i];
        uint8_t soi[2] = { 0, 0 };
        if (e->copy != COPY_MJPEG) continue;
        if (e->packet < 2 || pread(r->mjpeg_fd, soi, 2, (off_t)e->offset) != 2 || soi[0] != 0xff ||
            soi[1] != 0xd8)
            return trk_replay_fail(
                why, len, TRK_REPLAY_EDAMAGED,
                "%s/frames.mjpeg: frame %llu at byte %llu is no JPEG (it starts %02x %02x, "
                "not ff d8; index.ndjson line %zu)",
                r->dir, (unsigned long long)e->seq, (unsigned long long)e->offset, soi[0], soi[1],
                i + 1);
        if (e->packet > r->scratch_cap) r->scratch_cap = e->packet;
    }
    free(r->scratch);
    if (!(r->scratch = malloc(r->scratch_cap ? r->scratch_cap : 1)) || trk_mjpeg_create(&r->mjpeg))
        return trk_replay_fail(why, len, TRK_ENOMEM, "out of memory (or no MJPEG decoder)");
    return 0;
}

/* copy: the input file the index refers to is the recorded one (size,
 * SHA-256; a difference is named by the first block whose CRC differs),
 * opened with the file source as the live run opened it. */
static int check_input(struct trk_replay *r, char *why, size_t len)
{
    json_t *src = r->input_want, *blocks = json_object_get(src, "input_blocks");
    json_t *size = json_object_get(src, "input_size"), *bs = json_object_get(blocks, "block");
    json_t *crcs = json_object_get(blocks, "crc32");
    const char *sha = json_string_value(json_object_get(src, "input_sha256"));
    if (!r->input[0] || !json_is_integer(size) || !sha || !json_is_integer(bs) ||
        json_integer_value(bs) <= 0 || !json_is_array(crcs))
        return trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            "%s/manifest.json: its frames are the input file's, but source.input, "
            "input_size, input_sha256 or input_blocks is missing",
            r->dir);
    struct trk_record_input have;
    int err = trk_record_hash_input(r->input, (uint64_t)json_integer_value(bs), &have);
    if (err == TRK_ENOMEM) return trk_replay_fail(why, len, err, "out of memory");
    if (err)
        return trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            "%s: cannot read it: %s (the bundle %s stores its frames by reference to it)", r->input,
            err == -EINVAL ? "not a regular file" : trk_strerror(err), r->dir);
    const uint64_t block = have.block, want = (uint64_t)json_integer_value(size);
    /* The first block, complete in both, whose CRC differs; then a size
     * that differs; then the last block or the whole file's hash. */
    const uint64_t common = have.size < want ? have.size : want;
    uint64_t at = UINT64_MAX;
    for (size_t i = 0; i <= common / block && i < have.n_crc && at == UINT64_MAX; i++) {
        const char *c = json_string_value(json_array_get(crcs, i));
        const bool whole = (i + 1) * block <= common || have.size == want;
        if (whole && (!c || strtoul(c, NULL, 16) != have.crc[i])) at = i * block;
    }
    if (at == UINT64_MAX && have.size == want && strcmp(have.sha256, sha)) at = 0;
    free(have.crc);
    if (at != UINT64_MAX)
        return trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            "%s: not the file recorded: bytes %llu..%llu differ from it (their CRC-32 "
            "is not the manifest's input_blocks')",
            r->input, (unsigned long long)at,
            (unsigned long long)(at + block < have.size ? at + block : have.size));
    if (have.size != want)
        return trk_replay_fail(
            why, len, TRK_REPLAY_EDAMAGED,
            have.size < want
                ? "%s: not the file recorded: it ends at byte %llu, the recorded one at "
                  "byte %llu (cut?)"
                : "%s: not the file recorded: it is %llu bytes, the recorded one %llu",
            r->input, (unsigned long long)have.size, (unsigned long long)want);
    /* A file's frames are recorded without a gap (its capture waits for
     * the recorder): frame numbers that jump far ahead are damage, and
     * with --loop reading on to them would never end. */
    uint64_t next = 0; /* the frame after the last one named */
    for (size_t i = 0; i < r->n; i++) {
        const struct entry *e = &r->idx[i];
        if (e->copy != COPY_INPUT) continue;
        if (e->packet < next || e->packet - next > MAX_INPUT_GAP)
            return trk_replay_fail(
                why, len, TRK_REPLAY_EDAMAGED,
                "%s/index.ndjson:%zu: frame %llu of the input where frame %llu was due: "
                "a recording of a file goes forward without gaps",
                r->dir, i + 1, (unsigned long long)e->packet, (unsigned long long)next);
        next = e->packet + 1;
    }
    struct trk_file_cfg fc = { .path = r->input, .loop = r->input_loop, .seekable = true };
    if ((err = trk_source_file_create(&fc, &r->in)) || (err = trk_source_open(&r->in)))
        return trk_replay_fail(why, len, err == TRK_ENOMEM ? err : TRK_REPLAY_EDAMAGED,
                               "%s: cannot open it as the live run did: %s", r->input,
                               trk_strerror(err));
    r->in_open = true;
    return 0;
}

static int check_copy(struct trk_replay *r, char *why, size_t len)
{
    bool mjpeg = false, input = false;
    for (size_t i = 0; i < r->n; i++) {
        mjpeg |= r->idx[i].copy == COPY_MJPEG;
        input |= r->idx[i].copy == COPY_INPUT;
    }
    int rc = mjpeg ? check_mjpeg(r, why, len) : 0;
    return !rc && input ? check_input(r, why, len) : rc;
}

/* The frames are there (raw, ffv1 or copy), and a set for the first. */
static int check_frames(struct trk_replay *r, char *why, size_t len)
{
    int rc = r->ffv1 ? check_ffv1(r, why, len) : check_raw(r, why, len);
    if (!rc && r->copy) rc = check_copy(r, why, len);
    if (rc) return rc;
    if (!r->n)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s/index.ndjson: no frames", r->dir);
    if (!r->n_ver || r->ver[0].first_seq > r->idx[0].seq)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED,
                               "%s/objects.ndjson: no object set for the first frame", r->dir);
    return 0;
}

/* A live camera's bundle: the index keeps only the frames the live tracker
 * processed, those with a recorded result. A camera delivers faster than
 * it is tracked at times (the pool then takes the newest frame and skips
 * older ones), and the last frames captured before a stop may never be
 * processed; replaying those would show the tracker frames it never saw,
 * and in roi mode or with tracked objects change the results after them.
 * results.ndjson is read for its seqs alone (unreadable: nothing left
 * out; --verify then says what it lacks). */
static void drop_unprocessed(struct trk_replay *r)
{
    char path[4200], *line = NULL;
    size_t cap = 0, kept = 0, k = 0;
    ssize_t n;
    snprintf(path, sizeof(path), "%s/results.ndjson", r->dir);
    FILE *f = fopen(path, "re");
    if (!f) return;
    while (k < r->n && (n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n') {
        json_t *v = json_loadb(line, (size_t)n, 0, NULL);
        json_t *seq = json_object_get(v, "seq");
        if (json_is_integer(seq)) {
            const uint64_t s = (uint64_t)json_integer_value(seq);
            while (k < r->n && r->idx[k].seq < s)
                k++; /* no result: skipped live */
            if (k < r->n && r->idx[k].seq == s) r->idx[kept++] = r->idx[k++];
        }
        json_decref(v);
    }
    free(line);
    fclose(f);
    if (kept && kept < r->n)
        log_info("%zu of the camera's %zu recorded frames have no result: the live tracker "
                 "skipped them for newer ones (or stopped first), so the replay leaves them out",
                 r->n - kept, r->n);
    if (kept) r->n = kept;
}

/* A rewind save's state.bin, read whole and checked against the first set
 * (loaded into a tracker of its own): damaged, the byte it fails at. */
static int read_state(struct trk_replay *r, char *why, size_t len)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/state.bin", r->dir);
    FILE *f = fopen(path, "rbe");
    if (!f) {
        if (errno == ENOENT) return 0;
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: cannot open: %s", path,
                               strerror(errno));
    }
    struct stat sb;
    int rc = 0;
    if (fstat(fileno(f), &sb) || sb.st_size < 0)
        rc = trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: cannot read: %s", path,
                             strerror(errno));
    else if (!(r->state = malloc((size_t)sb.st_size + 1)))
        rc = trk_replay_fail(why, len, TRK_ENOMEM, "out of memory");
    else if (fread(r->state, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size)
        rc = trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: cannot read %lld bytes", path,
                             (long long)sb.st_size);
    fclose(f);
    if (rc) return rc;
    r->state_len = (size_t)sb.st_size;
    size_t off = 0;
    const char *what = NULL;
    rc = trk_state_check(r->state, r->state_len, r->ver[0].set, &off, &what);
    if (rc == TRK_ENOMEM) return trk_replay_fail(why, len, rc, "out of memory");
    if (rc)
        return trk_replay_fail(why, len, TRK_REPLAY_EDAMAGED, "%s: at byte %zu of %zu: %s", path,
                               off, r->state_len, what);
    return 0;
}

/* copy: the input file from its first frame (the file source reads
 * forward only, as the live run read it). */
static int input_restart(struct trk_replay *r)
{
    if (r->in_open) trk_source_close(&r->in);
    r->in_next = 0;
    int err = trk_source_open(&r->in);
    r->in_open = !err;
    return err;
}

static int replay_open(void *self, struct trk_source *info)
{
    struct trk_replay *r = self;
    r->info = info;
    if (r->in_open && r->in_next) { /* reopened: the input from its start */
        int err = input_restart(r);
        if (err) return err;
    }
    r->next = 0;
    r->installed = 0;
    for (int i = 0; i < r->n_files; i++) {
        /* From the first frame again (a source reopened). */
        if (r->files[i].next && trk_ffv1_in_rewind(r->files[i].in)) return -EIO;
        r->files[i].next = 0;
    }
    /* The folder's path may be long: the description is cut, never wrong. */
    int n = snprintf(info->desc, sizeof(info->desc), "replay of %zu frames (%.120s) from ", r->n,
                     r->desc);
    if (n > 0 && (size_t)n < sizeof(info->desc))
        memccpy(info->desc + n, r->dir, 0, sizeof(info->desc) - (size_t)n - 1);
    info->desc[sizeof(info->desc) - 1] = 0;
    info->width = r->idx[0].width;
    info->height = r->idx[0].height;
    info->fps = r->fps;
    r->info = info;
    return 0;
}

/* A stored frame that cannot be had after all: said where (into why and
 * the source's error, for the pipeline's status), kept for exit 65
 * (trk_replay_damaged). */
static int damaged(struct trk_replay *r, char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int damaged(struct trk_replay *r, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    if (r->info) snprintf(r->info->error, sizeof(r->info->error), "%s", why);
    r->damaged = true;
    return TRK_SOURCE_EDECODE;
}

/* The decoded frame is the one recorded: its format, size and time. */
static int same_as_recorded(struct trk_replay *r, const struct entry *e, const struct trk_frame *f,
                            const char *where, char *why, size_t why_len)
{
    if (f->img.fmt == e->fmt && f->img.width == e->width && f->img.height == e->height &&
        fabs(f->pts - e->pts) < 2e-6)
        return 0;
    return damaged(r, why, why_len,
                   "%s: frame %llu decodes as %s %dx%d at %.6f s, recorded %s %dx%d at %.6f s",
                   where, (unsigned long long)e->seq, trk_pixfmt_name(f->img.fmt), f->img.width,
                   f->img.height, f->pts, trk_pixfmt_name(e->fmt), e->width, e->height, e->pts);
}

/* copy: a JPEG of frames.mjpeg through the live run's decoder. Any frame
 * at any time: the index has its offset (a seek is a read there). */
static int read_mjpeg(struct trk_replay *r, const struct entry *e, struct trk_frame *f, char *why,
                      size_t why_len)
{
    char where[4300];
    snprintf(where, sizeof(where), "%s/frames.mjpeg at byte %llu", r->dir,
             (unsigned long long)e->offset);
    ssize_t n = pread(r->mjpeg_fd, r->scratch, e->packet, (off_t)e->offset);
    if (n != (ssize_t)e->packet)
        return trk_replay_fail(why, why_len, n < 0 ? -errno : -EIO, "%s: frame %llu: %s", where,
                               (unsigned long long)e->seq,
                               n < 0 ? strerror(errno) : "the file ends (cut since it was opened)");
    if (trk_mjpeg_decode(r->mjpeg, r->scratch, e->packet, f))
        return damaged(r, why, why_len, "%s: frame %llu (%llu bytes) does not decode", where,
                       (unsigned long long)e->seq, (unsigned long long)e->packet);
    f->pts = e->pts;
    return same_as_recorded(r, e, f, where, why, why_len);
}

/* input_restart, or the replay damaged (said why) when the file does not
 * open again. */
static int input_reopen(struct trk_replay *r, char *why, size_t why_len)
{
    int err = input_restart(r);
    if (!err) return 0;
    return damaged(r, why, why_len, "%s: cannot open it again: %s", r->input,
                   err == TRK_SOURCE_EDECODE ? r->in.error : trk_strerror(err));
}

/* copy: frame e->packet of the input file, read on to it. A frame behind
 * the one the file gives next (a seek back, a re-run), or ahead of a key
 * frame the file source has indexed, starts at the last key frame at or
 * before it; the file from its start (opened again) when there is none or
 * the file cannot seek. */
static int read_input(struct trk_replay *r, const struct entry *e, struct trk_frame *f, char *why,
                      size_t why_len)
{
    uint64_t next = r->in_next;
    int sought =
        r->in_open && e->packet != next ? trk_source_file_seek(&r->in, e->packet, &next) : -ENOENT;
    /* A failed seek may have moved the file: read it from the start. */
    r->in_next = !sought || sought == -ENOENT ? next : UINT64_MAX;
    int err = !r->in_open || e->packet < r->in_next ? input_reopen(r, why, why_len) : 0;
    if (err) return err;
    r->in.host_mem = r->info ? r->info->host_mem : NULL;
    for (;;) {
        err = trk_source_read(&r->in, f);
        if (err == TRK_SOURCE_ESEEK) { /* the seek landed elsewhere: from the start */
            if ((err = input_reopen(r, why, why_len))) return err;
            continue;
        }
        if (err == TRK_SOURCE_EOF)
            return damaged(r, why, why_len,
                           "%s: it ends before frame %llu, which the bundle's frame %llu is",
                           r->input, (unsigned long long)e->packet, (unsigned long long)e->seq);
        if (err == TRK_SOURCE_EDECODE)
            return damaged(r, why, why_len, "%s: %s", r->input, r->in.error);
        if (err)
            return trk_replay_fail(why, why_len, err, "%s: frame %llu: %s", r->input,
                                   (unsigned long long)e->packet, trk_strerror(err));
        r->in_next = f->src_index + 1;
        if (f->src_index < e->packet) continue; /* not recorded (--frames, a drop), or a seek */
        char where[4200];
        snprintf(where, sizeof(where), "%s (frame %llu)", r->input, (unsigned long long)e->packet);
        return f->src_index == e->packet ? same_as_recorded(r, e, f, where, why, why_len)
                                         : damaged(r, why, why_len, "%s: not in the file", where);
    }
}

/* Frame k's bytes into f; why says what failed (the bundle changed since
 * it was checked at open: cut, overwritten; a copy bundle's frame that no
 * longer decodes as recorded). */
static int read_frame(struct trk_replay *r, size_t k, struct trk_frame *f, char *why,
                      size_t why_len)
{
    const struct entry *e = &r->idx[k];
    if (e->copy == COPY_MJPEG) return read_mjpeg(r, e, f, why, why_len);
    if (e->copy == COPY_INPUT) return read_input(r, e, f, why, why_len);
    int err = trk_frame_layout(f, e->fmt, e->width, e->height, 64);
    if (err) return trk_replay_fail(why, why_len, err, "out of memory for frame %zu", k);
    f->img.matrix = e->matrix;
    f->img.full_range = e->full_range;
    f->pts = e->pts;
    struct trk_plane_layout L;
    trk_image_plane_layout(e->fmt, e->width, e->height, &L);
    const uint8_t *src = NULL;
    if (e->file >= 0) {
        struct ffv1_file *ff = &r->files[e->file];
        /* A seek: every frame is a key frame, so the packets before it are
         * passed over undecoded (from the start when it lies behind). */
        if (ff->next > e->packet && !trk_ffv1_in_rewind(ff->in)) ff->next = 0;
        if (ff->next < e->packet && !trk_ffv1_in_skip(ff->in, e->packet - ff->next))
            ff->next = e->packet;
        char msg[600] = "not the next packet";
        err = ff->next == e->packet ? trk_ffv1_in_next(ff->in, e->fmt, e->width, e->height,
                                                       r->scratch, msg, sizeof(msg))
                                    : TRK_EINVAL;
        if (err) {
            ff->next = UINT64_MAX; /* the next read starts the file over */
            return trk_replay_fail(why, why_len, err, "%s/%s: frame %llu (packet %llu): %s", r->dir,
                                   ff->name, (unsigned long long)e->seq,
                                   (unsigned long long)e->packet, msg);
        }
        ff->next++;
        src = r->scratch;
    }
    off_t off = (off_t)e->offset;
    for (int p = 0; p < L.planes; p++)
        for (int y = 0; y < L.rows[p]; y++) {
            uint8_t *dst = (uint8_t *)f->img.plane[p] + (size_t)y * f->img.pitch[p];
            if (src) {
                memcpy(dst, src, L.row_bytes[p]);
                src += L.row_bytes[p];
                continue;
            }
            ssize_t n = pread(r->fd, dst, L.row_bytes[p], off);
            if (n != (ssize_t)L.row_bytes[p])
                return trk_replay_fail(why, why_len, n < 0 ? -errno : -EIO,
                                       "%s/frames.raw: frame %llu: %s at byte %lld", r->dir,
                                       (unsigned long long)e->seq,
                                       n < 0 ? strerror(errno)
                                             : "the file ends (cut since it was opened)",
                                       (long long)off);
            off += (off_t)L.row_bytes[p];
        }
    return 0;
}

static int replay_read(void *self, struct trk_frame *f)
{
    struct trk_replay *r = self;
    size_t k = r->next;
    bool unpaced = false;
    if (r->t) {
        int rc = trk_replay_transport_next(r, &k, &unpaced);
        if (rc) return rc;
    } else if (r->next >= r->n) {
        return TRK_SOURCE_EOF;
    }
    if (r->info) r->info->unpaced = unpaced;
    char why[700];
    int err = read_frame(r, k, f, why, sizeof(why));
    if (err && r->t) {
        /* The page's replay stays: the frame is refused, it pauses. */
        trk_replay_transport_failed(r, why);
        return TRK_SOURCE_AGAIN;
    }
    if (err) {
        log_error("--replay: %s", why);
        return err;
    }
    r->next = k + 1;
    return 0;
}

static void replay_close(void *self)
{
    (void)self;
}

static void replay_destroy(void *self)
{
    struct trk_replay *r = self;
    if (r->fd >= 0) close(r->fd);
    if (r->mjpeg_fd >= 0) close(r->mjpeg_fd);
    trk_mjpeg_destroy(&r->mjpeg);
    if (r->in.ops) trk_source_destroy(&r->in);
    json_decref(r->input_want);
    if (r->results) fclose(r->results);
    trk_replay_transport_destroy(&r->t);
    for (int i = 0; i < r->n_files; i++)
        trk_ffv1_in_close(&r->files[i].in);
    free(r->files);
    free(r->scratch);
    for (int i = 0; i < r->n_ver; i++)
        free(r->ver[i].set);
    free(r->ver);
    free(r->idx);
    free(r->state);
    free(r);
}

static const struct trk_source_ops replay_ops = {
    .kind = "replay",
    .open = replay_open,
    .read = replay_read,
    .close = replay_close,
    .destroy = replay_destroy,
};

int trk_replay_open(const char *dir, struct trk_source *src, struct trk_replay **out, char *why,
                    size_t why_len)
{
    *out = NULL;
    struct trk_replay *r = calloc(1, sizeof(*r));
    if (!r) return trk_replay_fail(why, why_len, TRK_ENOMEM, "out of memory");
    r->fd = r->mjpeg_fd = -1;
    snprintf(r->dir, sizeof(r->dir), "%s", dir);
    int rc = read_manifest(r, why, why_len);
    if (!rc) rc = each_line(r, "index.ndjson", why, why_len, add_entry);
    if (!rc && r->live) drop_unprocessed(r);
    if (!rc) rc = each_line(r, "objects.ndjson", why, why_len, add_version);
    if (!rc) rc = check_frames(r, why, why_len);
    if (!rc) rc = read_state(r, why, why_len);
    if (rc) {
        replay_destroy(r);
        return rc;
    }
    memset(src, 0, sizeof(*src));
    src->ops = &replay_ops;
    src->self = r;
    rc = trk_source_open(src);
    *out = r;
    return rc;
}

bool trk_replay_damaged(const struct trk_replay *r)
{
    return r->damaged;
}

int trk_replay_track_mode(const struct trk_replay *r)
{
    return r->track_mode;
}

size_t trk_replay_state(const struct trk_replay *r, const void **data)
{
    *data = r->state;
    return r->state_len;
}

const struct trk_objects *trk_replay_first_set(const struct trk_replay *r)
{
    return r->ver[0].set;
}

void trk_replay_set_control(struct trk_replay *r, struct trk_control *c)
{
    r->control = c;
}

void trk_replay_frame_due(void *ctx, uint64_t seq)
{
    struct trk_replay *r = ctx;
    const size_t at = trk_replay_frame_of(r, seq);
    if (!r->control || at >= r->n) return;
    const uint64_t rec_seq = r->idx[at].seq;
    /* The set in force at that frame: the newest of those due (the others
     * never had a frame); after a seek it may be an earlier one. */
    int k = 1;
    while (k < r->n_ver && r->ver[k].first_seq <= rec_seq)
        k++;
    if (k == r->installed) return;
    /* A client edited the set during an interactive replay: its set stays
     * (the "what if" run), the recorded ones are no longer installed. */
    const uint64_t inst = __atomic_load_n(&r->inst_version, __ATOMIC_ACQUIRE);
    if (r->t && inst && trk_control_version(r->control) != inst) return;
    __atomic_store_n(&r->inst_version, trk_control_install(r->control, r->ver[k - 1].set),
                     __ATOMIC_RELEASE);
    log_info("object set %d of the bundle applies from frame %llu", k, (unsigned long long)rec_seq);
    r->installed = k;
}

/* ------------------------------------------------------------ --verify */

static const char *const timing_fields[] = { TRK_REPLAY_TIMING_FIELDS };

static bool is_timing(const char *key)
{
    for (size_t i = 0; i < sizeof(timing_fields) / sizeof(timing_fields[0]); i++)
        if (!strcmp(key, timing_fields[i])) return true;
    return false;
}

/* The first path where a and b differ, into path, and the two values
 * there into d[0], d[1] (borrowed; NULL = missing); timing fields are
 * skipped at the top level of a frame message. */
bool trk_replay_differ(json_t *a, json_t *b, char *path, size_t len, bool top, json_t **d)
{
    d[0] = a, d[1] = b;
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *va;
        size_t at = strlen(path);
        json_object_foreach(a, key, va)
        {
            if (top && is_timing(key)) continue;
            snprintf(path + at, len - at, "%s%s", at ? "." : "", key);
            if (trk_replay_differ(va, json_object_get(b, key), path, len, false, d)) return true;
        }
        json_t *vb;
        json_object_foreach(b, key, vb)
        {
            if (top && is_timing(key)) continue;
            snprintf(path + at, len - at, "%s%s", at ? "." : "", key);
            if (!json_object_get(a, key)) {
                d[0] = NULL, d[1] = vb;
                return true;
            }
        }
        path[at] = 0;
        return false;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t at = strlen(path);
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(path + at, len - at, " (length %zu vs %zu)", json_array_size(a),
                     json_array_size(b));
            return true;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + at, len - at, "[%zu]", i);
            if (trk_replay_differ(json_array_get(a, i), json_array_get(b, i), path, len, false, d))
                return true;
        }
        path[at] = 0;
        return false;
    }
    return !json_equal(a, b);
}

/* The recorded result of recorded frame seq, or NULL (none: the recording
 * lost it, or the file ends). */
static json_t *recorded(struct trk_replay *r, uint64_t seq)
{
    char *line = NULL;
    size_t cap = 0;
    json_t *v = NULL;
    while (getline(&line, &cap, r->results) > 0) {
        r->results_line++;
        json_decref(v);
        v = json_loads(line, 0, NULL);
        json_t *s = json_object_get(v, "seq");
        if (!json_is_integer(s)) continue;
        if ((uint64_t)json_integer_value(s) >= seq) break;
    }
    free(line);
    json_t *s = json_object_get(v, "seq");
    if (!json_is_integer(s) || (uint64_t)json_integer_value(s) != seq) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static void first_difference(struct trk_replay *r, uint64_t seq, const char *what)
{
    r->differing++;
    if (r->differs) return;
    r->differs = true;
    printf("verify: frame %llu differs: %s\n", (unsigned long long)seq, what);
    fflush(stdout);
}

static void verify_frame(void *ctx, const struct trk_frame_result *res, const char *json,
                         size_t len)
{
    struct trk_replay *r = ctx;
    const size_t at = trk_replay_frame_of(r, res->meta.seq);
    if (at >= r->n) return;
    const uint64_t seq = r->idx[at].seq;
    json_t *now = json ? json_loadb(json, len, 0, NULL) : NULL;
    json_t *then = recorded(r, seq);
    if (then || !r->stopped_early || !feof(r->results)) r->compared++;
    char path[512] = "", what[1400];
    json_t *d[2];
    if (!then && r->stopped_early && feof(r->results)) {
        r->unrecorded++; /* the recording stopped before its result */
    } else if (!then) {
        first_difference(r, seq, "the bundle has no recorded result for it");
    } else if (!now) {
        first_difference(r, seq, "no result now");
    } else if (trk_replay_differ(then, now, path, sizeof(path), true, d)) {
        char *a = d[0] ? json_dumps(d[0], JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10))
                       : NULL;
        char *b = d[1] ? json_dumps(d[1], JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10))
                       : NULL;
        snprintf(what, sizeof(what),
                 "field %s: recorded %.200s, now %.200s (results.ndjson line %ld)", path,
                 a ? a : "(none)", b ? b : "(none)", r->results_line);
        free(a);
        free(b);
        first_difference(r, seq, what);
    }
    json_decref(now);
    json_decref(then);
}

static int verify_close(void *ctx)
{
    struct trk_replay *r = ctx;
    if (r->compared + r->unrecorded < r->n)
        first_difference(r, r->idx[r->compared].seq, "not replayed (the replay ended before it)");
    if (r->unrecorded)
        printf("verify: %llu frames at the end have no recorded result (the recording stopped "
               "early): not compared\n",
               (unsigned long long)r->unrecorded);
    if (r->differs && r->mid_run && !r->state)
        printf("verify: this bundle is a rewind save, which starts mid-run: an object with "
               "\"track\" on had instances (ids, velocities) from before its first frame, "
               "which the replay starts without\n");
    printf("verify: %llu frames compared, %llu differ: %s\n", (unsigned long long)r->compared,
           (unsigned long long)r->differing, r->differs ? "DIFFERENT" : "identical");
    fflush(stdout);
    return 0;
}

static const struct trk_output_ops verify_ops = {
    .name = "verify",
    .json = true,
    .frame = verify_frame,
    .close = verify_close,
};

int trk_replay_verify_add(struct trk_replay *r, struct trk_outputs *o)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.ndjson", r->dir);
    if (!(r->results = fopen(path, "re"))) {
        log_error_err(-errno, "--verify: cannot read %s", path);
        return -ENOENT;
    }
    r->verifying = true;
    return trk_outputs_add(o, &verify_ops, r);
}

bool trk_replay_verified(const struct trk_replay *r)
{
    return r->verifying && !r->differs;
}
