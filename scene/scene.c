/* Synthetic scenes with known answers (scene.h): the standard benchmark scene
 * of docs/ARCHITECTURE.md section 6, random scenes for exactness tests, and conversion of
 * an RGB24 picture to every input format.
 *
 * Everything is deterministic for its arguments: the only randomness is the
 * splitmix64 generator below, seeded by the caller, so a failing test or a
 * benchmark run can be reproduced from (size, m, seed) alone.
 */
#include "scene.h"

#include "color.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and every seed, zero
 * included, gives a good stream. */
uint64_t trk_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform-enough integer in [lo, hi] (the modulo bias of a 64-bit draw over
 * ranges this small is far below anything a test could notice). */
static int rand_range(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void trk_scene_free(struct trk_scene *s)
{
    if (!s) return;
    free(s->rgb);
    s->rgb = NULL;
}

static int scene_alloc(int width, int height, int m, struct trk_scene *out)
{
    memset(out, 0, sizeof(*out));
    if (width <= 0 || height <= 0 || m < 0 || m > TRK_MAX_OBJECTS) return TRK_EINVAL;
    if ((size_t)width > SIZE_MAX / 3 / (size_t)height) return TRK_EINVAL;
    out->rgb = malloc((size_t)width * (size_t)height * 3);
    if (!out->rgb) return TRK_ENOMEM;
    out->width = width;
    out->height = height;
    out->n_objects = m;
    return 0;
}

/* ------------------------------------------------------ standard palette */

/* The standard scene's colours. Candidates are the points of a grid with step
 * 17 on every channel (0, 17, ..., 255), so two different candidates differ by
 * at least 17 in some channel: their +-8 boxes are disjoint, and a disk pixel
 * (+-3 noise) can never fall into another disk's box. Only saturated, bright
 * candidates are kept (max - min >= 136, max >= 170): a gray pixel (R=G=B)
 * is then more than 8 away from at least one channel of every box, so the
 * background never matches. From these, colours are picked by farthest-point
 * sampling in RGB starting at pure red: the first few are the obvious primaries
 * and secondaries (easy to tell apart on screen), later ones fill in between
 * (around the hue circle and across saturation/value levels). The palette does
 * not depend on the seed, so object i has the same colour in every run. */
#define PAL_STEP   17
#define PAL_LEVELS 16 /* 0..255 in steps of 17 */

static int palette_build(uint8_t pal[TRK_MAX_OBJECTS][3])
{
    /* On the stack (about 28 KiB), not static: scenes may be built from
     * several threads at once. */
    uint8_t cand[PAL_LEVELS * PAL_LEVELS * PAL_LEVELS][3];
    int dist[PAL_LEVELS * PAL_LEVELS * PAL_LEVELS];
    int nc = 0;
    for (int r = 0; r < PAL_LEVELS; r++)
        for (int g = 0; g < PAL_LEVELS; g++)
            for (int b = 0; b < PAL_LEVELS; b++) {
                int c[3] = { r * PAL_STEP, g * PAL_STEP, b * PAL_STEP };
                int mx = c[0] > c[1] ? c[0] : c[1], mn = c[0] < c[1] ? c[0] : c[1];
                mx = mx > c[2] ? mx : c[2];
                mn = mn < c[2] ? mn : c[2];
                if (mx - mn < 136 || mx < 170) continue;
                cand[nc][0] = (uint8_t)c[0], cand[nc][1] = (uint8_t)c[1];
                cand[nc][2] = (uint8_t)c[2];
                dist[nc] = INT_MAX;
                nc++;
            }
    /* nc is several hundred, comfortably above TRK_MAX_OBJECTS. */
    int pick = -1;
    for (int i = 0; i < nc; i++)
        if (cand[i][0] == 255 && cand[i][1] == 0 && cand[i][2] == 0) pick = i;
    for (int k = 0; k < TRK_MAX_OBJECTS && k < nc; k++) {
        memcpy(pal[k], cand[pick], 3);
        int best = -1, bestd = -1;
        for (int i = 0; i < nc; i++) {
            int d0 = cand[i][0] - cand[pick][0], d1 = cand[i][1] - cand[pick][1],
                d2 = cand[i][2] - cand[pick][2];
            int d = d0 * d0 + d1 * d1 + d2 * d2;
            if (d < dist[i]) dist[i] = d;
            if (dist[i] > bestd) bestd = dist[i], best = i; /* first wins ties */
        }
        pick = best;
    }
    return nc;
}

int trk_scene_standard(int width, int height, int m, uint64_t seed, struct trk_scene *out)
{
    int err = scene_alloc(width, height, m, out);
    if (err) return err;
    uint64_t st = seed;
    uint8_t pal[TRK_MAX_OBJECTS][3];
    if (m > 0 && palette_build(pal) < m) {
        trk_scene_free(out);
        return TRK_EINVAL; /* cannot happen: the palette has enough colours */
    }

    /* Radius: 2% of the short side, rounded to nearest, at least 1 pixel. */
    int shortside = width < height ? width : height;
    int rad = (shortside * 2 + 50) / 100;
    if (rad < 1) rad = 1;
    out->radius = rad;

    /* Gray background, per-pixel noise 60..195, R = G = B. */
    size_t npx = (size_t)width * (size_t)height;
    for (size_t i = 0; i < npx; i++) {
        uint8_t v = (uint8_t)rand_range(&st, 60, 195);
        out->rgb[3 * i] = out->rgb[3 * i + 1] = out->rgb[3 * i + 2] = v;
    }

    /* Disks: centres chosen so the whole disk lies inside the frame when it
     * fits; disks may overlap each other (later ones are painted on top), so
     * only disks that overlap no other have a mass equal to their pixel
     * count. */
    for (int k = 0; k < m; k++) {
        int cx = 2 * rad < width ? rand_range(&st, rad, width - 1 - rad) : width / 2;
        int cy = 2 * rad < height ? rand_range(&st, rad, height - 1 - rad) : height / 2;
        out->cx[k] = cx;
        out->cy[k] = cy;
        struct trk_object_def *o = &out->objects[k];
        snprintf(o->name, sizeof(o->name), "disk%d", k);
        o->space = TRK_SPACE_RGB;
        o->min_mass = 1;
        for (int c = 0; c < 3; c++) {
            o->lo[c] = (uint16_t)clampi(pal[k][c] - 8, 0, 255);
            o->hi[c] = (uint16_t)clampi(pal[k][c] + 8, 0, 255);
        }
    }
    /* Painting order follows object order; noise is drawn per pixel and
     * channel so it does not depend on anything but the seed. */
    for (int k = 0; k < m; k++) {
        int cx = out->cx[k], cy = out->cy[k];
        for (int y = cy - rad; y <= cy + rad; y++) {
            if (y < 0 || y >= height) continue;
            for (int x = cx - rad; x <= cx + rad; x++) {
                if (x < 0 || x >= width) continue;
                int dx = x - cx, dy = y - cy;
                if (dx * dx + dy * dy > rad * rad) continue;
                uint8_t *p = out->rgb + ((size_t)y * (size_t)width + (size_t)x) * 3;
                for (int c = 0; c < 3; c++)
                    p[c] = (uint8_t)clampi(pal[k][c] + rand_range(&st, -3, 3), 0, 255);
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------- dense scenes */

/* Every pixel, every channel 0..255 from the seed's stream. */
static void fill_noise(uint64_t *st, struct trk_scene *s)
{
    size_t n = (size_t)s->width * (size_t)s->height * 3;
    for (size_t i = 0; i < n; i++)
        s->rgb[i] = (uint8_t)trk_rand_next(st);
}

int trk_scene_dense(int width, int height, int m, uint64_t seed, struct trk_scene *out)
{
    int err = scene_alloc(width, height, m, out);
    if (err) return err;
    uint64_t st = seed;
    fill_noise(&st, out);
    for (int k = 0; k < m; k++) {
        struct trk_object_def *o = &out->objects[k];
        snprintf(o->name, sizeof(o->name), "all%d", k);
        o->space = TRK_SPACE_RGB;
        o->min_mass = 1;
        for (int c = 0; c < 3; c++)
            o->lo[c] = 0, o->hi[c] = 255;
    }
    return 0;
}

#define HALFDENSE_REGIONS 6

int trk_scene_halfdense(int width, int height, int m, uint64_t seed, struct trk_scene *out)
{
    int err = scene_alloc(width, height, m, out);
    if (err) return err;
    uint64_t st = seed;
    fill_noise(&st, out);
    for (int r = 0; r < HALFDENSE_REGIONS; r++) {
        uint8_t col[3];
        for (int c = 0; c < 3; c++)
            col[c] = (uint8_t)trk_rand_next(&st);
        int rw = rand_range(&st, 1, (width + 2) / 3), rh = rand_range(&st, 1, (height + 2) / 3);
        int x0 = rand_range(&st, 0, width - rw), y0 = rand_range(&st, 0, height - rh);
        for (int y = y0; y < y0 + rh; y++)
            for (int x = x0; x < x0 + rw; x++) {
                uint8_t *p = out->rgb + ((size_t)y * (size_t)width + (size_t)x) * 3;
                for (int c = 0; c < 3; c++)
                    p[c] = (uint8_t)clampi(col[c] + rand_range(&st, -2, 2), 0, 255);
            }
    }
    /* Window widths per channel, in percent of the range, by object kind. */
    static const int pct[3][2] = { { 70, 100 }, { 35, 70 }, { 5, 35 } };
    for (int k = 0; k < m; k++) {
        struct trk_object_def *o = &out->objects[k];
        snprintf(o->name, sizeof(o->name), "sub%d", k);
        o->space = (enum trk_space)rand_range(&st, 0, 2);
        o->min_mass = 1;
        const int kind = k % 3;
        for (int c = 0; c < 3; c++) {
            const int mx = trk_chan_max(o->space, c);
            const int span = mx * rand_range(&st, pct[kind][0], pct[kind][1]) / 100;
            if (o->space == TRK_SPACE_HSV && c == 0) {
                /* Anywhere on the circle: about half of them wrap. */
                const int lo = rand_range(&st, 0, TRK_HUE_VALUES - 1);
                o->lo[0] = (uint16_t)lo;
                o->hi[0] = (uint16_t)trk_hue_wrap(lo + span);
                if (span >= TRK_HUE_VALUES - 1) o->lo[0] = 0, o->hi[0] = TRK_HUE_VALUES - 1;
            } else {
                const int lo = rand_range(&st, 0, mx - span);
                o->lo[c] = (uint16_t)lo;
                o->hi[c] = (uint16_t)(lo + span);
            }
        }
    }
    return 0;
}

/* --------------------------------------------------------- random scene */

/* Builds one object box around colour rgb in the given space: the colour
 * converted to that space (BT.601 full range for ycbcr, the RGB sources'
 * normal encoding), widened by a random margin per channel. Hue margins can
 * cross 0, which produces a wrapping (lo > hi) hue range. */
static void box_around(uint64_t *st, const uint8_t rgb[3], enum trk_space space,
                       struct trk_object_def *o)
{
    int c[3];
    trk_rgb_to_space(&trk_rgb2ycc_coefs[trk_coef_index(TRK_MATRIX_BT601, 1)], space, rgb, c);
    for (int ch = 0; ch < 3; ch++) {
        int lo_m = rand_range(st, 0, 40), hi_m = rand_range(st, 0, 40);
        if (space == TRK_SPACE_HSV && ch == 0) {
            o->lo[0] = (uint16_t)trk_hue_wrap(c[0] - lo_m);
            o->hi[0] = (uint16_t)trk_hue_wrap(c[0] + hi_m);
            /* A window that went all the way round is a full circle. */
            if (lo_m + hi_m >= TRK_HUE_VALUES - 1) o->lo[0] = 0, o->hi[0] = TRK_HUE_VALUES - 1;
        } else {
            o->lo[ch] = (uint16_t)clampi(c[ch] - lo_m, 0, 255);
            o->hi[ch] = (uint16_t)clampi(c[ch] + hi_m, 0, 255);
        }
    }
}

/* Regions of flat colour: rectangles, some anchored to the borders and
 * corners so their objects touch the frame edge, with colours that exercise
 * the corners of the colour rules (pure red across the hue seam, gray with
 * S = 0, black, white). Their colours are the seeds for most object boxes. */
#define RND_REGIONS 12

int trk_scene_random(int width, int height, int m, uint64_t seed, struct trk_scene *out)
{
    int err = scene_alloc(width, height, m, out);
    if (err) return err;
    uint64_t st = seed;
    size_t npx = (size_t)width * (size_t)height;
    for (size_t i = 0; i < 3 * npx; i++)
        out->rgb[i] = (uint8_t)trk_rand_next(&st);

    static const uint8_t fixed[6][3] = { { 255, 0, 0 }, { 250, 10, 30 },   { 128, 128, 128 },
                                         { 0, 0, 0 },   { 255, 255, 255 }, { 255, 8, 0 } };
    uint8_t col[RND_REGIONS][3];
    for (int r = 0; r < RND_REGIONS; r++) {
        if (r < 6) {
            memcpy(col[r], fixed[r], 3);
        } else {
            for (int c = 0; c < 3; c++)
                col[r][c] = (uint8_t)trk_rand_next(&st);
        }
        /* At most about half the frame each way, so several regions stay
         * visible on top of each other and some noise survives. */
        int rw = rand_range(&st, 1, (width + 1) / 2), rh = rand_range(&st, 1, (height + 1) / 2);
        int x0, y0;
        switch (r % 4) { /* 0: top-left corner, 1: right edge, 2: bottom edge, 3: anywhere */
        case 0: x0 = 0, y0 = 0; break;
        case 1: x0 = width - rw, y0 = rand_range(&st, 0, height - rh); break;
        case 2: x0 = rand_range(&st, 0, width - rw), y0 = height - rh; break;
        default:
            x0 = rand_range(&st, 0, width - rw);
            y0 = rand_range(&st, 0, height - rh);
            break;
        }
        for (int y = y0; y < y0 + rh; y++)
            for (int x = x0; x < x0 + rw; x++) {
                uint8_t *p = out->rgb + ((size_t)y * (size_t)width + (size_t)x) * 3;
                /* Light noise on half the regions: near-flat, like a real
                 * object, so boxes catch most but not all of it. */
                for (int c = 0; c < 3; c++)
                    p[c] = (r & 1) ? (uint8_t)clampi(col[r][c] + rand_range(&st, -2, 2), 0, 255)
                                   : col[r][c];
            }
    }

    for (int k = 0; k < m; k++) {
        struct trk_object_def *o = &out->objects[k];
        snprintf(o->name, sizeof(o->name), "rnd%d", k);
        o->space = (enum trk_space)rand_range(&st, 0, 2);
        o->min_mass = (uint64_t)rand_range(&st, 1, 3);
        int kind = rand_range(&st, 0, 9);
        if (kind <= 5) {
            /* Around a region's colour: these overlap each other, since
             * several objects share each region. */
            box_around(&st, col[rand_range(&st, 0, RND_REGIONS - 1)], o->space, o);
        } else if (kind == 6) {
            /* Around a random pixel's colour. */
            size_t i = (size_t)(trk_rand_next(&st) % npx);
            box_around(&st, out->rgb + 3 * i, o->space, o);
        } else if (kind == 7) {
            /* A wide random box (matches a good share of the noise). */
            /* Hue keeps its draw order, so about half of these wrap. */
            int hsv = o->space == TRK_SPACE_HSV;
            for (int c = 0; c < 3; c++) {
                int mx = trk_chan_max(o->space, c);
                int a = rand_range(&st, 0, mx), b = rand_range(&st, 0, mx);
                int keep = a <= b || (c == 0 && hsv);
                o->lo[c] = (uint16_t)(keep ? a : b);
                o->hi[c] = (uint16_t)(keep ? b : a);
            }
        } else if (kind == 8) {
            /* Red across the hue seam: an hsv box that wraps through 0. */
            o->space = TRK_SPACE_HSV;
            o->lo[0] = (uint16_t)rand_range(&st, 330, TRK_HUE_VALUES - 1);
            o->hi[0] = (uint16_t)rand_range(&st, 0, 30);
            o->lo[1] = (uint16_t)rand_range(&st, 0, 150), o->hi[1] = 255;
            o->lo[2] = (uint16_t)rand_range(&st, 0, 150), o->hi[2] = 255;
        } else {
            /* Empty: an inverted saturation/value or chroma range matches no
             * pixel at all (only hue may wrap). */
            for (int c = 0; c < 3; c++) {
                o->lo[c] = 0;
                o->hi[c] = (uint16_t)trk_chan_max(o->space, c);
            }
            int c = rand_range(&st, 1, 2);
            o->lo[c] = (uint16_t)rand_range(&st, 129, 255);
            o->hi[c] = (uint16_t)rand_range(&st, 0, 128);
        }
    }
    return 0;
}

/* ------------------------------------------------------- noisebox scene */

int trk_scene_noisebox(int width, int height, int m, uint64_t seed, struct trk_scene *out)
{
    int err = scene_alloc(width, height, m, out);
    if (err) return err;
    uint64_t st = seed;
    const size_t bytes = (size_t)width * (size_t)height * 3;
    for (size_t i = 0; i < bytes; i += 8) { /* 8 bytes a draw */
        uint64_t v = trk_rand_next(&st);
        for (size_t j = i; j < i + 8 && j < bytes; j++, v >>= 8)
            out->rgb[j] = (uint8_t)v;
    }
    for (int k = 0; k < m; k++) {
        struct trk_object_def *o = &out->objects[k];
        snprintf(o->name, sizeof(o->name), "nbox%d", k);
        o->space = TRK_SPACE_RGB;
        o->min_mass = 1;
        for (int c = 0; c < 3; c++) {
            o->lo[c] = (uint16_t)rand_range(&st, 0, 127);
            o->hi[c] = (uint16_t)(o->lo[c] + 127);
        }
    }
    return 0;
}

/* --------------------------------------------------------- format output */

int trk_image_from_rgb(const uint8_t *rgb, int width, int height, enum trk_pixfmt fmt,
                       enum trk_matrix matrix, bool full_range, int pad, uint8_t **buf,
                       struct trk_image *img)
{
    *buf = NULL;
    memset(img, 0, sizeof(*img));
    if (!rgb || width <= 0 || height <= 0 || pad < 0 || (unsigned)fmt >= TRK_FMT_COUNT ||
        (unsigned)matrix > TRK_MATRIX_BT709)
        return TRK_EINVAL;
    size_t w = (size_t)width, h = (size_t)height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    size_t p = (size_t)pad;
    if (w > (SIZE_MAX / 8 - p) / h) return TRK_EINVAL;

    struct trk_plane_layout L;
    if (trk_image_plane_layout(fmt, width, height, &L)) return TRK_EINVAL;
    size_t pitch[3] = { 0, 0, 0 }, rows[3] = { 0, 0, 0 }, total = 0;
    for (int i = 0; i < L.planes; i++) {
        pitch[i] = L.row_bytes[i] + p;
        rows[i] = (size_t)L.rows[i];
        total += pitch[i] * rows[i];
    }
    const int bpp = trk_pixfmt_bpp(fmt);
    uint8_t *b = malloc(total);
    if (!b) return TRK_ENOMEM;
    /* Padding holds a non-zero pattern so a backend that reads past a row's
     * payload gets garbage, not a harmless zero. */
    memset(b, 0xA5, total);

    img->plane[0] = b;
    img->plane[1] = rows[1] ? b + pitch[0] * rows[0] : NULL;
    img->plane[2] = rows[2] ? img->plane[1] + pitch[1] * rows[1] : NULL;
    memcpy(img->pitch, pitch, sizeof(pitch));
    img->width = width;
    img->height = height;
    img->fmt = fmt;
    img->matrix = matrix;
    img->full_range = full_range;
    uint8_t *pl[3] = { b, (uint8_t *)img->plane[1], (uint8_t *)img->plane[2] };

    if (bpp >= 3) {
        int swap = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                const uint8_t *s = rgb + (y * w + x) * 3;
                uint8_t *d = pl[0] + y * pitch[0] + x * (size_t)bpp;
                d[0] = s[swap ? 2 : 0], d[1] = s[1], d[2] = s[swap ? 0 : 2];
                /* Alpha varies so a backend that reads it shows up in tests. */
                if (bpp == 4) d[3] = (uint8_t)(x * 37 + y * 11);
            }
        *buf = b;
        return 0;
    }

    /* YUV: each pixel's own Y; chroma of each 2x1 (YUYV) or 2x2 (4:2:0)
     * block = rounded average of the Cb/Cr of the pixels the block has
     * (fewer at odd right/bottom edges). */
    const struct trk_rgb2ycc_coef *k = &trk_rgb2ycc_coefs[trk_coef_index((int)matrix, full_range)];
    size_t bh = fmt == TRK_FMT_YUYV ? 1 : 2; /* block height */
    size_t brows = fmt == TRK_FMT_YUYV ? h : ch;
    for (size_t by = 0; by < brows; by++)
        for (size_t bx = 0; bx < cw; bx++) {
            unsigned sum_cb = 0, sum_cr = 0, n = 0;
            uint8_t yv[2][2] = { { 0, 0 }, { 0, 0 } };
            for (size_t dy = 0; dy < bh; dy++)
                for (size_t dx = 0; dx < 2; dx++) {
                    size_t x = 2 * bx + dx, y = by * bh + dy;
                    if (x >= w || y >= h) continue;
                    const uint8_t *s = rgb + (y * w + x) * 3;
                    uint8_t yy, cb, cr;
                    trk_rgb_to_ycbcr(k, s[0], s[1], s[2], &yy, &cb, &cr);
                    yv[dy][dx] = yy;
                    sum_cb += cb, sum_cr += cr, n++;
                    if (fmt != TRK_FMT_YUYV) pl[0][y * pitch[0] + x] = yy;
                }
            uint8_t cb = (uint8_t)((sum_cb + n / 2) / n), cr = (uint8_t)((sum_cr + n / 2) / n);
            if (fmt == TRK_FMT_YUYV) {
                uint8_t *d = pl[0] + by * pitch[0] + bx * 4;
                /* At an odd width the last pair has one real pixel; its Y1
                 * slot repeats Y0, as encoders that pad by edge replication do. */
                d[0] = yv[0][0], d[1] = cb, d[2] = 2 * bx + 1 < w ? yv[0][1] : yv[0][0], d[3] = cr;
            } else if (fmt == TRK_FMT_NV12) {
                uint8_t *d = pl[1] + by * pitch[1] + bx * 2;
                d[0] = cb, d[1] = cr;
            } else {
                pl[1][by * pitch[1] + bx] = cb;
                pl[2][by * pitch[2] + bx] = cr;
            }
        }
    *buf = b;
    return 0;
}

void trk_scene_pixel_objects(uint64_t *st, const struct trk_image *img, int sp, int n,
                             struct trk_object_def *o)
{
    for (int k = 0; k < n; k++) {
        const int s = sp >= 0 ? sp : rand_range(st, 0, TRK_SPACE_COUNT - 1);
        int c[3];
        const int x = rand_range(st, 0, img->width - 1), y = rand_range(st, 0, img->height - 1);
        trk_image_pixel_space(img, x, y, s, c);
        memset(&o[k], 0, sizeof(o[k]));
        snprintf(o[k].name, sizeof(o[k].name), "px%d", k);
        o[k].space = (enum trk_space)s;
        o[k].min_mass = 1;
        for (int ch = 0; ch < 3; ch++) {
            const int mx = trk_chan_max(s, ch), r = rand_range(st, 2, 60);
            if (s == TRK_SPACE_HSV && ch == 0) {
                o[k].lo[ch] = (uint16_t)trk_hue_wrap(c[ch] - r);
                o[k].hi[ch] = (uint16_t)trk_hue_wrap(c[ch] + r);
                continue;
            }
            o[k].lo[ch] = (uint16_t)(c[ch] - r < 0 ? 0 : c[ch] - r);
            o[k].hi[ch] = (uint16_t)(c[ch] + r > mx ? mx : c[ch] + r);
        }
    }
}

int trk_scene_class_objects(uint64_t *st, const struct trk_image *img, int n, int first, int every,
                            struct trk_object_def *o, uint8_t (*tabs)[TRK_CLASS_BYTES])
{
    int j = 0;
    for (int k = first; k < n && j < TRK_MAX_CLASSES; k += every, j++) {
        uint8_t *t = tabs[j];
        memset(t, 0, TRK_CLASS_BYTES);
        const int px = rand_range(st, 1, 6);
        for (int i = 0; i < px; i++) {
            int c[3];
            trk_image_pixel_space(img, rand_range(st, 0, img->width - 1),
                                  rand_range(st, 0, img->height - 1), TRK_SPACE_RGB, c);
            const int r = rand_range(st, 0, 2); /* neighbour cells, up to r each way */
            for (int d0 = -r; d0 <= r; d0++)
                for (int d1 = -r; d1 <= r; d1++)
                    for (int d2 = -r; d2 <= r; d2++) {
                        const int a = (c[0] >> 2) + d0, b = (c[1] >> 2) + d1, e = (c[2] >> 2) + d2;
                        if (a < 0 || a > 63 || b < 0 || b > 63 || e < 0 || e > 63) continue;
                        const int cell = a << 12 | b << 6 | e;
                        t[cell >> 3] |= (uint8_t)(1u << (cell & 7));
                    }
        }
        for (int i = rand_range(st, 0, 200); i > 0; i--) {
            const int cell = rand_range(st, 0, TRK_CLASS_CELLS - 1);
            t[cell >> 3] |= (uint8_t)(1u << (cell & 7));
        }
        o[k].space = TRK_SPACE_CLASS;
        o[k].cls = t;
        memset(o[k].lo, 0, sizeof(o[k].lo));
        memset(o[k].hi, 0, sizeof(o[k].hi));
    }
    return j;
}
