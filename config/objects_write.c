/* Objects configuration: a set written back. As the text of an objects file
 * (trk_objects_to_json: one object per line, keys in OBJECTS.md's order,
 * defaults left out so a file round-trips; written into base/'s trk_buf with
 * its JSON escaping) and as jansson values for the wire messages. */
#include "objects_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "trk_buf.h"
#include "trk_color.h"

/* v with the fewest digits that read back as the same double. */
static void sb_double(struct trk_buf *b, double v)
{
    char num[32];
    snprintf(num, sizeof num, "%.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
    trk_buf_printf(b, "%s", num);
}

/* The calibration section as the file has it: the values given, one point
 * pair per line (the derived fields are recomputed on load). */
static void sb_calibration(struct trk_buf *b, const struct trk_calib *k)
{
    trk_buf_printf(b, ",\n  \"calibration\": {\"unit\": ");
    trk_buf_json_str(b, k->unit, sizeof k->unit);
    trk_buf_printf(b, ", \"points\": [\n");
    for (int i = 0; i < k->n; i++) {
        trk_buf_printf(b, "    [");
        for (int j = 0; j < 4; j++) {
            if (j) trk_buf_printf(b, ", ");
            sb_double(b, k->pt[i][j]);
        }
        trk_buf_printf(b, "]%s\n", i + 1 < k->n ? "," : "");
    }
    trk_buf_printf(b, "  ]");
    if (k->lens) {
        const double m[4] = { k->fx, k->fy, k->cx, k->cy };
        static const char *const names[4] = { "fx", "fy", "cx", "cy" };
        trk_buf_printf(b, ",\n  \"camera_matrix\": {");
        for (int j = 0; j < 4; j++) {
            trk_buf_printf(b, "%s\"%s\": ", j ? ", " : "", names[j]);
            sb_double(b, m[j]);
        }
        trk_buf_printf(b, "}");
    }
    if (k->n_dist) {
        trk_buf_printf(b, ",\n  \"distortion\": [");
        for (int j = 0; j < k->n_dist; j++) {
            if (j) trk_buf_printf(b, ", ");
            sb_double(b, k->dist[j]);
        }
        trk_buf_printf(b, "]");
    }
    trk_buf_printf(b, "}");
}

/* An object index as its name. */
static void sb_colour(struct trk_buf *b, const struct trk_objects *objs, uint16_t k)
{
    trk_buf_json_str(b, objs->def[k].name, sizeof objs->def[k].name);
}

/* A list of colours: ["a", "b", ...]. */
static void sb_colours(struct trk_buf *b, const struct trk_objects *objs, const uint16_t *k,
                       unsigned n)
{
    trk_buf_printf(b, "[");
    for (unsigned i = 0; i < n; i++) {
        if (i) trk_buf_printf(b, ", ");
        sb_colour(b, objs, k[i]);
    }
    trk_buf_printf(b, "]");
}

/* One pattern on one line, optional keys only when set (the loader's
 * defaults), so a file round-trips. */
static void sb_pattern(struct trk_buf *b, const struct trk_objects *objs,
                       const struct trk_pattern *pt)
{
    static const char *const teams[] = { "", "blue", "yellow" };
    trk_buf_printf(b, "    {\"name\": ");
    trk_buf_json_str(b, pt->name, sizeof pt->name);
    trk_buf_printf(b, ", \"kind\": \"%s\"", pt->kind == TRK_PATTERN_DOTS ? "dots" : "code");
    if (pt->team) trk_buf_printf(b, ", \"team\": \"%s\"", teams[pt->team]);
    if (pt->height != 0) {
        trk_buf_printf(b, ", \"height\": ");
        sb_double(b, pt->height);
    }
    if (pt->kind == TRK_PATTERN_CODE) {
        trk_buf_printf(b, ", \"colors\": ");
        sb_colours(b, objs, pt->code, pt->n_code);
        trk_buf_printf(b, ", \"id\": %d", (int)pt->code_id);
        if (pt->gap != 0) {
            trk_buf_printf(b, ", \"gap\": ");
            sb_double(b, pt->gap);
        }
        trk_buf_printf(b, "}");
        return;
    }
    trk_buf_printf(b, ", \"center\": ");
    sb_colour(b, objs, pt->centre);
    trk_buf_printf(b, pt->px_per_mm > 0 ? ", \"px_per_mm\": " : ", \"center_mm\": ");
    sb_double(b, pt->px_per_mm > 0 ? pt->px_per_mm : pt->centre_mm);
    if (pt->tol != 0) {
        trk_buf_printf(b, ", \"tolerance\": ");
        sb_double(b, pt->tol);
    }
    trk_buf_printf(b, ",\n     \"dots\": [");
    for (unsigned d = 0; d < pt->n_dots; d++) {
        trk_buf_printf(b, "%s[", d ? ", " : "");
        sb_double(b, pt->dot_x[d]);
        trk_buf_printf(b, ", ");
        sb_double(b, pt->dot_y[d]);
        trk_buf_printf(b, "]");
    }
    trk_buf_printf(b, "],\n     \"ids\": [");
    for (unsigned i = 0; i < pt->n_ids; i++) {
        trk_buf_printf(b, "%s", i ? ",\n             " : "");
        sb_colours(b, objs, pt->id_colors[i], pt->n_dots);
    }
    trk_buf_printf(b, "]}");
}

char *trk_objects_to_json(const struct trk_objects *objs)
{
    if (trk_objects_validate(objs, NULL, 0)) return NULL;
    struct trk_buf b = { 0 };
    if (objs->n == 0) {
        trk_buf_printf(&b, "{\n  \"objects\": []");
    } else {
        trk_buf_printf(&b, "{\n  \"objects\": [\n");
        for (int i = 0; i < objs->n; i++) {
            const struct trk_object_def *d = &objs->def[i];
            uint8_t def_rgb[3];
            trk_objects_display_rgb(objs, i, def_rgb);
            trk_buf_printf(&b, "    {\"name\": ");
            trk_buf_json_str(&b, d->name, sizeof d->name);
            if (d->space == TRK_SPACE_CLASS)
                trk_buf_printf(&b, ", \"class\": \"%s\", \"min_mass\": %llu",
                               objs->classes[d->cls_slot].file, (unsigned long long)d->min_mass);
            else
                trk_buf_printf(&b,
                               ", \"space\": \"%s\", \"lo\": [%u, %u, %u], \"hi\": [%u, %u, %u], "
                               "\"min_mass\": %llu",
                               trk_objects_space_name(d->space), d->lo[0], d->lo[1], d->lo[2],
                               d->hi[0], d->hi[1], d->hi[2], (unsigned long long)d->min_mass);
            /* Only when not the default, so files without blobs round-trip
             * byte for byte. */
            if (d->blobs) trk_buf_printf(&b, ", \"blobs\": %u", d->blobs);
            if (d->min_area != 1) trk_buf_printf(&b, ", \"min_area\": %u", (unsigned)d->min_area);
            if (d->connectivity != 8) trk_buf_printf(&b, ", \"connectivity\": %u", d->connectivity);
            if (d->track) trk_buf_printf(&b, ", \"track\": true");
            if (d->coast_frames != TRK_OBJECTS_COAST_DEFAULT)
                trk_buf_printf(&b, ", \"coast_frames\": %u", d->coast_frames);
            if (memcmp(def_rgb, objs->color[i], 3) != 0) {
                char hex[TRK_COLOR_HEX_SIZE];
                trk_color_hex(objs->color[i], hex);
                trk_buf_printf(&b, ", \"color\": \"%s\"", hex);
            }
            trk_objects_write_adapt(&b, objs, i);
            trk_buf_printf(&b, "}%s\n", i + 1 < objs->n ? "," : "");
        }
        trk_buf_printf(&b, "  ]");
    }
    /* The camera settings as their V4L2 controls (already in setting order),
     * so a save keeps them. */
    if (objs->n_camera > 0) {
        trk_buf_printf(&b, ",\n  \"camera\": {\"controls\": {");
        for (int i = 0; i < objs->n_camera; i++) {
            trk_buf_printf(&b, "%s", i ? ", " : "");
            trk_buf_json_str(&b, objs->camera[i].name, sizeof objs->camera[i].name);
            trk_buf_printf(&b, ": %ld", objs->camera[i].value);
        }
        trk_buf_printf(&b, "}}");
    }
    /* The pre-filter when on. */
    if (objs->prefilter_sigma > 0) {
        trk_buf_printf(&b, ",\n  \"prefilter\": {\"gaussian\": ");
        sb_double(&b, objs->prefilter_sigma);
        trk_buf_printf(&b, "}");
    }
    if (objs->calib.on) sb_calibration(&b, &objs->calib);
    trk_objects_write_illum(&b, objs);
    if (objs->n_patterns > 0) {
        trk_buf_printf(&b, ",\n  \"patterns\": [\n");
        for (int i = 0; i < objs->n_patterns; i++) {
            sb_pattern(&b, objs, &objs->patterns[i]);
            trk_buf_printf(&b, "%s\n", i + 1 < objs->n_patterns ? "," : "");
        }
        trk_buf_printf(&b, "  ]");
    }
    trk_buf_printf(&b, "\n}\n");
    if (b.failed) {
        trk_buf_free(&b);
        return NULL;
    }
    return b.data;
}

struct json_t *trk_objects_object_value(const struct trk_objects *objs, int i, bool every_key)
{
    if (!objs || i < 0 || i >= objs->n) return NULL;
    const struct trk_object_def *d = &objs->def[i];
    json_t *o = json_pack(
        "{s:s, s:s, s:[i,i,i], s:[i,i,i], s:I, s:i, s:I, s:i, s:b, s:i}", "name", d->name, "space",
        trk_objects_space_name(d->space), "lo", (int)d->lo[0], (int)d->lo[1], (int)d->lo[2], "hi",
        (int)d->hi[0], (int)d->hi[1], (int)d->hi[2], "min_mass", (json_int_t)d->min_mass, "blobs",
        (int)d->blobs, "min_area", (json_int_t)d->min_area, "connectivity", (int)d->connectivity,
        "track", (int)d->track, "coast_frames", (int)d->coast_frames);
    /* A class object: its file instead of the box. */
    if (o && d->space == TRK_SPACE_CLASS &&
        (json_object_del(o, "lo") || json_object_del(o, "hi") ||
         json_object_set_new(o, "class", json_string(objs->classes[d->cls_slot].file)))) {
        json_decref(o);
        o = NULL;
    }
    uint8_t def_rgb[3];
    trk_objects_display_rgb(objs, i, def_rgb);
    if (o && (every_key || memcmp(def_rgb, objs->color[i], 3) != 0)) {
        char color[TRK_COLOR_HEX_SIZE];
        trk_color_hex(objs->color[i], color);
        if (json_object_set_new(o, "color", json_string(color))) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

struct json_t *trk_objects_to_value(const struct trk_objects *objs)
{
    if (trk_objects_validate(objs, NULL, 0)) return NULL;
    json_t *arr = json_array();
    for (int i = 0; arr && i < objs->n; i++) {
        json_t *o = trk_objects_object_value(objs, i, true);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (!arr) return NULL;
    json_t *root = json_object();
    if (!root || json_object_set_new(root, "objects", arr)) {
        json_decref(root);
        return NULL;
    }
    return root;
}
