/* Canny's definition (canny.h): the settings, the luma rule, the derived
 * figures and trk_canny_ref, the plain transcription every other
 * implementation is tested against. Clarity over speed: whole-frame arrays,
 * one rule per loop. */
#include "canny.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "canny_impl.h"
#include "color.h"

int trk_canny_params_init(struct trk_canny_params *p, const struct trk_canny_cfg *cfg)
{
    memset(p, 0, sizeof(*p));
    trk_prefilter_init(&p->pf, 0);
    if (!cfg || cfg->low < 0 || cfg->low > cfg->high || cfg->high > TRK_CANNY_MAX_THRESH)
        return TRK_EINVAL;
    int e = trk_prefilter_init(&p->pf, cfg->sigma);
    if (e) return e;
    p->low2 = (uint32_t)cfg->low * (uint32_t)cfg->low;
    p->high2 = (uint32_t)cfg->high * (uint32_t)cfg->high;
    return 0;
}

void trk_canny_stats_derive(struct trk_canny_stats *st)
{
    const double px = (double)st->pixels, m2 = (double)st->edge_m2;
    st->density = px > 0 ? (double)st->edges / px : 0;
    st->gradient = st->edges ? sqrt(m2 / (double)st->edges) : 0;
    st->sharpness = px > 0 ? sqrt(m2 / px) : 0;
}

uint8_t trk_canny_luma(const struct trk_image *img, int x, int y)
{
    const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
    switch (img->fmt) {
    case TRK_FMT_YUYV: return row[(size_t)x * 2];
    case TRK_FMT_NV12:
    case TRK_FMT_I420: return row[x];
    default: break;
    }
    const int bpp = trk_pixfmt_bpp(img->fmt);
    const uint8_t *px = row + (size_t)x * (size_t)bpp;
    const int bgr = img->fmt == TRK_FMT_BGR24 || img->fmt == TRK_FMT_BGRA;
    const struct trk_rgb2ycc_coef *k =
        &trk_rgb2ycc_coefs[trk_coef_index(img->matrix, img->full_range)];
    return trk_canny_y(k, px[bgr ? 2 : 0], px[1], px[bgr ? 0 : 2]);
}

int trk_canny_check(const struct trk_canny_params *p, const struct trk_image *img,
                    const uint8_t *edges, size_t edges_pitch, bool device_ok)
{
    if (!p || !img || trk_image_check(img)) return TRK_EINVAL;
    if (img->mem != TRK_MEM_HOST && !(device_ok && img->mem == TRK_MEM_CUDA)) return TRK_EINVAL;
    return edges && edges_pitch < (size_t)img->width ? TRK_EINVAL : 0;
}

/* ------------------------------------------------------------ stages */

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Rule 2: B from L (W x H, packed rows). */
static void smooth(const struct trk_prefilter *pf, const uint8_t *L, uint8_t *B, int W, int H,
                   uint16_t *tmp)
{
    if (pf->sigma <= 0) {
        memcpy(B, L, (size_t)W * (size_t)H);
        return;
    }
    const struct trk_prefilter_chan c = { 0, 0, 1, W, H, TRK_PREFILTER_FULL, TRK_PREFILTER_FULL };
    struct trk_image grey = { .plane = { L }, .pitch = { (size_t)W }, .width = W, .height = H };
    uint8_t *dst[3] = { B, NULL, NULL };
    const size_t pitch[3] = { (size_t)W, 0, 0 };
    trk_prefilter_ref_grid(pf, &c, &grey, dst, pitch, tmp);
}

/* Rule 3 at (x, y). */
static void sobel(const uint8_t *B, int W, int H, int x, int y, int *gx, int *gy)
{
    int v[3][3];
    for (int j = -1; j <= 1; j++)
        for (int i = -1; i <= 1; i++)
            v[j + 1][i + 1] =
                B[(size_t)clampi(y + j, 0, H - 1) * (size_t)W + clampi(x + i, 0, W - 1)];
    *gx = (v[0][2] + 2 * v[1][2] + v[2][2]) - (v[0][0] + 2 * v[1][0] + v[2][0]);
    *gy = (v[2][0] + 2 * v[2][1] + v[2][2]) - (v[0][0] + 2 * v[0][1] + v[0][2]);
}

static uint32_t m2_at(const uint32_t *m2, int W, int H, int x, int y)
{
    return x < 0 || y < 0 || x >= W || y >= H ? 0 : m2[(size_t)y * (size_t)W + x];
}

