/* The vendor baseline of `trackd-bench --experiment blobs` on the device:
 * NPP's union-find connected-component labelling of the same masks the
 * backends label (bench.h: trk_bench_npp_blobs).
 *
 * Compiled only when CMake finds NPP in the CUDA toolkit (bench/CMakeLists.txt;
 * the device's CUDA 13 has it, the 2-core machine's toolkit does not), so
 * builds without NPP never see this file and the experiment prints that NPP
 * is not in the build.
 *
 * Per object: a threshold kernel (below, untimed in the per-stage numbers)
 * writes the mask, 255 inside the object's rgb box and 0 outside, into a
 * cudaMalloc'd (not pitched: the UF functions require width-sized rows)
 * buffer; then the documented UF pipeline: nppiLabelMarkersUF_8u32u_C1R_Ctx
 * (nppiNormInf = 8-way), nppiCompressMarkerLabelsUF_32u_C1IR_Ctx (starting
 * number width * height, as the UF functions require) and
 * nppiCompressedMarkerLabelsUFInfo_32u_C1R_Ctx (per label: pixel count,
 * bounding box, contour; plus the contour and contour-direction images).
 * Each stage is timed with CUDA events around it, median over the
 * iterations.
 *
 * What NPP found is read from the compressed label image, not the info
 * list: the UF labeller labels every connected region of equal value
 * ("any pixel region where all pixels in the region have the same pixel
 * value", NPP docs), so the background (0) regions get labels too, and the
 * docs do not say how the info list is indexed (label or label - 1) or
 * whether compressed labels start at 0 or 1. On the host, after the last
 * timed run, every label's pixels are counted, split by the mask into
 * foreground and background; the foreground regions, largest first, are
 * what cpu-ref's blob list must match. The info list is then compared with
 * those counts, to report its indexing (bench.h: trk_bench_npp_mask).
 */
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "backend.h"

extern "C" {
#include "bench.h"
}

namespace
{

/* One thread per pixel (2-D grid of 32x8 blocks): 255 where the RGB24 pixel
 * lies in [lo, hi] on every channel, else 0. No shared memory, no atomics. */
__global__ void mask_kernel(const unsigned char *__restrict__ rgb, int w, int h, uchar3 lo,
                            uchar3 hi, unsigned char *__restrict__ mask)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    const size_t i = (size_t)y * (size_t)w + (size_t)x;
    const unsigned char r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
    mask[i] =
        (r >= lo.x && r <= hi.x && g >= lo.y && g <= hi.y && b >= lo.z && b <= hi.z) ? 255 : 0;
}

/* Device buffers of one run, freed together. */
struct npp_bufs {
    unsigned char *d_rgb = nullptr, *d_mask = nullptr, *d_scratch = nullptr;
    Npp32u *d_labels = nullptr;
    /* Info outputs, sized for `cap` labels (grown between masks, never
     * inside a timed stage). */
    unsigned cap = 0;
    unsigned info_bytes = 0;
    NppiCompressedMarkerLabelsInfo *d_info = nullptr;
    Npp8u *d_contours = nullptr;
    NppiContourPixelDirectionInfo *d_dir = nullptr;
    Npp32u *d_counts = nullptr, *d_offsets = nullptr;
    std::vector<Npp32u> h_counts, h_offsets;

    void free_info()
    {
        cudaFree(d_info);
        cudaFree(d_counts);
        cudaFree(d_offsets);
        d_info = nullptr, d_counts = d_offsets = nullptr, cap = 0;
    }
    ~npp_bufs()
    {
        free_info();
        cudaFree(d_rgb);
        cudaFree(d_mask);
        cudaFree(d_scratch);
        cudaFree(d_labels);
        cudaFree(d_contours);
        cudaFree(d_dir);
    }
};

int fail(char *why, size_t n, const char *what, const char *detail)
{
    snprintf(why, n, "%s: %s", what, detail);
    return -1;
}

int fail_npp(char *why, size_t n, const char *what, NppStatus st)
{
    char d[32];
    snprintf(d, sizeof(d), "NppStatus %d", (int)st);
    return fail(why, n, what, d);
}

/* Makes room for max_id labels in the info outputs (sized for max_id + 1:
 * the docs leave open whether labels start at 0 or 1, and a larger list is
 * harmless). */
