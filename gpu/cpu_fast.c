/* The fast CPU backend ("cpu"): the same results as cpu_ref.c, bit for bit,
 * at a cost that barely grows with the number of objects.
 *
 * Design (CMVision's classic trick, widened to 256 objects):
 *   - set_objects builds, per colour space and channel, a table indexed by the
 *     channel value whose entry is the bitmask of the objects whose range
 *     contains that value (NW = 1, 2 or 4 64-bit words: only as many as the
 *     object count needs). A pixel's match mask is T0[c0] & T1[c1] & T2[c2],
 *     OR-ed over the spaces that have objects: every object in 3 loads.
 *   - A pixel that matches nothing (most of any frame) must cost little: at
 *     NW = 1 the masks are one word; at NW = 2 a one-word "summary" table
 *     (bit j = OR of bit j of both words) rejects it before the full masks
 *     are read; at NW = 4 the mask is one 256-bit vector (AVX2 copies of
 *     those kernels are picked at run time on x86-64).
 *   - Runs of pixels with equal masks are accumulated at once (mass += len,
 *     sum_x += arithmetic series), so a solid blob costs a few operations per
 *     row per object instead of per pixel.
 *   - Rows where runs are a pixel long (noise against wide boxes: each
 *     pixel a new mask of ~M/8 objects) would cost a flush per object per
 *     pixel; they take the dense path instead (cpu_fast_kern.h, "dense
 *     rows"): the row's masks are stored and summed bit-sliced, the objects
 *     as bit lanes, at a cost per pixel that does not grow with the objects
 *     (up to 64 per mask word). do_row picks the path per row from the
 *     previous row's flush work; frames with blob objects keep the run path.
 *   - Each space is computed once per pixel and only when some object needs
 *     it: rgb objects read packed rows in place; ycbcr objects read native
 *     YUV samples; HSV is gated by V and S before its hue division is paid.
 *   - Rows are handed out in strips from an atomic counter to a persistent
 *     pool of threads created at create; each thread owns its accumulators,
 *     merged at the end (sums and min/max are order-free, so any thread count
 *     gives the reference's exact integers).
 *
 * ROIs: the frame is scanned only over the union of the clipped ROIs, and
 * every run is clipped to each object's ROI when it is flushed.
 *
 * Regions (trk_backend_submit_regions, section "regions"): each region is
 * scanned alone over its clipped rectangle with its object's own one-word
 * tables (or, for rgb objects on packed RGB, an SSE2 box test), by one
 * thread, blobs labelled in that thread's lists; cost = the regions' areas.
 *
 * Blobs (objects with blobs > 0; the same lists as cpu_ref.c, bit for bit):
 * run-based labelling, the runs being the ones the row kernels already find.
 *   - Frames with blob objects run a second copy of the kernels (KBLOBS in
 *     cpu_fast_kern.h) whose flush also appends each blob object's clipped
 *     run to the worker's list for that object, extending the row's last
 *     run when they touch, so each run is maximal. Frames without blob
 *     objects run the plain copy: blobs cost them nothing.
 *   - Each strip (FAST_STRIP_ROWS rows, one thread) is labelled as it is
 *     classified: after each row, one merge-like sweep joins its runs to the
 *     connected runs of the row above (overlap widened by one pixel each
 *     side for 8-connectivity) in a union-find over runs whose root is
 *     always the smaller index, i.e. the earlier first pixel. At the end of
 *     the strip every root becomes a strip component and each run adds its
 *     stats to it: mass += len, sum_x by the arithmetic series, sum_y, bbox,
 *     and crack edges 2 + 2 len minus 2 per pixel shared with a run above
 *     (a 4-neighbour pair in the mask is always inside one blob, so that
 *     side is inside for both runs).
 *   - After the pool is done, the caller merges the seams: the last row of
 *     each strip against the first of the next, with the same sweep, joins
 *     strip components (of any workers; union by earlier first pixel, so a
 *     root carries its blob's first pixel) and takes the shared pixels off
 *     the perimeter. Every component's stats go to its root, and the roots
 *     of mass >= min_area are kept in a sorted top-K (trk_blob_before).
 *   Every integer is a sum or a min/max, so thread count and strip order
 *   do not change the result. The lists are allocated at set_objects and
 *   double when a frame needs more (noise, checkerboards), keeping their
 *   size, so a steady stream of frames allocates nothing.
 *
 * Threading contract: one caller thread at a time (backend.h); the pool's
 * workers touch only their own struct worker (blob lists included), read
 * the frame context, and write the seam entries of the strips they took.
 */
#include "backend_impl.h"
#include "color.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* x86-64 with GCC: the 4-word (129..256 objects) kernels get an AVX2 copy,
 * chosen at run time, so one binary runs everywhere and uses one 256-bit
 * register per mask where it can. Elsewhere the portable vector code runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FAST_X86 1
#include <immintrin.h>
#endif

/* Most worker threads one instance starts (cfg->threads is clamped). */
#define FAST_MAX_THREADS 64
/* Mask words for TRK_MAX_OBJECTS objects. */
#define FAST_MAX_WORDS (TRK_MAX_OBJECTS / 64)
/* Rows per strip handed to a thread: small enough to balance threads that
 * the OS schedules unevenly, large enough that the atomic counter is noise. */
#define FAST_STRIP_ROWS 16
/* Pixels a frame (or ROI union) needs before the pool is woken: below this
 * one thread finishes in about the time waking the others takes (~10 us). */
#define FAST_MIN_POOL_PIXELS 8192
/* Table rows: the most values a channel takes (hue, trk_chan_values). */
#define FAST_NVALS TRK_HUE_VALUES
/* Extended R/G/B mask tables for YUV frames (cpu_fast_kern.h, yuv_rgb_row):
 * entry i is the mask of channel value clamp255(i - FAST_EXT_OFF). The
 * unclamped values of every matrix/range of color.h lie in about -300..560;
 * fast_create checks that they fit, so the kernel needs no bounds test. */
#define FAST_EXT_OFF 384
#define FAST_EXT_N   1024
/* Row planes a worker decodes YUV into (R, G, B, Y, Cb, Cr). */
#define FAST_PLANES 6
/* Blob labelling: first capacities of a worker's run and strip-component
 * lists per blob object (they double when a frame needs more, and keep what
 * they reached). */
#define FAST_BLOB_RUNS0  1024
#define FAST_BLOB_COMPS0 256
/* A strip component's id across workers: index << FAST_WSHIFT | worker
 * (FAST_MAX_THREADS must fit in FAST_WSHIFT bits). */
#define FAST_WSHIFT 8
/* Regions: how many rows a worker's prefetch cursor (struct pcur) runs
 * ahead of the row being classified, across the end of one region into the
 * next one the worker holds. A region's rows are short and a page apart, so
 * the hardware prefetcher does not follow them: the loads of the frame's
 * bytes were most of a region's time (perf). Asking for a whole region when
 * it starts (the first form) left each region's start waiting on its first
 * rows; a cursor that streams into the next region keeps a few rows in
 * flight all the time. */
#define FAST_PREFETCH_ROWS 8

struct tables {
    int n;      /* objects */
    int nw;     /* 64-bit words per mask: 1, 2 or 4 */
    int has[3]; /* per trk_space: some object uses it */
    /* full[space][channel]: FAST_NVALS rows of nw words (stride nw), aligned
     * so a row loads as one vector. sum[space][channel]: one word per value,
     * bit j = OR of bit j of the row's words (equal to full when nw == 1). */
    uint64_t *full[3][3];
    uint64_t *sum[3][3];
    /* rgb objects on YUV frames: FAST_EXT_N rows of nw words per channel,
     * and their one-word summaries. */
    uint64_t *ext[3];
    uint64_t *ext_sum[3];
    /* HSV saturation by (max << 8 | (max - min)), from trk_rgb_to_hsv itself
     * so it is exact by construction; 64 KiB, replaces a division. */
    uint8_t *sat;
};

/* Per-object accumulators of one thread; bbox starts inverted so min/max
 * need no "first pixel" test. */
struct acc {
    uint64_t mass, sum_x, sum_y;
    int32_t x0, y0, x1, y1;
};

/* Blob labelling (see the header comment). One maximal run of a blob
 * object's mask (inside its ROI) on one row: a union-find node. */
struct run {
    int32_t x0, x1; /* inclusive */
    uint32_t p;     /* parent: index in the same list (roots point to themselves) */
    /* While its strip is labelled: pixels it shares with runs of the row
     * above in the strip (4-neighbours, for the perimeter). Once the strip is
     * resolved: the index of its strip component. */
    uint32_t v;
};

/* A component of one strip (a band of FAST_STRIP_ROWS rows): its stats and
 * its parent among all strips' components (an id, FAST_WSHIFT). */
