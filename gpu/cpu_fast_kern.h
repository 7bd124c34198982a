/* Row kernels of the fast CPU backend, instantiated once per mask width.
 *
 * C has no templates, so cpu_fast.c includes this file twice per mask width
 * with NW (64-bit words per object mask: 1, 2 or 4), MT (the mask type:
 * uint64_t or a GCC vector of NW words), the mask operations MLD (load NW
 * words from a table row), MANY (any bit set) and MZERO defined, and KVAR (a
 * name suffix) when it compiles an extra copy for another instruction set:
 * first as is, then with KBLOBS defined, which makes the copy (names ending
 * in _b) whose run flush also records each blob object's runs for labelling
 * (flush_run_blobs). The plain copy is the one frames without blob objects
 * run, so they pay nothing for blobs. The second inclusion #undefs the
 * parameters at its end.
 * Everything here is static and private to cpu_fast.c; the shared pieces
 * (struct fctx, struct worker, flush_run) are defined there first.
 *
 * Every kernel classifies one row segment [xa, xb] of row y against every
 * object at once and hands runs of equal masks to flush_run:
 *   mask(pixel) = OR over spaces of (T0[c0] & T1[c1] & T2[c2])
 * where Tk are the per-channel tables of object bitmasks built by
 * set_objects. A pixel that matches nothing (most of a frame) costs a few
 * loads and ANDs; at NW == 2 a one-word summary table rejects it before the
 * two-word masks are read.
 */
#ifndef NW
#error "cpu_fast_kern.h is included by cpu_fast.c with NW, MT, MLD, MANY, MZERO defined"
#endif

#define KCAT2(a, b) a##b
#define KCAT(a, b)  KCAT2(a, b)
/* KVAR tells instruction-set builds apart (e.g. _avx2); empty by default. */
#ifndef KVAR
#define KVAR
#endif
/* KBLOBS: the copy that records runs for blob labelling, names ending _b. */
#ifdef KBLOBS
#define KBSUF      _b
#define KFLUSH_RUN flush_run_blobs
#else
#define KBSUF
#define KFLUSH_RUN flush_run
#endif
#define KNAME(base) KCAT(KCAT(KCAT(base##_w, NW), KVAR), KBSUF)

/* flush_run is compiled for the baseline instruction set; AVX copies of the
 * kernels define KFLUSH_PREP as _mm256_zeroupper() so its SSE code does not
 * run with dirty upper halves (a false dependency that made the AVX2 copy
 * slower than the SSE2 one where runs are frequent). */
#ifndef KFLUSH_PREP
#define KFLUSH_PREP() ((void)0)
#endif
#define KFLUSH(xs_, xe_)                                                                           \
    do {                                                                                           \
        KFLUSH_PREP();                                                                             \
        KFLUSH_RUN(w, f, &cur, NW, (xs_), (xe_), y);                                               \
    } while (0)

/* Run bookkeeping shared by the kernels (locals cur, cur_any, xs, w, f, y):
 * RUN_PUSH extends the current run when pixel x has the same mask, else
 * flushes it and starts a new one; RUN_BREAK ends it at a no-match pixel. */
#define RUN_PUSH(m, x)                                                                             \
    do {                                                                                           \
        if (MANY((m) ^ cur)) {                                                                     \
            if (cur_any) KFLUSH(xs, (x)-1);                                                        \
            cur = (m);                                                                             \
            cur_any = MANY(cur);                                                                   \
            xs = (x);                                                                              \
        }                                                                                          \
    } while (0)
#define RUN_BREAK(x)                                                                               \
    do {                                                                                           \
        if (cur_any) {                                                                             \
            KFLUSH(xs, (x)-1);                                                                     \
            cur = MZERO;                                                                           \
            cur_any = 0;                                                                           \
        }                                                                                          \
    } while (0)

/* Only rgb objects: the hot path of the standard scene. The three channel
 * pointers step by `stride` bytes, so packed RGB/BGR/RGBA/BGRA rows are read
 * in place (no de-interleave) and decoded YUV planes use stride 1. */
