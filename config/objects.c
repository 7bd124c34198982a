/* Objects configuration: the rules of an object set, wherever it comes from
 * (a file, a client's edit, the demo): colour spaces and their channels, the
 * rule of names, the colour box, the per-frame limits, checking a whole set
 * in memory, lookups, the camera control lists and escaping a name for a
 * topic or an address.
 *
 * The rest of the objects file lives beside it (objects_int.h lists them):
 * objects_parse.c checks a JSON value into a set, objects_load.c reads texts
 * and files, objects_write.c writes a set back, objects_target.c is the
 * save and reload target and objects_error.c reports failures.
 */
#include "objects_int.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>

#include "color.h"
#include "prefilter.h"

/* ------------------------------------------------------------ shared rules */

static const char *const space_names[TRK_SPACE_COUNT] = { "rgb", "hsv", "ycbcr", "lab", "rg" };
static const char *const channel_names[TRK_SPACE_COUNT][3] = {
    { "R", "G", "B" }, { "H", "S", "V" }, { "Y", "Cb", "Cr" }, { "L", "a", "b" }, { "r", "g", "I" }
};

const char *trk_objects_space_name(enum trk_space space)
{
    if (space == TRK_SPACE_CLASS) return "class";
    return (unsigned)space < TRK_SPACE_COUNT ? space_names[space] : NULL;
}

int trk_objects_space_parse(const char *s)
{
    for (int i = 0; s && i < TRK_SPACE_COUNT; i++)
        if (strcmp(s, space_names[i]) == 0) return i;
    return -1;
}

int trk_objects_check_text(const char *what, size_t max, const char *s, size_t len, char *msg,
                           size_t n)
{
    if (len == 0) {
        snprintf(msg, n, "%s must not be empty", what);
        return -1;
    }
    if (len >= max) {
        snprintf(msg, n, "%s is %zu bytes long (at most %zu)", what, len, max - 1);
        return -1;
    }
    for (size_t i = 0; i < len;) {
        unsigned long cp;
        size_t k = trk_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (k == 0) {
            snprintf(msg, n, "%s is not valid UTF-8", what);
            return -1;
        }
        if (trk_utf8_is_control(cp) || trk_utf8_is_noncharacter(cp)) {
            snprintf(msg, n, "%s must not contain %s (U+%04lX at byte %zu)", what,
                     trk_utf8_is_control(cp) ? "control characters" : "Unicode noncharacters", cp,
                     i + 1);
            return -1;
        }
        i += k;
    }
    return 0;
}

int trk_objects_check_name(const char *what, const char *s, char *msg, size_t msg_len)
{
    return trk_objects_check_text(what, TRK_NAME_MAX, s, strlen(s), msg, msg_len);
}

int trk_objects_check_box(int space, const long long lo[3], const long long hi[3], char *msg,
                          size_t n)
{
    const char *sp = space_names[space];
    for (int k = 0; k < 6; k++) {
        int c = k % 3;
        long long v = k < 3 ? lo[c] : hi[c];
        if (v < 0 || v > (long)trk_chan_max(space, c)) {
            snprintf(msg, n, "%s[%d] = %lld is out of range 0..%ld (%s %s)", k < 3 ? "lo" : "hi", c,
                     v, (long)trk_chan_max(space, c), sp, channel_names[space][c]);
            return k;
        }
    }
    for (int c = 0; c < 3; c++) {
        if (trk_objects_channel_wraps((enum trk_space)space, c))
            continue; /* the hue range wraps through 0 when lo > hi */
        if (lo[c] > hi[c]) {
            snprintf(msg, n,
                     "lo[%d] = %lld is greater than hi[%d] = %lld (only the hsv hue may wrap)", c,
                     lo[c], c, hi[c]);
            return c;
        }
    }
    return -1;
}

const char *trk_objects_channel_name(enum trk_space space, int c)
{
    return (unsigned)space < TRK_SPACE_COUNT && c >= 0 && c < 3 ? channel_names[space][c] : NULL;
}

int trk_objects_channel_max(enum trk_space space, int c)
{
    return trk_chan_max(space, c);
}

bool trk_objects_channel_wraps(enum trk_space space, int c)
{
    return space == TRK_SPACE_HSV && c == 0;
}

/* ------------------------------------------------------------ a whole set */

int trk_objects_frame_items(const struct trk_object_def *d)
{
    return 1 + (int)d->blobs * (d->track ? 2 : 1);
}