struct comp {
    struct trk_blob b;
    uint64_t parent;
};

/* One worker's runs and strip components of one blob object in this frame:
 * every strip the worker took, one after the other. */
struct blist {
    struct run *run;
    struct comp *comp;
    uint32_t nrun, caprun, ncomp, capcomp;
    uint32_t row0; /* first run of the row being classified */
    /* First run of each row of the current strip, filled lazily (rows
     * without runs cost nothing): rs[0 .. nrs - 1] are set; at the strip's
     * end rs[j] for j >= nrs would be the list's end (no runs there). */
    uint32_t rs[FAST_STRIP_ROWS + 1];
    uint32_t nrs;
};

/* Where a strip's first and last rows' runs are in its worker's list
 * (per blob object): [a0, a1) and [z0, z1). */
struct sinfo {
    uint32_t a0, a1, z0, z1;
};

struct worker;
struct fctx;
/* Row kernels (cpu_fast_kern.h): classify one row segment, flush its runs. */
typedef void (*rgb_only_fn)(struct worker *, const struct fctx *, const uint8_t *, const uint8_t *,
                            const uint8_t *, int, int, int);
typedef void (*generic_fn)(struct worker *, const struct fctx *, const uint8_t *, const uint8_t *,
                           const uint8_t *, const uint8_t *, const uint8_t *, const uint8_t *, int,
                           int, int);

typedef void (*yuv_fn)(struct worker *, const struct fctx *, const uint8_t *, const uint8_t *,
                       const uint8_t *, int, int, int);
/* A dense row's stored masks into the accumulators (cpu_fast_kern.h). */
typedef void (*dense_fn)(struct worker *, const struct fctx *, int);

/* The kernels one instance uses, by [mask width: 1, 2, 4 words][pixel
 * stride: 1, 3, 4, or YUV format]: the portable ones, with the AVX2 copies
 * for 4 words when the CPU has AVX2 (kernels_pick). */
struct kernels {
    rgb_only_fn rgb_only[3][3];
    generic_fn generic[3][3];
    /* [mask width][format: YUYV, NV12, I420] */
    yuv_fn yuv_rgb[3][3];
    yuv_fn yuv_ycc[3][3];
    /* The dense copies and dense_row (section "dense rows" of
     * cpu_fast_kern.h), per mask width; only in the plain tables (frames
     * with blob objects keep the run path): NULL in the blob copies. */
    rgb_only_fn rgb_only_d[3][3];
    generic_fn generic_d[3][3];
    yuv_fn yuv_rgb_d[3][3];
    yuv_fn yuv_ycc_d[3][3];
    dense_fn dense[3];
};

/* One frame's work, written by the caller thread before the workers wake and
 * only read by them. */
struct fctx {
    const struct tables *tab;
    const struct kernels *kern;
    const struct trk_image *img;
    const struct trk_yuv2rgb_coef *k_yuv;
    const struct trk_rgb2ycc_coef *k_ycc;
    const int32_t *yy;                   /* y_mul * (Y - y_off), Y = 0..255, this frame's matrix */
    int ext_ok;                          /* the yuv_rgb kernels may run (cpu_fast.ext_ok) */
    int xa, xb, ya, yb;                  /* scanned region: union of the live ROIs */
    int use_rois;                        /* clip runs to roi[] */
    struct trk_roi roi[TRK_MAX_OBJECTS]; /* clipped; empty = {0,0,-1,-1} */
    atomic_int next_row;                 /* strip dispenser */
    /* Blob objects (nb of them; 0 = none, the plain kernels run): bidx[k]
     * = object k's blob index or -1, bext[bi] = 1 for 8-connectivity.
     * Each strip's worker writes that strip's si[strip * nb + bi] and
     * strip_w[strip], so workers never write the same entry. */
    int nb;
    const int16_t *bidx;
    const uint8_t *bext;
    struct sinfo *si;
    uint8_t *strip_w;
    /* Regions: step the worker's prefetch cursor once per row classified
     * (section "regions"; lay: the frame's plane layout). 0 for frames:
     * their rows stream. */
    int prefetch;
    struct trk_plane_layout lay;
    /* Regions of an rgb object on packed RGB (x86-64, not "lut-portable"):
     * box = the pixel stride (3 or 4), else 0; the object's box per byte of
     * a 16-pixel block (blo/bhi[v]: vector v of the block) and per byte of
     * one pixel (plo/phi), for box_row. */
    int box;
    uint8_t blo[4][16], bhi[4][16];
    uint8_t plo[4], phi[4];
    /* Dense rows (frames without blob objects; 0 elsewhere, regions
     * included): rows may take the dense path (worker.dense). With ROIs,
     * the scanned span [xa, xb] cut at every ROI edge: nseg stretches
     * [seg_x[i], seg_x[i + 1]) and seg_allow[i] (FAST_MAX_WORDS words) the
     * objects whose ROI's x range holds stretch i. */
    int dense_ok;
    int nseg;
    const int32_t *seg_x;
    const uint64_t *seg_allow;
};

struct cpu_fast;

/* The pre-filter (prefilter.h; section "pre-filter" below): its setting,
 * buffers for the largest frame (made when it is first turned on) and one
 * frame's job, which the pool runs in two rounds (every horizontal row,
 * then every vertical row) before the threshold pass reads the result. */
struct fast_pf {
    struct trk_prefilter pf; /* sigma 0: off */
    uint8_t *frame;          /* the filtered frame */
    uint16_t *tmp;           /* 16-bit intermediate, one slab per grid */
    uint8_t *pad;            /* row scratch, pad_stride bytes per worker */
    size_t pad_stride;
    /* One frame, written by the caller thread before the pool wakes. */
    int phase; /* 0: the pool runs the threshold pass; 1 horizontal, 2 vertical */
    const struct trk_image *src;
    struct trk_image out;
    uint8_t *dst[3];
    struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS];
    int nch;
    int first_unit[TRK_PREFILTER_MAX_CHANS + 1]; /* strips before grid i; [nch]: all */
    size_t tmp_pitch, slab;
    atomic_int next; /* strip dispenser */
};

/* One thread's private state. Worker 0 is the caller's thread. */
struct worker {
    struct cpu_fast *be;
    pthread_t th;
    int started;
    int idx; /* in cpu_fast.w */
    struct acc acc[TRK_MAX_OBJECTS];
    uint8_t *plane[FAST_PLANES]; /* max_width + padding bytes each */
    struct blist *bl;            /* one per blob object (cpu_fast.nb) */
    uint16_t *touched;           /* the blob objects with runs on the current row */
    int ntouched;
    int oom; /* a list could not grow this frame */
    /* Regions (section "regions"): this worker's context of the region it
     * measures (one object, tables of that object alone), and the strip
     * table of that region's labelling (max_strips entries each). */
    struct fctx *rf;
    struct sinfo *rsi;
    uint8_t *rsw;
    uint8_t rbext[1];
    /* The prefetch cursor: row y of region j (clipped rows up to y1; per
     * plane the byte range [lo, hi) of a row), running FAST_PREFETCH_ROWS
     * rows ahead; cur and next: the region being measured and the one
     * this worker takes after it (nreg: none). */
    struct pcur {
        int j, y, y1;
        size_t lo[3], hi[3];
    } pc;
    int rcur, rnext;
    /* Dense rows: the path of this worker's next row (1 dense), the flush
     * work of its last run-path row (objects added, all runs), the runs,
     * their pixels and the object-pixel matches of its last dense row, and
     * the row's masks (max_width + 64 entries of FAST_MAX_WORDS words). */
    int dense, dprobe;
    unsigned drows;
    uint64_t fwork;
    unsigned dnrun, dnnz;
    uint64_t dmatch;
    uint64_t *mbuf;
};

