/* The pre-filter's definition (prefilter.h): weights, sample grids, the plain
 * reference and the fast row passes that give the same bytes. */
#include "prefilter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trk_assert.h"

/* ----------------------------------------------------------- weights */

/* The 1-D kernel for standard deviation s > 0 (prefilter.h's rule). */
static void make_kernel(double s, struct trk_prefilter_kernel *k)
{
    int r = (int)ceil(3.0 * s);
    if (r > TRK_PREFILTER_MAX_RADIUS) r = TRK_PREFILTER_MAX_RADIUS;
    if (r < 1) r = 1;
    /* e[i]: the exact share of offset i (>= 0; the kernel is symmetric). */
    double e[TRK_PREFILTER_MAX_RADIUS + 1], sum = 0;
    for (int i = 0; i <= r; i++) {
        /* i = 0 apart: 0 / 0 for a sigma so small that s * s underflows. */
        e[i] = i == 0 ? 1.0 : exp(-(double)(i * i) / (2.0 * s * s));
        sum += i == 0 ? e[i] : 2 * e[i];
    }
    int w[TRK_PREFILTER_MAX_RADIUS + 1], left = TRK_PREFILTER_ONE;
    for (int i = 0; i <= r; i++) {
        e[i] *= TRK_PREFILTER_ONE / sum;
        w[i] = (int)floor(e[i]);
        left -= i == 0 ? w[i] : 2 * w[i];
    }
    /* What flooring left (0..2r + 1) goes back one by one: the centre takes
     * an odd one, then symmetric pairs by largest remainder (nearer the
     * centre on ties), so the weights sum to exactly 256, stay symmetric and
     * never rise away from the centre. */
    if (left % 2) w[0]++, left--;
    while (left > 0) {
        int best = 1;
        for (int i = 2; i <= r; i++)
            if (e[i] - w[i] > e[best] - w[best]) best = i;
        w[best]++;
        left -= 2;
    }
    /* Outer taps that rounded to 0 only cost time. */
    while (r > 0 && w[r] == 0)
        r--;
    memset(k, 0, sizeof(*k));
    k->radius = r;
    for (int i = -r; i <= r; i++)
        k->w[r + i] = (uint16_t)w[i < 0 ? -i : i];
    /* The fast passes fold symmetric taps and keep sums in 16 bits. */
    for (int i = 0; i < r; i++)
        TRK_ASSERT(k->w[i] <= k->w[i + 1] && k->w[r] <= TRK_PREFILTER_ONE);
}

int trk_prefilter_init(struct trk_prefilter *pf, double sigma)
{
    memset(pf, 0, sizeof(*pf));
    for (int i = 0; i < 2; i++)
        pf->k[i].w[0] = TRK_PREFILTER_ONE; /* radius 0: identity */
    if (!(sigma >= 0 && sigma <= TRK_PREFILTER_MAX_SIGMA)) return TRK_EINVAL; /* NaN too */
    if (sigma == 0) return 0;
    pf->sigma = sigma;
    make_kernel(sigma, &pf->k[TRK_PREFILTER_FULL]);
    make_kernel(sigma / 2, &pf->k[TRK_PREFILTER_HALF]);
    return 0;
}

/* -------------------------------------------------------------- grids */