static inline __attribute__((always_inline)) void
KNAME(rgb_only_row)(struct worker *w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,
                    const uint8_t *bp, const int stride, int xa, int xb, int y)
{
    const struct tables *t = f->tab;
    const uint64_t *fr = t->full[TRK_SPACE_RGB][0], *fg = t->full[TRK_SPACE_RGB][1],
                   *fb = t->full[TRK_SPACE_RGB][2];
#if NW == 2
    const uint64_t *sr = t->sum[TRK_SPACE_RGB][0], *sg = t->sum[TRK_SPACE_RGB][1],
                   *sb = t->sum[TRK_SPACE_RGB][2];
#endif
    MT cur = MZERO;
    int cur_any = 0, xs = xa;
    rp += (size_t)xa * stride;
    gp += (size_t)xa * stride;
    bp += (size_t)xa * stride;
    for (int x = xa; x <= xb; x++, rp += stride, gp += stride, bp += stride) {
        unsigned r = *rp, g = *gp, b = *bp;
#if NW == 2
        /* With 4 words the summary is no use: each summary bit then stands
         * for 4 objects, and on gray noise some R, G and B bits of different
         * objects of a group meet in ~60% of the pixels, so the gate costs
         * more than the one-vector full test it would save. */
        if (!(sr[r] & sg[g] & sb[b])) {
            RUN_BREAK(x);
            continue;
        }
#endif
        MT m = MLD(fr + r * NW) & MLD(fg + g * NW) & MLD(fb + b * NW);
        RUN_PUSH(m, x);
    }
    if (cur_any) KFLUSH(xs, xb);
}

/* rgb objects on a YUV frame, straight from the native samples: the Q16
 * chroma terms of color.h's trk_yuv_to_rgb are computed once per chroma
 * sample (every 2 pixels), the luma term comes from a 256-entry table, and
 * the unclamped, rounded channel value indexes an "extended" mask table
 * (FAST_EXT_N entries, entry i = the mask of clamp255(i - FAST_EXT_OFF)),
 * which folds the clamp away. Same integers as trk_yuv_to_rgb: the offset is
 * a whole multiple of 65536 added before the shift. ystep/cstep: bytes
 * between the Y samples of neighbouring pixels and between chroma samples
 * (YUYV 2/4, NV12 1/2, I420 1/1). */
static inline __attribute__((always_inline)) void
KNAME(yuv_rgb_row)(struct worker *w, const struct fctx *f, const uint8_t *yp, const uint8_t *cbp,
                   const uint8_t *crp, const int ystep, const int cstep, int xa, int xb, int y)
{
    const struct tables *t = f->tab;
    const uint64_t *er = t->ext[0], *eg = t->ext[1], *eb = t->ext[2];
#if NW == 2
    const uint64_t *sr = t->ext_sum[0], *sg = t->ext_sum[1], *sb = t->ext_sum[2];
#endif
    const int32_t *yyt = f->yy;
    const struct trk_yuv2rgb_coef *k = f->k_yuv;
    const int32_t rnd = 32768 + (FAST_EXT_OFF << 16);
    int32_t tr = 0, tg = 0, tb = 0;
    MT cur = MZERO;
    int cur_any = 0, xs = xa;
    for (int x = xa; x <= xb; x++) {
        if (!(x & 1) || x == xa) {
            size_t c = (size_t)(x >> 1) * cstep;
            int32_t u = cbp[c] - 128, v = crp[c] - 128;
            tr = k->r_cr * v + rnd;
            tg = -k->g_cb * u - k->g_cr * v + rnd;
            tb = k->b_cb * u + rnd;
        }
        int32_t yy = yyt[yp[(size_t)x * ystep]];
        unsigned ri = (unsigned)(yy + tr) >> 16, gi = (unsigned)(yy + tg) >> 16,
                 bi = (unsigned)(yy + tb) >> 16;
#if NW == 2
        if (!(sr[ri] & sg[gi] & sb[bi])) {
            RUN_BREAK(x);
            continue;
        }
#endif
        MT m = MLD(er + ri * NW) & MLD(eg + gi * NW) & MLD(eb + bi * NW);
        RUN_PUSH(m, x);
    }
    if (cur_any) KFLUSH(xs, xb);
}