/* Rules 4 and 5: the class of (x, y), TRK_CANNY_NONE, _WEAK or _STRONG. */
static uint8_t classify(const struct trk_canny_params *p, const uint32_t *m2, int W, int H, int x,
                        int y, int gx, int gy)
{
    const uint32_t m = m2[(size_t)y * (size_t)W + x];
    if (m <= p->low2) return TRK_CANNY_NONE;
    int dx, dy; /* n2 = (x + dx, y + dy), n1 the opposite: dy > 0, or dy == 0 and dx > 0 */
    const int sec = trk_canny_sector(gx, gy);
    switch (sec) {
    case TRK_CANNY_SECTOR_H: dx = 1, dy = 0; break;
    case TRK_CANNY_SECTOR_V: dx = 0, dy = 1; break;
    case TRK_CANNY_SECTOR_DIAG_DOWN: dx = 1, dy = 1; break;
    default: dx = -1, dy = 1; break;
    }
    if (!trk_canny_keeps(sec, m, m2_at(m2, W, H, x - dx, y - dy), m2_at(m2, W, H, x + dx, y + dy)))
        return TRK_CANNY_NONE;
    return m > p->high2 ? TRK_CANNY_STRONG : TRK_CANNY_WEAK;
}

/* Rule 6: every 8-connected component of candidates (cls != NONE), found
 * breadth first from its first pixel in raster order, is an edge when one
 * of its pixels is strong. seen and q: W H entries. */
static void hysteresis(const uint8_t *cls, int W, int H, uint8_t *seen, uint32_t *q, uint8_t *edge)
{
    const size_t n = (size_t)W * (size_t)H;
    memset(seen, 0, n);
    memset(edge, 0, n);
    for (size_t s = 0; s < n; s++) {
        if (cls[s] == TRK_CANNY_NONE || seen[s]) continue;
        size_t head = 0, tail = 0;
        int strong = 0;
        seen[s] = 1;
        q[tail++] = (uint32_t)s;
        while (head < tail) {
            const uint32_t i = q[head++];
            const int x = (int)(i % (uint32_t)W), y = (int)(i / (uint32_t)W);
            strong |= cls[i] == TRK_CANNY_STRONG;
            for (int j = -1; j <= 1; j++)
                for (int k = -1; k <= 1; k++) {
                    const int xx = x + k, yy = y + j;
                    if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
                    const size_t t = (size_t)yy * (size_t)W + (size_t)xx;
                    if (cls[t] == TRK_CANNY_NONE || seen[t]) continue;
                    seen[t] = 1;
                    q[tail++] = (uint32_t)t;
                }
        }
        for (size_t k = 0; strong && k < tail; k++)
            edge[q[k]] = 1;
    }
}

int trk_canny_ref(const struct trk_canny_params *p, const struct trk_image *img, uint8_t *edges,
                  size_t edges_pitch, struct trk_canny_stats *st)
{
    if (trk_canny_check(p, img, edges, edges_pitch, false)) return TRK_EINVAL;
    const int W = img->width, H = img->height;
    const size_t n = (size_t)W * (size_t)H;
    uint8_t *L = malloc(n), *B = malloc(n), *cls = malloc(n), *seen = malloc(n), *edge = malloc(n);
    int *gx = malloc(n * sizeof(int)), *gy = malloc(n * sizeof(int));
    uint32_t *m2 = malloc(n * sizeof(uint32_t)), *q = malloc(n * sizeof(uint32_t));
    uint16_t *tmp = malloc(n * sizeof(uint16_t));
    int err = TRK_ENOMEM;
    if (!L || !B || !cls || !seen || !edge || !gx || !gy || !m2 || !q || !tmp) goto end;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            L[(size_t)y * (size_t)W + x] = trk_canny_luma(img, x, y);
    smooth(&p->pf, L, B, W, H, tmp);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * (size_t)W + x;
            sobel(B, W, H, x, y, &gx[i], &gy[i]);
            m2[i] = (uint32_t)(gx[i] * gx[i] + gy[i] * gy[i]);
        }
    struct trk_canny_stats s = { .pixels = n };
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * (size_t)W + x;
            cls[i] = classify(p, m2, W, H, x, y, gx[i], gy[i]);
            s.strong += cls[i] == TRK_CANNY_STRONG;
        }
    hysteresis(cls, W, H, seen, q, edge);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * (size_t)W + x;
            if (edges) edges[(size_t)y * edges_pitch + x] = edge[i] ? 255 : 0;
            s.edges += edge[i];
            s.edge_m2 += edge[i] ? m2[i] : 0;
        }
    trk_canny_stats_derive(&s);
    if (st) *st = s;
    err = 0;
end:
    free(L), free(B), free(cls), free(seen), free(edge);
    free(gx), free(gy), free(m2), free(q), free(tmp);
    return err;
}