struct cpu_fast {
    int max_width, max_height;
    int nthreads;
    struct tables tab;
    void *tab_mem;
    struct kernels kern;
    struct kernels kern_b; /* the blob copies (KBLOBS) */
    int portable;          /* variant "lut-portable": no instruction-set dispatch */
    int ext_ok;            /* the extended tables cover every matrix (checked at create) */
    int32_t yytab[4][256]; /* per trk_coef_index */
    struct worker *w;
    struct fctx f;
    /* Pool hand-off: gen counts frames posted; pending counts workers still
     * busy on the current one. Guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long gen;
    int pending;
    int quit;
    int sync_ok; /* mu/go/done initialised */
    struct trk_obj_result res[TRK_MAX_OBJECTS];
    double total_ms;
    struct fast_pf pf;
    /* Blob objects, set by set_objects: nb of them; bidx/bext as in fctx,
     * and per blob index its K and min_area (>= 1). */
    int nb;
    int16_t bidx[TRK_MAX_OBJECTS];
    uint8_t bext[TRK_MAX_OBJECTS];
    uint16_t bk[TRK_MAX_OBJECTS];
    uint64_t bmin[TRK_MAX_OBJECTS];
    int max_strips;                         /* strips of a max_height frame */
    struct sinfo *si;                       /* max_strips x nb */
    uint8_t *strip_w;                       /* max_strips: the worker of each strip */
    struct trk_blob (*blob)[TRK_MAX_BLOBS]; /* nb lists of the last frame */
    int n_blobs[TRK_MAX_OBJECTS];           /* per blob index */
    /* Regions (section "regions"). otab[i]: object i's tables alone (one
     * word, bit 0), built by set_objects in otab_mem. The last submit was
     * regional when rmode; then nreg results are in rres and region j's
     * list in rblob[j] (rnb[j] long); rcap regions fit (grown on demand,
     * kept). regs, next_reg and rerr are one call's: the caller writes regs
     * before the pool wakes, workers take regions from next_reg and write
     * the rres/rblob/rnb entries of the regions they took. */
    struct tables otab[TRK_MAX_OBJECTS];
    uint64_t *otab_mem;
    struct trk_object_def objs[TRK_MAX_OBJECTS]; /* the set (box_setup reads boxes) */
    int rmode, nreg, rcap;
    const struct trk_region *regs;
    atomic_int next_reg;
    atomic_int rerr;
    struct trk_obj_result *rres;
    struct trk_blob (*rblob)[TRK_MAX_BLOBS];
    int *rnb;
    /* The frame's ROI stretches for dense rows (fctx.seg_x / seg_allow). */
    int32_t seg_x[2 * TRK_MAX_OBJECTS + 2];
    uint64_t seg_allow[(2 * TRK_MAX_OBJECTS + 1) * FAST_MAX_WORDS];
};