/* ycbcr objects on a YUV frame: the native samples, no conversion at all.
 * The chroma half of the test (Cb table & Cr table) is done once per chroma
 * sample, so each pixel costs one Y lookup and one AND. No summary gate:
 * the chroma mask is already zero for most pixels, and a gate on loosely
 * grouped summary bits only adds mispredicted branches (measured slower).
 * Steps as above. */
static inline __attribute__((always_inline)) void
KNAME(yuv_ycc_row)(struct worker *w, const struct fctx *f, const uint8_t *yp, const uint8_t *cbp,
                   const uint8_t *crp, const int ystep, const int cstep, int xa, int xb, int y)
{
    const struct tables *t = f->tab;
    const uint64_t *fy = t->full[TRK_SPACE_YCBCR][0], *fcb = t->full[TRK_SPACE_YCBCR][1],
                   *fcr = t->full[TRK_SPACE_YCBCR][2];
    MT cm = MZERO;
    MT cur = MZERO;
    int cur_any = 0, xs = xa;
    for (int x = xa; x <= xb; x++) {
        if (!(x & 1) || x == xa) {
            size_t c = (size_t)(x >> 1) * cstep;
            unsigned cb = cbp[c], cr = crp[c];
            cm = MLD(fcb + cb * NW) & MLD(fcr + cr * NW);
        }
        unsigned yv = yp[(size_t)x * ystep];
        MT m = MLD(fy + yv * NW) & cm;
        RUN_PUSH(m, x);
    }
    if (cur_any) KFLUSH(xs, xb);
}

/* Any mix of spaces. R,G,B as in rgb_only_row (they feed rgb and hsv objects);
 * Y,Cb,Cr are per-pixel planes with stride 1 (read only when ycbcr objects
 * exist). HSV needs a division per pixel, so it is computed lazily: V
 * (= max) gates first, then S from a (max, max - min) table, and only pixels
 * that pass both pay for the hue. */
static inline __attribute__((always_inline)) void
KNAME(generic_row)(struct worker *w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,
                   const uint8_t *bp, const int stride, const uint8_t *yp, const uint8_t *cbp,
                   const uint8_t *crp, int xa, int xb, int y)
{
    const struct tables *t = f->tab;
    const int has_rgb = t->has[TRK_SPACE_RGB], has_hsv = t->has[TRK_SPACE_HSV],
              has_ycc = t->has[TRK_SPACE_YCBCR];
    uint64_t *const *fr = t->full[TRK_SPACE_RGB], *const *sr = t->sum[TRK_SPACE_RGB];
    uint64_t *const *fh = t->full[TRK_SPACE_HSV], *const *sh = t->sum[TRK_SPACE_HSV];
    uint64_t *const *fy = t->full[TRK_SPACE_YCBCR], *const *sy = t->sum[TRK_SPACE_YCBCR];
    const uint8_t *stab = t->sat;
    MT cur = MZERO;
    int cur_any = 0, xs = xa;
    (void)sr;
    (void)sy;
    for (int x = xa; x <= xb; x++) {
        unsigned r = 0, g = 0, b = 0;
        if (has_rgb || has_hsv) {
            size_t o = (size_t)x * stride;
            r = rp[o], g = gp[o], b = bp[o];
        }
        MT m = MZERO;
        if (has_rgb) {
#if NW > 1
            if (sr[0][r] & sr[1][g] & sr[2][b])
#endif
                m |= MLD(fr[0] + r * NW) & MLD(fr[1] + g * NW) & MLD(fr[2] + b * NW);
        }
        if (has_ycc) {
            unsigned c0 = yp[x], c1 = cbp[x], c2 = crp[x];
#if NW > 1
            if (sy[0][c0] & sy[1][c1] & sy[2][c2])
#endif
                m |= MLD(fy[0] + c0 * NW) & MLD(fy[1] + c1 * NW) & MLD(fy[2] + c2 * NW);
        }
        if (has_hsv) {
            unsigned mx = r > g ? r : g, mn = r < g ? r : g;
            mx = mx > b ? mx : b;
            mn = mn < b ? mn : b;
            unsigned s = stab[mx << 8 | (mx - mn)];
            if (sh[2][mx] & sh[1][s]) {
                uint16_t h;
                uint8_t s2, v2;
                trk_rgb_to_hsv((int)r, (int)g, (int)b, &h, &s2, &v2);
                if (sh[0][h] & sh[1][s] & sh[2][mx])
                    m |= MLD(fh[0] + h * NW) & MLD(fh[1] + s * NW) & MLD(fh[2] + mx * NW);
            }
        }
        RUN_PUSH(m, x);
    }
    if (cur_any) KFLUSH(xs, xb);
}

