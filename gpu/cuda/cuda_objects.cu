/* The CUDA backend's objects (set_objects): the lookup-table images, the
 * grouping of similar colours into summary slots, and the blob-list set-up
 * (group sizes, scratch, table images per group). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"

namespace trk_cuda
{

/* Builds the table image of gpu/cuda/cuda_internal.cuh (struct trk_cu_lut)
 * for objs into h (zeroed here); ord[k]: object k's class index
 * (trk_class_cells), -1 for a box object. */
static void build_lut(const struct trk_object_def *objs, int n, const int *pos, const int *ord,
                      struct trk_cu_lut *lt, uint32_t *h)
{
    memset(lt, 0, sizeof(*lt));
    lt->nw = 1;
    while (lt->nw * 32 < n)
        lt->nw *= 2;
    const int nw = lt->nw;
    for (int s = 0; s < TRK_SPACE_COUNT; s++) {
        lt->wb[s] = 1 << 20;
        lt->we[s] = 0;
    }
    for (int j = 0; j < TRK_MAX_CLASSES; j++)
        lt->cls_slot[j] = -1;
    for (int k = 0; k < n; k++) {
        if (objs[k].space == TRK_SPACE_CLASS) {
            lt->cls_slot[ord[k]] = pos[k];
            lt->ncls = 1;
        }
    }
    for (int k = 0; k < n; k++) {
        if (objs[k].space == TRK_SPACE_CLASS) continue;
        const int s = objs[k].space, w = pos[k] / 32;
        lt->has[s] = 1;
        if (w < lt->wb[s]) lt->wb[s] = w;
        if (w + 1 > lt->we[s]) lt->we[s] = w + 1;
    }
    int words = 0;
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            lt->sum_off[s][c] = words;
            words += (int)align_up((size_t)trk_chan_values(s, c), 4);
        }
    lt->sum_words = words;
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            lt->full_off[s][c] = words;
            words += (int)align_up((size_t)trk_chan_values(s, c) * nw, 4);
        }
    /* An all-zero entry: lanes whose pixels passed no summary read it (the
     * same address for all of them: a broadcast, no divergence). */
    lt->zero_off = words;
    words += (int)align_up((size_t)nw, 4);
    lt->words = words;
    /* The shared-memory accumulators follow the image (trk_cu_table_smem). */
    TRK_ASSERT(words % 4 == 0 && words <= LUT_MAX_WORDS);
    memset(h, 0, (size_t)words * 4);
    for (int k = 0; k < n; k++) {
        const int s = objs[k].space;
        for (int c = 0; c < 3 && s != TRK_SPACE_CLASS; c++) {
            const int nv = trk_chan_values(s, c);
            uint32_t *t = h + lt->full_off[s][c];
            for (int v = 0; v < nv; v++)
                if (trk_chan_has(objs[k].lo, objs[k].hi, s == TRK_SPACE_HSV, c, v))
                    t[v * nw + pos[k] / 32] |= 1u << (pos[k] % 32);
        }
    }
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            const int nv = trk_chan_values(s, c);
            for (int v = 0; v < nv; v++) {
                uint32_t m = 0;
                for (int w = 0; w < nw; w++)
                    m |= h[lt->full_off[s][c] + v * nw + w];
                h[lt->sum_off[s][c] + v] = m;
            }
        }
}

/* Slot assignment for the table variants. Summary bit j is the OR of the
 * slots j, 32 + j, 64 + j, ...: a pixel passes the summary when, channel by
 * channel, some object of the group accepts it, which for a group of
 * unrelated colours happens often (a gray pixel inside one object's green
 * range, another's red range and a third's blue range). Groups of similar
 * colours keep the summary nearly as selective as the objects themselves,
 * so most background segments skip the full tables. Objects are sorted by
 * space, then by a coarse colour signature, and dealt into groups in order. */
struct okey {
    int space, primary, secondary, index;
};

static int okey_cmp(const void *a, const void *b)
{
    const struct okey *x = (const struct okey *)a, *y = (const struct okey *)b;
    if (x->space != y->space) return x->space - y->space;
    if (x->primary != y->primary) return x->primary - y->primary;
    if (x->secondary != y->secondary) return x->secondary - y->secondary;
    return x->index - y->index;
}