/* Doubles a list's capacity (realloc keeps the contents); 0 or -1. */
static int grow(void **p, uint32_t *cap, size_t elem)
{
    if (*cap > UINT32_MAX / 2) return -1;
    uint32_t ncap = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, (size_t)ncap * elem);
    if (!q) return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

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
            w->fwork++; /* the cost that picks a row's path (do_row) */
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
            c->mass += len;
            c->sum_x += (uint64_t)(a + b) * len / 2; /* (a+b)*len is always even */
            c->sum_y += (uint64_t)y * len;
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
static void kernels_pick(struct kernels *k, struct kernels *kb, int portable)
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
static void box_setup(const struct cpu_fast *s, struct fctx *f, const struct trk_object_def *o)
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
    int rgb_only = !t->has[TRK_SPACE_HSV] && !t->has[TRK_SPACE_YCBCR];
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
    int only_ycc = !t->has[TRK_SPACE_RGB] && !t->has[TRK_SPACE_HSV];
    if ((rgb_only && f->ext_ok) || only_ycc) {
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
    /* Mixed spaces: native samples into planes, RGB when rgb/hsv objects
     * exist, then the generic kernel. */
    decode_ycc_row(img, y, f->xa, f->xb, pl[3], pl[4], pl[5]);
    if (t->has[TRK_SPACE_RGB] || t->has[TRK_SPACE_HSV])
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
static void do_row(struct worker *w, const struct fctx *f, int y)
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

/* ------------------------------------------------------- blob labelling */

static uint32_t run_root(struct run *r, uint32_t i)
{
    while (r[i].p != i) {
        r[i].p = r[r[i].p].p; /* path halving */
        i = r[i].p;
    }
    return i;
}

/* The root with the smaller index (the earlier first pixel) stays root. */
static void run_unite(struct run *r, uint32_t a, uint32_t b)
{
    a = run_root(r, a);
    b = run_root(r, b);
    if (a < b)
        r[b].p = a;
    else if (b < a)
        r[a].p = b;
}

/* Calls touch(i, j, overlap) for every run i of cur[c0, c1) and j of
 * up[u0, u1) that are connected (row above, ext = 1 for 8-connectivity:
 * diagonal contact counts), with overlap = the pixels they share as
 * 4-neighbours (0 for a diagonal-only contact). Both lists are sorted and
 * their runs maximal (gaps >= 1), so one merge-like sweep finds every pair:
 * the run that ends first cannot touch anything after the other. */
#define SWEEP_ROWS(cur, c0, c1, up, u0, u1, ext, touch)                                            \
    do {                                                                                           \
        uint32_t i_ = (c0), j_ = (u0);                                                             \
        while (i_ < (c1) && j_ < (u1)) {                                                           \
            const struct run *A_ = &(cur)[i_], *B_ = &(up)[j_];                                    \
            if (B_->x0 <= A_->x1 + (ext) && A_->x0 <= B_->x1 + (ext)) {                            \
                const int32_t lo_ = A_->x0 > B_->x0 ? A_->x0 : B_->x0;                             \
                const int32_t hi_ = A_->x1 < B_->x1 ? A_->x1 : B_->x1;                             \
                const uint32_t ov_ = hi_ >= lo_ ? (uint32_t)(hi_ - lo_ + 1) : 0;                   \
                touch(i_, j_, ov_);                                                                \
            }                                                                                      \
            if (A_->x1 <= B_->x1) i_++;                                                            \
            if (B_->x1 <= A_->x1) j_++;                                                            \
        }                                                                                          \
    } while (0)

/* A strip begins: its first row's runs start at the list's end. */
static void strip_begin(struct worker *w, const struct fctx *f)
{
    for (int bi = 0; bi < f->nb; bi++) {
        struct blist *L = &w->bl[bi];
        L->rs[0] = L->row0 = L->nrun;
        L->nrs = 1;
    }
    w->ntouched = 0;
}

/* Row k of the current strip is classified: joins the runs of each object
 * that has some on it to the connected ones of row k - 1 and counts their
 * shared pixels. Objects without runs on the row are not visited. */
static void label_row(struct worker *w, const struct fctx *f, int k)
{
    for (int t = 0; t < w->ntouched; t++) {
        const int bi = w->touched[t];
        struct blist *L = &w->bl[bi];
        while (L->nrs <= (uint32_t)k)
            L->rs[L->nrs++] = L->row0; /* the rows above without runs */
        L->rs[k + 1] = L->row0 = L->nrun;
        L->nrs = (uint32_t)k + 2;
        if (k == 0) continue;
        struct run *r = L->run;
#define TOUCH_IN_STRIP(i, j, ov)                                                                   \
    do {                                                                                           \
        run_unite(r, (i), (j));                                                                    \
        r[i].v += (ov);                                                                            \
    } while (0)
        SWEEP_ROWS(r, L->rs[k], L->rs[k + 1], r, L->rs[k - 1], L->rs[k], f->bext[bi],
                   TOUCH_IN_STRIP);
#undef TOUCH_IN_STRIP
    }
    w->ntouched = 0;
}

/* The strip [y0, y0 + rows) is classified: each run's root becomes a strip
 * component (roots come first: they hold the smallest index), each run's
 * stats go to its component. A run of length len adds 2 + 2 len crack
 * edges, minus 2 per pixel it shares with a run above (that side is inside
 * the blob, for both runs); seams between strips are settled later. */
static void strip_end(struct worker *w, const struct fctx *f, int y0, int rows)
{
    const int strip = (y0 - f->ya) / FAST_STRIP_ROWS;
    const uint64_t width = (uint64_t)f->img->width;
    f->strip_w[strip] = (uint8_t)w->idx;
    for (int bi = 0; bi < f->nb; bi++) {
        struct blist *L = &w->bl[bi];
        struct sinfo *si = &f->si[(size_t)strip * (size_t)f->nb + (size_t)bi];
#define RS(j) ((uint32_t)(j) < L->nrs ? L->rs[j] : L->nrun)
        *si = (struct sinfo){ RS(0), RS(1), RS(rows - 1), RS(rows) };
#undef RS
        for (int k = 0; k + 1 < (int)L->nrs; k++) {
            const int32_t y = y0 + k;
            for (uint32_t i = L->rs[k]; i < L->rs[k + 1]; i++) {
                struct run *R = &L->run[i];
                const uint32_t root = run_root(L->run, i), shared = R->v;
                uint32_t c;
                if (root == i) {
                    if (L->ncomp == L->capcomp &&
                        grow((void **)&L->comp, &L->capcomp, sizeof(*L->comp))) {
                        w->oom = 1;
                        return;
                    }
                    c = L->ncomp++;
                    struct comp *C = &L->comp[c];
                    memset(&C->b, 0, sizeof(C->b));
                    C->b.x0 = R->x0, C->b.x1 = R->x1;
                    C->b.y0 = C->b.y1 = y;
                    C->b.first = (uint64_t)y * width + (uint64_t)R->x0;
                    C->parent = (uint64_t)c << FAST_WSHIFT | (uint64_t)w->idx;
                } else {
                    c = L->run[root].v;
                }
                R->v = c;
                struct trk_blob *b = &L->comp[c].b;
                const uint64_t len = (uint64_t)(R->x1 - R->x0 + 1);
                b->mass += len;
                b->sum_x += (uint64_t)(R->x0 + R->x1) * len / 2; /* even product */
                b->sum_y += (uint64_t)y * len;
                if (R->x0 < b->x0) b->x0 = R->x0;
                if (R->x1 > b->x1) b->x1 = R->x1;
                b->y1 = y;
                b->perimeter += 2 + 2 * len - 2 * (uint64_t)shared;
            }
        }
    }
}

static void pc_step(struct worker *w);

/* Rows [y0, y1] of f (one strip: y0 - f->ya is a multiple of
 * FAST_STRIP_ROWS), classified and, with blob objects, labelled. */
static void do_strip(struct worker *w, const struct fctx *f, int y0, int y1)
{
    if (!f->nb) {
        for (int y = y0; y <= y1; y++) {
            if (f->prefetch) pc_step(w);
            do_row(w, f, y);
        }
        return;
    }
    strip_begin(w, f);
    for (int y = y0; y <= y1; y++) {
        if (f->prefetch) pc_step(w);
        do_row(w, f, y);
        label_row(w, f, y - y0);
    }
    strip_end(w, f, y0, y1 - y0 + 1);
}

/* A thread's share of a frame: strips from the dispenser until none is left. */
static void run_share(struct worker *w, struct fctx *f, int n)
{
    for (int i = 0; i < n; i++) {
        w->acc[i] = (struct acc){ 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1 };
    }
    w->dense = 0; /* every frame starts on the run path */
    if (f->nb) {
        w->oom = 0;
        for (int bi = 0; bi < f->nb; bi++)
            w->bl[bi].nrun = w->bl[bi].ncomp = w->bl[bi].row0 = 0;
    }
    for (;;) {
        int y0 = atomic_fetch_add_explicit(&f->next_row, FAST_STRIP_ROWS, memory_order_relaxed);
        if (y0 > f->yb) break;
        int y1 = y0 + FAST_STRIP_ROWS - 1;
        if (y1 > f->yb) y1 = f->yb;
        do_strip(w, f, y0, y1);
    }
}

/* A strip component by id (FAST_WSHIFT), of blob object bi. */
static struct comp *comp_at(const struct cpu_fast *s, int bi, uint64_t id)
{
    return &s->w[id & ((1u << FAST_WSHIFT) - 1)].bl[bi].comp[id >> FAST_WSHIFT];
}

static uint64_t comp_root(const struct cpu_fast *s, int bi, uint64_t id)
{
    for (;;) {
        struct comp *c = comp_at(s, bi, id);
        if (c->parent == id) return id;
        const uint64_t up = comp_at(s, bi, c->parent)->parent;
        c->parent = up; /* path halving */
        id = up;
    }
}

/* The root with the earlier first pixel stays root, so a component's root
 * carries its first pixel. */
static void comp_unite(const struct cpu_fast *s, int bi, uint64_t a, uint64_t b)
{
    a = comp_root(s, bi, a);
    b = comp_root(s, bi, b);
    if (a == b) return;
    struct comp *A = comp_at(s, bi, a), *B = comp_at(s, bi, b);
    if (A->b.first < B->b.first)
        B->parent = a;
    else
        A->parent = b;
}

/* Puts b into the sorted list (*n entries, at most k) when it belongs there. */
static void keep_best(struct trk_blob *list, int *n, int k, const struct trk_blob *b)
{
    if (*n == k && !trk_blob_before(b, &list[k - 1])) return; /* the usual case */
    int at = *n;
    while (at > 0 && trk_blob_before(b, &list[at - 1]))
        at--;
    const int last = *n < k ? *n : k - 1; /* the entry that falls off, if full */
    memmove(&list[at + 1], &list[at], (size_t)(last - at) * sizeof(*list));
    list[at] = *b;
    if (*n < k) (*n)++;
}

/* After every strip of f is labelled, blob object bi's list: joins the
 * strip components across each seam (the last row of a strip against the
 * first of the next, with the same sweep as inside a strip), adds every
 * component's stats to its root, and keeps the K best roots of at least
 * min_area in list; returns its length. The strips' runs and components are
 * in the lists of workers k0 .. k1 - 1 (a frame: all that took part; a
 * region: the one that measured it). */
static int finish_lists(const struct cpu_fast *s, const struct fctx *f, int bi, int k0, int k1,
                        uint64_t min_area, int K, struct trk_blob *list)
{
    const int nstrips = (f->yb - f->ya) / FAST_STRIP_ROWS + 1;
    const int ext = f->bext[bi];
    for (int st = 0; st + 1 < nstrips; st++) {
        const uint64_t wu = f->strip_w[st], wd = f->strip_w[st + 1];
        const struct sinfo *su = &f->si[(size_t)st * (size_t)f->nb + (size_t)bi];
        const struct sinfo *sd = su + f->nb;
        const struct blist *U = &s->w[wu].bl[bi], *D = &s->w[wd].bl[bi];
#define TOUCH_AT_SEAM(i, j, ov)                                                                    \
    do {                                                                                           \
        const uint64_t cd_ = (uint64_t)D->run[i].v << FAST_WSHIFT | wd;                            \
        const uint64_t cu_ = (uint64_t)U->run[j].v << FAST_WSHIFT | wu;                            \
        comp_unite(s, bi, cd_, cu_);                                                               \
        comp_at(s, bi, cd_)->b.perimeter -= 2 * (uint64_t)(ov);                                    \
    } while (0)
        SWEEP_ROWS(D->run, sd->a0, sd->a1, U->run, su->z0, su->z1, ext, TOUCH_AT_SEAM);
#undef TOUCH_AT_SEAM
    }
    for (int k = k0; k < k1; k++) {
        const struct blist *L = &s->w[k].bl[bi];
        for (uint32_t c = 0; c < L->ncomp; c++) {
            const uint64_t id = (uint64_t)c << FAST_WSHIFT | (uint64_t)k;
            const uint64_t root = comp_root(s, bi, id);
            if (root == id) continue;
            const struct trk_blob *a = &L->comp[c].b;
            struct trk_blob *b = &comp_at(s, bi, root)->b;
            b->mass += a->mass;
            b->sum_x += a->sum_x;
            b->sum_y += a->sum_y;
            b->perimeter += a->perimeter;
            if (a->x0 < b->x0) b->x0 = a->x0;
            if (a->x1 > b->x1) b->x1 = a->x1;
            if (a->y0 < b->y0) b->y0 = a->y0;
            if (a->y1 > b->y1) b->y1 = a->y1;
        }
    }
    int n = 0;
    for (int k = k0; k < k1; k++) {
        const struct blist *L = &s->w[k].bl[bi];
        for (uint32_t c = 0; c < L->ncomp; c++) {
            const struct comp *C = &L->comp[c];
            if (C->parent == ((uint64_t)c << FAST_WSHIFT | (uint64_t)k) && C->b.mass >= min_area)
                keep_best(list, &n, K, &C->b);
        }
    }
    return n;
}

/* Every blob object's list of the frame (nacc workers took part). */
static void blobs_finish(struct cpu_fast *s, int nacc)
{
    for (int bi = 0; bi < s->nb; bi++)
        s->n_blobs[bi] = finish_lists(s, &s->f, bi, 0, nacc, s->bmin[bi], s->bk[bi], s->blob[bi]);
}

/* --------------------------------------------------------------- the pool */

static void pf_share(struct worker *w, struct cpu_fast *s);
static void region_share(struct worker *w);

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct cpu_fast *s = w->be;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->gen == seen && !s->quit)
            pthread_cond_wait(&s->go, &s->mu);
        if (s->quit) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        seen = s->gen;
        pthread_mutex_unlock(&s->mu);

        if (s->pf.phase)
            pf_share(w, s);
        else if (s->rmode)
            region_share(w);
        else
            run_share(w, &s->f, s->tab.n);

        pthread_mutex_lock(&s->mu);
        if (--s->pending == 0) pthread_cond_signal(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Frees the blob scratch of nb blob objects (workers' lists included). */
static void blobs_free(struct cpu_fast *s, int nb)
{
    for (int i = 0; s->w && i < s->nthreads; i++) {
        struct blist *bl = s->w[i].bl;
        for (int bi = 0; bl && bi < nb; bi++) {
            free(bl[bi].run);
            free(bl[bi].comp);
        }
        free(bl);
        free(s->w[i].touched);
        s->w[i].bl = NULL;
        s->w[i].touched = NULL;
    }
    free(s->si);
    free(s->strip_w);
    free(s->blob);
    s->si = NULL;
    s->strip_w = NULL;
    s->blob = NULL;
}

static void fast_destroy(void *self)
{
    struct cpu_fast *s = self;
    if (!s) return;
    blobs_free(s, s->nb);
    if (s->sync_ok) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    if (s->w) {
        for (int i = 0; i < s->nthreads; i++) {
            if (s->w[i].started) pthread_join(s->w[i].th, NULL);
            free(s->w[i].plane[0]);
            free(s->w[i].mbuf);
            free(s->w[i].rf);
            free(s->w[i].rsi);
            free(s->w[i].rsw);
        }
    }
    if (s->sync_ok) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->go);
        pthread_cond_destroy(&s->done);
    }
    free(s->w);
    free(s->tab_mem);
    free(s->tab.sat);
    free(s->pf.frame);
    free(s->pf.tmp);
    free(s->pf.pad);
    free(s->otab_mem);
    free(s->rres);
    free(s->rblob);
    free(s->rnb);
    free(s);
}

