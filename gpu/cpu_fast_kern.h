/* Row kernels of the fast CPU backend, instantiated once per mask width.
 *
 * C has no templates, so cpu_fast_rows.c includes this file twice per mask width
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
 * flushes it and starts a new one; RUN_BREAK ends it at a no-match pixel.
 * In the dense copies (dense = 1, a constant) each pixel's mask is only
 * stored, in w->mbuf, for dense_row. */
#define KST(p, v) (*(MT *)(p) = (v))
#define RUN_PUSH(m, x)                                                                             \
    do {                                                                                           \
        if (dense) {                                                                               \
            KST(mb + (size_t)(x)*NW, (m));                                                         \
        } else if (MANY((m) ^ cur)) {                                                              \
            if (cur_any) KFLUSH(xs, (x)-1);                                                        \
            cur = (m);                                                                             \
            cur_any = MANY(cur);                                                                   \
            xs = (x);                                                                              \
        }                                                                                          \
    } while (0)
#define RUN_BREAK(x)                                                                               \
    do {                                                                                           \
        if (dense) {                                                                               \
            KST(mb + (size_t)(x)*NW, MZERO);                                                       \
        } else if (cur_any) {                                                                      \
            KFLUSH(xs, (x)-1);                                                                     \
            cur = MZERO;                                                                           \
            cur_any = 0;                                                                           \
        }                                                                                          \
    } while (0)
/* Locals of the run bookkeeping, and its end of row. */
#define RUN_LOCALS                                                                                 \
    MT cur = MZERO;                                                                                \
    int cur_any = 0, xs = xa;                                                                      \
    uint64_t *const mb = w->mbuf;                                                                  \
    (void)mb
#define RUN_END()                                                                                  \
    do {                                                                                           \
        if (!dense && cur_any) KFLUSH(xs, xb);                                                     \
    } while (0)

/* Only rgb objects: the hot path of the standard scene. The three channel
 * pointers step by `stride` bytes, so packed RGB/BGR/RGBA/BGRA rows are read
 * in place (no de-interleave) and decoded YUV planes use stride 1. */
static inline __attribute__((always_inline)) void
KNAME(rgb_only_row)(struct worker *w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,
                    const uint8_t *bp, const int stride, int xa, int xb, int y, const int dense,
                    const int cls)
{
    const struct tables *t = f->tab;
    const uint64_t *fr = t->full[TRK_SPACE_RGB][0], *fg = t->full[TRK_SPACE_RGB][1],
                   *fb = t->full[TRK_SPACE_RGB][2];
#if NW == 2
    const uint64_t *sr = t->sum[TRK_SPACE_RGB][0], *sg = t->sum[TRK_SPACE_RGB][1],
                   *sb = t->sum[TRK_SPACE_RGB][2];
#endif
    RUN_LOCALS;
    rp += (size_t)xa * stride;
    gp += (size_t)xa * stride;
    bp += (size_t)xa * stride;
    for (int x = xa; x <= xb; x++, rp += stride, gp += stride, bp += stride) {
        unsigned r = *rp, g = *gp, b = *bp;
        /* Painted classes (cls, a constant: the copy for sets that have
         * them): one cell-table load, each class there ORs its object. */
        unsigned cm = cls ? t->cls_cells[trk_class_cell((int)r, (int)g, (int)b)] : 0;
#if NW == 2
        /* With 4 words the summary is no use: each summary bit then stands
         * for 4 objects, and on gray noise some R, G and B bits of different
         * objects of a group meet in ~60% of the pixels, so the gate costs
         * more than the one-vector full test it would save. */
        if (!dense && !(sr[r] & sg[g] & sb[b]) && !cm) {
            RUN_BREAK(x);
            continue;
        }
#endif
        MT m = MLD(fr + r * NW) & MLD(fg + g * NW) & MLD(fb + b * NW);
        for (; cm; cm &= cm - 1)
            m |= MLD(t->cls_mask[__builtin_ctz(cm)]);
        RUN_PUSH(m, x);
    }
    RUN_END();
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
                   const uint8_t *crp, const int ystep, const int cstep, int xa, int xb, int y,
                   const int dense)
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
    RUN_LOCALS;
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
        if (!dense && !(sr[ri] & sg[gi] & sb[bi])) {
            RUN_BREAK(x);
            continue;
        }