static void group_objects(const struct trk_object_def *objs, int n, int nw, int *pos)
{
    struct okey keys[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        const struct trk_object_def *o = &objs[k];
        int c[3];
        for (int i = 0; i < 3; i++)
            c[i] = (o->lo[i] + o->hi[i]) / 2;
        struct okey *e = &keys[k];
        e->space = o->space;
        e->index = k;
        if (o->space == TRK_SPACE_CLASS) { /* no box: together, in object order */
            e->primary = e->secondary = 0;
        } else if (o->space == TRK_SPACE_HSV) {
            if (o->lo[0] > o->hi[0])
                c[0] = ((o->lo[0] + o->hi[0] + TRK_HUE_VALUES) / 2) % TRK_HUE_VALUES;
            e->primary = c[0] / 8;
            e->secondary = c[1];
        } else {
            /* which channel is largest and which smallest, then the middle one */
            int mx = 0, mn = 0;
            for (int i = 1; i < 3; i++) {
                if (c[i] > c[mx]) mx = i;
                if (c[i] < c[mn]) mn = i;
            }
            e->primary = mx * 3 + mn;
            const int mid = mx != mn ? 3 - mx - mn : 0;
            e->secondary = c[mid];
        }
    }
    qsort(keys, (size_t)n, sizeof(keys[0]), okey_cmp);
    for (int i = 0; i < n; i++)
        pos[keys[i].index] = (i % nw) * 32 + i / nw;
}

blob_strides blob_strides_of(const struct cuda_be *b)
{
    const size_t h = (size_t)b->max_h;
    return blob_strides{ ((size_t)b->max_w + 31) / 32 * h, h, ((size_t)b->max_w + 1) / 2 * h };
}

/* The fused variant's blob masks (trk_cu_bmask): a scratch of words words
 * per blob object (kept when large enough), zeroed; the blob objects'
 * slots and their indices. Called with nothing in flight. */
static int setup_masks(struct cuda_be *b, size_t words)
{
    memset(b->bbits, 0, sizeof(b->bbits));
    if (b->variant != V_FUSED) return 0;
    uint16_t idx[TRK_MAX_OBJECTS];
    memset(idx, 0xff, sizeof(idx));
    for (int i = 0; i < b->nbo; i++) {
        const int slot = b->h_bobj[i].slot;
        b->bbits[slot / 32] |= 1u << (slot % 32);
        idx[slot] = (uint16_t)i;
    }
    const size_t need = (size_t)b->nbo * words;
    if (need > b->bmask_words) {
        cudaFree(b->d_bmask);
        b->d_bmask = NULL;
        b->bmask_words = 0;
        if (cudaMalloc(&b->d_bmask, need * sizeof(uint32_t)) != cudaSuccess) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0, "blob masks (%zu MB) failed: %s",
                          need * sizeof(uint32_t) >> 20, cudaGetErrorString(cudaGetLastError()));
            return TRK_ENOMEM;
        }
        b->bmask_words = need;
    }
    if (!b->d_bidx) TRK_CUDA_TRY(cudaMalloc(&b->d_bidx, sizeof(idx)));
    TRK_CUDA_TRY(cudaMemcpy(b->d_bidx, idx, sizeof(idx), cudaMemcpyHostToDevice));
    /* Before any kernel of the stream; setup_blobs waits for it. */
    TRK_CUDA_TRY(cudaMemsetAsync(b->d_bmask, 0, b->bmask_words * sizeof(uint32_t), b->s_k));
    return 0;
}

/* The blob objects of objs (those with blobs > 0): descriptors uploaded,
 * output layout (each object's K records after the previous ones), the
 * labelling scratch for as many objects per pass as TRK_BLOB_SCRATCH_BYTES
 * allows (at least one; kept when large enough already) and each pass's
 * table image (the aggregate tables' layout and builder, with the pass's
 * objects as slots 0..). Runs after the slots (pos) are set: a blob object
 * reads its ROI from its slot. */