static size_t tab_bytes(void)
{
    size_t words = 9 * ((size_t)FAST_NVALS * FAST_MAX_WORDS + FAST_NVALS) +
                   3 * ((size_t)FAST_EXT_N * FAST_MAX_WORDS + FAST_EXT_N);
    return words * sizeof(uint64_t);
}

/* Whether every unclamped R, G, B that trk_yuv_to_rgb can produce with k
 * indexes the extended tables: the sums are linear in Y, Cb and Cr, so the
 * extremes are at the corners of the sample cube. */
static int ext_fits(const struct trk_yuv2rgb_coef *k)
{
    for (int yi = 0; yi < 2; yi++)
        for (int ui = 0; ui < 2; ui++)
            for (int vi = 0; vi < 2; vi++) {
                int32_t yy = k->y_mul * ((yi ? 255 : 0) - k->y_off);
                int32_t u = ui ? 127 : -128, v = vi ? 127 : -128;
                int32_t t[3] = { k->r_cr * v, -k->g_cb * u - k->g_cr * v, k->b_cb * u };
                for (int c = 0; c < 3; c++) {
                    int32_t i = trk_q16_round(yy + t[c]) + FAST_EXT_OFF;
                    if (i < 0 || i >= FAST_EXT_N) return 0;
                }
            }
    return 1;
}

/* Threads to use: cfg->threads, or the online cores when 0. */
static int thread_count(int want)
{
    if (want <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        want = c > 0 ? (int)c : 1;
    }
    return want > FAST_MAX_THREADS ? FAST_MAX_THREADS : want;
}

static int fast_create(const struct trk_backend_cfg *cfg, void **self)
{
    *self = NULL;
    if (cfg->threads < 0) return TRK_EINVAL;
    if (cfg->variant && strcmp(cfg->variant, "lut") && strcmp(cfg->variant, "lut-portable"))
        return TRK_EINVAL;
    struct cpu_fast *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    s->max_width = cfg->max_width;
    s->max_height = cfg->max_height;
    s->nthreads = thread_count(cfg->threads);
    s->portable = cfg->variant && !strcmp(cfg->variant, "lut-portable");
    s->max_strips = (cfg->max_height + FAST_STRIP_ROWS - 1) / FAST_STRIP_ROWS;
    kernels_pick(&s->kern, &s->kern_b, s->portable);

    /* Tables: 9 full (FAST_NVALS x 4 words) + 9 summaries, then 3 extended
     * (FAST_EXT_N x 4 words) + 3 summaries, one block. */
    s->tab_mem = aligned_alloc(64, tab_bytes());
    s->tab.sat = malloc(256 * 256);
    s->w = calloc((size_t)s->nthreads, sizeof(*s->w));
    if (!s->tab_mem || !s->tab.sat || !s->w) goto nomem;
    uint64_t *p = s->tab_mem;
    for (int sp = 0; sp < 3; sp++)
        for (int c = 0; c < 3; c++) {
            s->tab.full[sp][c] = p;
            p += (size_t)FAST_NVALS * FAST_MAX_WORDS;
            s->tab.sum[sp][c] = p;
            p += FAST_NVALS;
        }
    for (int c = 0; c < 3; c++) {
        s->tab.ext[c] = p;
        p += (size_t)FAST_EXT_N * FAST_MAX_WORDS;
        s->tab.ext_sum[c] = p;
        p += FAST_EXT_N;
    }
    memset(s->tab_mem, 0, tab_bytes());
    s->ext_ok = 1;
    for (int ci = 0; ci < 4; ci++) {
        const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[ci];
        for (int v = 0; v < 256; v++)
            s->yytab[ci][v] = k->y_mul * (v - k->y_off);
        if (!ext_fits(k)) s->ext_ok = 0;
    }
    s->tab.nw = 1;
    for (int mx = 0; mx < 256; mx++)
        for (int d = 0; d <= mx; d++) {
            uint16_t h;
            uint8_t sat, v;
            trk_rgb_to_hsv(mx, mx - d, mx - d, &h, &sat, &v);
            s->tab.sat[mx << 8 | d] = sat;
        }

    /* Row planes: +64 so vector-width overreads past max_width stay inside. */
    size_t plane_bytes = (size_t)cfg->max_width + 64;
    for (int i = 0; i < s->nthreads; i++) {
        struct worker *w = &s->w[i];
        w->be = s;
        w->idx = i;
        w->plane[0] = malloc(plane_bytes * FAST_PLANES);
        w->rf = calloc(1, sizeof(*w->rf));
        w->rsi = calloc((size_t)s->max_strips, sizeof(*w->rsi));
        w->rsw = calloc((size_t)s->max_strips, 1);
        /* An even count of 32-byte entries: a multiple of 64 bytes, as
         * aligned_alloc wants. */
        w->mbuf = aligned_alloc(64, (((size_t)cfg->max_width + 65) & ~(size_t)1) * FAST_MAX_WORDS *
                                        sizeof(uint64_t));
        if (!w->plane[0] || !w->rf || !w->rsi || !w->rsw || !w->mbuf) goto nomem;
        for (int k = 1; k < FAST_PLANES; k++)
            w->plane[k] = w->plane[0] + k * plane_bytes;
    }

    if (pthread_mutex_init(&s->mu, NULL)) goto nomem;
    if (pthread_cond_init(&s->go, NULL)) {
        pthread_mutex_destroy(&s->mu);
        goto nomem;
    }
    if (pthread_cond_init(&s->done, NULL)) {
        pthread_cond_destroy(&s->go);
        pthread_mutex_destroy(&s->mu);
        goto nomem;
    }
    s->sync_ok = 1;
    for (int i = 1; i < s->nthreads; i++) {
        if (pthread_create(&s->w[i].th, NULL, worker_main, &s->w[i])) {
            fast_destroy(s);
            return TRK_EBACKEND;
        }
        s->w[i].started = 1;
    }
    *self = s;
    return 0;
nomem:
    fast_destroy(s);
    return TRK_ENOMEM;
}

/* The blob scratch for objs: every list at its first capacity, the seam
 * table for the largest frame, the result lists. Sized here, not per frame
 * (a list that a frame outgrows doubles once and keeps its size). On failure
 * the old scratch stays and TRK_ENOMEM is returned. */
static int blobs_alloc(struct cpu_fast *s, const struct trk_object_def *objs, int n)
{
    int nb = 0;
    for (int i = 0; i < n; i++)
        nb += objs[i].blobs > 0;
    struct cpu_fast next = { .nthreads = s->nthreads, .w = NULL };
    struct worker *nw = calloc((size_t)s->nthreads, sizeof(*nw));
    if (!nw) return TRK_ENOMEM;
    next.w = nw;
    int ok = 1;
    if (nb) {
        next.si = calloc((size_t)s->max_strips * (size_t)nb, sizeof(*next.si));
        next.strip_w = calloc((size_t)s->max_strips, 1);
        next.blob = calloc((size_t)nb, sizeof(*next.blob));
        ok = next.si && next.strip_w && next.blob;
        for (int i = 0; ok && i < s->nthreads; i++) {
            nw[i].bl = calloc((size_t)nb, sizeof(*nw[i].bl));
            nw[i].touched = calloc((size_t)nb, sizeof(*nw[i].touched));
            ok = nw[i].bl && nw[i].touched;
            for (int bi = 0; ok && bi < nb; bi++) {
                struct blist *L = &nw[i].bl[bi];
                L->run = malloc(FAST_BLOB_RUNS0 * sizeof(*L->run));
                L->comp = malloc(FAST_BLOB_COMPS0 * sizeof(*L->comp));
                L->caprun = L->run ? FAST_BLOB_RUNS0 : 0;
                L->capcomp = L->comp ? FAST_BLOB_COMPS0 : 0;
                ok = L->run && L->comp;
            }
        }
    }
    if (!ok) {
        blobs_free(&next, nb);
        free(nw);
        return TRK_ENOMEM;
    }
    blobs_free(s, s->nb);
    for (int i = 0; i < s->nthreads; i++) {
        s->w[i].bl = nw[i].bl;
        s->w[i].touched = nw[i].touched;
    }
    free(nw);
    s->si = next.si;
    s->strip_w = next.strip_w;
    s->blob = next.blob;
    s->nb = nb;
    nb = 0;
    for (int i = 0; i < n; i++) {
        s->bidx[i] = -1;
        if (!objs[i].blobs) continue;
        s->bidx[i] = (int16_t)nb;
        s->bext[nb] = objs[i].connectivity != 4;
        s->bk[nb] = objs[i].blobs;
        s->bmin[nb] = objs[i].min_area ? objs[i].min_area : 1;
        s->n_blobs[nb] = 0;
        nb++;
    }
    return 0;
}

