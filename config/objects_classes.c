/* Objects configuration: painted colour classes (objects.h, OBJECTS.md
 * "Classes"): the "class" key of an object, the class file format (decode,
 * encode, read beside the objects file) and the class rules of a set in
 * memory. */
#include "objects_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "color.h"

static const char magic[8] = { 'T', 'R', 'K', 'C', 'L', 'A', 'S', 'S' };

static uint32_t cells_set(const uint8_t bits[TRK_CLASS_BYTES])
{
    uint32_t k = 0;
    for (size_t i = 0; i < TRK_CLASS_BYTES; i++)
        k += (uint32_t)__builtin_popcount(bits[i]);
    return k;
}

int trk_class_file_name_check(const char *s, char *msg, size_t msg_len)
{
    const size_t n = strnlen(s, TRK_CLASS_FILE_MAX);
    const char *why = NULL;
    if (n == 0)
        why = "must not be empty";
    else if (n >= TRK_CLASS_FILE_MAX)
        why = "is too long (at most 63 bytes)";
    else if (s[0] == '.')
        why = "must not start with '.'";
    else if (n < 5 || strcmp(s + n - 4, ".lut"))
        why = "must end in \".lut\"";
    for (size_t i = 0; !why && i < n; i++) {
        const char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            why = "may hold only A-Z a-z 0-9 . _ - (a file beside the objects file)";
    }
    if (!why) return 0;
    snprintf(msg, msg_len, "%s", why);
    return -1;
}

int trk_class_file_decode(const uint8_t *data, size_t len, uint8_t bits[TRK_CLASS_BYTES],
                          size_t *at, char *msg, size_t msg_len)
{
    size_t off = 0;
    const char *fmt = NULL;
    unsigned v = 0, w = 0;
    if (len < TRK_CLASS_FILE_HEADER) {
        off = len, fmt = "ends inside the header (%u of %u bytes)";
        v = (unsigned)len, w = TRK_CLASS_FILE_HEADER;
    } else if (memcmp(data, magic, sizeof magic)) {
        fmt = "not a trackd class table (it starts with \"TRKCLASS\")";
    } else if ((v = (unsigned)data[8] | (unsigned)data[9] << 8) != TRK_CLASS_VERSION) {
        off = 8, fmt = "version %u (this trackd reads version %u)", w = TRK_CLASS_VERSION;
    } else if ((v = data[10]) != 0) {
        off = 10, fmt = "space %u (0, R G B, is the only one)";
    } else if ((v = data[11]) != 6) {
        off = 11, fmt = "%u bits per channel (%u expected)", w = 6;
    } else if (len < TRK_CLASS_FILE_BYTES) {
        off = len, fmt = "ends inside the table (%u of %u bytes)";
        v = (unsigned)len, w = TRK_CLASS_FILE_BYTES;
    } else if (len > TRK_CLASS_FILE_BYTES) {
        off = TRK_CLASS_FILE_BYTES, fmt = "%u bytes after the table";
        v = (unsigned)(len - TRK_CLASS_FILE_BYTES > 0xffffffffu ? 0xffffffffu
                                                                : len - TRK_CLASS_FILE_BYTES);
    } else {
        v = (unsigned)data[12] | (unsigned)data[13] << 8 | (unsigned)data[14] << 16 |
            (unsigned)data[15] << 24;
        w = cells_set(data + TRK_CLASS_FILE_HEADER);
        if (v != w) off = 12, fmt = "the header counts %u cells, the table has %u";
    }
    if (fmt) {
        if (at) *at = off;
        snprintf(msg, msg_len, fmt, v, w);
        return TRK_EINVAL;
    }
    memcpy(bits, data + TRK_CLASS_FILE_HEADER, TRK_CLASS_BYTES);
    return 0;
}

void trk_class_file_encode(const uint8_t bits[TRK_CLASS_BYTES], uint8_t out[TRK_CLASS_FILE_BYTES])
{
    const uint32_t k = cells_set(bits);
    memcpy(out, magic, sizeof magic);
    out[8] = TRK_CLASS_VERSION & 0xff, out[9] = TRK_CLASS_VERSION >> 8;
    out[10] = 0, out[11] = 6;
    for (int i = 0; i < 4; i++)
        out[12 + i] = (uint8_t)(k >> (8 * i));
    memcpy(out + TRK_CLASS_FILE_HEADER, bits, TRK_CLASS_BYTES);
}

