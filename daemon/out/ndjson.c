#include "ndjson.h"

#include <errno.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_TAG "output" /* the tag the log has always had */
#include "cli.h"
#include "exit.h"
#include "log.h"
#include "ops/metrics.h"
#include "outputs.h"
#include "trk_error.h"

/* Bytes buffered before a write; a longer line is written on its own. */
#define OUT_BUF 65536

struct trk_ndjson {
    struct trk_ndjson_cfg cfg;
    char *name;
    char *buf;
    size_t len, cap;
    uint64_t buf_lines; /* complete lines in buf */
    struct trk_ndjson_stats st;
    bool failing;     /* the last write failed (log once per failure run) */
    bool cut_pending; /* a cut line is in the file, not yet ended */
};

int trk_ndjson_create(const struct trk_ndjson_cfg *cfg, struct trk_ndjson **out)
{
    *out = NULL;
    if (!cfg || cfg->fd < 0) return TRK_EINVAL;
    struct trk_ndjson *o = calloc(1, sizeof(*o));
    if (!o || !(o->name = strdup(cfg->name ? cfg->name : "the results file")) ||
        !(o->buf = malloc(OUT_BUF))) {
        if (o) free(o->name);
        free(o);
        return TRK_ENOMEM;
    }
    o->cfg = *cfg;
    o->cfg.name = o->name;
    o->cap = OUT_BUF;
    *out = o;
    return 0;
}

/* Writes buf[0..len); returns how many bytes went out and sets *err to the
 * -errno that stopped it (0 when all did). */
static size_t write_all(int fd, const char *buf, size_t len, int *err)
{
    size_t off = 0;
    *err = 0;
    while (off < len) {
        ssize_t n = write(fd, buf + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* A non-blocking fd (some supervisors' pipes): wait as a
             * blocking one would, rather than lose lines. */
            struct pollfd pfd = { .fd = fd, .events = POLLOUT };
            if (poll(&pfd, 1, -1) >= 0 || errno == EINTR) continue;
        }
        if (n <= 0) {
            *err = n < 0 ? -errno : -EIO;
            break;
        }
        off += (size_t)n;
    }
    return off;
}

/* A failed write left `partial` bytes of a line at the end of the file: cut
 * them off again when the fd is a regular file, else remember to end the
 * line with a newline before the next one. */
static void repair_cut(struct trk_ndjson *o, size_t partial)
{
    int fd = o->cfg.fd;
    struct stat sb;
    off_t end = lseek(fd, 0, SEEK_CUR);
    o->st.cut++;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && end >= (off_t)partial &&
        ftruncate(fd, end - (off_t)partial) == 0 &&
        lseek(fd, end - (off_t)partial, SEEK_SET) >= 0) {
        o->st.repaired++;
        log_warn("a failed write cut a result line in %s after %zu bytes; truncated %s back to "
                 "its last complete line",
                 o->name, partial, o->name);
        return;
    }
    o->cut_pending = true;
    log_warn("a failed write cut a result line in %s after %zu bytes; it cannot be truncated "
             "(not a regular file): the cut line will be ended with a newline",
             o->name, partial);
}

int trk_ndjson_flush(struct trk_ndjson *o)
{
    if (!o || (o->len == 0 && !o->cut_pending)) return 0;
    int err = 0;
    if (o->cut_pending) {
        /* The cut line ends here; the lines after it stay whole. */
        if (write_all(o->cfg.fd, "\n", 1, &err) == 1) {
            o->cut_pending = false;
            log_warn("ended the cut result line in %s with a newline", o->name);
        }
    }
    size_t done = err ? 0 : write_all(o->cfg.fd, o->buf, o->len, &err);
    if (!err) {
        o->st.written += o->buf_lines;
        if (o->failing) {
            o->failing = false;
            log_info("writing %s works again (%llu result lines lost so far)", o->name,
                     (unsigned long long)o->st.lost);
        }
    } else {
        uint64_t whole = 0;
        size_t last_end = 0; /* just past the last newline written */
        for (size_t i = 0; i < done; i++)
            if (o->buf[i] == '\n') whole++, last_end = i + 1;
        o->st.written += whole;
        o->st.lost += o->buf_lines - whole;
        if (!o->st.first_err) o->st.first_err = err;
        if (!o->failing) {
            o->failing = true;
            log_error_err(err,
                          "writing %s failed; result lines are being lost (counted, "
                          "trackd will exit with status 74)",
                          o->name);
        }
        if (done > last_end) repair_cut(o, done - last_end);
    }
    o->len = 0;
    o->buf_lines = 0;
    return err;
}