#endif
        MT m = MLD(er + ri * NW) & MLD(eg + gi * NW) & MLD(eb + bi * NW);
        RUN_PUSH(m, x);
    }
    RUN_END();
}

/* ycbcr objects on a YUV frame: the native samples, no conversion at all.
 * The chroma half of the test (Cb table & Cr table) is done once per chroma
 * sample, so each pixel costs one Y lookup and one AND. No summary gate:
 * the chroma mask is already zero for most pixels, and a gate on loosely
 * grouped summary bits only adds mispredicted branches (measured slower).
 * Steps as above. */
static inline __attribute__((always_inline)) void
KNAME(yuv_ycc_row)(struct worker *w, const struct fctx *f, const uint8_t *yp, const uint8_t *cbp,
                   const uint8_t *crp, const int ystep, const int cstep, int xa, int xb, int y,
                   const int dense)
{
    const struct tables *t = f->tab;
    const uint64_t *fy = t->full[TRK_SPACE_YCBCR][0], *fcb = t->full[TRK_SPACE_YCBCR][1],
                   *fcr = t->full[TRK_SPACE_YCBCR][2];
    MT cm = MZERO;
    RUN_LOCALS;
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
    RUN_END();
}

/* Adds to *m the objects of space sp (a byte-channel space) whose box
 * holds c: the three tables ANDed, behind the summary gate when masks are
 * wider than a word. (Through a pointer: a vector return value would
 * change the ABI between instruction sets.) */
static inline __attribute__((always_inline)) void KNAME(space_mask)(const struct tables *t, int sp,
                                                                    const uint8_t c[3], MT *m)
{
    uint64_t *const *fs = t->full[sp];
#if NW > 1
    uint64_t *const *ss = t->sum[sp];
    if (!(ss[0][c[0]] & ss[1][c[1]] & ss[2][c[2]])) return;
#endif
    *m |= MLD(fs[0] + c[0] * NW) & MLD(fs[1] + c[1] * NW) & MLD(fs[2] + c[2] * NW);
}

/* Any mix of spaces. R,G,B as in rgb_only_row (they feed rgb, hsv, lab and
 * rg objects); Y,Cb,Cr are per-pixel planes with stride 1 (read only when
 * ycbcr objects exist). HSV needs a division per pixel, so it is computed
 * lazily: V (= max) gates first, then S from a (max, max - min) table, and
 * only pixels that pass both pay for the hue. lab (table lookups, color.h)
 * and rg (a division) are computed only when the set has objects in them,
 * and only in the copy with light = 1 (a constant, like dense), as is the
 * class lookup (painted classes: one cell-table load, then each class
 * that has the cell ORs its object's mask): the wrapper picks it per row
 * for such sets, so sets without lab, rg or class objects run the code
 * they ran before those existed. */