static int setup_blobs(struct cuda_be *b, const struct trk_object_def *objs, int n)
{
    int off = 0;
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        const struct trk_object_def *d = &objs[k];
        if (!d->blobs) continue;
        struct trk_cu_bobj *o = &b->h_bobj[b->nbo];
        memset(o, 0, sizeof(*o));
        memcpy(o->lo, d->lo, sizeof(o->lo));
        memcpy(o->hi, d->hi, sizeof(o->hi));
        o->space = d->space;
        if (d->space == TRK_SPACE_CLASS) o->lo[0] = (uint16_t)b->cls_ord[k];
        o->conn = d->connectivity == 4 ? 4 : 8;
        o->min_area = d->min_area ? d->min_area : 1;
        o->k = d->blobs;
        o->off = off;
        o->slot = b->pos[k];
        off += d->blobs;
        defs[b->nbo] = *d;
        b->bobj_of[b->nbo++] = k;
    }
    if (!b->nbo) {
        free_blob_scratch(b);
        return 0;
    }
    if (b->max_w > TRK_BLOB_MAX_SIDE || b->max_h > TRK_BLOB_MAX_SIDE) {
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "blob lists need frames of at most %d pixels a side (backend made for %dx%d)",
                      TRK_BLOB_MAX_SIDE, b->max_w, b->max_h);
        b->nbo = 0;
        return TRK_EINVAL;
    }
    b->bout_bytes = TRK_CU_BLOB_HDR + (size_t)off * sizeof(struct trk_cu_blob);
    const blob_strides st = blob_strides_of(b);
    const size_t per = trk_cu_blob_obj_bytes(b->max_w, b->max_h);
    size_t fit = TRK_BLOB_SCRATCH_BYTES / per;
    /* Run slots of a pass stay below 2^31 (the tag bit of selected roots). */
    const size_t fit_tag = ((size_t)1 << 31) / st.runs - 1;
    if (fit > fit_tag) fit = fit_tag;
    if (fit < 1) fit = 1;
    const int group = (size_t)b->nbo < fit ? b->nbo : (int)fit;
    if (group > b->group) {
        free_blob_scratch(b);
        const size_t g = (size_t)group;
        bool ok = cudaMalloc(&b->d_broots, g * st.words * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_browoff, g * st.rows * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_browcnt, g * st.rows * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_byg, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bparent, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bmass, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bfirst, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bx0, g * st.runs * 2) == cudaSuccess &&
                  cudaMalloc(&b->d_bx1, g * st.runs * 2) == cudaSuccess;
        if (!ok) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                          "blob labelling scratch for %d objects (%zu MB) failed: %s", group,
                          g * per >> 20, cudaGetErrorString(cudaGetLastError()));
            free_blob_scratch(b);
            b->nbo = 0;
            return TRK_ENOMEM;
        }
        b->group = group;
    }
    /* The passes' table images, one after the other (each a multiple of 4
     * words: 16-byte aligned). */
    uint32_t *img = (uint32_t *)malloc(LUT_MAX_WORDS * 4);
    if (!img) {
        b->nbo = 0;
        return TRK_ENOMEM;
    }
    int pos[TRK_MAX_OBJECTS], ord[TRK_MAX_OBJECTS];
    for (int i = 0; i < TRK_MAX_OBJECTS; i++)
        pos[i] = i;
    for (int i = 0; i < b->nbo; i++)
        ord[i] = b->cls_ord[b->bobj_of[i]];
    size_t words = 0, smem = 0;
    for (int g0 = 0, p = 0; g0 < b->nbo; g0 += b->group, p++) {
        const int gn = b->nbo - g0 < b->group ? b->nbo - g0 : b->group;
        build_lut(defs + g0, gn, pos, ord + g0, &b->blt[p], img);
        b->blut_off[p] = words;
        words += (size_t)b->blt[p].words;
        const size_t sm = trk_cu_blob_smem(&b->blt[p]);
        if (sm > smem) smem = sm;
    }
    /* A frame in flight may still read the old images. */
    int err = TRK_CUDA_CHECK(cudaStreamSynchronize(b->s_k));
    if (!err && words > b->blut_words) {
        cudaFree(b->d_blut);
        b->d_blut = NULL;
        b->blut_words = 0;
        if (cudaMalloc(&b->d_blut, words * 4) != cudaSuccess) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0, "blob tables (%zu KB) failed: %s",
                          words * 4 >> 10, cudaGetErrorString(cudaGetLastError()));
            err = TRK_ENOMEM;
        } else {
            b->blut_words = words;
        }
    }
    if (!err) err = setup_masks(b, st.words);
    for (int g0 = 0, p = 0; !err && g0 < b->nbo; g0 += b->group, p++) {
        const int gn = b->nbo - g0 < b->group ? b->nbo - g0 : b->group;
        build_lut(defs + g0, gn, pos, ord + g0, &b->blt[p], img);
        err = TRK_CUDA_CHECK(cudaMemcpy(b->d_blut + b->blut_off[p], img,
                                        (size_t)b->blt[p].words * 4, cudaMemcpyHostToDevice));
    }
    free(img);
    if (!err) err = trk_cu_blobs_setup(smem);
    if (err) {
        b->nbo = 0;
        return err;
    }
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_bobj, b->h_bobj, (size_t)b->nbo * sizeof(b->h_bobj[0]),
                                 cudaMemcpyHostToDevice, b->s_k));
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    return 0;
}

