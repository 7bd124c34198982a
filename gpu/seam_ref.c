/* Seam carving's definition (gpu/seam.h), plainly, and what every form
 * shares on the host (gpu/seam_impl.h): checks, luma, the seam trace, the
 * driver of the two phases, the output and the map. */
#include <stdlib.h>
#include <string.h>

#include "seam_impl.h"

static int packed_rgb(enum trk_pixfmt fmt)
{
    return fmt == TRK_FMT_RGB24 || fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_RGBA ||
           fmt == TRK_FMT_BGRA;
}

int trk_seam_check(const struct trk_seam_job *job)
{
    const struct trk_image *s = job ? job->src : NULL;
    if (!s || !s->plane[0] || s->mem != TRK_MEM_HOST || !packed_rgb(s->fmt)) return TRK_EINVAL;
    if (s->width < 1 || s->height < 1 || s->width > TRK_SEAM_MAX_SIDE ||
        s->height > TRK_SEAM_MAX_SIDE)
        return TRK_EINVAL;
    size_t bpp = (size_t)trk_pixfmt_bpp(s->fmt);
    if (s->pitch[0] < (size_t)s->width * bpp) return TRK_EINVAL;
    if (job->dst_w < 1 || job->dst_w > s->width || job->dst_h < 1 || job->dst_h > s->height)
        return TRK_EINVAL;
    if (!job->dst || job->dst_pitch < (size_t)job->dst_w * bpp) return TRK_EINVAL;
    if (job->prot && job->prot_pitch < (size_t)s->width) return TRK_EINVAL;
    return 0;
}

