#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_TAG "output"
#include "trk_error.h"
#include "log.h"

/* Bytes buffered before a write; a longer line is written on its own. */
#define OUT_BUF 65536

struct trk_output {
    struct trk_output_cfg cfg;
    char *name;
    char *buf;
    size_t len, cap;
    uint64_t buf_lines; /* complete lines in buf */
    struct trk_output_stats st;
    bool failing;     /* the last write failed (log once per failure run) */
    bool cut_pending; /* a cut line is in the file, not yet ended */
};

int trk_output_create(const struct trk_output_cfg *cfg, struct trk_output **out)
{
    *out = NULL;
    if (!cfg || cfg->fd < 0) return TRK_EINVAL;
    struct trk_output *o = calloc(1, sizeof(*o));
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
static void repair_cut(struct trk_output *o, size_t partial)
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

int trk_output_flush(struct trk_output *o)
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

void trk_output_line(struct trk_output *o, const char *data, size_t len)
{
    o->st.lines++;
    if (o->len + len + 1 > o->cap) {
        trk_output_flush(o);
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
    if (o->cfg.flush_each || o->len >= OUT_BUF) trk_output_flush(o);
}

void trk_output_get_stats(const struct trk_output *o, struct trk_output_stats *st)
{
    *st = o->st; /* buffered lines are neither written nor lost yet */
}

void trk_output_destroy(struct trk_output **po)
{
    if (!po || !*po) return;
    struct trk_output *o = *po;
    trk_output_flush(o);
    free(o->buf);
    free(o->name);
    free(o);
    *po = NULL;
}