int info_reserve(npp_bufs &b, unsigned max_id, char *why, size_t why_len)
{
    if (max_id <= b.cap && b.d_info) return 0;
    b.free_info();
    unsigned bytes = 0;
    NppStatus st = nppiCompressedMarkerLabelsUFGetInfoListSize_32u_C1R(max_id + 1, &bytes);
    if (st != NPP_SUCCESS) return fail_npp(why, why_len, "GetInfoListSize", st);
    if (cudaMalloc(&b.d_info, bytes) != cudaSuccess ||
        cudaMalloc(&b.d_counts, sizeof(Npp32u) * (max_id + 5)) != cudaSuccess ||
        cudaMalloc(&b.d_offsets, sizeof(Npp32u) * (max_id + 5)) != cudaSuccess)
        return fail(why, why_len, "cudaMalloc", "info lists");
    b.h_counts.assign(max_id + 5, 0);
    b.h_offsets.assign(max_id + 5, 0);
    b.cap = max_id;
    b.info_bytes = bytes;
    return 0;
}

/* What NPP found in one mask (bench.h: trk_bench_npp_mask), from host
 * copies of the mask, the compressed label image (width-sized rows) and the
 * info list of n_info entries. Plain host code: the counts do not depend on
 * the info list's layout. */
void analyse(const unsigned char *h_mask, const Npp32u *h_labels, int width, int height,
             const NppiCompressedMarkerLabelsInfo *info, size_t n_info, trk_bench_npp_mask &m)
{
    const size_t npx = (size_t)width * (size_t)height;
    uint32_t lmin = UINT32_MAX, lmax = 0;
    m.mask_px = 0;
    for (size_t i = 0; i < npx; i++) {
        lmin = std::min<uint32_t>(lmin, h_labels[i]), lmax = std::max<uint32_t>(lmax, h_labels[i]);
        m.mask_px += h_mask[i] != 0;
    }
    m.label_min = npx ? lmin : 0, m.label_max = lmax;
    struct acc {
        uint64_t fg = 0, bg = 0, first = 0;
        int32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    };
    std::vector<acc> a((size_t)lmax + 1);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            const size_t i = (size_t)y * (size_t)width + (size_t)x;
            acc &r = a[h_labels[i]];
            if (h_mask[i] == 0) {
                r.bg++;
                continue;
            }
            if (r.fg++ == 0) {
                r.first = i, r.x0 = r.x1 = x, r.y0 = r.y1 = y;
                continue;
            }
            r.x0 = std::min(r.x0, x), r.x1 = std::max(r.x1, x);
            r.y0 = std::min(r.y0, y), r.y1 = std::max(r.y1, y);
        }
    std::vector<trk_bench_npp_region> fg;
    m.regions = m.components = m.mixed = 0;
    for (size_t l = 0; l < a.size(); l++) {
        const acc &r = a[l];
        m.regions += r.fg + r.bg > 0;
        m.mixed += r.fg > 0 && r.bg > 0;
        if (r.fg == 0) continue;
        fg.push_back({ (uint32_t)l, r.fg, r.first, r.x0, r.y0, r.x1, r.y1 });
    }
    m.components = (int)fg.size();
    /* cpu-ref's list order (backend.h: trk_blob_before). */
    std::sort(fg.begin(), fg.end(),
              [](const trk_bench_npp_region &p, const trk_bench_npp_region &q) {
                  return p.area != q.area ? p.area > q.area : p.first < q.first;
              });
    m.n_top = (int)std::min<size_t>(fg.size(), TRK_BENCH_NPP_TOP);
    std::copy(fg.begin(), fg.begin() + m.n_top, m.top);

    /* The info list against the counts: under which indexing (entry =
     * label, or label - 1) more foreground regions find their area, and
     * how many do not under it. */
    m.info_entries = (int)n_info, m.info_base = -1, m.info_bad = 0;
    m.info_at[0] = m.info_at[1] = 0;
    memset(m.info_box, 0, sizeof(m.info_box));
    if (m.n_top == 0) return;
    const uint32_t top = m.top[0].label;
    if (top < n_info) m.info_at[0] = info[top].nMarkerLabelPixelCount;
    if (top >= 1 && top - 1 < n_info) m.info_at[1] = info[top - 1].nMarkerLabelPixelCount;
    int bad[2] = { 0, 0 };
    for (int base = 0; base < 2; base++)
        for (const auto &r : fg) {
            const size_t k = (size_t)r.label - (size_t)base;
            bad[base] +=
                r.label < (uint32_t)base || k >= n_info || info[k].nMarkerLabelPixelCount != r.area;
        }
    const int best = bad[1] < bad[0] ? 1 : 0;
    if (bad[best] == m.components) return; /* no region found its area */
    m.info_base = best, m.info_bad = bad[best];
    if (top < (uint32_t)best || top - (uint32_t)best >= n_info) return;
    const NppiRect &bb = info[top - (uint32_t)m.info_base].oMarkerLabelBoundingBox;
    m.info_box[0] = bb.x, m.info_box[1] = bb.y, m.info_box[2] = bb.width, m.info_box[3] = bb.height;
}