int trk_prefilter_chans(enum trk_pixfmt fmt, int width, int height,
                        struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS])
{
    if (width <= 0 || height <= 0) return TRK_EINVAL;
    const int cw = (width + 1) / 2, chh = (height + 1) / 2;
    const int F = TRK_PREFILTER_FULL, H = TRK_PREFILTER_HALF;
    switch (fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_BGR24:
    case TRK_FMT_RGBA:
    case TRK_FMT_BGRA: {
        const int bpp = trk_pixfmt_bpp(fmt);
        for (int c = 0; c < bpp; c++)
            ch[c] = (struct trk_prefilter_chan){ 0, c, bpp, width, height, F, F };
        return bpp;
    }
    case TRK_FMT_YUYV: /* Y0 U Y1 V: chroma subsampled along x only */
        ch[0] = (struct trk_prefilter_chan){ 0, 0, 2, width, height, F, F };
        ch[1] = (struct trk_prefilter_chan){ 0, 1, 4, cw, height, H, F };
        ch[2] = (struct trk_prefilter_chan){ 0, 3, 4, cw, height, H, F };
        return 3;
    case TRK_FMT_NV12:
        ch[0] = (struct trk_prefilter_chan){ 0, 0, 1, width, height, F, F };
        ch[1] = (struct trk_prefilter_chan){ 1, 0, 2, cw, chh, H, H };
        ch[2] = (struct trk_prefilter_chan){ 1, 1, 2, cw, chh, H, H };
        return 3;
    case TRK_FMT_I420:
        ch[0] = (struct trk_prefilter_chan){ 0, 0, 1, width, height, F, F };
        ch[1] = (struct trk_prefilter_chan){ 1, 0, 1, cw, chh, H, H };
        ch[2] = (struct trk_prefilter_chan){ 2, 0, 1, cw, chh, H, H };
        return 3;
    default: return TRK_EINVAL;
    }
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Bytes of the planes of a width x height frame of fmt at the output
 * pitches (0 for an unknown format). */
static size_t frame_size(enum trk_pixfmt fmt, int width, int height)
{
    struct trk_plane_layout L;
    if (trk_image_plane_layout(fmt, width, height, &L)) return 0;
    size_t total = 0;
    for (int p = 0; p < L.planes; p++)
        total += round_up(L.row_bytes[p], TRK_PREFILTER_PITCH_ALIGN) * (size_t)L.rows[p];
    return total;
}

size_t trk_prefilter_frame_bytes(int max_width, int max_height)
{
    size_t most = 0;
    for (int f = 0; f < TRK_FMT_COUNT; f++) {
        size_t s = frame_size((enum trk_pixfmt)f, max_width, max_height);
        if (s > most) most = s;
    }
    return most + TRK_PREFILTER_PITCH_ALIGN;
}

void trk_prefilter_frame_at(uint8_t *buf, const struct trk_image *src, struct trk_image *out,
                            uint8_t *dst[3])
{
    struct trk_plane_layout L;
    const int e = trk_image_plane_layout(src->fmt, src->width, src->height, &L);
    TRK_ASSERT(e == 0); /* callers pass checked images */
    *out = *src;
    size_t at = 0;
    for (int p = 0; p < 3; p++) {
        out->plane[p] = NULL;
        out->pitch[p] = 0;
    }
    for (int p = 0; p < L.planes; p++) {
        out->pitch[p] = round_up(L.row_bytes[p], TRK_PREFILTER_PITCH_ALIGN);
        out->plane[p] = buf + at;
        at += out->pitch[p] * (size_t)L.rows[p];
    }
    for (int p = 0; dst && p < 3; p++)
        dst[p] = p < L.planes ? buf + (out->plane[p] - buf) : NULL;
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---------------------------------------------------------- reference */

void trk_prefilter_ref(const struct trk_prefilter *pf, const struct trk_image *src,
                       uint8_t *const dst[3], const size_t dst_pitch[3], uint16_t *tmp)
{
    struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS];
    const int n = trk_prefilter_chans(src->fmt, src->width, src->height, ch);
    TRK_ASSERT(n > 0 && pf->sigma > 0);
    for (int i = 0; i < n; i++)
        trk_prefilter_ref_grid(pf, &ch[i], src, dst, dst_pitch, tmp);
}

void trk_prefilter_ref_grid(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                            const struct trk_image *src, uint8_t *const dst[3],
                            const size_t dst_pitch[3], uint16_t *tmp)
{
    {
        const struct trk_prefilter_kernel *kx = &pf->k[c->kx], *ky = &pf->k[c->ky];
        const uint8_t *in = src->plane[c->plane] + c->offset;
        const size_t pitch = src->pitch[c->plane];
        const int W = c->width, H = c->height;
        /* Horizontal: 16-bit sums (at most 255 * 256). */
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint32_t s = 0;
                for (int d = -kx->radius; d <= kx->radius; d++) {
                    const int xx = clampi(x + d, 0, W - 1);
                    s += (uint32_t)kx->w[kx->radius + d] *
                         in[(size_t)y * pitch + (size_t)xx * (size_t)c->step];
                }
                TRK_ASSERT(s <= UINT16_MAX);
                tmp[(size_t)y * (size_t)W + (size_t)x] = (uint16_t)s;
            }
        /* Vertical, then the one rounding. */
        uint8_t *out = dst[c->plane] + c->offset;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint32_t s = 0;
                for (int d = -ky->radius; d <= ky->radius; d++) {
                    const int yy = clampi(y + d, 0, H - 1);
                    s += (uint32_t)ky->w[ky->radius + d] * tmp[(size_t)yy * (size_t)W + (size_t)x];
                }
                out[(size_t)y * dst_pitch[c->plane] + (size_t)x * (size_t)c->step] =
                    (uint8_t)((s + 32768) >> 16);
            }
    }
}

/* -------------------------------------------------------- fast passes */

size_t trk_prefilter_tmp_pitch(int width)
{
    return round_up((size_t)width, 32); /* 64-byte rows */
}

size_t trk_prefilter_tmp_slab(int width, int height)
{
    return trk_prefilter_tmp_pitch(width) * (size_t)height;
}

size_t trk_prefilter_tmp_elems(int max_width, int max_height)
{
    return TRK_PREFILTER_MAX_CHANS * trk_prefilter_tmp_slab(max_width, max_height);
}

size_t trk_prefilter_pad_bytes(int max_width)
{
    return (size_t)max_width + 2 * TRK_PREFILTER_MAX_RADIUS + 64;
}