int trk_objects_check_limits(const struct trk_object_def *defs, int n, int *at, char *msg,
                             size_t msg_len)
{
    int items = 0, labelled = 0;
    for (int i = 0; i < n; i++) {
        items += trk_objects_frame_items(&defs[i]);
        labelled += defs[i].blobs > 0;
        const char *key = defs[i].blobs ? ".blobs" : "";
        if (at) *at = i;
        if (labelled > TRK_BLOB_OBJECTS_MAX) {
            snprintf(msg, msg_len,
                     "objects[%d]%s: %d objects with blobs (at most %d: each is a labelling pass "
                     "over every frame)",
                     i, key, labelled, TRK_BLOB_OBJECTS_MAX);
            return TRK_EINVAL;
        }
        if (items > TRK_FRAME_ITEMS_MAX) {
            snprintf(msg, msg_len,
                     "objects[%d]%s: each frame would carry up to %d results (1 per object, + "
                     "blobs, + blobs again when tracked; at most %d)",
                     i, key, items, TRK_FRAME_ITEMS_MAX);
            return TRK_EINVAL;
        }
    }
    return 0;
}

int trk_objects_validate(const struct trk_objects *objs, char *msg, size_t msg_len)
{
    char m[200];
    char dummy[1];
    if (!msg || !msg_len) {
        msg = dummy;
        msg_len = sizeof dummy;
    }
    if (!objs) {
        snprintf(msg, msg_len, "invalid arguments");
        return TRK_EINVAL;
    }
    if (objs->n < 0 || objs->n > TRK_MAX_OBJECTS) {
        snprintf(msg, msg_len, "object count %d is out of range 0..%d", objs->n, TRK_MAX_OBJECTS);
        return TRK_EINVAL;
    }
    if (!(objs->prefilter_sigma >= 0 && objs->prefilter_sigma <= TRK_PREFILTER_MAX_SIGMA)) {
        snprintf(msg, msg_len, "prefilter.gaussian %g is out of range 0..%g", objs->prefilter_sigma,
                 TRK_PREFILTER_MAX_SIGMA);
        return TRK_EINVAL;
    }
    if (objs->calib.on) {
        /* The loader's rules, on a copy: the derived fields are recomputed. */
        struct trk_calib k = objs->calib;
        struct trk_calib_fault f;
        const char *nul = memchr(k.unit, 0, sizeof k.unit);
        if (!nul || trk_objects_check_text("calibration.unit", TRK_CALIB_UNIT_MAX, k.unit,
                                           (size_t)(nul - k.unit), m, sizeof m)) {
            snprintf(msg, msg_len, "%s", nul ? m : "calibration.unit is not NUL-terminated");
            return TRK_EINVAL;
        }
        if (k.n_dist != 0 && k.n_dist != 4 && k.n_dist != 5) {
            snprintf(msg, msg_len, "calibration.distortion has %d values (4 or 5)", k.n_dist);
            return TRK_EINVAL;
        }
        if (trk_calib_solve(&k, &f)) {
            snprintf(msg, msg_len, "calibration%s%s", strncmp(f.msg, "points", 6) ? ": " : ".",
                     f.msg);
            return TRK_EINVAL;
        }
    }
    for (int i = 0; i < objs->n; i++) {
        const struct trk_object_def *d = &objs->def[i];
        const char *nul = memchr(d->name, 0, sizeof d->name);
        if (!nul) {
            snprintf(msg, msg_len, "objects[%d].name is not NUL-terminated", i);
            return TRK_EINVAL;
        }
        if (trk_objects_check_text("name", TRK_NAME_MAX, d->name, (size_t)(nul - d->name), m,
                                   sizeof m)) {
            snprintf(msg, msg_len, "objects[%d].%s", i, m);
            return TRK_EINVAL;
        }
        if (d->space == TRK_SPACE_CLASS) {
            if (trk_objects_check_class(objs, i, m, sizeof m)) {
                snprintf(msg, msg_len, "objects[%d].%s", i, m);
                return TRK_EINVAL;
            }
        } else if ((unsigned)d->space >= TRK_SPACE_COUNT) {
            snprintf(msg, msg_len, "objects[%d].space %d is not one of rgb, hsv, ycbcr, lab, rg", i,
                     (int)d->space);
            return TRK_EINVAL;
        }
        long long lo[3], hi[3];
        for (int c = 0; c < 3; c++) {
            lo[c] = d->lo[c];
            hi[c] = d->hi[c];
        }
        if (d->space != TRK_SPACE_CLASS &&
            trk_objects_check_box(d->space, lo, hi, m, sizeof m) >= 0) {
            snprintf(msg, msg_len, "objects[%d].%s", i, m);
            return TRK_EINVAL;
        }
        /* The file format stores min_mass as a JSON integer (int64). */
        if (d->min_mass < 1 || d->min_mass > (uint64_t)INT64_MAX) {
            snprintf(msg, msg_len, "objects[%d].min_mass %llu is out of range 1..%lld", i,
                     (unsigned long long)d->min_mass, (long long)INT64_MAX);
            return TRK_EINVAL;
        }
        /* The loader's ranges; it stores absent keys as their defaults
         * (1 and 8), never as the 0 a backend would also take. */
        if (d->blobs > TRK_MAX_BLOBS) {
            snprintf(msg, msg_len, "objects[%d].blobs %u is out of range 0..%d", i, d->blobs,
                     TRK_MAX_BLOBS);
            return TRK_EINVAL;
        }
        if (d->min_area < 1 || d->min_area > TRK_OBJECTS_MIN_AREA_MAX) {
            snprintf(msg, msg_len, "objects[%d].min_area %u is out of range 1..%d", i,
                     (unsigned)d->min_area, TRK_OBJECTS_MIN_AREA_MAX);
            return TRK_EINVAL;
        }
        if (d->connectivity != 4 && d->connectivity != 8) {
            snprintf(msg, msg_len, "objects[%d].connectivity %u is not 4 or 8", i, d->connectivity);
            return TRK_EINVAL;
        }
        if (d->track && !d->blobs) {
            snprintf(msg, msg_len, "objects[%d].track needs blobs >= 1", i);
            return TRK_EINVAL;
        }
        if (d->coast_frames > TRK_OBJECTS_COAST_MAX) {
            snprintf(msg, msg_len, "objects[%d].coast_frames %u is out of range 0..%d", i,
                     d->coast_frames, TRK_OBJECTS_COAST_MAX);
            return TRK_EINVAL;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(objs->def[j].name, d->name) == 0) {
                snprintf(msg, msg_len, "objects[%d].name \"%s\" is already used by objects[%d]", i,
                         d->name, j);
                return TRK_EINVAL;
            }
        }
    }
    if (trk_objects_check_limits(objs->def, objs->n, NULL, msg, msg_len)) return TRK_EINVAL;
    if (trk_objects_check_light(objs, msg, msg_len)) return TRK_EINVAL;
    return trk_objects_check_patterns(objs, msg, msg_len);
}

