/* The fast CPU backend's row work: the run flush, the row kernels
 * (cpu_fast_kern.h, instantiated per mask width, with and without blobs,
 * portable and AVX2), the YUV row decode, the SSE2 box test of regions and
 * the per-row choice between the run and the dense path. */
#include "cpu_fast_int.h"

/* Records [a, b] of the row being classified in a blob object's list: it
 * extends the row's last run when they touch (runs of different masks that
 * both hold the object), so each run is maximal. */
static void blob_run(struct worker *w, struct blist *L, int a, int b)
{
    if (L->nrun > L->row0 && L->run[L->nrun - 1].x1 + 1 == a) {
        L->run[L->nrun - 1].x1 = b;
        return;
    }
    if (L->nrun == L->caprun && grow((void **)&L->run, &L->caprun, sizeof(*L->run))) {
        w->oom = 1;
        return;
    }
    if (L->nrun == L->row0) w->touched[w->ntouched++] = (uint16_t)(L - w->bl);
    L->run[L->nrun] = (struct run){ a, b, L->nrun, 0 };
    L->nrun++;
}

/* Adds the run [xs, xe] of row y to every object set in *maskp (nw words);
 * with blobs (a constant), records it for the blob objects too. */
static inline __attribute__((always_inline)) void flush_run_body(struct worker *w,
                                                                 const struct fctx *f,
                                                                 const void *maskp, int nw, int xs,
                                                                 int xe, int y, const int blobs)
{
    uint64_t m[FAST_MAX_WORDS];
    memcpy(m, maskp, (size_t)nw * sizeof(uint64_t));
    for (int wi = 0; wi < nw; wi++) {
        uint64_t bits = m[wi];
        while (bits) {
            int k = wi * 64 + __builtin_ctzll(bits);
            bits &= bits - 1;
            w->fwork++; /* the cost that picks a row's path (trk_fast_do_row) */
            int a = xs, b = xe;
            if (f->use_rois) {
                const struct trk_roi *r = &f->roi[k];
                if (y < r->y0 || y > r->y1) continue;
                if (a < r->x0) a = r->x0;
                if (b > r->x1) b = r->x1;
                if (a > b) continue;
            }
            struct acc *c = &w->acc[k];
            uint64_t len = (uint64_t)(b - a + 1);
            FAST_ADD_RUN(c, a, b, y, len);
            if (a < c->x0) c->x0 = a;
            if (b > c->x1) c->x1 = b;
            if (y < c->y0) c->y0 = y;
            if (y > c->y1) c->y1 = y;
            if (blobs && f->bidx[k] >= 0) blob_run(w, &w->bl[f->bidx[k]], a, b);
        }
    }
}

/* The flush of the plain kernels, and of their blob copies (KBLOBS). */
static void flush_run(struct worker *w, const struct fctx *f, const void *maskp, int nw, int xs,
                      int xe, int y)
{
    flush_run_body(w, f, maskp, nw, xs, xe, y, 0);
}
static void flush_run_blobs(struct worker *w, const struct fctx *f, const void *maskp, int nw,
                            int xs, int xe, int y)
{
    flush_run_body(w, f, maskp, nw, xs, xe, y, 1);
}

/* ----------------------------------------------------------- row kernels */

/* a[i] bit j <-> a[j] bit i: the 64 x 64 bit matrix transposed in place, by
 * swapping ever smaller off-diagonal blocks (32, 16, ..., 1). Dense rows
 * turn bit-sliced counts (one word a plane, a bit an object) into one word
 * an object. */
static void transpose64(uint64_t a[64])
{
    uint64_t m = 0x00000000FFFFFFFFull;
    for (int j = 32; j; j >>= 1, m ^= m << j)
        for (int k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            const uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;
            a[k] ^= t << j;
            a[k | j] ^= t;
        }
}

typedef uint64_t m128 __attribute__((vector_size(16)));
typedef uint64_t m256 __attribute__((vector_size(32)));

/* Loads of one table row (tables are 64-byte aligned, rows nw words). */
#define ld64(p)  (*(p))
#define ld128(p) (*(const m128 *)(p))
#define ld256(p) (*(const m256 *)(p))