int trk_class_file_read(int dirfd, const char *name, uint8_t bits[TRK_CLASS_BYTES], char *msg,
                        size_t msg_len)
{
    char eb[128];
    /* O_NONBLOCK: a FIFO put there does not wait for a writer. */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        const int e = fd < 0 || !S_ISREG(st.st_mode) ? (fd < 0 ? errno : EINVAL) : errno;
        if (fd >= 0) close(fd);
        snprintf(msg, msg_len, "%s: cannot open: %s", name,
                 e == EINVAL ? "not a regular file" : trk_config_errno_text(e, eb, sizeof eb));
        return -e;
    }
    /* One byte past the format's size tells a longer file. */
    static _Thread_local uint8_t buf[TRK_CLASS_FILE_BYTES + 1];
    size_t n = 0;
    while (n < sizeof buf) {
        const ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            const int e = errno;
            close(fd);
            snprintf(msg, msg_len, "%s: cannot read: %s", name,
                     trk_config_errno_text(e, eb, sizeof eb));
            return -e;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    size_t at = 0;
    char m[160];
    if (trk_class_file_decode(buf, n, bits, &at, m, sizeof m)) {
        snprintf(msg, msg_len, "%s: offset %zu: %s", name, at, m);
        return TRK_EINVAL;
    }
    return 0;
}

