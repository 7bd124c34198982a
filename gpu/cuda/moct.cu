/* The seed-faithful MOCT operator (docs/ARCHITECTURE.md section 5, seed 003 section 3.3):
 * a 2-D multiple reduction whose operations are the M colour tests.
 *
 * Arrangement: the objects are laid out horizontally (aw x ah = M x 1),
 * vertically (1 x M) or in a square (q x q, q = ceil(sqrt M), slots >= M
 * wasted). Copies of the arrangement tile a 2-D stream the size of the image
 * (rounded up to whole copies): the base. Base element (bx, by) belongs to
 * copy (bx / aw, by / ah), tests object slot (bx % aw, by % ah) and scans the
 * pixels under its copy, i.e. the image rectangle [cx*aw, cx*aw+aw) x
 * [cy*ah, cy*ah+ah): every pixel is read once per object, O(MN) work.
 * Reduction: each pass makes a new stream keeping the arrangement, in which
 * an element combines the r elements of the same slot in r neighbouring
 * copies (along x while more than one copy column is left, then along y),
 * until one copy remains: its slot k holds object k's result. */
#include "cuda_internal.cuh"

/* A partial result: exact, 56 bytes. Empty: mass 0, x0 = y0 = 0xffff,
 * x1 = y1 = 0. */
struct trk_cu_moct_entry {
    unsigned long long sx, sy, sxx, syy, sxy;
    unsigned mass;
    uint16_t x0, y0, x1, y1;
};

namespace
{

typedef struct trk_cu_moct_entry entry;

struct arrangement {
    int aw, ah; /* slots per copy                */
    int cx, cy; /* copies across the image / level */
};

__host__ __device__ inline void arr_dims(int arr, int m, int &aw, int &ah)
{
    if (arr == TRK_ARR_H) {
        aw = m;
        ah = 1;
    } else if (arr == TRK_ARR_V) {
        aw = 1;
        ah = m;
    } else {
        int q = 1;
        while (q * q < m)
            q++;
        aw = ah = q;
    }
}

__device__ __forceinline__ entry entry_empty()
{
    entry e;
    e.sx = e.sy = e.sxx = e.syy = e.sxy = 0;
    e.mass = 0;
    e.x0 = e.y0 = 0xffff;
    e.x1 = e.y1 = 0;
    return e;
}

__device__ __forceinline__ void entry_merge(entry &a, const entry &b)
{
    a.sx += b.sx;
    a.sy += b.sy;
    a.sxx += b.sxx;
    a.syy += b.syy;
    a.sxy += b.sxy;
    a.mass += b.mass;
    a.x0 = (uint16_t)min((int)a.x0, (int)b.x0);
    a.y0 = (uint16_t)min((int)a.y0, (int)b.y0);
    a.x1 = (uint16_t)max((int)a.x1, (int)b.x1);
    a.y1 = (uint16_t)max((int)a.y1, (int)b.y1);
}

/* Local evaluations. Grid: 2-D over the base (one thread per element,
 * TRK_MOCT_BX x TRK_MOCT_BY per block, in the base's own layout, so a warp
 * covers neighbouring slots of one copy (horizontal: 32 objects on the same
 * pixels) or the same slot of neighbouring copies (vertical)). No shared
 * memory, no atomics: each element is written by its one thread. */
__global__ void moct_base(const struct trk_cu_job job, arrangement a, entry *base)
{
    const int bx = blockIdx.x * blockDim.x + threadIdx.x;
    const int by = blockIdx.y * blockDim.y + threadIdx.y;
    const int bw = a.cx * a.aw, bh = a.cy * a.ah;
    if (bx >= bw || by >= bh) return;
    const int k = (by % a.ah) * a.aw + bx % a.aw;
    entry e = entry_empty();
    if (k < job.n_obj) {
        const struct trk_cu_obj o = job.objs[k];
        int x0 = (bx / a.aw) * a.aw, y0 = (by / a.ah) * a.ah;
        int x1 = min(x0 + a.aw, job.f.width) - 1, y1 = min(y0 + a.ah, job.f.height) - 1;
        if (job.rois) {
            const struct trk_roi r = job.rois[k];
            x0 = max(x0, r.x0);
            y0 = max(y0, r.y0);
            x1 = min(x1, r.x1);
            y1 = min(y1, r.y1);
        }
        const bool yuv = trk_fmt_is_yuv(job.f.fmt);
        for (int y = y0; y <= y1; y++)
            for (int x = x0; x <= x1; x++) {
                int na, nb, nc;
                trk_cu_native(job.f, x, y, na, nb, nc);
                if (!trk_cu_obj_match(job.f, yuv, o, na, nb, nc)) continue;
                e.mass++;
                e.sx += (unsigned)x;
                e.sy += (unsigned)y;
                e.sxx += (unsigned long long)x * (unsigned)x;
                e.syy += (unsigned long long)y * (unsigned)y;
                e.sxy += (unsigned long long)x * (unsigned)y;
                e.x0 = (uint16_t)min((int)e.x0, x);
                e.y0 = (uint16_t)min((int)e.y0, y);
                e.x1 = (uint16_t)max((int)e.x1, x);
                e.y1 = (uint16_t)max((int)e.y1, y);
            }
    }
    base[(size_t)by * bw + bx] = e;
}

/* One reduction pass. Grid: 2-D over the output level, one thread per
 * element; it gathers the r parents of its slot (along x when along_x, else
 * along y) from the input level. No shared memory, no atomics. */
__global__ void moct_pass(arrangement in, arrangement out, bool along_x, int r, const entry *src,
                          entry *dst)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int ow = out.cx * out.aw, oh = out.cy * out.ah;
    if (ox >= ow || oy >= oh) return;
    const int iw = in.cx * in.aw;
    entry e = entry_empty();
    if (along_x) {
        const int c0 = (ox / in.aw) * r, slot = ox % in.aw;
        for (int t = 0; t < r && c0 + t < in.cx; t++)
            entry_merge(e, src[(size_t)oy * iw + (size_t)(c0 + t) * in.aw + slot]);
    } else {
        const int c0 = (oy / in.ah) * r, slot = oy % in.ah;
        for (int t = 0; t < r && c0 + t < in.cy; t++)
            entry_merge(e, src[((size_t)(c0 + t) * in.ah + slot) * iw + ox]);
    }
    dst[(size_t)oy * ow + ox] = e;
}