#define NW      1
#define MT      uint64_t
#define MLD     ld64
#define MANY(m) ((m) != 0)
#define MZERO   0
#include "cpu_fast_kern.h"
#define KBLOBS 1
#include "cpu_fast_kern.h"

#define NW      2
#define MT      m128
#define MLD     ld128
#define MANY(m) (((m)[0] | (m)[1]) != 0)
#define MZERO   ((m128){ 0, 0 })
#include "cpu_fast_kern.h"
#define KBLOBS 1
#include "cpu_fast_kern.h"

#ifdef FAST_X86
/* SSE2 (every x86-64): OR the halves, one byte compare and movemask; GCC's
 * generic code for m[0]|m[1]|m[2]|m[3] moves every word to a GPR. */
/* A statement-expression macro, not a function: a 32-byte vector passed by
 * value draws GCC's psabi note. */
#define MANY(m)                                                                                    \
    __extension__({                                                                                \
        m256 m_ = (m);                                                                             \
        __m128i t_ = _mm_or_si128(_mm_set_epi64x((long long)m_[1], (long long)m_[0]),              \
                                  _mm_set_epi64x((long long)m_[3], (long long)m_[2]));             \
        _mm_movemask_epi8(_mm_cmpeq_epi8(t_, _mm_setzero_si128())) != 0xFFFF;                      \
    })
#else
#define MANY(m) (((m)[0] | (m)[1] | (m)[2] | (m)[3]) != 0)
#endif
#define NW    4
#define MT    m256
#define MLD   ld256
#define MZERO ((m256){ 0, 0, 0, 0 })
#include "cpu_fast_kern.h"
#define KBLOBS 1
#include "cpu_fast_kern.h"

#ifdef FAST_X86
#pragma GCC push_options
#pragma GCC target("avx2")
#define NW            4
#define KVAR          _avx2
#define KFLUSH_PREP() _mm256_zeroupper()
#define MT            m256
#define MLD           ld256
#define MANY(m)       (!_mm256_testz_si256((__m256i)(m), (__m256i)(m)))
#define MZERO         ((m256){ 0, 0, 0, 0 })
#include "cpu_fast_kern.h"
#define KBLOBS 1
#include "cpu_fast_kern.h"
#pragma GCC pop_options
#endif

/* The kernels cpu_fast_kern.h names base_<w>_<v>, for one mask width w (w1,
 * w2, w4, w4_avx2, and their blob copies w1_b ... w4_avx2_b) and the
 * variants a, b, c (strides s1, s3, s4 or formats yuyv, nv12, i420): one row
 * of a struct kernels table. */
#define KROW(base, w, a, b, c)                                                                     \
    {                                                                                              \
        base##_##w##_##a, base##_##w##_##b, base##_##w##_##c                                       \
    }
/* A whole table, with w1, w2, w4 the copies to use per mask width. */
#define KTABLE(base, w1, w2, w4, a, b, c)                                                          \
    {                                                                                              \
        KROW(base, w1, a, b, c), KROW(base, w2, a, b, c), KROW(base, w4, a, b, c)                  \
    }
/* Indirection so KSTRIDES and KYUVFMTS expand to three arguments each. */
#define KTABLE_OF(base, w1, w2, w4, vs) KTABLE(base, w1, w2, w4, vs)
#define KSTRIDES                        s1, s3, s4
#define KYUVFMTS                        yuyv, nv12, i420
/* The four plain tables of one width set. */
#define KTABLES_PLAIN(w1, w2, w4)                                                                  \
    .rgb_only = KTABLE_OF(rgb_only, w1, w2, w4, KSTRIDES),                                         \
    .generic = KTABLE_OF(generic, w1, w2, w4, KSTRIDES),                                           \
    .yuv_rgb = KTABLE_OF(yuv_rgb, w1, w2, w4, KYUVFMTS),                                           \
    .yuv_ycc = KTABLE_OF(yuv_ycc, w1, w2, w4, KYUVFMTS)
#define KERNELS(w1, w2, w4)                                                                        \
    {                                                                                              \
        KTABLES_PLAIN(w1, w2, w4),                                                                 \
    }