void trk_prefilter_hrows(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                         const struct trk_image *src, int y0, int y1, uint16_t *slab,
                         size_t tmp_pitch, uint8_t *pad)
{
    const struct trk_prefilter_kernel *k = &pf->k[c->kx];
    const int r = k->radius, W = c->width, step = c->step;
    for (int y = y0; y < y1; y++) {
        /* The row with r replicated samples on each side, contiguous. */
        const uint8_t *in = src->plane[c->plane] + (size_t)y * src->pitch[c->plane] + c->offset;
        if (step == 1) {
            memcpy(pad + r, in, (size_t)W);
        } else {
            for (int x = 0; x < W; x++)
                pad[r + x] = in[(size_t)x * (size_t)step];
        }
        memset(pad, pad[r], (size_t)r);
        memset(pad + r + W, pad[r + W - 1], (size_t)r);
        /* Symmetric taps folded: w[t] (a + b). Every partial sum is at most
         * the whole (255 * 256), so 16 bits are exact. */
        uint16_t *restrict out = slab + (size_t)y * tmp_pitch;
        const uint8_t *restrict p = pad;
        const uint16_t wc = k->w[r];
        for (int x = 0; x < W; x++)
            out[x] = (uint16_t)(wc * p[x + r]);
        for (int t = 0; t < r; t++) {
            const uint16_t wt = k->w[t];
            const uint8_t *restrict a = p + t, *restrict b = p + 2 * r - t;
            for (int x = 0; x < W; x++)
                out[x] = (uint16_t)(out[x] + wt * (uint16_t)(a[x] + b[x]));
        }
    }
}

/* Samples of one vertical chunk: the 32-bit sums stay in L1. */
#define VCHUNK 256

void trk_prefilter_vrows(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                         const uint16_t *slab, size_t tmp_pitch, int y0, int y1,
                         uint8_t *const dst[3], const size_t dst_pitch[3])
{
    const struct trk_prefilter_kernel *k = &pf->k[c->ky];
    const int r = k->radius, W = c->width, H = c->height, step = c->step;
    uint32_t acc[VCHUNK];
    for (int y = y0; y < y1; y++) {
        uint8_t *out = dst[c->plane] + (size_t)y * dst_pitch[c->plane] + c->offset;
        for (int x0 = 0; x0 < W; x0 += VCHUNK) {
            const int n = W - x0 < VCHUNK ? W - x0 : VCHUNK;
            const uint16_t *restrict rc = slab + (size_t)y * tmp_pitch + x0;
            const uint32_t wc = k->w[r];
            for (int i = 0; i < n; i++)
                acc[i] = wc * rc[i];
            for (int t = 0; t < r; t++) {
                const uint32_t wt = k->w[t];
                const int ya = clampi(y - r + t, 0, H - 1), yb = clampi(y + r - t, 0, H - 1);
                const uint16_t *restrict a = slab + (size_t)ya * tmp_pitch + x0;
                const uint16_t *restrict b = slab + (size_t)yb * tmp_pitch + x0;
                for (int i = 0; i < n; i++)
                    acc[i] += wt * ((uint32_t)a[i] + b[i]);
            }
            if (step == 1) {
                for (int i = 0; i < n; i++)
                    out[x0 + i] = (uint8_t)((acc[i] + 32768) >> 16);
            } else {
                for (int i = 0; i < n; i++)
                    out[(size_t)(x0 + i) * (size_t)step] = (uint8_t)((acc[i] + 32768) >> 16);
            }
        }
    }
}

/* Grows *p to at least need bytes; 0 or TRK_ENOMEM. */
static int grow(void **p, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    void *n = realloc(*p, need);
    if (!n) return TRK_ENOMEM;
    *p = n;
    *cap = need;
    return 0;
}

int trk_prefilter_apply(const struct trk_prefilter *pf, const struct trk_image *src,
                        struct trk_prefilter_buf *buf, struct trk_image *out)
{
    if (!pf || pf->sigma <= 0 || trk_image_check(src)) return TRK_EINVAL;
    const int w = src->width, h = src->height;
    void *frame = buf->frame, *tmp = buf->tmp, *pad = buf->pad;
    int err = grow(&frame, &buf->frame_cap, trk_prefilter_frame_bytes(w, h));
    buf->frame = frame;
    if (!err) err = grow(&tmp, &buf->tmp_cap, trk_prefilter_tmp_elems(w, h) * sizeof(uint16_t));
    buf->tmp = tmp;
    if (!err) err = grow(&pad, &buf->pad_cap, trk_prefilter_pad_bytes(w));
    buf->pad = pad;
    if (err) return err;
    uint8_t *dst[3];
    trk_prefilter_frame_at(buf->frame, src, out, dst);
    struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS];
    const int n = trk_prefilter_chans(src->fmt, w, h, ch);
    const size_t tp = trk_prefilter_tmp_pitch(w);
    for (int i = 0; i < n; i++) {
        uint16_t *slab = buf->tmp + (size_t)i * trk_prefilter_tmp_slab(w, h);
        trk_prefilter_hrows(pf, &ch[i], src, 0, ch[i].height, slab, tp, buf->pad);
        trk_prefilter_vrows(pf, &ch[i], slab, tp, 0, ch[i].height, dst, out->pitch);
    }
    return 0;
}

void trk_prefilter_buf_free(struct trk_prefilter_buf *buf)
{
    if (!buf) return;
    free(buf->frame);
    free(buf->tmp);
    free(buf->pad);
    memset(buf, 0, sizeof(*buf));
}