/* The entry points the row dispatcher stores in its tables: one per pixel
 * stride the callers use (1: decoded planes, 3: RGB24/BGR24, 4: RGBA/BGRA). */
#define KWRAP(stride)                                                                              \
    static void KCAT(KNAME(rgb_only), KCAT(_s, stride))(struct worker * w, const struct fctx *f,   \
                                                        const uint8_t *rp, const uint8_t *gp,      \
                                                        const uint8_t *bp, int xa, int xb, int y)  \
    {                                                                                              \
        KNAME(rgb_only_row)(w, f, rp, gp, bp, stride, xa, xb, y);                                  \
    }                                                                                              \
    static void KCAT(KNAME(generic), KCAT(_s, stride))(                                            \
        struct worker * w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,             \
        const uint8_t *bp, const uint8_t *yp, const uint8_t *cbp, const uint8_t *crp, int xa,      \
        int xb, int y)                                                                             \
    {                                                                                              \
        KNAME(generic_row)(w, f, rp, gp, bp, stride, yp, cbp, crp, xa, xb, y);                     \
    }
KWRAP(1)
KWRAP(3)
KWRAP(4)
#undef KWRAP

/* YUV entry points, one per format (its sample steps). */
#define KWRAP_YUV(fmt, ystep, cstep)                                                               \
    static void KCAT(KNAME(yuv_rgb), KCAT(_, fmt))(struct worker * w, const struct fctx *f,        \
                                                   const uint8_t *yp, const uint8_t *cbp,          \
                                                   const uint8_t *crp, int xa, int xb, int y)      \
    {                                                                                              \
        KNAME(yuv_rgb_row)(w, f, yp, cbp, crp, ystep, cstep, xa, xb, y);                           \
    }                                                                                              \
    static void KCAT(KNAME(yuv_ycc), KCAT(_, fmt))(struct worker * w, const struct fctx *f,        \
                                                   const uint8_t *yp, const uint8_t *cbp,          \
                                                   const uint8_t *crp, int xa, int xb, int y)      \
    {                                                                                              \
        KNAME(yuv_ycc_row)(w, f, yp, cbp, crp, ystep, cstep, xa, xb, y);                           \
    }
KWRAP_YUV(yuyv, 2, 4)
KWRAP_YUV(nv12, 1, 2)
KWRAP_YUV(i420, 1, 1)
#undef KWRAP_YUV
#undef RUN_PUSH
#undef RUN_BREAK
#undef KFLUSH
#undef KFLUSH_RUN
#undef KNAME
#undef KBSUF
#undef KCAT
#undef KCAT2
/* After the blob copy, the parameters too: the next instantiation defines
 * its own. */
#ifdef KBLOBS
#undef KBLOBS
#undef KFLUSH_PREP
#undef KVAR
#undef NW
#undef MT
#undef MLD
#undef MANY
#undef MZERO
#endif