/* Their dense copies and the dense rows. */
#define KTABLES_DENSE(w1, w2, w4)                                                                  \
    .rgb_only_d = KTABLE_OF(rgb_onlyd, w1, w2, w4, KSTRIDES),                                      \
    .generic_d = KTABLE_OF(genericd, w1, w2, w4, KSTRIDES),                                        \
    .yuv_rgb_d = KTABLE_OF(yuv_rgbd, w1, w2, w4, KYUVFMTS),                                        \
    .yuv_ycc_d = KTABLE_OF(yuv_yccd, w1, w2, w4, KYUVFMTS),                                        \
    .dense = { dense_row_##w1, dense_row_##w2, dense_row_##w4 }
/* The plain tables: KERNELS and the dense copies. */
#define KERNELS_D(w1, w2, w4)                                                                      \
    {                                                                                              \
        KTABLES_PLAIN(w1, w2, w4), KTABLES_DENSE(w1, w2, w4)                                       \
    }

static const struct kernels kernels_portable = KERNELS_D(w1, w2, w4);
static const struct kernels kernels_portable_b = KERNELS(w1_b, w2_b, w4_b);
#ifdef FAST_X86
static const struct kernels kernels_avx2 = KERNELS_D(w1, w2, w4_avx2);
static const struct kernels kernels_avx2_b = KERNELS(w1_b, w2_b, w4_avx2_b);
#endif

/* k: the kernels of frames without blob objects, kb: their blob copies. */
void trk_fast_kernels_pick(struct kernels *k, struct kernels *kb, int portable)
{
    *k = kernels_portable;
    *kb = kernels_portable_b;
#ifdef FAST_X86
    if (!portable && __builtin_cpu_supports("avx2")) {
        *k = kernels_avx2;
        *kb = kernels_avx2_b;
    }
#else
    (void)portable;
#endif
}

static int nw_index(int nw)
{
    return nw == 1 ? 0 : nw == 2 ? 1 : 2;
}
static int stride_index(int stride)
{
    return stride == 1 ? 0 : stride == 3 ? 1 : 2;
}

/* ------------------------------------------------------------ row decode */

/* Native Y, Cb, Cr of the pixels [xa, xb] of row y of a YUV frame into
 * w->plane[3..5], indexed by x; the chroma sample covering pixel x is the
 * one of x / 2 (and row y / 2 for 4:2:0), with no interpolation. */
static void decode_ycc_row(const struct trk_image *img, int y, int xa, int xb, uint8_t *py,
                           uint8_t *pcb, uint8_t *pcr)
{
    const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
    switch (img->fmt) {
    case TRK_FMT_YUYV:
        for (int x = xa; x <= xb; x++) {
            const uint8_t *p = row + (size_t)(x >> 1) * 4;
            py[x] = row[2 * (size_t)x];
            pcb[x] = p[1];
            pcr[x] = p[3];
        }
        break;
    case TRK_FMT_NV12: {
        const uint8_t *uv = img->plane[1] + (size_t)(y >> 1) * img->pitch[1];
        memcpy(py + xa, row + xa, (size_t)(xb - xa + 1));
        for (int x = xa; x <= xb; x++) {
            pcb[x] = uv[(size_t)(x >> 1) * 2];
            pcr[x] = uv[(size_t)(x >> 1) * 2 + 1];
        }
        break;
    }
    case TRK_FMT_I420: {
        const uint8_t *u = img->plane[1] + (size_t)(y >> 1) * img->pitch[1];
        const uint8_t *v = img->plane[2] + (size_t)(y >> 1) * img->pitch[2];
        memcpy(py + xa, row + xa, (size_t)(xb - xa + 1));
        for (int x = xa; x <= xb; x++) {
            pcb[x] = u[x >> 1];
            pcr[x] = v[x >> 1];
        }
        break;
    }
    default: TRK_ASSERT(!"decode_ycc_row called for an RGB format");
    }
}

/* R, G, B from decoded Y, Cb, Cr planes: color.h's trk_yuv_to_rgb with the
 * chroma terms computed once per chroma sample (the same integer sums, so
 * the same bytes). */
static void yuv_planes_to_rgb(const struct trk_yuv2rgb_coef *k, int xa, int xb, const uint8_t *py,
                              const uint8_t *pcb, const uint8_t *pcr, uint8_t *pr, uint8_t *pg,
                              uint8_t *pb)
{
    int x = xa;
    while (x <= xb) {
        int u = pcb[x] - 128, v = pcr[x] - 128;
        int32_t tr = k->r_cr * v, tg = -k->g_cb * u - k->g_cr * v, tb = k->b_cb * u;
        /* Pixels x and x+1 share a chroma sample when x is even. */
        int end = (x & 1) || x == xb ? x : x + 1;
        for (; x <= end; x++) {
            int32_t yy = k->y_mul * (py[x] - k->y_off);
            pr[x] = trk_clamp255(trk_q16_round(yy + tr));
            pg[x] = trk_clamp255(trk_q16_round(yy + tg));
            pb[x] = trk_clamp255(trk_q16_round(yy + tb));
        }
    }
}

/* Y, Cb, Cr of packed RGB pixels (ycbcr objects on an RGB frame). */
static void rgb_to_ycc_row(const struct trk_rgb2ycc_coef *k, const uint8_t *rp, const uint8_t *gp,
                           const uint8_t *bp, int stride, int xa, int xb, uint8_t *py, uint8_t *pcb,
                           uint8_t *pcr)
{
    for (int x = xa; x <= xb; x++) {
        size_t o = (size_t)x * stride;
        trk_rgb_to_ycbcr(k, rp[o], gp[o], bp[o], &py[x], &pcb[x], &pcr[x]);
    }
}

#ifdef FAST_X86
/* One row of a region of one rgb object on packed RGB (f->box: 3 or 4
 * bytes a pixel): the object's box tested on 16 pixels at once with SSE2
 * (baseline x86-64): each byte is clamped into its channel's [lo, hi] and
 * compared with itself, a pixel matches when its three colour bytes do
 * (alpha's range is 0..255); the same test as the tables, so the same runs.
 * A region scans one object, so this replaces three table loads per pixel
 * with a few vector instructions per 16 pixels. */
static void box_row(struct worker *w, const struct fctx *f, int y)
{
    static const uint64_t one = 1;
    const int st = f->box;
    const uint64_t pix = st == 3 ? 0x249249249249ull : 0x1111111111111111ull; /* bit st * p */
    const uint8_t *row = f->img->plane[0] + (size_t)y * f->img->pitch[0];
    __m128i lo[4], hi[4];
    for (int v = 0; v < st; v++) {
        lo[v] = _mm_loadu_si128((const __m128i *)f->blo[v]);
        hi[v] = _mm_loadu_si128((const __m128i *)f->bhi[v]);
    }
    int xs = -1, xe = -1; /* the open run */
    /* Pixels [a, b] match: they extend the open run or start the next. */
#define BOX_RUN(a, b)                                                                              \
    do {                                                                                           \
        if (xs >= 0 && (a) == xe + 1) {                                                            \
            xe = (b);                                                                              \
        } else {                                                                                   \
            if (xs >= 0) (f->nb ? flush_run_blobs : flush_run)(w, f, &one, 1, xs, xe, y);          \
            xs = (a), xe = (b);                                                                    \
        }                                                                                          \
    } while (0)
    /* Bit st * p -> pixel p without a division: p = bit / 3 is
     * (bit * 43) >> 7 for every bit < 48. */
#define BOX_PX(bit) (st == 3 ? ((bit)*43) >> 7 : (bit) >> 2)
    int x = f->xa;
    for (; x + 15 <= f->xb; x += 16) {
        const uint8_t *p = row + (size_t)x * (size_t)st;
        uint64_t bits = 0;
        for (int v = 0; v < st; v++) {
            const __m128i d = _mm_loadu_si128((const __m128i *)(p + 16 * v));
            const __m128i in = _mm_cmpeq_epi8(_mm_max_epu8(_mm_min_epu8(d, hi[v]), lo[v]), d);
            bits |= (uint64_t)(unsigned)_mm_movemask_epi8(in) << (16 * v);
        }
        const uint64_t a = bits & (bits >> 1) & (bits >> 2) & pix;
        if (!a) continue;
        /* The block's runs: a start is a match whose left neighbour in the
         * block is none, an end one whose right neighbour is none; they
         * pair up in order, so a run costs one step, not one per pixel. */
        uint64_t s0 = a & ~(a << st), e0 = a & ~(a >> st);
        while (s0) {
            const int ps = __builtin_ctzll(s0), pe = __builtin_ctzll(e0);
            BOX_RUN(x + BOX_PX(ps), x + BOX_PX(pe));
            s0 &= s0 - 1;
            e0 &= e0 - 1;
        }
    }
    for (; x <= f->xb; x++) {
        const uint8_t *p = row + (size_t)x * (size_t)st;
        if (p[0] >= f->plo[0] && p[0] <= f->phi[0] && p[1] >= f->plo[1] && p[1] <= f->phi[1] &&
            p[2] >= f->plo[2] && p[2] <= f->phi[2])
            BOX_RUN(x, x);
    }
#undef BOX_PX
#undef BOX_RUN
    if (xs >= 0) (f->nb ? flush_run_blobs : flush_run)(w, f, &one, 1, xs, xe, y);
}
#endif

/* Sets up box_row for a region of object o (f->img set), or turns it off
 * (f->box = 0) where it does not apply. */
void trk_fast_box_setup(const struct cpu_fast *s, struct fctx *f, const struct trk_object_def *o)
{
    f->box = 0;
#ifdef FAST_X86
    const enum trk_pixfmt fmt = f->img->fmt;
    const int st = fmt == TRK_FMT_YUYV ? 0 : trk_fmt_bpp(fmt);
    if (s->portable || o->space != TRK_SPACE_RGB || (st != 3 && st != 4)) return;
    /* An empty range (lo > hi) would clamp to lo and match lo itself: such
     * a box matches nothing, which the tables say without help. */
    if (o->lo[0] > o->hi[0] || o->lo[1] > o->hi[1] || o->lo[2] > o->hi[2]) return;
    const int bgr = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
    for (int b = 0; b < 4; b++) { /* byte b of a pixel: its channel's range */
        const int c = b == 3 ? -1 : bgr ? 2 - b : b;
        f->plo[b] = c < 0 ? 0 : (uint8_t)o->lo[c];
        f->phi[b] = c < 0 ? 255 : (uint8_t)o->hi[c];
    }
    for (int v = 0; v < st; v++)
        for (int i = 0; i < 16; i++) {
            f->blo[v][i] = f->plo[(16 * v + i) % st];
            f->bhi[v][i] = f->phi[(16 * v + i) % st];
        }
    f->box = st;
#else
    (void)s, (void)o;
#endif
}

/* One row of the frame: decode what the objects need, run the kernel (its
 * dense copy when dense: the masks go to w->mbuf, no runs are flushed). */
static inline __attribute__((always_inline)) void
classify_row(struct worker *w, const struct fctx *f, int y, const int dense)
{
#ifdef FAST_X86
    if (f->box) {
        box_row(w, f, y);
        return;
    }
#endif
    const struct trk_image *img = f->img;
    const struct tables *t = f->tab;
    int nwi = nw_index(t->nw);
    /* Spaces other than rgb and ycbcr are all derived from R, G, B. */
    const int derived = t->has[TRK_SPACE_HSV] || t->has[TRK_SPACE_LAB] || t->has[TRK_SPACE_RG];
    /* Classes ride on the rgb kernels (their copy with the cell table), or
     * on the generic one with the other spaces. */
    int rgb_only = !derived && !t->has[TRK_SPACE_YCBCR];
    uint8_t **pl = w->plane;
    int stride = img->fmt == TRK_FMT_YUYV ? 0 : trk_fmt_bpp(img->fmt);

    if (stride) { /* packed RGB family (3 or 4 bytes): read in place */
        const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
        int bgr = img->fmt == TRK_FMT_BGR24 || img->fmt == TRK_FMT_BGRA;
        const uint8_t *rp = row + (bgr ? 2 : 0), *gp = row + 1, *bp = row + (bgr ? 0 : 2);
        int si = stride_index(stride);
        if (rgb_only) {
            (dense ? f->kern->rgb_only_d : f->kern->rgb_only)[nwi][si](w, f, rp, gp, bp, f->xa,
                                                                       f->xb, y);
            return;
        }
        if (t->has[TRK_SPACE_YCBCR])
            rgb_to_ycc_row(f->k_ycc, rp, gp, bp, stride, f->xa, f->xb, pl[3], pl[4], pl[5]);
        (dense ? f->kern->generic_d : f->kern->generic)[nwi][si](w, f, rp, gp, bp, pl[3], pl[4],
                                                                 pl[5], f->xa, f->xb, y);
        return;
    }
    /* YUV with objects of one space: straight from the native samples. */
    int only_ycc = !t->has[TRK_SPACE_RGB] && !derived && !t->ncls;
    /* The extended tables take unclamped R, G, B: not for classes. */
    if ((rgb_only && f->ext_ok && !t->ncls) || only_ycc) {
        const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
        const uint8_t *yp = row, *cbp, *crp;
        int fi;
        if (img->fmt == TRK_FMT_YUYV) {
            cbp = row + 1, crp = row + 3, fi = 0;
        } else if (img->fmt == TRK_FMT_NV12) {
            cbp = img->plane[1] + (size_t)(y >> 1) * img->pitch[1];
            crp = cbp + 1, fi = 1;
        } else {
            cbp = img->plane[1] + (size_t)(y >> 1) * img->pitch[1];
            crp = img->plane[2] + (size_t)(y >> 1) * img->pitch[2], fi = 2;
        }
        if (only_ycc)
            (dense ? f->kern->yuv_ycc_d : f->kern->yuv_ycc)[nwi][fi](w, f, yp, cbp, crp, f->xa,
                                                                     f->xb, y);
        else
            (dense ? f->kern->yuv_rgb_d : f->kern->yuv_rgb)[nwi][fi](w, f, yp, cbp, crp, f->xa,
                                                                     f->xb, y);
        return;
    }
    /* Mixed spaces: native samples into planes, RGB when objects of rgb or
     * a space derived from it exist, then the generic kernel. */
    decode_ycc_row(img, y, f->xa, f->xb, pl[3], pl[4], pl[5]);
    if (t->has[TRK_SPACE_RGB] || derived || t->ncls)
        yuv_planes_to_rgb(f->k_yuv, f->xa, f->xb, pl[3], pl[4], pl[5], pl[0], pl[1], pl[2]);
    if (rgb_only)
        (dense ? f->kern->rgb_only_d : f->kern->rgb_only)[nwi][0](w, f, pl[0], pl[1], pl[2], f->xa,
                                                                  f->xb, y);
    else
        (dense ? f->kern->generic_d : f->kern->generic)[nwi][0](w, f, pl[0], pl[1], pl[2], pl[3],
                                                                pl[4], pl[5], f->xa, f->xb, y);
}

/* Dense rows: a row goes the dense way when the worker's previous row gave
 * the run path more than FAST_DENSE_ON flushed object-runs per pixel
 * (noise: each object changes at nearly every pixel), and back when a
 * dense row's estimate of that work (runs of equal masks x objects per
 * matching pixel) falls under FAST_DENSE_OFF. Measured on the 2-core
 * machine: the run path costs ~5 ns per object-run (~13 when runs hold one
 * object), a dense row ~4.5 ns a pixel at 128 objects, so the switch is
 * about where they meet. Both paths give the same integers, so the choice
 * (made per worker, in strip order) never changes a result. */
#define FAST_DENSE_ON  1.0
#define FAST_DENSE_OFF 0.5
/* A dense row re-counts the runs (for FAST_DENSE_OFF) only every this many
 * rows: the count is a scan of the row's masks. */
#define FAST_DENSE_PROBE 8

/* One row of the frame: its path, then its accumulation. */
void trk_fast_do_row(struct worker *w, const struct fctx *f, int y)
{
    if (!f->dense_ok) {
        classify_row(w, f, y, 0);
        return;
    }
    const double px = (double)(f->xb - f->xa + 1);
    if (!w->dense) {
        w->fwork = 0;
        classify_row(w, f, y, 0);
        if ((double)w->fwork > FAST_DENSE_ON * px) w->dense = 1;
        return;
    }
    classify_row(w, f, y, 1);
    w->dprobe = ++w->drows % FAST_DENSE_PROBE == 0;
    f->kern->dense[nw_index(f->tab->nw)](w, f, y);
    if (!w->dprobe) return;
    const double est = w->dnnz ? (double)w->dnrun * (double)w->dmatch / (double)w->dnnz : 0;
    if (est < FAST_DENSE_OFF * px) w->dense = 0;
}