uint8_t trk_seam_luma(const uint8_t *px, enum trk_pixfmt fmt)
{
    int bgr = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
    unsigned r = px[bgr ? 2 : 0], g = px[1], b = px[bgr ? 0 : 2];
    return (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
}

void trk_seam_trace(const uint64_t *m, size_t pitch, int w, int h, int32_t *seam)
{
    const uint64_t *last = m + (size_t)(h - 1) * pitch;
    int x = 0;
    for (int i = 1; i < w; i++)
        if (last[i] < last[x]) x = i;
    seam[h - 1] = x;
    for (int y = h - 1; y > 0; y--) {
        const uint64_t *up = m + (size_t)(y - 1) * pitch;
        int best = x; /* the middle first, then the left, then the right */
        if (x > 0 && up[x - 1] < up[best]) best = x - 1;
        if (x < w - 1 && up[x + 1] < up[best]) best = x + 1;
        seam[y - 1] = x = best;
    }
}

void trk_seam_remove(struct seam_ctx *c, int w, int h, const int32_t *seam)
{
    for (int y = 0; y < h; y++) {
        const int32_t *src = c->idx + (size_t)y * w;
        int32_t *dst = c->idx + (size_t)y * (w - 1);
        int s = seam[y];
        c->cut_protected += c->prot[src[s]] != 0;
        /* Rows move down to pitch w - 1 in place: row y's start moves left
         * by y, so every element is read before it is overwritten. */
        memmove(dst, src, (size_t)s * sizeof *src);
        memmove(dst + s, src + s + 1, (size_t)(w - 1 - s) * sizeof *src);
    }
}

/* The w x h grid g transposed into t (h x w), in 32 x 32 blocks so that
 * both sides stay in cache. */
static void transpose(const int32_t *g, int w, int h, int32_t *t)
{
    for (int by = 0; by < h; by += 32)
        for (int bx = 0; bx < w; bx += 32)
            for (int y = by; y < by + 32 && y < h; y++)
                for (int x = bx; x < bx + 32 && x < w; x++)
                    t[(size_t)x * h + y] = g[(size_t)y * w + x];
}

/* The output pixels and the map from the final grid (dst_w x dst_h). */
static void finish(const struct trk_seam_job *job, const int32_t *idx)
{
    const struct trk_image *s = job->src;
    const int bpp = trk_pixfmt_bpp(s->fmt), sw = s->width;
    for (int y = 0; y < job->dst_h; y++) {
        uint8_t *d = job->dst + (size_t)y * job->dst_pitch;
        const int32_t *row = idx + (size_t)y * job->dst_w;
        for (int x = 0; x < job->dst_w; x++) {
            const uint8_t *p =
                s->plane[0] + (size_t)(row[x] / sw) * s->pitch[0] + (size_t)(row[x] % sw) * bpp;
            uint8_t *q = d + (size_t)x * bpp;
            q[0] = p[0], q[1] = p[1], q[2] = p[2]; /* whole pixels: 3 or 4 bytes */
            if (bpp == 4) q[3] = p[3];
        }
    }
    struct trk_seam_map *map = job->map;
    if (!map) return;
    map->src_w = sw;
    map->src_h = s->height;
    map->dst_w = job->dst_w;
    map->dst_h = job->dst_h;
    size_t n = (size_t)job->dst_w * job->dst_h;
    if (map->src_of) memcpy(map->src_of, idx, n * sizeof *idx);
    if (map->dst_of) {
        for (size_t i = 0; i < (size_t)sw * s->height; i++)
            map->dst_of[i] = -1;
        for (size_t i = 0; i < n; i++)
            map->dst_of[idx[i]] = (int32_t)i;
    }
}

/* Luma and protection per source pixel into lum and prot. */
static void source_planes(const struct trk_seam_job *job, uint8_t *lum, uint8_t *prot)
{
    const struct trk_image *s = job->src;
    const int bpp = trk_pixfmt_bpp(s->fmt);
    for (int y = 0; y < s->height; y++) {
        const uint8_t *row = s->plane[0] + (size_t)y * s->pitch[0];
        const uint8_t *pr = job->prot ? job->prot + (size_t)y * job->prot_pitch : NULL;
        for (int x = 0; x < s->width; x++) {
            size_t i = (size_t)y * s->width + x;
            lum[i] = trk_seam_luma(row + (size_t)x * bpp, s->fmt);
            prot[i] = pr && pr[x];
        }
    }
}

void trk_seam_scratch_destroy(struct trk_seam_scratch **sp)
{
    struct trk_seam_scratch *s = sp ? *sp : NULL;
    if (!s) return;
    free(s->planes);
    free(s->idx);
    free(s->tmp);
    free(s->seam);
    free(s->cost);
    free(s->m);
    free(s);
    *sp = NULL;
}

int trk_seam_scratch_create(struct trk_seam_scratch **out, int max_w, int max_h)
{
    if (!out) return TRK_EINVAL;
    *out = NULL;
    if (max_w < 1 || max_h < 1 || max_w > TRK_SEAM_MAX_SIDE || max_h > TRK_SEAM_MAX_SIDE)
        return TRK_EINVAL;
    struct trk_seam_scratch *s = calloc(1, sizeof *s);
    if (!s) return TRK_ENOMEM;
    s->max_w = max_w;
    s->max_h = max_h;
    s->n = (size_t)max_w * max_h;
    s->side = (size_t)(max_w > max_h ? max_w : max_h);
    s->planes = malloc(2 * s->n);
    s->idx = malloc(s->n * sizeof *s->idx);
    s->tmp = malloc(s->n * sizeof *s->tmp);
    s->seam = malloc(s->side * sizeof *s->seam);
    s->cost = malloc(s->n * sizeof *s->cost);
    s->m = malloc(s->n * sizeof *s->m);
    if (!s->planes || !s->idx || !s->tmp || !s->seam || !s->cost || !s->m) {
        trk_seam_scratch_destroy(&s);
        return TRK_ENOMEM;
    }
    *out = s;
    return 0;
}

int trk_seam_run(const struct trk_seam_job *job, struct trk_seam_info *info, seam_phase_fn phase,
                 void *user)
{
    int rc = trk_seam_check(job);
    if (rc) return rc;
    const int sw = job->src->width, sh = job->src->height;
    struct trk_seam_scratch *own = NULL, *sc = job->scratch;
    if (sc && (sw > sc->max_w || sh > sc->max_h)) return TRK_ETOOBIG;
    if (!sc && (rc = trk_seam_scratch_create(&own, sw, sh))) return rc;
    if (!sc) sc = own;
    const size_t n = (size_t)sw * sh;
    int32_t *idx = sc->idx, *tmp = sc->tmp;
    source_planes(job, sc->planes, sc->planes + n);
    for (size_t i = 0; i < n; i++)
        idx[i] = (int32_t)i;
    struct seam_ctx c = { n,        sc->planes, sc->planes + n, idx, tmp,
                          sc->cost, sc->m,      sc->seam,       0,   user };
    rc = phase(&c, sw, sh, sw - job->dst_w);
    if (rc) goto end;
    if (job->dst_h < sh) { /* the horizontal phase, on the transpose */
        transpose(idx, job->dst_w, sh, tmp);
        memcpy(idx, tmp, (size_t)job->dst_w * sh * sizeof *idx);
        rc = phase(&c, sh, job->dst_w, sh - job->dst_h);
        if (rc) goto end;
        transpose(idx, job->dst_h, job->dst_w, tmp);
        memcpy(idx, tmp, (size_t)job->dst_w * job->dst_h * sizeof *idx);
    }
    finish(job, idx);
    if (info) {
        info->seams_v = sw - job->dst_w;
        info->seams_h = sh - job->dst_h;
        info->cut_protected = c.cut_protected;
    }
end:
    trk_seam_scratch_destroy(&own);
    return rc;
}

/* The definition's phase: per seam, the whole cost and cumulative map. */
static int ref_phase(struct seam_ctx *c, int w, int h, int k)
{
    uint64_t *m = c->m;
    for (; k > 0; k--, w--) {
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint64_t e = seam_cost(c, c->idx, (size_t)w, w, h, x, y);
                if (y > 0) {
                    const uint64_t *up = m + (size_t)(y - 1) * w;
                    uint64_t best = up[x];
                    if (x > 0 && up[x - 1] < best) best = up[x - 1];
                    if (x < w - 1 && up[x + 1] < best) best = up[x + 1];
                    e += best;
                }
                m[(size_t)y * w + x] = e;
            }
        trk_seam_trace(m, (size_t)w, w, h, c->seam);
        trk_seam_remove(c, w, h, c->seam);
    }
    return 0;
}