int trk_objects_find(const struct trk_objects *objs, const char *name)
{
    if (!objs || !name) return -1;
    if (strlen(name) >= TRK_NAME_MAX) return -1;
    for (int i = 0; i < objs->n && i < TRK_MAX_OBJECTS; i++)
        if (strncmp(objs->def[i].name, name, TRK_NAME_MAX) == 0) return i;
    return -1;
}

bool trk_camera_control_is_auto(const char *name)
{
    static const char *const autos[] = { "auto_exposure", "white_balance_automatic",
                                         "gain_automatic" };
    for (size_t i = 0; i < sizeof autos / sizeof autos[0]; i++)
        if (!strcmp(name, autos[i])) return true;
    return false;
}

int trk_camera_controls_remove(struct trk_camera_control *list, int *n, const char *name)
{
    int kept = 0, gone = 0;
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i].name, name) != 0)
            list[kept++] = list[i];
        else
            gone++;
    *n = kept;
    return gone;
}

int trk_camera_controls_set(struct trk_camera_control *list, int *n, const char *name, long value)
{
    if (!*name || strlen(name) >= sizeof list[0].name) return TRK_EINVAL;
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i].name, name)) {
            list[i].value = value;
            int rest = *n - i - 1;
            trk_camera_controls_remove(list + i + 1, &rest, name);
            *n = i + 1 + rest;
            return 0;
        }
    if (*n >= TRK_CAMERA_MAX_CONTROLS) return TRK_ENOMEM;
    int at = *n;
    if (trk_camera_control_is_auto(name))
        for (at = 0; at < *n && trk_camera_control_is_auto(list[at].name); at++)
            ;
    memmove(list + at + 1, list + at, (size_t)(*n - at) * sizeof list[0]);
    snprintf(list[at].name, sizeof list[at].name, "%s", name);
    list[at].value = value;
    (*n)++;
    return 0;
}

static int is_ctrl(unsigned char c)
{
    return c < 0x20 || c == 0x7F;
}

size_t trk_objects_escape_name(const char *name, const char *reserved, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (!cap) return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool esc = *p == '%' || is_ctrl(*p) || strchr(reserved, *p);
        if (o + (esc ? 3 : 1) >= cap) break;
        if (esc) {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
    return o;
}