/* The set's class cell table (trk_class_cells) into d_cls, made the first
 * time a set has class objects (512 KiB, kept), and cls_ord. A frame in
 * flight may still read the old table, so the copy waits for it. */
static int set_classes(struct cuda_be *b, const struct trk_object_def *objs, int n)
{
    int ncls = 0;
    for (int k = 0; k < n; k++)
        ncls += objs[k].space == TRK_SPACE_CLASS;
    for (int k = 0; k < TRK_MAX_OBJECTS; k++)
        b->cls_ord[k] = -1;
    if (!ncls) return 0;
    const size_t bytes = TRK_CLASS_CELLS * sizeof(uint16_t);
    if (!b->h_cls) {
        b->h_cls = (uint16_t *)malloc(bytes);
        if (!b->h_cls) return TRK_ENOMEM;
    }
    if (!b->d_cls && cudaMalloc(&b->d_cls, bytes) != cudaSuccess) {
        trk_log_write(TRK_LOG_ERROR, "cuda", 0, "class cell table (512 KiB) failed: %s",
                      cudaGetErrorString(cudaGetLastError()));
        b->d_cls = NULL;
        return TRK_ENOMEM;
    }
    if (trk_class_cells(objs, n, b->h_cls, b->cls_ord) < 0) return TRK_EINVAL;
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    TRK_CUDA_TRY(cudaMemcpy(b->d_cls, b->h_cls, bytes, cudaMemcpyHostToDevice));
    return 0;
}

int cu_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    int cerr = set_classes(b, objs, n);
    if (cerr) return cerr;
    int rerr = regions_set_objects(b, objs, n);
    if (rerr) return rerr;
    b->n = n;
    b->nbo = 0;
    b->bench_blobs = false;
    memset(b->n_blob, 0, sizeof(b->n_blob));
    if (n == 0) return 0;
    int nw = 1;
    while (nw * 32 < n)
        nw *= 2;
    const bool tables = b->variant == V_FUSED || b->variant == V_LUT;
    if (tables) {
        group_objects(objs, n, nw, b->pos);
        b->slots = 32 * nw;
    } else {
        for (int k = 0; k < n; k++)
            b->pos[k] = k;
        b->slots = n;
    }
    build_lut(objs, n, b->pos, b->cls_ord, &b->lt, b->h_lut);
    struct trk_cu_obj h_objs[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        memcpy(h_objs[k].lo, objs[k].lo, sizeof(h_objs[k].lo));
        memcpy(h_objs[k].hi, objs[k].hi, sizeof(h_objs[k].hi));
        h_objs[k].space = objs[k].space;
        if (objs[k].space == TRK_SPACE_CLASS) h_objs[k].lo[0] = (uint16_t)b->cls_ord[k];
    }
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_lut, b->h_lut, (size_t)b->lt.words * 4,
                                 cudaMemcpyHostToDevice, b->s_k));
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_objs, h_objs, (size_t)n * sizeof(h_objs[0]),
                                 cudaMemcpyHostToDevice, b->s_k));
    for (int i = 0; i < 2; i++)
        TRK_CUDA_TRY(
            cudaMemsetAsync(b->d_acc[i], 0, TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc), b->s_k));
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    b->parity = 0;
    b->dirty = false;
    if (b->variant == V_FUSED) {
        int bps = 0;
        int err = trk_cu_fused_setup(&b->lt, trk_cu_fused_smem(b->lt, b->slots), &bps);
        if (err) return err;
        b->fused_grid = bps * b->sms;
    } else if (b->variant == V_LUT) {
        int err = trk_cu_lut_setup(trk_cu_table_smem(b->lt, b->slots));
        if (err) return err;
    }
    return setup_blobs(b, objs, n);
}

} // namespace trk_cuda