/* Final gather. Grid: 1-D, one thread per object: reads its slot of the
 * single remaining copy and writes the frame's accumulators (plain stores:
 * each object has one writer); also zeroes the other parity's accumulators. */
__global__ void moct_final(arrangement a, const entry *lvl, int n, struct trk_cu_acc *acc,
                           struct trk_cu_acc *acc_clear)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const entry e = lvl[(size_t)(k / a.aw) * a.aw + k % a.aw];
    struct trk_cu_acc o = {};
    if (e.mass) {
        o.mass = e.mass;
        o.sx = e.sx;
        o.sy = e.sy;
        o.sxx = e.sxx;
        o.syy = e.syy;
        o.sxy = e.sxy;
        o.nx0 = TRK_ACC_BIG - e.x0;
        o.ny0 = TRK_ACC_BIG - e.y0;
        o.px1 = e.x1 + 1u;
        o.py1 = e.y1 + 1u;
    }
    acc[k] = o;
    if (acc_clear) acc_clear[k] = trk_cu_acc{};
}

size_t entries(const arrangement &a)
{
    return (size_t)a.cx * a.aw * a.cy * a.ah;
}

arrangement level0(int w, int h, int m, int arr)
{
    arrangement a;
    arr_dims(arr, m, a.aw, a.ah);
    a.cx = (w + a.aw - 1) / a.aw;
    a.cy = (h + a.ah - 1) / a.ah;
    return a;
}

/* The next level and whether it reduces along x. */
arrangement next_level(arrangement a, int r, bool *along_x)
{
    *along_x = a.cx > 1;
    if (*along_x)
        a.cx = (a.cx + r - 1) / r;
    else
        a.cy = (a.cy + r - 1) / r;
    return a;
}

} // namespace

size_t trk_cu_moct_scratch_bytes(int max_w, int max_h, int max_obj, int arr, int r)
{
    size_t best = 0;
    for (int m = 1; m <= max_obj; m++) {
        arrangement a = level0(max_w, max_h, m, arr);
        bool ax;
        arrangement b = (a.cx > 1 || a.cy > 1) ? next_level(a, r, &ax) : a;
        size_t need = (entries(a) + entries(b)) * sizeof(entry);
        if (need > best) best = need;
    }
    return best;
}

int trk_cu_moct_launch(const struct trk_cu_job *job, int arr, int r, void *d_scratch,
                       size_t scratch_bytes, cudaStream_t s)
{
    if (!job || job->n_obj <= 0 || job->n_obj > TRK_MAX_OBJECTS || !job->objs || !d_scratch ||
        r < 2 || r > TRK_MOCT_MAX_R || arr < TRK_ARR_H || arr > TRK_ARR_S ||
        job->f.width > TRK_MOCT_MAX_SIDE || job->f.height > TRK_MOCT_MAX_SIDE)
        return TRK_EINVAL;
    arrangement a = level0(job->f.width, job->f.height, job->n_obj, arr);
    entry *buf[2];
    buf[0] = static_cast<entry *>(d_scratch);
    buf[1] = buf[0] + entries(a);
    {
        bool ax;
        arrangement b = (a.cx > 1 || a.cy > 1) ? next_level(a, r, &ax) : a;
        if ((entries(a) + entries(b)) * sizeof(entry) > scratch_bytes) return TRK_ETOOBIG;
    }
    const dim3 blk(TRK_MOCT_BX, TRK_MOCT_BY);
    {
        const int bw = a.cx * a.aw, bh = a.cy * a.ah;
        dim3 grid((bw + blk.x - 1) / blk.x, (bh + blk.y - 1) / blk.y);
        moct_base<<<grid, blk, 0, s>>>(*job, a, buf[0]);
        TRK_CUDA_TRY(cudaGetLastError());
    }
    int cur = 0;
    while (a.cx > 1 || a.cy > 1) {
        bool along_x;
        arrangement b = next_level(a, r, &along_x);
        const int ow = b.cx * b.aw, oh = b.cy * b.ah;
        dim3 grid((ow + blk.x - 1) / blk.x, (oh + blk.y - 1) / blk.y);
        moct_pass<<<grid, blk, 0, s>>>(a, b, along_x, r, buf[cur], buf[cur ^ 1]);
        TRK_CUDA_TRY(cudaGetLastError());
        cur ^= 1;
        a = b;
    }
    moct_final<<<(job->n_obj + 127) / 128, 128, 0, s>>>(a, buf[cur], job->n_obj, job->acc,
                                                        job->acc_clear);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
