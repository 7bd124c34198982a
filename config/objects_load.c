/* Objects configuration: texts and files read as objects files. Reading
 * (bounded, whatever the file claims), the checks before JSON (size, NUL
 * bytes, a byte order mark) and jansson's syntax errors at their line and
 * byte column; the value is then checked by objects_parse.c. */
#include "objects_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trk_buf.h"

/* jansson reports a column in characters; messages use bytes, so derive the
 * column from its byte position and the start of its line. */
static int byte_column(const char *text, size_t len, const json_error_t *je)
{
    size_t line_start = 0;
    int line = 1;
    for (size_t i = 0; i < len && line < je->line; i++) {
        if (text[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    }
    if (line != je->line || je->position < 0 || (size_t)je->position < line_start)
        return je->column > 0 ? je->column : 1;
    long col = (long)((size_t)je->position - line_start);
    return col > 0 ? (int)col : 1;
}

/* jansson's message without what it quotes from the text when quiet: its
 * "near '...'", and the bytes of "invalid Unicode escape '\\u12'" or "control
 * character 0x01". Its own quotes ("'[' or '{' expected") stay. */
static void syntax_reason(const char *text, bool quiet, char *out, size_t n)
{
    snprintf(out, n, "%s", text);
    if (!quiet) return;
    static const char *const cuts[] = { " near ", " '\\", " 0x" };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char *p = strstr(out, cuts[i]);
        if (p) *p = 0;
    }
    size_t k = strlen(out);
    while (k && out[k - 1] == ' ')
        out[--k] = 0;
}

int trk_objects_load_text(const char *text, size_t len, const char *name_for_errors, bool quiet,
                          int cls_dirfd, struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (trk_config_error_begin(&err, &local, name_for_errors, out && (text || !len)))
        return TRK_EINVAL;
    if (!text) text = "";
    if (len > TRK_OBJECTS_MAX_BYTES) {
        trk_config_error_set(err, 1, 1, "too large: more than %d bytes", TRK_OBJECTS_MAX_BYTES);
        return TRK_EINVAL;
    }
    /* No JSON text holds a raw NUL byte, but jansson 2.14 silently drops one
     * that follows a number ("[5\0]" loads as [5]); reject them all here so
     * the text jansson accepts is exactly what the position index scans. A
     * UTF-16 file also stops here, at its first NUL. */
    const char *nul = memchr(text, 0, len);
    if (nul) {
        int line = 1, col = 1;
        for (const char *p = text; p < nul; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        trk_config_error_set(err, line, col,
                             "syntax error: NUL byte (the text must be UTF-8 JSON)");
        return TRK_EINVAL;
    }
    /* jansson does not accept a byte order mark; some editors write one. */
    size_t bom = (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    json_error_t je;
    json_t *root = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        int col = byte_column(text + bom, len - bom, &je);
        if (je.line <= 1) col += (int)bom;
        char why[sizeof je.text];
        syntax_reason(je.text, quiet, why, sizeof why);
        trk_config_error_set(err, je.line > 0 ? je.line : 1, col, "syntax error: %s", why);
        return TRK_EINVAL;
    }
    int rc = trk_objects_parse_doc(root, text, len, quiet, cls_dirfd, out, err);
    json_decref(root);
    return rc;
}

int trk_objects_load_string(const char *text, size_t len, const char *name_for_errors,
                            struct trk_objects *out, struct trk_config_error *err)
{
    return trk_objects_load_text(text, len, name_for_errors, false, -1, out, err);
}

/* Reads fd to its end into *buf (malloc'd; *n bytes), stopping one byte past
 * TRK_OBJECTS_MAX_BYTES so an oversized file is noticed without trusting
 * st_size (pipes, /proc files have none). 0 or a negative code, err set. */
static int read_fd(int fd, char **buf, size_t *n, struct trk_config_error *err)
{
    struct trk_buf b = { 0 };
    while (b.len <= TRK_OBJECTS_MAX_BYTES && trk_buf_reserve(&b, 4096) == 0) {
        size_t room = b.cap - 1 - b.len; /* the terminator's byte stays free */
        if (b.len + room > TRK_OBJECTS_MAX_BYTES + 1) room = TRK_OBJECTS_MAX_BYTES + 1 - b.len;
        ssize_t r = read(fd, b.data + b.len, room);
        if (r < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            int rc = -errno;
            trk_config_error_set(err, 1, 1, "cannot read file: %s",
                                 trk_config_errno_text(-rc, eb, sizeof eb));
            trk_buf_free(&b);
            return rc;
        }
        if (r == 0) break;
        b.len += (size_t)r;
        b.data[b.len] = '\0';
    }
    if (b.failed) {
        trk_buf_free(&b);
        trk_config_error_set(err, 1, 1, "out of memory");
        return TRK_ENOMEM;
    }
    *buf = b.data;
    *n = b.len;
    return 0;
}

int trk_objects_load_file(const char *path, struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (trk_config_error_begin(&err, &local, path, path && out)) return TRK_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        char eb[128];
        trk_config_error_set(err, 1, 1, "cannot open file: %s",
                             trk_config_errno_text(e, eb, sizeof eb));
        return -e;
    }
    /* Class files lie beside it (opened only to read them: a folder that
     * cannot be opened fails the objects that name one). */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = trk_objects_load_fd(fd, path, false, dfd, out, err);
    if (dfd >= 0) close(dfd);
    return rc;
}

int trk_objects_load_fd(int fd, const char *name_for_errors, bool quiet, int cls_dirfd,
                        struct trk_objects *out, struct trk_config_error *err)
{
    char *buf = NULL;
    size_t n = 0;
    int rc = read_fd(fd, &buf, &n, err);
    close(fd);
    if (rc) return rc;
    rc = trk_objects_load_text(buf, n, name_for_errors, quiet, cls_dirfd, out,
                               err); /* too large: there */
    free(buf);
    return rc;
}
