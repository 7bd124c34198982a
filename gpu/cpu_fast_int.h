/* Internals of the fast CPU backend ("cpu"), shared by its files:
 * cpu_fast.c (the design, lifecycle, tables, submit), cpu_fast_rows.c (row
 * kernels, row decode, the box test), cpu_fast_blobs.c (blob labelling),
 * cpu_fast_pool.c (the thread pool and the strip dispenser),
 * cpu_fast_prefilter.c (the pre-filter over the pool) and
 * cpu_fast_regions.c (the regional form). The design is described at the top
 * of cpu_fast.c. Private to gpu/. */
#ifndef TRK_GPU_CPU_FAST_INT_H
#define TRK_GPU_CPU_FAST_INT_H

#include "backend_impl.h"
#include "color.h"
#include "moments.h"

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
    int n;                    /* objects */
    int nw;                   /* 64-bit words per mask: 1, 2 or 4 */
    int has[TRK_SPACE_COUNT]; /* per trk_space: some object uses it */
    /* full[space][channel]: FAST_NVALS rows of nw words (stride nw), aligned
     * so a row loads as one vector. sum[space][channel]: one word per value,
     * bit j = OR of bit j of the row's words (equal to full when nw == 1). */
    uint64_t *full[TRK_SPACE_COUNT][3];
    uint64_t *sum[TRK_SPACE_COUNT][3];
    /* rgb objects on YUV frames: FAST_EXT_N rows of nw words per channel,
     * and their one-word summaries. */
    uint64_t *ext[3];
    uint64_t *ext_sum[3];
    /* HSV saturation by (max << 8 | (max - min)), from trk_rgb_to_hsv itself
     * so it is exact by construction; 64 KiB, replaces a division. */
    uint8_t *sat;
    /* lab and rg objects: color.h's tables (trk_light_tables), and the
     * coarse RGB cells (trk_light_cell_ranges) where some lab or rg object
     * may match, one bit each; NULL: every cell may (the regions' tables). */
    const struct trk_light_tab *light;
    const uint64_t *gate;
    /* Class objects (painted tables, backend.h): any (ncls > 0), the set's
     * cell table (trk_class_cells: bit j = class j has the cell) and per
     * class j the mask of its object (nw words; a region's tables: bit 0
     * for its own object's class, 0 for the others). */
    int ncls;
    const uint16_t *cls_cells;
    uint64_t cls_mask[TRK_MAX_CLASSES][FAST_MAX_WORDS] __attribute__((aligned(32)));
};

/* Per-object accumulators of one thread; bbox starts inverted so min/max
 * need no "first pixel" test. */
struct acc {
    uint64_t mass, sum_x, sum_y;
    int32_t x0, y0, x1, y1;
    uint64_t sum_xx, sum_yy, sum_xy;
};

/* Adds the run [a, b] (len pixels) of row y to the sums of *c (a struct acc
 * or a struct trk_blob: the same member names). */
#define FAST_ADD_RUN(c, a, b, y, len)                                                              \
    do {                                                                                           \
        const uint64_t rsx_ = (uint64_t)((a) + (b)) * (len) / 2; /* (a+b)*len is even */           \
        (c)->mass += (len);                                                                        \
        (c)->sum_x += rsx_;                                                                        \
        (c)->sum_y += (uint64_t)(y) * (len);                                                       \
        (c)->sum_xx += trk_run_sum_xx((uint32_t)(a), (uint32_t)(b));                               \
        (c)->sum_yy += (uint64_t)(y) * (uint64_t)(y) * (len);                                      \
        (c)->sum_xy += (uint64_t)(y)*rsx_;                                                         \
    } while (0)

/* Adds every sum of *a to *b (the merges: any order gives the same integers). */
#define FAST_ADD_SUMS(b, a)                                                                        \
    do {                                                                                           \
        (b)->mass += (a)->mass;                                                                    \
        (b)->sum_x += (a)->sum_x;                                                                  \
        (b)->sum_y += (a)->sum_y;                                                                  \
        (b)->sum_xx += (a)->sum_xx;                                                                \
        (b)->sum_yy += (a)->sum_yy;                                                                \
        (b)->sum_xy += (a)->sum_xy;                                                                \
    } while (0)

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
    /* tab.cls_cells (made when a set first has class objects, kept) and
     * each object's class index (trk_class_cells). */
    uint16_t *cls_cells;
    int cls_ord[TRK_MAX_OBJECTS];
    /* tab.gate's bits (set_objects, when the set has lab or rg objects). */
    uint64_t light_gate[TRK_LIGHT_CELLS / 64];
    /* The frame's ROI stretches for dense rows (fctx.seg_x / seg_allow). */
    int32_t seg_x[2 * TRK_MAX_OBJECTS + 2];
    uint64_t seg_allow[(2 * TRK_MAX_OBJECTS + 1) * FAST_MAX_WORDS];
};

/* Doubles a list's capacity (realloc keeps the contents); 0 or -1. */
static inline int grow(void **p, uint32_t *cap, size_t elem)
{
    if (*cap > UINT32_MAX / 2) return -1;
    uint32_t ncap = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, (size_t)ncap * elem);
    if (!q) return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

/* v rounded up to a multiple of 64 (aligned_alloc sizes). */
static inline size_t align64(size_t v)
{
    return (v + 63) / 64 * 64;
}

/* Shared between the files (each documented where it is defined). */
void trk_fast_kernels_pick(struct kernels *k, struct kernels *kb, int portable);
void trk_fast_box_setup(const struct cpu_fast *s, struct fctx *f, const struct trk_object_def *o);
void trk_fast_do_row(struct worker *w, const struct fctx *f, int y);
void trk_fast_strip_begin(struct worker *w, const struct fctx *f);
void trk_fast_label_row(struct worker *w, const struct fctx *f, int k);
void trk_fast_strip_end(struct worker *w, const struct fctx *f, int y0, int rows);
int trk_fast_finish_lists(const struct cpu_fast *s, const struct fctx *f, int bi, int k0, int k1,
                          uint64_t min_area, int K, struct trk_blob *list);
void trk_fast_blobs_finish(struct cpu_fast *s, int nacc);
void trk_fast_do_strip(struct worker *w, const struct fctx *f, int y0, int y1);
void trk_fast_run_share(struct worker *w, struct fctx *f, int n);
void *trk_fast_worker_main(void *arg);
void trk_fast_pool_wake(struct cpu_fast *s, int nt);
void trk_fast_pool_join(struct cpu_fast *s, int nt);
int trk_fast_set_prefilter(void *self, const struct trk_prefilter *pf);
void trk_fast_pf_share(struct worker *w, struct cpu_fast *s);
const struct trk_image *trk_fast_pf_frame(struct cpu_fast *s, const struct trk_image *img);
void trk_fast_pc_step(struct worker *w);
void trk_fast_region_share(struct worker *w);
int trk_fast_submit_regions(void *self, const struct trk_image *img, const struct trk_region *r,
                            int n);

#endif