void trk_ndjson_line(struct trk_ndjson *o, const char *data, size_t len)
{
    o->st.lines++;
    if (o->len + len + 1 > o->cap) {
        trk_ndjson_flush(o);
        if (len + 1 > o->cap) {
            size_t cap = len + 1;
            char *n = realloc(o->buf, cap);
            if (!n) {
                o->st.lost++;
                if (!o->st.first_err) o->st.first_err = -ENOMEM;
                log_error("no memory for a %zu-byte result line; it is lost", len);
                return;
            }
            o->buf = n, o->cap = cap;
        }
    }
    memcpy(o->buf + o->len, data, len);
    o->buf[o->len + len] = '\n';
    o->len += len + 1;
    o->buf_lines++;
    if (o->cfg.flush_each || o->len >= OUT_BUF) trk_ndjson_flush(o);
}

void trk_ndjson_get_stats(const struct trk_ndjson *o, struct trk_ndjson_stats *st)
{
    *st = o->st; /* buffered lines are neither written nor lost yet */
}

void trk_ndjson_destroy(struct trk_ndjson **po)
{
    if (!po || !*po) return;
    struct trk_ndjson *o = *po;
    trk_ndjson_flush(o);
    free(o->buf);
    free(o->name);
    free(o);
    *po = NULL;
}

/* ------------------------------------------------- the outputs door */

struct ndjson_out {
    struct trk_ndjson *nd;
    FILE *file;
    struct trk_metrics *metrics;
};

static void nd_frame(void *ctx, const struct trk_frame_result *r, const char *json, size_t len)
{
    (void)r;
    struct ndjson_out *n = ctx;
    trk_ndjson_line(n->nd, json, len);
    if (n->metrics) trk_metrics_set_lines_lost(n->metrics, n->nd->st.lost);
}

/* The account at the end: true when results were lost. */
static bool nd_report(const struct trk_ndjson *o)
{
    const struct trk_ndjson_stats *st = &o->st;
    if (!st->lost && !st->cut) return false;
    log_error_err(st->first_err, "%llu of %llu result lines were lost writing %s",
                  (unsigned long long)st->lost, (unsigned long long)st->lines, o->name);
    if (st->repaired)
        log_error("%llu cut result line(s) were truncated away: %s holds whole lines only",
                  (unsigned long long)st->repaired, o->name);
    if (st->cut > st->repaired)
        log_error("%llu cut result line(s) were ended with a newline: those lines in %s are not "
                  "valid JSON",
                  (unsigned long long)(st->cut - st->repaired), o->name);
    return true;
}

static void nd_flush(void *ctx)
{
    trk_ndjson_flush(((struct ndjson_out *)ctx)->nd);
}

static int nd_close(void *ctx)
{
    struct ndjson_out *n = ctx;
    trk_ndjson_flush(n->nd);
    int err = nd_report(n->nd) ? -EIO : 0;
    if (n->file != stdout && fclose(n->file) != 0) {
        log_error_err(-errno, "closing %s failed: results may be lost", n->nd->name);
        err = -EIO;
    }
    trk_ndjson_destroy(&n->nd);
    free(n);
    return err;
}

static const struct trk_output_ops ndjson_ops = {
    .name = "ndjson", .json = true, .frame = nd_frame, .flush = nd_flush, .close = nd_close
};

int trk_ndjson_add(struct trk_outputs *o, FILE *file, const char *name, bool flush_each,
                   struct trk_metrics *metrics)
{
    struct ndjson_out *n = calloc(1, sizeof(*n));
    struct trk_ndjson_cfg oc = { .fd = fileno(file), .name = name, .flush_each = flush_each };
    int err = n ? 0 : TRK_ENOMEM;
    if (!err && fflush(file) != 0) err = -errno;
    if (!err) err = trk_ndjson_create(&oc, &n->nd);
    if (err) {
        if (file != stdout) fclose(file);
        free(n);
        return err;
    }
    n->file = file;
    n->metrics = metrics;
    return trk_outputs_add(o, &ndjson_ops, n);
}

int trk_ndjson_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    const char *path = env->s->output;
    if (!path) return 0;
    const bool std = !strcmp(path, "-");
    FILE *f = std ? stdout : fopen(path, "w");
    if (!f) {
        log_error_err(-errno, "cannot write %s", path);
        return TRK_EX_NOINPUT;
    }
    if (trk_ndjson_add(o, f, std ? "stdout" : path, std, env->metrics)) {
        log_error("writing %s could not start: no results were written", path);
        return TRK_EX_IOERR;
    }
    return 0;
}