static size_t align64(size_t v)
{
    return (v + 63) / 64 * 64;
}

/* Words of one object's own tables (obj_tables): its space's three
 * channels and, for rgb, the extended tables of YUV frames. */
static size_t obj_words(enum trk_space sp)
{
    size_t v = 0;
    for (int c = 0; c < 3; c++)
        v += (size_t)trk_chan_values((int)sp, c);
    return sp == TRK_SPACE_RGB ? v + 3 * (size_t)FAST_EXT_N : v;
}

/* The regions' tables (section "regions"): per object, tables in which it
 * is the only object (one word, bit 0), so a region runs the one-word
 * kernels and meets no other object's runs. Built in mem (from
 * obj_tables_alloc). */
static void obj_tables(struct cpu_fast *s, const struct trk_object_def *objs, int n, uint64_t *mem)
{
    uint64_t *p = mem;
    for (int i = 0; i < n; i++) {
        const struct trk_object_def *o = &objs[i];
        const int sp = (int)o->space;
        struct tables *t = &s->otab[i];
        memset(t, 0, sizeof(*t));
        t->n = 1;
        t->nw = 1;
        t->has[sp] = 1;
        t->sat = s->tab.sat;
        for (int c = 0; c < 3; c++) {
            const int nv = trk_chan_values(sp, c);
            for (int v = 0; v < nv; v++)
                p[v] = trk_chan_has(o->lo, o->hi, sp == TRK_SPACE_HSV, c, v);
            /* With one word the summary is the row itself. */
            t->full[sp][c] = t->sum[sp][c] = p;
            p += nv;
        }
        if (sp != TRK_SPACE_RGB) continue;
        for (int c = 0; c < 3; c++) {
            for (int i2 = 0; i2 < FAST_EXT_N; i2++) {
                const int v = i2 - FAST_EXT_OFF;
                p[i2] = t->full[sp][c][v < 0 ? 0 : v > 255 ? 255 : v];
            }
            t->ext[c] = t->ext_sum[c] = p;
            p += FAST_EXT_N;
        }
    }
}

static uint64_t *obj_tables_alloc(const struct trk_object_def *objs, int n)
{
    size_t words = 8; /* never 0 */
    for (int i = 0; i < n; i++)
        words += obj_words(objs[i].space);
    return aligned_alloc(64, align64(words * sizeof(uint64_t)));
}

static int fast_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cpu_fast *s = self;
    struct tables *t = &s->tab;
    if (n < 0 || n > TRK_MAX_OBJECTS) return TRK_EINVAL;
    uint64_t *omem = obj_tables_alloc(objs, n);
    if (!omem) return TRK_ENOMEM;
    int err = blobs_alloc(s, objs, n);
    if (err) {
        free(omem);
        return err;
    }
    free(s->otab_mem);
    s->otab_mem = omem;
    obj_tables(s, objs, n, omem);
    if (n > 0) memcpy(s->objs, objs, (size_t)n * sizeof(*objs));
    int nw = n <= 64 ? 1 : n <= 128 ? 2 : 4;
    memset(s->tab_mem, 0, tab_bytes());
    memset(t->has, 0, sizeof(t->has));
    for (int i = 0; i < n; i++) {
        const struct trk_object_def *o = &objs[i];
        int sp = (int)o->space, wi = i >> 6;
        uint64_t bit = 1ull << (i & 63);
        t->has[sp] = 1;
        for (int c = 0; c < 3; c++) {
            const int nv = trk_chan_values(sp, c);
            uint64_t *full = t->full[sp][c];
            uint64_t *sum = t->sum[sp][c];
            for (int v = 0; v < nv; v++) {
                if (!trk_chan_has(o->lo, o->hi, sp == TRK_SPACE_HSV, c, v)) continue;
                full[(size_t)v * nw + wi] |= bit;
                sum[v] |= bit;
            }
        }
    }
    /* Extended R, G, B tables for YUV frames: row i is row clamp255(i - OFF). */
    if (t->has[TRK_SPACE_RGB]) {
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < FAST_EXT_N; i++) {
                int v = i - FAST_EXT_OFF;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                memcpy(t->ext[c] + (size_t)i * nw, t->full[TRK_SPACE_RGB][c] + (size_t)v * nw,
                       (size_t)nw * sizeof(uint64_t));
                t->ext_sum[c][i] = t->sum[TRK_SPACE_RGB][c][v];
            }
    }
    t->nw = nw;
    t->n = n;
    return 0;
}

/* Wakes the pool's workers for the job the caller has set up (nothing when
 * nt == 1: the caller's thread does it all)... */
static void pool_wake(struct cpu_fast *s, int nt)
{
    if (nt <= 1) return;
    pthread_mutex_lock(&s->mu);
    s->pending = s->nthreads - 1;
    s->gen++;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
}