static inline __attribute__((always_inline)) void
KNAME(generic_row)(struct worker *w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,
                   const uint8_t *bp, const int stride, const uint8_t *yp, const uint8_t *cbp,
                   const uint8_t *crp, int xa, int xb, int y, const int dense, const int light)
{
    const struct tables *t = f->tab;
    const int has_rgb = t->has[TRK_SPACE_RGB], has_hsv = t->has[TRK_SPACE_HSV],
              has_ycc = t->has[TRK_SPACE_YCBCR], has_lab = light && t->has[TRK_SPACE_LAB],
              has_rg = light && t->has[TRK_SPACE_RG], has_cls = light && t->ncls;
    uint64_t *const *fr = t->full[TRK_SPACE_RGB], *const *sr = t->sum[TRK_SPACE_RGB];
    uint64_t *const *fh = t->full[TRK_SPACE_HSV], *const *sh = t->sum[TRK_SPACE_HSV];
    uint64_t *const *fy = t->full[TRK_SPACE_YCBCR], *const *sy = t->sum[TRK_SPACE_YCBCR];
    const uint8_t *stab = t->sat;
    RUN_LOCALS;
    (void)sr;
    (void)sy;
    for (int x = xa; x <= xb; x++) {
        unsigned r = 0, g = 0, b = 0;
        if (has_rgb || has_hsv || has_lab || has_rg || has_cls) {
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
        /* The cell gate (tables.gate): most pixels of a frame are far from
         * every lab and rg box and skip both conversions. */
        const unsigned cell = (r >> 3) << 10 | (g >> 3) << 5 | b >> 3;
        const int gate_ok =
            (has_lab || has_rg) && (!t->gate || (t->gate[cell >> 6] >> (cell & 63) & 1));
        if (has_lab && gate_ok) {
            uint8_t c[3];
            trk_rgb_to_lab(t->light, (int)r, (int)g, (int)b, &c[0], &c[1], &c[2]);
            KNAME(space_mask)(t, TRK_SPACE_LAB, c, &m);
        }
        if (has_rg && gate_ok) {
            uint8_t c[3];
            trk_rgb_to_rg(t->light, (int)r, (int)g, (int)b, &c[0], &c[1], &c[2]);
            KNAME(space_mask)(t, TRK_SPACE_RG, c, &m);
        }
        if (has_cls) { /* one lookup for every class object */
            unsigned cm = t->cls_cells[trk_class_cell((int)r, (int)g, (int)b)];
            for (; cm; cm &= cm - 1)
                m |= MLD(t->cls_mask[__builtin_ctz(cm)]);
        }
        RUN_PUSH(m, x);
    }
    RUN_END();
}

/* The entry points the row dispatcher stores in its tables: one per pixel
 * stride the callers use (1: decoded planes, 3: RGB24/BGR24, 4: RGBA/BGRA)
 * and per YUV format (its sample steps). The dense copies (suffix d, plain
 * kernels only: frames with blob objects keep the run path) are the same
 * classification with every pixel's mask stored in w->mbuf[x * NW] for
 * dense_row. KNAMEX expands its argument first (KNAME pastes it). */
#define KNAMEX(base) KNAME(base)
#define KWRAP(stride, sfx, dense)                                                                  \
    static void KCAT(KNAMEX(KCAT(rgb_only, sfx)), KCAT(_s, stride))(                               \
        struct worker * w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,             \
        const uint8_t *bp, int xa, int xb, int y)                                                  \
    {                                                                                              \
        if (f->tab->ncls)                                                                          \
            KNAME(rgb_only_row)(w, f, rp, gp, bp, stride, xa, xb, y, dense, 1);                    \
        else                                                                                       \
            KNAME(rgb_only_row)(w, f, rp, gp, bp, stride, xa, xb, y, dense, 0);                    \
    }                                                                                              \
    static void KCAT(KNAMEX(KCAT(generic, sfx)), KCAT(_s, stride))(                                \
        struct worker * w, const struct fctx *f, const uint8_t *rp, const uint8_t *gp,             \
        const uint8_t *bp, const uint8_t *yp, const uint8_t *cbp, const uint8_t *crp, int xa,      \
        int xb, int y)                                                                             \
    {                                                                                              \
        if (f->tab->has[TRK_SPACE_LAB] || f->tab->has[TRK_SPACE_RG] || f->tab->ncls)               \
            KNAME(generic_row)(w, f, rp, gp, bp, stride, yp, cbp, crp, xa, xb, y, dense, 1);       \
        else                                                                                       \
            KNAME(generic_row)(w, f, rp, gp, bp, stride, yp, cbp, crp, xa, xb, y, dense, 0);       \
    }
#define KWRAP_YUV(fmt, ystep, cstep, sfx, dense)                                                   \
    static void KCAT(KNAMEX(KCAT(yuv_rgb, sfx)),                                                   \
                     KCAT(_, fmt))(struct worker * w, const struct fctx *f, const uint8_t *yp,     \
                                   const uint8_t *cbp, const uint8_t *crp, int xa, int xb, int y)  \
    {                                                                                              \
        KNAME(yuv_rgb_row)(w, f, yp, cbp, crp, ystep, cstep, xa, xb, y, dense);                    \
    }                                                                                              \
    static void KCAT(KNAMEX(KCAT(yuv_ycc, sfx)),                                                   \
                     KCAT(_, fmt))(struct worker * w, const struct fctx *f, const uint8_t *yp,     \
                                   const uint8_t *cbp, const uint8_t *crp, int xa, int xb, int y)  \
    {                                                                                              \
        KNAME(yuv_ycc_row)(w, f, yp, cbp, crp, ystep, cstep, xa, xb, y, dense);                    \
    }
KWRAP(1, , 0)
KWRAP(3, , 0)
KWRAP(4, , 0)
KWRAP_YUV(yuyv, 2, 4, , 0)
KWRAP_YUV(nv12, 1, 2, , 0)
KWRAP_YUV(i420, 1, 1, , 0)
#ifndef KBLOBS
KWRAP(1, d, 1)
KWRAP(3, d, 1)
KWRAP(4, d, 1)
KWRAP_YUV(yuyv, 2, 4, d, 1)
KWRAP_YUV(nv12, 1, 2, d, 1)
KWRAP_YUV(i420, 1, 1, d, 1)
#undef KWRAP
#undef KWRAP_YUV
#undef KNAMEX

/* ------------------------------------------------------------ dense rows
 * A row whose masks change at nearly every pixel (noise, wide boxes) costs
 * the run path one flush per object per pixel. dense_row instead reads the
 * row's stored masks with the objects as bit lanes of MT and adds them up
 * bit-sliced: plane p of a count is an MT whose bit k is bit p of object
 * k's count, so one vector operation advances every object at once.
 *   - A chunk of 64 pixels is a binary tree of merges: two groups of 2^l
 *     pixels (counts cL, cR; sums of the pixel offsets in the group sL, sR)
 *     give c = cL + cR and s = sL + sR + (cR << l), the shift being a
 *     renaming of planes: a chunk yields its count (7 planes, <= 64) and
 *     offset sum (11 planes, <= 2016) in about 16 operations a pixel,
 *     whatever the number of objects up to 64 * NW.
 *   - Chunks add up over a segment of at most DSEG pixels: P += count,
 *     S += offset sum, A += P (prefix sums), so that the sum of chunk
 *     index times count is C * P - A (C chunks): no multiplication.
 *   - At the segment's end the planes are transposed (64 x 64 bits per
 *     word of objects) into per-object integers: mass += P, sum_x +=
 *     x0 * P + 64 (C P - A) + S, sum_y += y P: the reference's integers.
 *   - Second moments: the tree also sums the squared offsets (a merge adds
 *     qR + 2^(l+1) sR + 2^(2l) cR to qL: renamings again), a chunk's Q (17
 *     planes, <= 85344). Over the segment, with t = 64 c + o the pixel's
 *     offset from x0 and d = C - c, sum t^2 = 4096 sum c^2 n + 128 sum c s
 *     + Q needs two more prefix sums: AS += S (sum d s) and B += A (sum
 *     d (d + 1) / 2 n), so sum c s = C S - AS and sum c^2 n = C^2 P -
 *     2 C A + 2 B - A; then sum_xx += x0^2 P + 2 x0 T + sum t^2 (T the
 *     offset sum above), sum_xy += y (the row's sum_x), sum_yy += y^2 P.
 *     Q, AS and B take a second transpose. Cost: about twice the dense
 *     path without them (noisebox, 1080p, 1 thread, the shared 2-core
 *     machine: 4.8-6.9 ms before, 11.8-13.9 ms with), mostly the squares'
 *     planes in the tree; the run path adds two closed forms a run.
 *   - The box: the row's objects (OR of the counts' planes) are found by
 *     one scan from the left and one from the right over the stored masks,
 *     each ending when every object of the row has been seen.
 * ROIs: the stored masks are first AND-ed with the objects whose ROI holds
 * each stretch of the row (dense_rois), so the sums are the clipped ones.
 * Bounds: P <= 2048 (12 planes), A <= 32 * 2048 = 65536 (17), S <= 32 *
 * 2016 (16): 45 planes, one 64 x 64 transpose per mask word; Q <= 32 *
 * 85344 (22), AS <= 528 * 2016 (21), B <= 64 * 5984 (19): 62 planes, a
 * second transpose; the 64-bit sums stay below the bounds of backend.h
 * (TRK_MAX_SIDE). */
#ifndef DENSE_COMMON
#define DENSE_COMMON
#define DSEG  2048
#define DP_N  12
#define DA_N  17
#define DS_N  16
#define DQ_N  22
#define DAS_N 21
#define DB_N  19
/* Planes of a group of 2^l pixels' squared offset sum (<= 17 at l = 6). */
#define QPL(l) ((l) >= 2 ? 3 * (l)-1 : (l))
#endif
#if NW == 1
#define KW(v, i) (v)
#else
#define KW(v, i) ((v)[i])
#endif
#define KAI static inline __attribute__((always_inline))

/* r[0..nr) = a[0..na) + b[0..nb), bit-sliced (planes past na / nb are 0;
 * the caller sizes nr for the largest sum). Constant sizes after inlining:
 * the loop unrolls and the zero planes fold away. */
KAI void KNAME(bs_add)(MT *r, const int nr, const MT *a, const int na, const MT *b, const int nb)
{
    MT c = MZERO;
#pragma GCC unroll 24
    for (int i = 0; i < nr; i++) {
        const MT x = i < na ? a[i] : MZERO, z = i < nb ? b[i] : MZERO;
        const MT t = x ^ z;
        r[i] = t ^ c;
        c = (x & z) | (t & c);
    }
}

/* r[0..nr) = a[0..na) shifted up by k planes (times 2^k). */
KAI void KNAME(bs_shl)(MT *r, const int nr, const MT *a, const int na, const int k)
{
#pragma GCC unroll 24
    for (int i = 0; i < nr; i++)
        r[i] = i < k || i - k >= na ? MZERO : a[i - k];
}

/* Two neighbouring groups of 2^l pixels each (count l + 1 planes, offset
 * sum ns(l) = 2l - 1 planes, 0 at l = 0, squared offset sum QPL(l) planes)
 * into one of 2^(l+1). */
KAI void KNAME(bs_merge)(const int l, const MT *cL, const MT *sL, const MT *qL, const MT *cR,
                         const MT *sR, const MT *qR, MT *c, MT *s, MT *q)
{
    const int nc = l + 1, ns = l ? 2 * l - 1 : 0, ns2 = 2 * l + 1;
    const int nq = QPL(l), nq2 = QPL(l + 1);
    MT t[20], sh[20];
    KNAME(bs_add)(c, nc + 1, cL, nc, cR, nc);
    KNAME(bs_add)(t, ns2, sL, ns, sR, ns);
    KNAME(bs_shl)(sh, ns2, cR, nc, l);
    KNAME(bs_add)(s, ns2, t, ns2, sh, ns2);
    /* (2^l + o)^2 = o^2 + 2^(l+1) o + 2^(2l) over the right group. */
    KNAME(bs_add)(t, nq2, qL, nq, qR, nq);
    KNAME(bs_shl)(sh, nq2, sR, ns, l + 1);
    KNAME(bs_add)(t, nq2, t, nq2, sh, nq2);
    KNAME(bs_shl)(sh, nq2, cR, nc, 2 * l);
    KNAME(bs_add)(q, nq2, t, nq2, sh, nq2);
}

/* Count, offset sum and squared offset sum of 2^l masks at m (stride NW
 * words), l <= 6; depth first, so few planes are live at once. */
KAI void KNAME(bs_g2)(const uint64_t *m, MT *c, MT *s, MT *q)
{
    const MT a = MLD(m), b = MLD(m + NW);
    c[0] = a ^ b;
    c[1] = a & b;
    s[0] = b;
    q[0] = b;
}
#define KGROUP(l, half)                                                                            \
    KAI void KNAME(bs_g##l)(const uint64_t *m, MT *c, MT *s, MT *q)                                \
    {                                                                                              \
        MT cL[8], sL[12], qL[18], cR[8], sR[12], qR[18];                                           \
        KNAME(bs_g##half)(m, cL, sL, qL);                                                          \
        KNAME(bs_g##half)(m + (size_t)(half)*NW, cR, sR, qR);                                      \
        KNAME(bs_merge)(KGLOG_##half, cL, sL, qL, cR, sR, qR, c, s, q);                            \
    }
#define KGLOG_2  1
#define KGLOG_4  2
#define KGLOG_8  3
#define KGLOG_16 4
#define KGLOG_32 5
KGROUP(4, 2)
KGROUP(8, 4)
KGROUP(16, 8)
KGROUP(32, 16)
#undef KGROUP

/* A chunk of 64 masks: count (7 planes), offset sum (11 planes), squared
 * offset sum (17 planes). */
static void KNAME(bs_chunk)(const uint64_t *m, MT *c, MT *s, MT *q)
{
    MT cL[8], sL[12], qL[18], cR[8], sR[12], qR[18];
    KNAME(bs_g32)(m, cL, sL, qL);
    KNAME(bs_g32)(m + (size_t)32 * NW, cR, sR, qR);
    KNAME(bs_merge)(5, cL, sL, qL, cR, sR, qR, c, s, q);
}

/* The stored masks of row y AND-ed with the objects whose ROI holds each
 * stretch (f->seg_*: the stretches between the ROIs' edges, and which
 * objects' x ranges hold each) and row y. */
static void KNAME(dense_rois)(struct worker *w, const struct fctx *f, int y)
{
    uint64_t ay[FAST_MAX_WORDS] = { 0 };
    for (int k = 0; k < f->tab->n; k++) {
        const struct trk_roi *r = &f->roi[k];
        if (y >= r->y0 && y <= r->y1) ay[k >> 6] |= 1ull << (k & 63);
    }
    MT allow_y;
    memcpy(&allow_y, ay, sizeof(allow_y));
    uint64_t *mb = w->mbuf;
    for (int sg = 0; sg < f->nseg; sg++) {
        MT al;
        memcpy(&al, f->seg_allow + (size_t)sg * FAST_MAX_WORDS, sizeof(al));
        al &= allow_y;
        for (int x = f->seg_x[sg]; x < f->seg_x[sg + 1]; x++)
            KST(mb + (size_t)x * NW, MLD(mb + (size_t)x * NW) & al);
    }
}

/* The transposed planes of one mask word wi: n planes from each of the
 * k lists (pl[j], np[j] planes each) into t[0..64), then per object b the
 * value is t[b] (fields in list order, from bit 0 up). */
static void KNAME(dense_transpose)(const MT *const *pl, const int *np, int k, int wi,
                                   uint64_t t[64])
{
    (void)wi; /* KW ignores it when NW == 1 */
    int i = 0;
    for (int j = 0; j < k; j++)
        for (int p = 0; p < np[j]; p++)
            t[i++] = KW(pl[j][p], wi);
    while (i < 64)
        t[i++] = 0;
    transpose64(t);
}

/* Segment [s0, s1] of row y's stored masks (at most DSEG pixels) into the
 * accumulators (see above); ORs the objects present into *rany and returns
 * the pixel matches counted. */
static uint64_t KNAME(dense_seg)(struct worker *w, const uint64_t *mb, int s0, int s1, int y,
                                 MT *rany)
{
    MT P[DP_N], A[DA_N], S[DS_N], Q[DQ_N], AS[DAS_N], B[DB_N];
    for (int i = 0; i < DP_N; i++)
        P[i] = MZERO;
    for (int i = 0; i < DA_N; i++)
        A[i] = MZERO;
    for (int i = 0; i < DS_N; i++)
        S[i] = MZERO;
    for (int i = 0; i < DQ_N; i++)
        Q[i] = MZERO;
    for (int i = 0; i < DAS_N; i++)
        AS[i] = MZERO;
    for (int i = 0; i < DB_N; i++)
        B[i] = MZERO;
    uint64_t C = 0, matches = 0;
    for (int c0 = s0; c0 <= s1; c0 += 64, C++) {
        MT cnt[8], sum[12], sq[18];
        KNAME(bs_chunk)(mb + (size_t)c0 * NW, cnt, sum, sq);
        KNAME(bs_add)(P, DP_N, P, DP_N, cnt, 7);
        KNAME(bs_add)(A, DA_N, A, DA_N, P, DP_N);
        KNAME(bs_add)(B, DB_N, B, DB_N, A, DA_N);
        KNAME(bs_add)(S, DS_N, S, DS_N, sum, 11);
        KNAME(bs_add)(AS, DAS_N, AS, DAS_N, S, DS_N);
        KNAME(bs_add)(Q, DQ_N, Q, DQ_N, sq, 17);
    }
    MT any = MZERO;
    for (int i = 0; i < DP_N; i++)
        any |= P[i];
    *rany |= any;
    const MT *pl1[3] = { P, A, S }, *pl2[3] = { Q, AS, B };
    static const int np1[3] = { DP_N, DA_N, DS_N }, np2[3] = { DQ_N, DAS_N, DB_N };
    const uint64_t x0 = (uint64_t)s0, yy = (uint64_t)y;
    for (int wi = 0; wi < NW; wi++) {
        uint64_t aw = KW(any, wi);
        if (!aw) continue;
        uint64_t t[64], u[64];
        KNAME(dense_transpose)(pl1, np1, 3, wi, t);
        KNAME(dense_transpose)(pl2, np2, 3, wi, u);
        while (aw) {
            const int b = __builtin_ctzll(aw);
            aw &= aw - 1;
            const uint64_t v = t[b], v2 = u[b];
            const uint64_t pc = v & ((1u << DP_N) - 1);
            const uint64_t av = (v >> DP_N) & ((1u << DA_N) - 1);
            const uint64_t sv = v >> (DP_N + DA_N);
            const uint64_t qv = v2 & ((1u << DQ_N) - 1);
            const uint64_t asv = (v2 >> DQ_N) & ((1u << DAS_N) - 1);
            const uint64_t bv = v2 >> (DQ_N + DAS_N);
            /* Offsets t from x0: their sum and (mod 2^64, exact at the
             * end) their squares' sum. */
            const uint64_t ts = 64 * (C * pc - av) + sv;
            const uint64_t c2n = C * C * pc - 2 * C * av + 2 * bv - av;
            const uint64_t tq = 4096 * c2n + 128 * (C * sv - asv) + qv;
            const uint64_t rsx = x0 * pc + ts;
            struct acc *c = &w->acc[wi * 64 + b];
            c->mass += pc;
            c->sum_x += rsx;
            c->sum_y += yy * pc;
            c->sum_xx += x0 * x0 * pc + 2 * x0 * ts + tq;
            c->sum_yy += yy * yy * pc;
            c->sum_xy += yy * rsx;
            if (y < c->y0) c->y0 = y;
            if (y > c->y1) c->y1 = y;
            matches += pc;
        }
    }
    return matches;
}

/* Row y's masks, stored by a dense kernel copy, into the accumulators. */
static void KNAME(dense_row)(struct worker *w, const struct fctx *f, int y)
{
    uint64_t *const mb = w->mbuf;
    const int xa = f->xa, xb = f->xb;
    /* The last chunk's pixels past the row add nothing. */
    for (int x = xb + 1; x < xb + 64; x++)
        KST(mb + (size_t)x * NW, MZERO);
    if (f->use_rois) KNAME(dense_rois)(w, f, y);
    if (w->dprobe) { /* runs of equal masks, as the run path would flush them */
        unsigned nrun = 0, nnz = 0;
        MT prev = MZERO;
        for (int x = xa; x <= xb; x++) {
            const MT m = MLD(mb + (size_t)x * NW);
            if (MANY(m)) {
                nnz++;
                nrun += MANY(m ^ prev);
            }
            prev = m;
        }
        w->dnrun = nrun, w->dnnz = nnz;
    }
    MT rany = MZERO;
    uint64_t matches = 0;
    for (int s0 = xa; s0 <= xb; s0 += DSEG)
        matches += KNAME(dense_seg)(w, mb, s0, s0 + DSEG - 1 < xb ? s0 + DSEG - 1 : xb, y, &rany);
    w->dmatch = matches;
    /* The box: first and last pixel of each object of the row, one scan from
     * each end, each ending when every object of the row has been seen. */
    for (int from_right = 0; from_right < 2; from_right++) {
        MT need = rany;
        const int step = from_right ? -1 : 1;
        for (int x = from_right ? xb : xa; x >= xa && x <= xb && MANY(need); x += step) {
            const MT m = MLD(mb + (size_t)x * NW) & need;
            if (!MANY(m)) continue;
            need &= ~m;
            for (int wi = 0; wi < NW; wi++)
                for (uint64_t bits = KW(m, wi); bits; bits &= bits - 1) {
                    struct acc *c = &w->acc[wi * 64 + __builtin_ctzll(bits)];
                    if (from_right) {
                        if (x > c->x1) c->x1 = x;
                    } else if (x < c->x0) {
                        c->x0 = x;
                    }
                }
        }
    }
}
#undef KW
#undef KAI
#endif /* !KBLOBS */
#undef RUN_PUSH
#undef RUN_BREAK
#undef RUN_LOCALS
#undef RUN_END
#undef KST
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