int trk_objects_parse_class_key(struct trk_vctx *c, const json_t *o, const char *here,
                                struct trk_object_def *def, char file[TRK_CLASS_FILE_MAX])
{
    char p[128], m[160];
    const json_t *v = json_object_get(o, "class");
    if (!v) return 1;
    const char *sep = here[0] ? "." : "";
    static const char *const box[] = { "lo", "hi" };
    for (int i = 0; i < 2; i++)
        if (json_object_get(o, box[i])) {
            trk_cfg_push_key(c, box[i]);
            int rc = trk_cfg_fail(c, 1, "%s%s%s: a class object has no box (no \"lo\" or \"hi\")",
                                  here, sep, box[i]);
            trk_cfg_pop(c);
            return rc;
        }
    const json_t *sp = json_object_get(o, "space");
    if (sp) {
        trk_cfg_push_key(c, "space");
        int rc = trk_cfg_want_string(c, sp, "a string", p, sizeof p);
        if (!rc && strcmp(json_string_value(sp), "class"))
            rc = trk_cfg_fail_quoted(c, sp, "must be \"class\" (or absent) with \"class\"", p,
                                     sizeof p);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    trk_cfg_push_key(c, "class");
    int rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
    if (!rc && (strlen(json_string_value(v)) != json_string_length(v) ||
                trk_class_file_name_check(json_string_value(v), m, sizeof m)))
        rc = trk_cfg_fail_quoted(c, v, m, p, sizeof p);
    trk_cfg_pop(c);
    if (rc) return rc;
    snprintf(file, TRK_CLASS_FILE_MAX, "%s", json_string_value(v));
    def->space = TRK_SPACE_CLASS;
    return 0;
}

int trk_objects_add_class(struct trk_vctx *c, struct trk_objects *out, int i, const char *file,
                          const json_t *o)
{
    char m[256];
    int rc = 0;
    trk_cfg_push_key(c, "class");
    for (int j = 0; !rc && j < i; j++)
        if (out->def[j].space == TRK_SPACE_CLASS &&
            !strcmp(out->classes[out->def[j].cls_slot].file, file))
            rc = trk_cfg_fail(c, 0,
                              "objects[%d].class \"%s\" is already objects[%d]'s (each class "
                              "object paints its own table)",
                              i, file, j);
    if (!rc && out->n_classes == TRK_MAX_CLASSES) {
        rc =
            trk_cfg_fail(c, 0, "objects[%d].class: more than %d class objects", i, TRK_MAX_CLASSES);
        c->err->kind = TRK_CONFIG_TOO_MANY;
    }
    struct trk_objects_class *k = &out->classes[out->n_classes];
    if (!rc) {
        memset(k, 0, sizeof *k);
        snprintf(k->file, sizeof k->file, "%s", file);
    }
    if (!rc && c->cls_dir && trk_class_file_read(c->cls_dirfd, file, k->bits, m, sizeof m))
        rc = trk_cfg_fail(c, 0, "objects[%d].class: %s", i, m);
    trk_cfg_pop(c);
    if (rc) return rc;
    out->def[i].cls_slot = (uint8_t)out->n_classes++;
    out->def[i].cls = k->bits;
    if (!json_object_get(o, "color")) trk_object_display_rgb(&out->def[i], out->color[i]);
    return 0;
}

void trk_objects_bind_classes(struct trk_objects *o)
{
    for (int i = 0; i < o->n; i++) {
        struct trk_object_def *d = &o->def[i];
        d->cls = d->space == TRK_SPACE_CLASS && d->cls_slot < o->n_classes
                     ? o->classes[d->cls_slot].bits
                     : NULL;
    }
}

void trk_objects_display_rgb(const struct trk_objects *o, int i, uint8_t rgb[3])
{
    struct trk_object_def d = o->def[i];
    d.cls = d.space == TRK_SPACE_CLASS && d.cls_slot < o->n_classes ? o->classes[d.cls_slot].bits
                                                                    : NULL;
    trk_object_display_rgb(&d, rgb);
}

int trk_objects_check_class(const struct trk_objects *objs, int i, char *msg, size_t msg_len)
{
    const struct trk_object_def *d = &objs->def[i];
    char m[160];
    if (objs->n_classes < 0 || objs->n_classes > TRK_MAX_CLASSES ||
        d->cls_slot >= objs->n_classes) {
        snprintf(msg, msg_len, "class slot %u is out of range (%d classes)", d->cls_slot,
                 objs->n_classes);
        return -1;
    }
    const char *f = objs->classes[d->cls_slot].file;
    if (!memchr(f, 0, TRK_CLASS_FILE_MAX) || trk_class_file_name_check(f, m, sizeof m)) {
        snprintf(msg, msg_len, "class file name %s",
                 memchr(f, 0, TRK_CLASS_FILE_MAX) ? m : "is not NUL-terminated");
        return -1;
    }
    for (int j = 0; j < i; j++)
        if (objs->def[j].space == TRK_SPACE_CLASS && objs->def[j].cls_slot == d->cls_slot) {
            snprintf(msg, msg_len, "class \"%s\" is already objects[%d]'s", f, j);
            return -1;
        }
    return 0;
}

int trk_objects_class_slot(struct trk_objects *o, int k, const char *file, char *why,
                           size_t why_len)
{
    char m[160];
    if (trk_class_file_name_check(file, m, sizeof m)) {
        snprintf(why, why_len, "class \"%.64s\" %s", file, m);
        return TRK_EINVAL;
    }
    int slot = -1;
    for (int s = 0; s < o->n_classes; s++)
        if (!strcmp(o->classes[s].file, file)) slot = s;
    for (int j = 0; slot >= 0 && j < o->n; j++)
        if (j != k && o->def[j].space == TRK_SPACE_CLASS && o->def[j].cls_slot == slot) {
            snprintf(why, why_len,
                     "class \"%s\" is already %s's (each class object paints its "
                     "own table)",
                     file, o->def[j].name);
            return TRK_EINVAL;
        }
    if (slot >= 0) return slot;
    /* Slots no other object uses are dropped first (the one object k held
     * before this edit among them). */
    struct trk_object_def old = k < o->n ? o->def[k] : (struct trk_object_def){ 0 };
    if (k < o->n) o->def[k].space = TRK_SPACE_RGB;
    trk_objects_compact_classes(o);
    if (k < o->n) o->def[k] = old;
    if (k < o->n && old.space == TRK_SPACE_CLASS) o->def[k].cls_slot = 0;
    if (o->n_classes == TRK_MAX_CLASSES) {
        snprintf(why, why_len, "already %d class objects (the most)", TRK_MAX_CLASSES);
        return TRK_EINVAL;
    }
    struct trk_objects_class *c = &o->classes[o->n_classes];
    memset(c, 0, sizeof *c);
    snprintf(c->file, sizeof c->file, "%s", file);
    return o->n_classes++;
}

void trk_objects_compact_classes(struct trk_objects *o)
{
    int map[TRK_MAX_CLASSES], n = 0;
    for (int s = 0; s < o->n_classes && s < TRK_MAX_CLASSES; s++) {
        bool used = false;
        for (int i = 0; i < o->n && !used; i++)
            used = o->def[i].space == TRK_SPACE_CLASS && o->def[i].cls_slot == s;
        map[s] = used ? n : -1;
        if (!used) continue;
        if (n != s) o->classes[n] = o->classes[s];
        n++;
    }
    for (int i = 0; i < o->n; i++)
        if (o->def[i].space == TRK_SPACE_CLASS && o->def[i].cls_slot < o->n_classes)
            o->def[i].cls_slot = (uint8_t)map[o->def[i].cls_slot];
    for (int s = n; s < o->n_classes; s++)
        memset(&o->classes[s], 0, sizeof o->classes[s]);
    o->n_classes = n;
    trk_objects_bind_classes(o);
}