/* ...and, after the caller's own share, waits until every worker is done. */
static void pool_join(struct cpu_fast *s, int nt)
{
    if (nt <= 1) return;
    pthread_mutex_lock(&s->mu);
    while (s->pending > 0)
        pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------ pre-filter */
/* prefilter.h's fast row passes spread over the pool: strips of
 * FAST_STRIP_ROWS rows of every grid from one dispenser, all horizontal
 * strips in one round, all vertical ones in the next (a vertical row reads
 * the horizontal rows of its neighbours). Any split gives the same bytes. */

static int fast_set_prefilter(void *self, const struct trk_prefilter *pf)
{
    struct cpu_fast *s = self;
    struct fast_pf *p = &s->pf;
    if (pf->sigma > 0 && !p->frame) {
        p->pad_stride = align64(trk_prefilter_pad_bytes(s->max_width));
        uint8_t *frame =
            aligned_alloc(64, align64(trk_prefilter_frame_bytes(s->max_width, s->max_height)));
        uint16_t *tmp = aligned_alloc(
            64, align64(trk_prefilter_tmp_elems(s->max_width, s->max_height) * sizeof(*tmp)));
        uint8_t *pad = aligned_alloc(64, p->pad_stride * (size_t)s->nthreads);
        if (!frame || !tmp || !pad) {
            free(frame);
            free(tmp);
            free(pad);
            return TRK_ENOMEM;
        }
        p->frame = frame, p->tmp = tmp, p->pad = pad;
    }
    p->pf = *pf;
    return 0;
}

/* A thread's share of one round: strips until none is left. */
static void pf_share(struct worker *w, struct cpu_fast *s)
{
    struct fast_pf *p = &s->pf;
    uint8_t *pad = p->pad + (size_t)(w - s->w) * p->pad_stride;
    for (;;) {
        const int u = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (u >= p->first_unit[p->nch]) break;
        int i = 0;
        while (u >= p->first_unit[i + 1])
            i++;
        const struct trk_prefilter_chan *c = &p->ch[i];
        const int y0 = (u - p->first_unit[i]) * FAST_STRIP_ROWS;
        const int y1 = y0 + FAST_STRIP_ROWS < c->height ? y0 + FAST_STRIP_ROWS : c->height;
        uint16_t *slab = p->tmp + (size_t)i * p->slab;
        if (p->phase == 1)
            trk_prefilter_hrows(&p->pf, c, p->src, y0, y1, slab, p->tmp_pitch, pad);
        else
            trk_prefilter_vrows(&p->pf, c, slab, p->tmp_pitch, y0, y1, p->dst, p->out.pitch);
    }
}

/* One round of phase on nt threads (1, or the whole pool). */
static void pf_round(struct cpu_fast *s, int phase, int nt)
{
    s->pf.phase = phase;
    atomic_store_explicit(&s->pf.next, 0, memory_order_relaxed);
    pool_wake(s, nt);
    pf_share(&s->w[0], s);
    pool_join(s, nt);
}

/* img filtered into the backend's frame, which is returned. */
static const struct trk_image *pf_frame(struct cpu_fast *s, const struct trk_image *img)
{
    struct fast_pf *p = &s->pf;
    trk_prefilter_frame_at(p->frame, img, &p->out, p->dst);
    p->src = img;
    p->nch = trk_prefilter_chans(img->fmt, img->width, img->height, p->ch);
    TRK_ASSERT(p->nch > 0); /* backend.c checked the image */
    p->tmp_pitch = trk_prefilter_tmp_pitch(img->width);
    p->slab = trk_prefilter_tmp_slab(img->width, img->height);
    p->first_unit[0] = 0;
    for (int i = 0; i < p->nch; i++)
        p->first_unit[i + 1] =
            p->first_unit[i] + (p->ch[i].height + FAST_STRIP_ROWS - 1) / FAST_STRIP_ROWS;
    const long px = (long)img->width * img->height;
    const int nt = s->nthreads > 1 && px >= FAST_MIN_POOL_PIXELS ? s->nthreads : 1;
    pf_round(s, 1, nt);
    pf_round(s, 2, nt);
    p->phase = 0;
    return &p->out;
}

/* ------------------------------------------------------------ submit */

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Dense rows with ROIs: the scanned span cut at every ROI edge, and per
 * stretch the objects whose ROI's x range holds it (fctx.seg_*). */
static void dense_stretches(struct cpu_fast *s, int n)
{
    struct fctx *f = &s->f;
    int nx = 0;
    s->seg_x[nx++] = f->xa;
    s->seg_x[nx++] = f->xb + 1;
    for (int i = 0; i < n; i++) {
        const struct trk_roi *r = &f->roi[i];
        if (r->x1 < r->x0) continue; /* empty */
        s->seg_x[nx++] = r->x0;      /* clipped: inside [xa, xb + 1] */
        s->seg_x[nx++] = r->x1 + 1;
    }
    qsort(s->seg_x, (size_t)nx, sizeof(s->seg_x[0]), cmp_i32);
    int u = 1;
    for (int i = 1; i < nx; i++)
        if (s->seg_x[i] != s->seg_x[u - 1]) s->seg_x[u++] = s->seg_x[i];
    f->nseg = u - 1;
    memset(s->seg_allow, 0, (size_t)f->nseg * FAST_MAX_WORDS * sizeof(uint64_t));
    for (int sg = 0; sg < f->nseg; sg++)
        for (int i = 0; i < n; i++) {
            const struct trk_roi *r = &f->roi[i];
            if (s->seg_x[sg] >= r->x0 && s->seg_x[sg] <= r->x1)
                s->seg_allow[(size_t)sg * FAST_MAX_WORDS + (size_t)(i >> 6)] |= 1ull << (i & 63);
        }
    f->seg_x = s->seg_x;
    f->seg_allow = s->seg_allow;
}

static int fast_submit(void *self, const struct trk_image *img, const struct trk_roi *rois)
{
    struct cpu_fast *s = self;
    struct fctx *f = &s->f;
    int n = s->tab.n;
    double t0 = trk_backend_now_ms();
    s->rmode = 0;
    /* Everything below (aggregates and blobs) sees the filtered frame. */
    if (s->pf.pf.sigma > 0 && n > 0) img = pf_frame(s, img);

    f->tab = &s->tab;
    f->kern = &s->kern;
    f->img = img;
    int ci = trk_coef_index((int)img->matrix, img->full_range);
    f->k_yuv = &trk_yuv2rgb_coefs[ci];
    f->k_ycc = &trk_rgb2ycc_coefs[ci];
    f->yy = s->yytab[ci];
    f->ext_ok = s->ext_ok;
    f->use_rois = rois != NULL;
    f->prefetch = 0;
    f->box = 0;
    f->nb = s->nb;
    f->bidx = s->bidx;
    f->bext = s->bext;
    f->si = s->si;
    f->strip_w = s->strip_w;
    if (s->nb) f->kern = &s->kern_b;
    /* The scanned region: the whole frame, or the union of the live ROIs. */
    int xa = INT_MAX, xb = -1, ya = INT_MAX, yb = -1;
    for (int i = 0; i < n; i++) {
        struct trk_roi *r = &f->roi[i];
        if (!trk_roi_clip(rois, i, img->width, img->height, r)) {
            *r = (struct trk_roi){ 0, 0, -1, -1 };
            continue;
        }
        if (r->x0 < xa) xa = r->x0;
        if (r->x1 > xb) xb = r->x1;
        if (r->y0 < ya) ya = r->y0;
        if (r->y1 > yb) yb = r->y1;
    }
    f->xa = xa, f->xb = xb, f->ya = ya, f->yb = yb;
    atomic_store_explicit(&f->next_row, ya, memory_order_relaxed);
    f->dense_ok = !s->nb;
    if (f->dense_ok && rois && xb >= 0) dense_stretches(s, n);

    int nt = 1; /* threads taking part: 1, or the whole pool */
    if (xb >= 0) {
        /* Wake the pool only when there are strips to share and enough
         * pixels to repay the wake-up; every woken worker then takes strips
         * from the dispenser until none is left. */
        int strips = (yb - ya + FAST_STRIP_ROWS) / FAST_STRIP_ROWS;
        long px = (long)(xb - xa + 1) * (yb - ya + 1);
        if (s->nthreads > 1 && strips > 1 && px >= FAST_MIN_POOL_PIXELS) nt = s->nthreads;
        pool_wake(s, nt);
        run_share(&s->w[0], f, n);
        pool_join(s, nt);
    }

    /* Threads whose accumulators hold this frame. */
    int nacc = xb < 0 ? 0 : nt;
    if (s->nb) {
        for (int k = 0; k < nacc; k++)
            if (s->w[k].oom) return TRK_ENOMEM;
        if (nacc) blobs_finish(s, nacc);
        for (int bi = 0; !nacc && bi < s->nb; bi++)
            s->n_blobs[bi] = 0;
    }
    /* Merge: sums add, boxes take min/max; any order gives the same integers. */
    for (int i = 0; i < n; i++) {
        struct acc m = { 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1 };
        for (int k = 0; k < nacc; k++) {
            const struct acc *a = &s->w[k].acc[i];
            m.mass += a->mass;
            m.sum_x += a->sum_x;
            m.sum_y += a->sum_y;
            if (a->x0 < m.x0) m.x0 = a->x0;
            if (a->y0 < m.y0) m.y0 = a->y0;
            if (a->x1 > m.x1) m.x1 = a->x1;
            if (a->y1 > m.y1) m.y1 = a->y1;
        }
        struct trk_obj_result *r = &s->res[i];
        if (m.mass == 0) {
            trk_result_clear(r);
        } else {
            r->mass = m.mass;
            r->sum_x = m.sum_x;
            r->sum_y = m.sum_y;
            r->x0 = m.x0, r->y0 = m.y0, r->x1 = m.x1, r->y1 = m.y1;
        }
    }
    s->total_ms = trk_backend_now_ms() - t0;
    return 0;
}

/* --------------------------------------------------------------- regions */
/* The regional form (backend.h, trk_backend_submit_regions). Each region is
 * measured on its own, start to end, by one thread: its rectangle (clipped)
 * is scanned row by row with the tables of its object alone (otab: one word,
 * bit 0), so the one-word kernels run whatever the object count, no other
 * object's runs are met, and the runs need no clipping (the scanned segment
 * is the region). Blob objects label the region in strips as a frame is
 * labelled, in the thread's own lists and strip table (worker.rsi/rsw),
 * and finish_lists joins them and keeps the K best.
 * Cost: the sum of the clipped areas; regions that overlap are scanned once
 * each (a tracker's ROIs overlap only while instances meet, and measuring
 * each on its own keeps each region's labelling exact and simple).
 * Threads: one wake-up per call; workers take whole regions from a
 * dispenser (one region is never split, so a single large region runs on
 * one thread). With the pre-filter on, the whole frame is filtered first. */

/* Points w's prefetch cursor at the first row of region j (none when j is
 * past the last: the cursor then stays idle). */
static void pc_set(struct worker *w, int j)
{
    const struct cpu_fast *s = w->be;
    const struct fctx *g = &s->f;
    struct pcur *pc = &w->pc;
    struct trk_roi c;
    pc->j = j;
    pc->y = 0, pc->y1 = -1;
    if (j >= s->nreg || !trk_roi_clip(&s->regs[j].roi, 0, g->img->width, g->img->height, &c))
        return;
    pc->y = c.y0, pc->y1 = c.y1;
    for (int p = 0; p < g->lay.planes; p++) {
        const size_t rb = g->lay.row_bytes[p], wd = (size_t)g->img->width;
        pc->lo[p] = ((size_t)c.x0 * rb / wd) & ~(size_t)63;
        pc->hi[p] = ((size_t)c.x1 + 1) * rb / wd;
    }
}

/* Asks for the bytes of the cursor's row of every plane (a hint: nothing
 * is read) and moves it one row on: past its region's last row, to the
 * worker's next region, or nowhere until the worker takes another. */
static void pc_step(struct worker *w)
{
    struct pcur *pc = &w->pc;
    while (pc->y > pc->y1) {
        if (pc->j != w->rcur || w->rnext >= w->be->nreg) return;
        pc_set(w, w->rnext);
    }
    const struct fctx *g = &w->be->f;
    const struct trk_image *img = g->img;
    for (int p = 0; p < g->lay.planes; p++) {
        const uint8_t *row = img->plane[p] + (size_t)(pc->y >> g->lay.vshift[p]) * img->pitch[p];
        for (size_t o = pc->lo[p]; o < pc->hi[p]; o += 64)
            __builtin_prefetch(row + o);
        __builtin_prefetch(row + pc->hi[p] - 1);
    }
    pc->y++;
}

/* One thread's share of a call: regions from the dispenser until none is
 * left; f (the thread's rf) gets the frame's fields once. */
static void region_share(struct worker *w)
{
    static const int16_t only[1] = { 0 }; /* bidx: object 0 of otab is blob index 0 */
    struct cpu_fast *s = w->be;
    struct fctx *f = w->rf;
    const struct fctx *g = &s->f; /* the frame's fields, set by the caller */
    const struct trk_image *img = g->img;
    f->img = img;
    f->k_yuv = g->k_yuv;
    f->k_ycc = g->k_ycc;
    f->yy = g->yy;
    f->ext_ok = g->ext_ok;
    f->use_rois = 0;
    f->bidx = only;
    f->bext = w->rbext;
    f->si = w->rsi;
    f->strip_w = w->rsw;
    f->prefetch = 1;
    f->lay = g->lay;
    /* Each worker holds the region after the one it measures, so its
     * prefetch cursor can run into it. */
    w->rcur = atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed);
    w->rnext = w->rcur < s->nreg ? atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed)
                                 : s->nreg;
    pc_set(w, w->rcur);
    for (int i = 0; i < FAST_PREFETCH_ROWS; i++)
        pc_step(w);
    for (;; w->rcur = w->rnext,
            w->rnext = atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed)) {
        const int j = w->rcur;
        if (j >= s->nreg) break;
        const struct trk_region *R = &s->regs[j];
        const int bi = s->bidx[R->obj];
        struct trk_roi c;
        s->rnb[j] = 0;
        if (!trk_roi_clip(&R->roi, 0, img->width, img->height, &c)) {
            trk_result_clear(&s->rres[j]);
            continue;
        }
        f->tab = &s->otab[R->obj];
        box_setup(s, f, &s->objs[R->obj]);
        f->kern = bi >= 0 ? &s->kern_b : &s->kern;
        f->nb = bi >= 0;
        f->xa = c.x0, f->xb = c.x1, f->ya = c.y0, f->yb = c.y1;
        w->acc[0] = (struct acc){ 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1 };
        if (bi >= 0) {
            w->rbext[0] = s->bext[bi];
            w->oom = 0;
            w->bl[0].nrun = w->bl[0].ncomp = w->bl[0].row0 = 0;
        }
        for (int y0 = c.y0; y0 <= c.y1; y0 += FAST_STRIP_ROWS)
            do_strip(w, f, y0, y0 + FAST_STRIP_ROWS - 1 < c.y1 ? y0 + FAST_STRIP_ROWS - 1 : c.y1);
        const struct acc *a = &w->acc[0];
        struct trk_obj_result *r = &s->rres[j];
        if (a->mass == 0) {
            trk_result_clear(r);
        } else {
            *r = (struct trk_obj_result){ a->mass, a->sum_x, a->sum_y, a->x0, a->y0, a->x1, a->y1 };
        }
        if (bi < 0) continue;
        if (w->oom) {
            atomic_store_explicit(&s->rerr, 1, memory_order_relaxed);
            continue;
        }
        s->rnb[j] = finish_lists(s, f, 0, w->idx, w->idx + 1, s->bmin[bi], s->bk[bi], s->rblob[j]);
    }
}