double median_of(std::vector<double> v)
{
    return trk_bench_median(v.data(), v.size());
}

} // namespace

extern "C" int trk_bench_npp_blobs(const unsigned char *h_rgb, int width, int height,
                                   const struct trk_object_def *objs, int n, int iters,
                                   struct trk_bench_npp_mask *out, double *all_ms, char *why,
                                   size_t why_len)
{
    *all_ms = 0;
    if (width <= 0 || height <= 0 || n <= 0 || iters <= 0)
        return fail(why, why_len, "npp", "bad arguments");
    for (int i = 0; i < n; i++)
        if (objs[i].space != TRK_SPACE_RGB)
            return fail(why, why_len, "npp", "only rgb objects have a mask kernel here");

    NppStreamContext ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.hStream = 0;
    cudaDeviceProp p;
    if (cudaGetDevice(&ctx.nCudaDeviceId) != cudaSuccess ||
        cudaGetDeviceProperties(&p, ctx.nCudaDeviceId) != cudaSuccess)
        return fail(why, why_len, "cuda", cudaGetErrorString(cudaGetLastError()));
    ctx.nMultiProcessorCount = p.multiProcessorCount;
    ctx.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
    ctx.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
    ctx.nSharedMemPerBlock = p.sharedMemPerBlock;
    ctx.nCudaDevAttrComputeCapabilityMajor = p.major;
    ctx.nCudaDevAttrComputeCapabilityMinor = p.minor;
    cudaStreamGetFlags(ctx.hStream, &ctx.nStreamFlags);

    const NppiSize roi = { width, height };
    const size_t npx = (size_t)width * (size_t)height;
    npp_bufs b;
    int label_buf = 0, comp_buf = 0;
    NppStatus st = nppiLabelMarkersUFGetBufferSize_32u_C1R(roi, &label_buf);
    if (st != NPP_SUCCESS) return fail_npp(why, why_len, "LabelMarkersUFGetBufferSize", st);
    st = nppiCompressMarkerLabelsGetBufferSize_32u_C1R((int)npx, &comp_buf);
    if (st != NPP_SUCCESS) return fail_npp(why, why_len, "CompressMarkerLabelsGetBufferSize", st);
    if (cudaMalloc(&b.d_rgb, npx * 3) != cudaSuccess || cudaMalloc(&b.d_mask, npx) != cudaSuccess ||
        cudaMalloc(&b.d_labels, npx * sizeof(Npp32u)) != cudaSuccess ||
        cudaMalloc(&b.d_scratch, (size_t)std::max(label_buf, comp_buf)) != cudaSuccess ||
        cudaMalloc(&b.d_contours, npx) != cudaSuccess ||
        cudaMalloc(&b.d_dir, npx * sizeof(NppiContourPixelDirectionInfo)) != cudaSuccess ||
        cudaMemcpy(b.d_rgb, h_rgb, npx * 3, cudaMemcpyHostToDevice) != cudaSuccess)
        return fail(why, why_len, "cuda", cudaGetErrorString(cudaGetLastError()));
    std::vector<unsigned char> h_mask(npx);
    std::vector<Npp32u> h_labels(npx);
    std::vector<NppiCompressedMarkerLabelsInfo> h_info;
    cudaEvent_t ev[4];
    for (auto &e : ev)
        cudaEventCreate(&e);
    const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
    int rc = 0;

    /* Threshold, label, compress, measure: one mask. t (optional) gets the
     * three stages' device times. */
    auto one_mask = [&](int i, double *t, int *n_labels) -> int {
        const trk_object_def &o = objs[i];
        const uchar3 lo = make_uchar3(o.lo[0], o.lo[1], o.lo[2]),
                     hi = make_uchar3(o.hi[0], o.hi[1], o.hi[2]);
        mask_kernel<<<grid, block, 0, ctx.hStream>>>(b.d_rgb, width, height, lo, hi, b.d_mask);
        if (b.d_info) cudaMemsetAsync(b.d_info, 0, b.info_bytes, ctx.hStream);
        cudaEventRecord(ev[0], ctx.hStream);
        NppStatus s = nppiLabelMarkersUF_8u32u_C1R_Ctx(b.d_mask, width, b.d_labels,
                                                       width * (int)sizeof(Npp32u), roi,
                                                       nppiNormInf, b.d_scratch, ctx);
        if (s != NPP_SUCCESS) return fail_npp(why, why_len, "nppiLabelMarkersUF", s);
        cudaEventRecord(ev[1], ctx.hStream);
        int max_id = 0;
        s = nppiCompressMarkerLabelsUF_32u_C1IR_Ctx(b.d_labels, width * (int)sizeof(Npp32u), roi,
                                                    (int)npx, &max_id, b.d_scratch, ctx);
        if (s != NPP_SUCCESS) return fail_npp(why, why_len, "nppiCompressMarkerLabelsUF", s);
        cudaEventRecord(ev[2], ctx.hStream);
        *n_labels = max_id;
        if (max_id > 0 && (unsigned)max_id <= b.cap) {
            NppiContourTotalsInfo totals;
            s = nppiCompressedMarkerLabelsUFInfo_32u_C1R_Ctx(
                b.d_labels, width * (int)sizeof(Npp32u), roi, (unsigned)max_id, b.d_info,
                b.d_contours, width, b.d_dir, width * (int)sizeof(NppiContourPixelDirectionInfo),
                &totals, b.d_counts, b.h_counts.data(), b.d_offsets, b.h_offsets.data(), ctx);
            if (s != NPP_SUCCESS) return fail_npp(why, why_len, "CompressedMarkerLabelsUFInfo", s);
        }
        cudaEventRecord(ev[3], ctx.hStream);
        if (cudaEventSynchronize(ev[3]) != cudaSuccess)
            return fail(why, why_len, "cuda", cudaGetErrorString(cudaGetLastError()));
        for (int k = 0; t && k < 3; k++) {
            float ms = 0;
            cudaEventElapsedTime(&ms, ev[k], ev[k + 1]);
            t[k] = ms;
        }
        return 0;
    };

    for (int i = 0; i < n && rc == 0; i++) {
        int labels = 0;
        /* Untimed first run: learns the label count to size the info lists. */
        if ((rc = one_mask(i, nullptr, &labels)) || (rc = info_reserve(b, labels, why, why_len)))
            break;
        std::vector<double> tl, tc, ti;
        for (int it = 0; it < iters && rc == 0; it++) {
            double t[3];
            if ((rc = one_mask(i, t, &labels))) break;
            tl.push_back(t[0]), tc.push_back(t[1]), ti.push_back(t[2]);
        }
        if (rc) break;
        trk_bench_npp_mask &m = out[i];
        memset(&m, 0, sizeof(m));
        m.label_ms = median_of(tl), m.compress_ms = median_of(tc), m.info_ms = median_of(ti);
        /* What NPP found, from the last run (untimed): the mask, the
         * compressed labels and the info list, measured on the host. */
        h_info.resize(b.info_bytes / sizeof(NppiCompressedMarkerLabelsInfo));
        if (cudaMemcpy(h_info.data(), b.d_info, h_info.size() * sizeof(h_info[0]),
                       cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(h_mask.data(), b.d_mask, npx, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(h_labels.data(), b.d_labels, npx * sizeof(Npp32u), cudaMemcpyDeviceToHost) !=
                cudaSuccess) {
            rc = fail(why, why_len, "cuda", cudaGetErrorString(cudaGetLastError()));
            break;
        }
        analyse(h_mask.data(), h_labels.data(), width, height, h_info.data(), h_info.size(), m);
        m.max_id = labels;
    }

    /* All masks one after the other, as a program would run them. */
    std::vector<double> tall;
    for (int it = 0; it < iters && rc == 0; it++) {
        double t0 = trk_bench_now_ms();
        for (int i = 0; i < n && rc == 0; i++) {
            int labels = 0;
            rc = one_mask(i, nullptr, &labels);
        }
        tall.push_back(trk_bench_now_ms() - t0);
    }
    if (rc == 0) *all_ms = median_of(tall);
    for (auto &e : ev)
        cudaEventDestroy(e);
    return rc;
}