int trk_seam_carve_ref(const struct trk_seam_job *job, struct trk_seam_info *info)
{
    return trk_seam_run(job, info, ref_phase, NULL);
}

long trk_seam_map_region(const struct trk_seam_map *map, const uint8_t *mask, size_t mask_pitch,
                         const int box[4], int out_box[4], double *cx, double *cy)
{
    if (!map->dst_of || map->dst_w < 1) return 0;
    int x0 = box[0] < 0 ? 0 : box[0], y0 = box[1] < 0 ? 0 : box[1];
    int x1 = box[2] >= map->src_w ? map->src_w - 1 : box[2];
    int y1 = box[3] >= map->src_h ? map->src_h - 1 : box[3];
    long kept = 0;
    double sx = 0, sy = 0;
    int b[4] = { map->dst_w, map->dst_h, -1, -1 };
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            if (mask && !mask[(size_t)y * mask_pitch + x]) continue;
            int32_t d = map->dst_of[(size_t)y * map->src_w + x];
            if (d < 0) continue;
            int ox = d % map->dst_w, oy = d / map->dst_w;
            kept++;
            sx += ox;
            sy += oy;
            b[0] = ox < b[0] ? ox : b[0];
            b[1] = oy < b[1] ? oy : b[1];
            b[2] = ox > b[2] ? ox : b[2];
            b[3] = oy > b[3] ? oy : b[3];
        }
    if (kept) {
        memcpy(out_box, b, sizeof b);
        *cx = sx / kept;
        *cy = sy / kept;
    }
    return kept;
}

const char *trk_seam_cuda_variant_name(int variant)
{
    static const char *const names[TRK_SEAM_CUDA_VARIANTS] = { "rows", "tiled" };
    return variant >= 0 && variant < TRK_SEAM_CUDA_VARIANTS ? names[variant] : "?";
}

#ifndef TRK_HAVE_CUDA
/* Without the CUDA form: every entry point says so. */
int trk_seam_cuda_create(struct trk_seam_cuda **out, int max_w, int max_h)
{
    (void)max_w;
    (void)max_h;
    if (out) *out = NULL;
    return TRK_ENODEV;
}

void trk_seam_cuda_destroy(struct trk_seam_cuda **s)
{
    if (s) *s = NULL;
}

int trk_seam_cuda_carve(struct trk_seam_cuda *s, int variant, const struct trk_seam_job *job,
                        struct trk_seam_info *info, double *device_ms)
{
    (void)s;
    (void)variant;
    (void)job;
    (void)info;
    (void)device_ms;
    return TRK_ENODEV;
}
#endif