/* Room for n regions' results and lists (kept for later calls). */
static int regions_reserve(struct cpu_fast *s, int n)
{
    if (n <= s->rcap) return 0;
    int cap = s->rcap ? s->rcap : 64;
    while (cap < n)
        cap *= 2;
    if (cap > TRK_MAX_REGIONS) cap = TRK_MAX_REGIONS;
    struct trk_obj_result *res = realloc(s->rres, (size_t)cap * sizeof(*res));
    if (res) s->rres = res;
    struct trk_blob(*bl)[TRK_MAX_BLOBS] = realloc(s->rblob, (size_t)cap * sizeof(*bl));
    if (bl) s->rblob = bl;
    int *nb = realloc(s->rnb, (size_t)cap * sizeof(*nb));
    if (nb) s->rnb = nb;
    if (!res || !bl || !nb) return TRK_ENOMEM;
    s->rcap = cap;
    return 0;
}

static int fast_submit_regions(void *self, const struct trk_image *img, const struct trk_region *r,
                               int n)
{
    struct cpu_fast *s = self;
    const double t0 = trk_backend_now_ms();
    s->rmode = 1;
    s->nreg = 0;
    int err = regions_reserve(s, n);
    if (err) return err;
    if (s->pf.pf.sigma > 0 && n > 0) img = pf_frame(s, img);
    struct fctx *g = &s->f;
    const int ci = trk_coef_index((int)img->matrix, img->full_range);
    g->img = img;
    g->k_yuv = &trk_yuv2rgb_coefs[ci];
    g->k_ycc = &trk_rgb2ycc_coefs[ci];
    g->yy = s->yytab[ci];
    g->ext_ok = s->ext_ok;
    trk_image_plane_layout(img->fmt, img->width, img->height, &g->lay);
    s->regs = r;
    s->nreg = n;
    atomic_store_explicit(&s->next_reg, 0, memory_order_relaxed);
    atomic_store_explicit(&s->rerr, 0, memory_order_relaxed);
    long px = 0;
    for (int j = 0; j < n && px < FAST_MIN_POOL_PIXELS; j++) {
        struct trk_roi c;
        if (trk_roi_clip(&r[j].roi, 0, img->width, img->height, &c))
            px += (long)(c.x1 - c.x0 + 1) * (c.y1 - c.y0 + 1);
    }
    const int nt = s->nthreads > 1 && n > 1 && px >= FAST_MIN_POOL_PIXELS ? s->nthreads : 1;
    pool_wake(s, nt);
    region_share(&s->w[0]);
    pool_join(s, nt);
    s->total_ms = trk_backend_now_ms() - t0;
    return atomic_load_explicit(&s->rerr, memory_order_relaxed) ? TRK_ENOMEM : 0;
}

static int fast_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cpu_fast *s = self;
    if (s->rmode) return trk_backend_sync_wait(s->rres, s->nreg, s->total_ms, out, t);
    return trk_backend_sync_wait(s->res, s->tab.n, s->total_ms, out, t);
}

/* Variants: "lut" (default) uses the best kernels this CPU runs; "lut-portable"
 * only the baseline-ISA ones, so tests cover both and the benchmark shows
 * what the AVX2 copies buy. */
static const char *const fast_variants[] = { "lut", "lut-portable", NULL };

static const char *fast_describe(void *self)
{
    const struct cpu_fast *s = self;
    return s->portable ? "cpu:lut-portable" : "cpu";
}

static int fast_blobs(void *self, int obj, const struct trk_blob **out)
{
    static const struct trk_blob none[1];
    struct cpu_fast *s = self;
    if (s->rmode) { /* obj is a region (backend.c checked it) */
        *out = s->rblob[obj];
        return s->rnb[obj];
    }
    const int bi = s->bidx[obj];
    *out = bi < 0 ? none : s->blob[bi];
    return bi < 0 ? 0 : s->n_blobs[bi];
}

const struct trk_backend_ops trk_cpu_fast_ops = {
    TRK_BACKEND_OPS(fast, "cpu"), .describe = fast_describe,
    .variants = fast_variants,    .set_prefilter = fast_set_prefilter,
    .blobs = fast_blobs,          .submit_regions = fast_submit_regions,
};
