/* CUDA-only parts of trackd-bench, registered as experiments (bench.h):
 *
 *   trackd-bench --experiment cuda-floor   [--mib N] [--iters N] [--json F]
 *       the device's memory ceilings: a large device-to-device copy (bytes
 *       read + written) and a one-read kernel (16-byte loads), cold (L2
 *       flushed) and hot, and the one-read time of each standard frame.
 *   trackd-bench --experiment cuda-kernels [--sizes ..] [--objects ..] [--variants ..]
 *                [--formats ..] [--scenes ..] [--truth cpu-ref|cpu] [--iters N]
 *                [--warmup N] [--cold] [--torch F] [--json F]
 *       kernel time of every CUDA variant on a frame resident on the device
 *       (CUDA events, medians), its ratio to the CPU reference, to the
 *       PyTorch baseline (bench/torch_baseline.py) and to the one-read memory
 *       floor; the upload time of the frame from pinned memory; the whole
 *       frame time through trk_backend_process, and that call (default
 *       variant) with the frame as a device image laid out as NVDEC's
 *       surfaces (dev_us, and dev_sub: its submit alone), in
 *       trk_backend_host_alloc memory (pin_us, and x up+k = pin_us /
 *       (upload_us + default kernel)) and in malloc'ed memory (page_us),
 *       every call's results checked too. Results are checked against
 *       the CPU reference (--truth cpu: the fast CPU backend on all cores, in
 *       CI equal to it), field by field. --scenes: standard (default), dense
 *       (every pixel in every object: the worst case of issue 14), halfdense
 *       (random per-pixel subsets); each size and object count runs the
 *       listed scenes one after the other, so they sit side by side.
 *   trackd-bench --experiment cuda-seed    [--size WxH] [--objects ..] [--rs ..] [--m N]
 *       the seed's two experiments (seed 003, section 3.3.2-3.3.3): time vs
 *       number of objects (MOCT per arrangement, one reduction per object,
 *       and the modern kernels), and time vs reduction factor r for each
 *       arrangement.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <stdio.h>

#include "backend.h"
#include "cuda/bench_hooks.h"
#include "scene.h"

extern "C" {
#include "bench.h"
#include "minijson.h"
}

namespace
{

#define BENCH_TRY(call)                                                                            \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "trackd-bench cuda: %s failed at %s:%d: %s\n", #call, __FILE__,        \
                    __LINE__, cudaGetErrorString(e_));                                             \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* One read of n16 16-byte words. Grid-stride, 4 independent loads in flight
 * per thread; streaming loads (no L1 allocation). The xor keeps the loads
 * alive; the store never happens for real data. */
__global__ void read_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *out)
{
    unsigned acc = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride);
        uint4 c = __ldcs(p + i + 2 * stride), d = __ldcs(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
               d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        uint4 a = __ldcs(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) *out = acc;
}

struct gpu_ctx {
    int sms = 0;
    char name[320] = "";   /* device name (<= 256) and its SMs and L2 */
    void *flush = nullptr; /* larger than L2: written to evict it */
    size_t flush_bytes = 0;
    unsigned *d_sink = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
};

int ctx_open(gpu_ctx &g)
{
    cudaDeviceProp p;
    BENCH_TRY(cudaGetDeviceProperties(&p, 0));
    g.sms = p.multiProcessorCount;
    snprintf(g.name, sizeof(g.name), "%s (%d SMs, %d MB L2)", p.name, p.multiProcessorCount,
             p.l2CacheSize >> 20);
    g.flush_bytes = std::max<size_t>((size_t)p.l2CacheSize * 4, 256u << 20);
    BENCH_TRY(cudaMalloc(&g.flush, g.flush_bytes));
    BENCH_TRY(cudaMalloc(&g.d_sink, 4));
    BENCH_TRY(cudaEventCreate(&g.e0));
    BENCH_TRY(cudaEventCreate(&g.e1));
    return 0;
}

void ctx_close(gpu_ctx &g)
{
    cudaFree(g.flush);
    cudaFree(g.d_sink);
    cudaEventDestroy(g.e0);
    cudaEventDestroy(g.e1);
}

void l2_flush(gpu_ctx &g, int salt)
{
    cudaMemsetAsync(g.flush, salt & 0xff, g.flush_bytes, 0);
}

double median(std::vector<double> v)
{
    return trk_bench_median(v.data(), v.size());
}

/* Median device time (ms) of fn() on the legacy stream; cold: L2 flushed
 * before each timed run. */
template <class F> double time_dev(gpu_ctx &g, F fn, int warmup, int iters, bool cold)
{
    for (int i = 0; i < warmup; i++)
        fn();
    std::vector<double> t;
    for (int i = 0; i < iters; i++) {
        if (cold) l2_flush(g, i);
        cudaEventRecord(g.e0, 0);
        fn();
        cudaEventRecord(g.e1, 0);
        cudaEventSynchronize(g.e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, g.e0, g.e1);
        t.push_back(ms);
    }
    return median(t);
}

double time_read(gpu_ctx &g, const void *buf, size_t bytes, int iters, bool cold)
{
    size_t n16 = bytes / 16;
    int grid = g.sms * 8;
    return time_dev(
        g, [&] { read_kernel<<<grid, 256>>>((const uint4 *)buf, n16, g.d_sink); }, 3, iters, cold);
}

/* ------------------------------------------------------------ options */

struct list {
    int n = 0;
    int v[32][2];
};

bool parse_sizes(const char *s, list &l)
{
    l.n = 0;
    for (const char *p = s; *p && l.n < 32;) {
        int w, h, used = 0;
        if (sscanf(p, "%dx%d%n", &w, &h, &used) != 2 || w < 1 || h < 1) return false;
        l.v[l.n][0] = w;
        l.v[l.n++][1] = h;
        p += used;
        if (*p == ',') p++;
    }
    return l.n > 0;
}

bool parse_ints(const char *s, list &l, int lo, int hi)
{
    l.n = 0;
    for (const char *p = s; *p && l.n < 32;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < lo || v > hi) return false;
        l.v[l.n++][0] = (int)v;
        p = *e == ',' ? e + 1 : e;
        if (*e && *e != ',') return false;
    }
    return l.n > 0;
}

std::vector<std::string> split(const char *s)
{
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; p++) {
        if (*p == ',' || !*p) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            if (!*p) break;
        } else {
            cur += *p;
        }
    }
    return out;
}

int parse_fmt(const std::string &s)
{
    return trk_bench_format(s.c_str());
}

/* An image of the scene in fmt, in pinned memory (as a capture path that
 * hands the backend pinned frames would). Encoded as trackd-bench does:
 * RGB as BT.601 full range, YUV as BT.709 limited. */
struct pinned_image {
    struct trk_image img;
    void *mem = nullptr;
    size_t bytes = 0;
    /* The same frame in malloc'ed (pageable) memory, as trk_image_from_rgb
     * made it: the whole-call columns' pageable input. */
    struct trk_image page_img;
    uint8_t *page = nullptr;
};

int make_pinned(const struct trk_scene &sc, int fmt, pinned_image &pi)
{
    uint8_t *buf;
    bool yuv = fmt >= TRK_FMT_YUYV;
    struct trk_image img;
    int err = trk_image_from_rgb(sc.rgb, sc.width, sc.height, (enum trk_pixfmt)fmt,
                                 yuv ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601, !yuv, 0, &buf, &img);
    if (err) return err;
    struct trk_plane_layout L;
    trk_image_plane_layout(img.fmt, img.width, img.height, &L); /* img is valid */
    size_t bytes = 0;
    for (int p = 0; p < L.planes; p++)
        bytes += img.pitch[p] * (size_t)L.rows[p];
    if (cudaMallocHost(&pi.mem, bytes) != cudaSuccess) {
        free(buf);
        return TRK_ENOMEM;
    }
    memcpy(pi.mem, buf, bytes);
    pi.img = img;
    for (int p = 0; p < 3; p++)
        if (img.plane[p]) pi.img.plane[p] = (const uint8_t *)pi.mem + (img.plane[p] - buf);
    pi.bytes = bytes;
    pi.page = buf;
    pi.page_img = img;
    return 0;
}

void free_pinned(pinned_image &pi)
{
    cudaFreeHost(pi.mem);
    pi.mem = nullptr;
    free(pi.page);
    pi.page = nullptr;
}

bool same(const struct trk_obj_result *a, const struct trk_obj_result *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].mass != b[i].mass || a[i].sum_x != b[i].sum_x || a[i].sum_y != b[i].sum_y ||
            a[i].x0 != b[i].x0 || a[i].y0 != b[i].y0 || a[i].x1 != b[i].x1 || a[i].y1 != b[i].y1 ||
            a[i].sum_xx != b[i].sum_xx || a[i].sum_yy != b[i].sum_yy || a[i].sum_xy != b[i].sum_xy)
            return false;
    return true;
}

/* The CPU reference's results for img (the truth every variant is checked
 * against), or with kind TRK_BACKEND_CPU the fast CPU backend's on all
 * cores; ms, when not NULL, gets the time of its process call. */
int ref_truth(const struct trk_image &img, const struct trk_object_def *objs, int m,
              struct trk_obj_result *truth, double *ms,
              enum trk_backend_kind kind = TRK_BACKEND_CPU_REF)
{
    struct trk_backend *ref = NULL;
    struct trk_backend_cfg rc = {};
    rc.kind = kind;
    rc.threads = 0;
    rc.max_width = img.width;
    rc.max_height = img.height;
    int err = trk_backend_create(&rc, &ref);
    if (!err) err = trk_backend_set_objects(ref, objs, m);
    const double t0 = trk_bench_now_ms();
    if (!err) err = trk_backend_process(ref, &img, NULL, truth, NULL);
    if (ms) *ms = trk_bench_now_ms() - t0;
    trk_backend_destroy(&ref);
    return err;
}

/* A CUDA backend instance driven through the bench hooks (device-resident
 * frame, kernel-only timing). */
struct variant_run {
    struct trk_backend *b = nullptr;
    int create(const char *variant, int w, int h)
    {
        struct trk_backend_cfg cfg = {};
        cfg.kind = TRK_BACKEND_CUDA;
        cfg.max_width = w;
        cfg.max_height = h;
        cfg.variant = variant;
        return trk_backend_create(&cfg, &b);
    }
    ~variant_run() { trk_backend_destroy(&b); }
};

/* Kernel time (median ms, hot or cold) of a variant on img with objs; the
 * results go to out. iters adapt to slow variants (>= 3). */
int kernel_time(gpu_ctx &g, const char *variant, const struct trk_image &img,
                const struct trk_object_def *objs, int m, int warmup, int iters, bool cold,
                double *hot_ms, double *cold_ms, struct trk_obj_result *out)
{
    variant_run v;
    int err = v.create(variant, img.width, img.height);
    if (!err) err = trk_backend_set_objects(v.b, objs, m);
    if (!err) err = trk_cuda_bench_upload(v.b, &img, NULL);
    if (err) return err;
    std::vector<float> ms((size_t)std::max(iters, warmup) + 1);
    double t0 = trk_bench_now_ms();
    if ((err = trk_cuda_bench_kernels(v.b, 1, ms.data(), out))) return err;
    double first = trk_bench_now_ms() - t0;
    if (first > 20) { /* slow variant: fewer runs */
        warmup = 0;
        iters = std::max(3, std::min(iters, (int)(2000 / first)));
    }
    if (warmup && (err = trk_cuda_bench_kernels(v.b, warmup, ms.data(), NULL))) return err;
    if ((err = trk_cuda_bench_kernels(v.b, iters, ms.data(), out))) return err;
    std::vector<double> t(ms.begin(), ms.begin() + iters);
    *hot_ms = median(t);
    *cold_ms = 0;
    if (cold) {
        t.clear();
        for (int i = 0; i < iters; i++) {
            l2_flush(g, i);
            if (cudaDeviceSynchronize() != cudaSuccess) return TRK_EBACKEND;
            float one;
            if ((err = trk_cuda_bench_kernels(v.b, 1, &one, out))) return err;
            t.push_back(one);
        }
        *cold_ms = median(t);
    }
    return 0;
}

/* ---------------------------------------------------------- cuda-floor */

int run_floor(int argc, char **argv)
{
    int mib = 1024, iters = 20;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "cuda-floor: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    gpu_ctx g;
    if (ctx_open(g)) return 1;
    size_t bytes = (size_t)mib << 20;
    void *a, *b;
    BENCH_TRY(cudaMalloc(&a, bytes));
    BENCH_TRY(cudaMalloc(&b, bytes));
    BENCH_TRY(cudaMemset(a, 1, bytes));
    double copy_ms = time_dev(
        g, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0); }, 3, iters, false);
    double read_ms = time_read(g, a, bytes, iters, true);
    double copy_gbs = 2.0 * bytes / (copy_ms * 1e6), read_gbs = bytes / (read_ms * 1e6);
    printf("# cuda-floor on %s\n", g.name);
    printf("device-to-device copy of %d MiB: %.3f ms, %.0f GB/s (read + written)\n", mib, copy_ms,
           copy_gbs);
    printf("one-read kernel over %d MiB:     %.3f ms, %.0f GB/s\n", mib, read_ms, read_gbs);
    printf("%-12s %-6s %10s %12s %12s %12s\n", "frame", "format", "bytes", "floor_us", "read_cold",
           "read_hot");
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf)
        fprintf(jf,
                "{\"tool\":\"cuda-floor\",\"device\":\"%s\",\"copy_gbs\":%.1f,\"read_gbs\":%.1f,"
                "\"frames\":[",
                g.name, copy_gbs, read_gbs);
    const int sizes[3][2] = { { 640, 480 }, { 1920, 1080 }, { 3840, 2160 } };
    int first = 1;
    for (auto &s : sizes)
        for (int fmt : { (int)TRK_FMT_RGB24, (int)TRK_FMT_NV12 }) {
            size_t fb = (size_t)s[0] * s[1] * (fmt == TRK_FMT_RGB24 ? 3 : 1) +
                        (fmt == TRK_FMT_NV12 ? (size_t)s[0] * s[1] / 2 : 0);
            fb = (fb + 15) / 16 * 16;
            double cold = time_read(g, a, fb, iters * 5, true) * 1e3;
            double hot = time_read(g, a, fb, iters * 5, false) * 1e3;
            double floor_us = fb / (read_gbs * 1e3);
            printf("%5dx%-6d %-6s %10zu %12.2f %12.2f %12.2f\n", s[0], s[1],
                   trk_pixfmt_name((enum trk_pixfmt)fmt), fb, floor_us, cold, hot);
            if (jf)
                fprintf(jf,
                        "%s{\"width\":%d,\"height\":%d,\"format\":\"%s\",\"bytes\":%zu,"
                        "\"floor_us\":%.3f,\"read_cold_us\":%.3f,\"read_hot_us\":%.3f}",
                        first ? "" : ",", s[0], s[1], trk_pixfmt_name((enum trk_pixfmt)fmt), fb,
                        floor_us, cold, hot);
            first = 0;
        }
    if (jf) {
        fprintf(jf, "]}\n");
        fclose(jf);
    }
    cudaFree(a);
    cudaFree(b);
    ctx_close(g);
    return 0;
}

/* -------------------------------------------------------- cuda-kernels */

struct torch_base {
    struct trk_json *root = nullptr;
    /* fastest median per scene, and the variant name */
    double find(int w, int h, int m, const char **variant, const struct trk_json **masses) const
    {
        double best = 0;
        const struct trk_json *sc = root ? trk_json_get(root, "scenes") : nullptr;
        for (size_t i = 0; sc && i < sc->n; i++) {
            const struct trk_json *e = &sc->items[i];
            if ((int)trk_json_num(e, "width", -1) != w || (int)trk_json_num(e, "height", -1) != h ||
                (int)trk_json_num(e, "objects", -1) != m)
                continue;
            double ms = trk_json_num(e, "median_ms", -1);
            if (ms > 0 && (best == 0 || ms < best)) {
                best = ms;
                *variant = trk_json_str(e, "variant", "?");
                *masses = trk_json_get(e, "masses");
            }
        }
        return best;
    }
};

/* The scenes of cuda-kernels (--scenes). */
enum { SCENE_STANDARD, SCENE_DENSE, SCENE_HALFDENSE, SCENE_COUNT };
const char *const scene_names[SCENE_COUNT] = { "standard", "dense", "halfdense" };

int make_scene(int kind, int w, int h, int m, uint64_t seed, struct trk_scene *sc)
{
    switch (kind) {
    case SCENE_DENSE: return trk_scene_dense(w, h, m, seed, sc);
    case SCENE_HALFDENSE: return trk_scene_halfdense(w, h, m, seed, sc);
    default: return trk_scene_standard(w, h, m, seed, sc);
    }
}

/* ---------------------------------------------- whole call by input memory */

/* A device copy of a host image laid out as NVDEC surfaces are (FFmpeg's
 * CUDA frame pool): one cudaMalloc, the planes one after the other, each
 * row pitch the payload rounded up to 256 bytes. */
struct device_image {
    struct trk_image img;
    void *mem = nullptr;
};

int make_device(const struct trk_image &h, device_image &d)
{
    struct trk_plane_layout L;
    if (trk_image_plane_layout(h.fmt, h.width, h.height, &L)) return TRK_EINVAL;
    size_t off[3] = { 0, 0, 0 }, pitch[3] = { 0, 0, 0 }, total = 0;
    for (int p = 0; p < L.planes; p++) {
        pitch[p] = (L.row_bytes[p] + 255) / 256 * 256;
        off[p] = total;
        total += pitch[p] * (size_t)L.rows[p];
    }
    if (cudaMalloc(&d.mem, total) != cudaSuccess) return TRK_ENOMEM;
    /* Defined padding (a decoder leaves whatever was there: the backend
     * must mask it off either way). */
    if (cudaMemset(d.mem, 0xA5, total) != cudaSuccess) return TRK_EBACKEND;
    d.img = h;
    d.img.mem = TRK_MEM_CUDA;
    for (int p = 0; p < 3; p++) {
        d.img.plane[p] = p < L.planes ? (const uint8_t *)d.mem + off[p] : nullptr;
        d.img.pitch[p] = p < L.planes ? pitch[p] : 0;
        if (p < L.planes &&
            cudaMemcpy2D((uint8_t *)d.mem + off[p], pitch[p], h.plane[p], h.pitch[p],
                         L.row_bytes[p], (size_t)L.rows[p], cudaMemcpyHostToDevice) != cudaSuccess)
            return TRK_EBACKEND;
    }
    return 0;
}

/* An image of the same layout as src over the bytes at base (a copy of
 * src's buffer, which starts at src_base). */
struct trk_image rebase(const struct trk_image &src, const void *src_base, const void *base)
{
    struct trk_image img = src;
    for (int p = 0; p < 3; p++)
        if (src.plane[p])
            img.plane[p] = (const uint8_t *)base + (src.plane[p] - (const uint8_t *)src_base);
    return img;
}

/* Medians (ms) of the whole public call, trk_backend_process (submit +
 * wait + results), on one frame from three places: a device image (what
 * --hwdec hands the backend), host memory from trk_backend_host_alloc
 * (pinned: the daemon's frame pools) and malloc'ed memory (pageable: the
 * daemon's path before issue 14). dev_submit: the host time of submit
 * alone on the device image. */
struct whole_call {
    double dev = 0, dev_submit = 0, pinned = 0, pageable = 0;
};

/* Times one input; its results (every call's) must equal truth and the
 * upload its memory (none for a device image): a difference prints a
 * MISMATCH line naming the path (what) and is added to *mismatches. 0, or
 * the TRK_E* code of a failed call. */
int time_whole(struct trk_backend *b, const struct trk_image &img, const char *what,
               const char *scene, const struct trk_obj_result *truth, int m, int warmup, int iters,
               double *ms, double *submit_ms, int *mismatches)
{
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    std::vector<double> t, ts;
    struct trk_backend_timing tm = {};
    bool ok = true;
    for (int i = -warmup; i < iters; i++) {
        const double a = trk_bench_now_ms();
        int err = trk_backend_submit(b, &img, NULL);
        const double s = trk_bench_now_ms();
        if (!err) err = trk_backend_wait(b, got, &tm);
        const double z = trk_bench_now_ms();
        if (err) {
            fprintf(stderr, "cuda-kernels: whole call from %s on %s: %s\n", what, scene,
                    trk_strerror(err));
            return err;
        }
        if (i >= 0) {
            t.push_back(z - a);
            ts.push_back(s - a);
        }
        ok = ok && same(truth, got, m);
    }
    *ms = median(t);
    if (submit_ms) *submit_ms = median(ts);
    if (!ok) { /* counted, printed, and the run goes on */
        for (int k = 0; k < m; k++)
            if (!same(&truth[k], &got[k], 1)) {
                fprintf(stderr,
                        "MISMATCH whole call from %s on %s %s, object %d: mass %llu (truth "
                        "%llu), box %d,%d..%d,%d (truth %d,%d..%d,%d)\n",
                        what, scene, trk_pixfmt_name(img.fmt), k, (unsigned long long)got[k].mass,
                        (unsigned long long)truth[k].mass, got[k].x0, got[k].y0, got[k].x1,
                        got[k].y1, truth[k].x0, truth[k].y0, truth[k].x1, truth[k].y1);
                break;
            }
        (*mismatches)++;
        return 0;
    }
    /* The path each column claims: nothing crosses the bus for a device
     * image, the whole frame for a host one. */
    if ((img.mem == TRK_MEM_CUDA) != (tm.upload_bytes == 0)) {
        fprintf(stderr, "MISMATCH whole call from %s on %s: %llu bytes uploaded\n", what, scene,
                (unsigned long long)tm.upload_bytes);
        (*mismatches)++;
    }
    return 0;
}

/* The three whole-call columns of one scene and format, default variant. */
int run_whole(const pinned_image &pi, const struct trk_scene &sc, int m, int warmup, int iters,
              const struct trk_obj_result *truth, const char *scene, whole_call &wc,
              int *mismatches)
{
    variant_run v;
    int err = v.create(NULL, pi.img.width, pi.img.height);
    if (!err) err = trk_backend_set_objects(v.b, sc.objects, m);
    if (err) return err;
    device_image d;
    err = make_device(pi.page_img, d);
    if (!err)
        err = time_whole(v.b, d.img, "a device image", scene, truth, m, warmup, iters, &wc.dev,
                         &wc.dev_submit, mismatches);
    cudaFree(d.mem);
    if (err) return err;

    void *hp = trk_backend_host_alloc(v.b, pi.bytes);
    if (!hp) {
        fprintf(stderr, "cuda-kernels: trk_backend_host_alloc(%zu) failed\n", pi.bytes);
        return TRK_ENOMEM;
    }
    memcpy(hp, pi.page, pi.bytes);
    const struct trk_image himg = rebase(pi.page_img, pi.page, hp);
    if (!trk_backend_image_pinned(v.b, &himg)) {
        fprintf(stderr, "MISMATCH: trk_backend_host_alloc memory is not seen as pinned\n");
        (*mismatches)++;
    }
    err = time_whole(v.b, himg, "pinned host memory", scene, truth, m, warmup, iters, &wc.pinned,
                     NULL, mismatches);
    trk_backend_host_free(v.b, hp);
    if (err) return err;

    if (trk_backend_image_pinned(v.b, &pi.page_img)) {
        fprintf(stderr, "MISMATCH: malloc'ed memory is seen as pinned\n");
        (*mismatches)++;
    }
    return time_whole(v.b, pi.page_img, "pageable host memory", scene, truth, m, warmup, iters,
                      &wc.pageable, NULL, mismatches);
}

/* cuda-kernels' options, and the lists they name. */
struct kern_opts {
    list sizes, objs;
    const char *variants = NULL, *formats = "rgb24", *json = NULL, *torch = NULL;
    const char *scenes = "standard";
    enum trk_backend_kind truth_kind = TRK_BACKEND_CPU_REF;
    int iters = 50, warmup = 5, cold = 0;
    uint64_t seed = 20240601u;
    std::vector<std::string> vars;
    std::vector<int> fmts, kinds;
};

/* The command line into o. 0, or 2 after a message. */
int kern_parse(int argc, char **argv, kern_opts &o)
{
    parse_sizes("640x480,1920x1080,3840x2160", o.sizes);
    parse_ints("1,8,32,128,256", o.objs, 0, TRK_MAX_OBJECTS);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--cold")) {
            o.cold = 1;
            continue;
        }
        if (!v)
            ok = false;
        else if (!strcmp(a, "--sizes"))
            ok = parse_sizes(v, o.sizes);
        else if (!strcmp(a, "--objects"))
            ok = parse_ints(v, o.objs, 0, TRK_MAX_OBJECTS);
        else if (!strcmp(a, "--variants"))
            o.variants = v;
        else if (!strcmp(a, "--formats"))
            o.formats = v;
        else if (!strcmp(a, "--scenes"))
            o.scenes = v;
        else if (!strcmp(a, "--truth")) {
            const int tk = trk_backend_kind_parse(v);
            ok = tk == TRK_BACKEND_CPU_REF || tk == TRK_BACKEND_CPU;
            if (ok) o.truth_kind = (enum trk_backend_kind)tk;
        } else if (!strcmp(a, "--iters"))
            o.iters = atoi(v);
        else if (!strcmp(a, "--warmup"))
            o.warmup = atoi(v);
        else if (!strcmp(a, "--seed"))
            o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--json"))
            o.json = v;
        else if (!strcmp(a, "--torch"))
            o.torch = v;
        else
            ok = false;
        if (!ok || o.iters < 1 || o.warmup < 0) {
            fprintf(stderr, "cuda-kernels: bad option %s\n", a);
            return 2;
        }
        i++;
    }
    return 0;
}

/* The variants, formats and scenes the options name (every variant when
 * none). 0, or 2 after a message. */
int kern_lists(kern_opts &o)
{
    if (o.variants) {
        o.vars = split(o.variants);
    } else {
        const char *names[16];
        const int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 16);
        for (int k = 0; k < nv && k < 16; k++)
            o.vars.push_back(names[k]);
    }
    for (auto &f : split(o.formats)) {
        int x = parse_fmt(f);
        if (x < 0) {
            fprintf(stderr, "cuda-kernels: unknown format %s\n", f.c_str());
            return 2;
        }
        o.fmts.push_back(x);
    }
    for (auto &n : split(o.scenes)) {
        int x = -1;
        for (int k = 0; k < SCENE_COUNT; k++)
            if (n == scene_names[k]) x = k;
        if (x < 0) {
            fprintf(stderr, "cuda-kernels: unknown scene %s (standard, dense, halfdense)\n",
                    n.c_str());
            return 2;
        }
        o.kinds.push_back(x);
    }
    if (o.kinds.empty()) {
        fprintf(stderr, "cuda-kernels: --scenes names none\n");
        return 2;
    }
    return 0;
}

/* The lines above the table. */
void kern_head(const gpu_ctx &g, const kern_opts &o, double read_gbs)
{
    const char *truth = o.truth_kind == TRK_BACKEND_CPU ? "cpu" : "cpu-ref";
    printf("# cuda-kernels on %s; one-read ceiling %.0f GB/s; seed %llu; warmup %d, iters %d; "
           "truth %s\n",
           g.name, read_gbs, (unsigned long long)o.seed, o.warmup, o.iters, truth);
    printf("# kernel = CUDA-event median on a device-resident frame (%s); floor = frame bytes / "
           "ceiling\n",
           o.cold ? "hot, and cold with L2 flushed" : "hot: frame in L2");
    printf("# whole call (trk_backend_process, default variant, medians): dev = device image "
           "(256-byte pitches, as NVDEC), dev_sub = its submit alone, pinned = "
           "trk_backend_host_alloc memory, x up+k = pinned / (upload + default kernel), "
           "pageable = malloc'ed\n");
    printf("%-26s %-6s %-12s %10s %10s %8s %9s %9s %9s %10s %10s %8s %8s %8s %7s %9s\n", "scene",
           "format", "variant", "kernel_us", "cold_us", "x floor", "x ref", "x torch", "upload_us",
           "frame_us", "1band_us", "dev_us", "dev_sub", "pin_us", "x up+k", "page_us");
}

/* One run of cuda-kernels: the device, its ceiling, the tallies. */
struct kern_run {
    const kern_opts *o;
    gpu_ctx g;
    double read_gbs = 0;
    void *d_copy = nullptr; /* upload target of the largest frame */
    torch_base tb;
    FILE *jf = nullptr;
    int first = 1, mismatches = 0;
    struct trk_obj_result truth[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
};

/* One frame (a scene in one format): what every variant's row shares. */
struct kern_frame {
    const struct trk_scene *sc;
    const pinned_image *pi;
    int kind, fmt, m;
    char scene[64];
    double ref_ms = 0, torch_ms = 0, up_ms = 0, floor_ms = 0, frame_ms = 0, frame1_ms = 0;
    double kdef = 0, xuk = 0;
    const char *tv = "";
    whole_call wc;
};

/* The whole frame through the public API (pinned input), default variant:
 * banded upload overlapping the kernels, and for comparison one band
 * (upload everything, then process). 0, or 1 when a call failed. */
int kern_process(kern_run &R, kern_frame &f)
{
    const kern_opts &o = *R.o;
    for (int pass = 0; pass < 2 && f.m > 0; pass++) {
        variant_run fb;
        if (fb.create(pass ? "fused:bands=1" : NULL, f.sc->width, f.sc->height) ||
            trk_backend_set_objects(fb.b, f.sc->objects, f.m))
            return 1;
        std::vector<double> t;
        for (int i = -o.warmup; i < o.iters; i++) {
            double a = trk_bench_now_ms();
            if (trk_backend_process(fb.b, &f.pi->img, NULL, R.got, NULL)) return 1;
            if (i >= 0) t.push_back(trk_bench_now_ms() - a);
        }
        (pass ? f.frame1_ms : f.frame_ms) = median(t);
        if (!same(R.truth, R.got, f.m)) {
            fprintf(stderr, "MISMATCH cuda process() on %s\n", f.scene);
            R.mismatches++;
        }
    }
    return 0;
}

/* Everything of the frame but the variants: the truth and the reference's
 * time, the PyTorch baseline's, the upload, the whole frame, the whole call
 * by where the frame lies and the default kernel alone. 0, or 1. */
int kern_measure(kern_run &R, kern_frame &f)
{
    const kern_opts &o = *R.o;
    const int m = f.m;
    /* Truth and the reference's time: one run of cpu-ref (or cpu). */
    if (ref_truth(f.pi->img, f.sc->objects, m, R.truth, &f.ref_ms, o.truth_kind)) return 1;
    const struct trk_json *tmass = nullptr;
    /* The PyTorch baseline ran the standard scenes only. */
    if (f.kind == SCENE_STANDARD)
        f.torch_ms = R.tb.find(f.sc->width, f.sc->height, m, &f.tv, &tmass);
    if (tmass && f.fmt == TRK_FMT_RGB24) {
        bool ok = tmass->type == TRK_JSON_ARRAY && (int)tmass->n == m;
        for (int i = 0; ok && i < m; i++)
            ok = (uint64_t)tmass->items[i].number == R.truth[i].mass;
        if (!ok) {
            fprintf(stderr,
                    "TORCH MASS MISMATCH on %s: the baseline computed "
                    "something else\n",
                    f.scene);
            R.mismatches++;
        }
    }
    /* Upload of this frame from pinned memory (one copy per plane). */
    const pinned_image &pi = *f.pi;
    f.up_ms = time_dev(
        R.g, [&] { cudaMemcpyAsync(R.d_copy, pi.mem, pi.bytes, cudaMemcpyHostToDevice, 0); }, 2, 10,
        false);
    f.floor_ms = pi.bytes / (R.read_gbs * 1e6);
    if (kern_process(R, f)) return 1;
    /* The whole call by where the frame lies (device image, pinned,
     * pageable), default variant, and the default kernel alone for
     * pinned_us / (upload_us + kernel_us). */
    if (m > 0) {
        double kdef_cold = 0;
        int err = kernel_time(R.g, NULL, pi.img, f.sc->objects, m, o.warmup, o.iters, false,
                              &f.kdef, &kdef_cold, R.got);
        if (err) {
            fprintf(stderr, "cuda-kernels: default variant on %s: %s\n", f.scene,
                    trk_strerror(err));
            return 1;
        }
        if ((err = run_whole(pi, *f.sc, m, o.warmup, o.iters, R.truth, f.scene, f.wc,
                             &R.mismatches))) {
            fprintf(stderr, "cuda-kernels: whole call on %s: %s\n", f.scene, trk_strerror(err));
            return 1;
        }
        if (!same(R.truth, R.got, m)) {
            fprintf(stderr, "MISMATCH default variant on %s\n", f.scene);
            R.mismatches++;
        }
    }
    f.xuk = f.wc.pinned > 0 ? f.wc.pinned / (f.up_ms + f.kdef) : 0;
    return 0;
}

/* Variant vn's row of the frame: its kernel times, checked, with the
 * frame's columns; the table line and the JSON entry. 0, or 1. */
int kern_variant(kern_run &R, const kern_frame &f, const std::string &vn)
{
    const kern_opts &o = *R.o;
    const int m = f.m;
    const char *fname = trk_pixfmt_name((enum trk_pixfmt)f.fmt);
    double hot = 0, cms = 0;
    if (m > 0) {
        int err = kernel_time(R.g, vn.c_str(), f.pi->img, f.sc->objects, m, o.warmup, o.iters,
                              o.cold, &hot, &cms, R.got);
        if (err) {
            fprintf(stderr, "cuda-kernels: %s on %s: %s\n", vn.c_str(), f.scene, trk_strerror(err));
            return 1;
        }
    }
    bool ok = m == 0 || same(R.truth, R.got, m);
    if (!ok) {
        fprintf(stderr, "MISMATCH %s on %s %s\n", vn.c_str(), f.scene, fname);
        R.mismatches++;
    }
    char xr[16] = "-", xt[16] = "-", xf[16] = "-", cs[16] = "-";
    if (hot > 0) {
        snprintf(xr, sizeof(xr), "%.0fx", f.ref_ms / hot);
        snprintf(xf, sizeof(xf), "%.1f", hot / f.floor_ms);
        if (f.torch_ms > 0) snprintf(xt, sizeof(xt), "%.0fx", f.torch_ms / hot);
    }
    if (cms > 0) snprintf(cs, sizeof(cs), "%.1f", cms * 1e3);
    const whole_call &wc = f.wc;
    printf("%-26s %-6s %-12s %10.1f %10s %8s %9s %9s %9.1f %10.1f %10.1f %8.1f "
           "%8.1f %8.1f %7.2f %9.1f%s\n",
           f.scene, fname, vn.c_str(), hot * 1e3, cs, xf, xr, xt, f.up_ms * 1e3, f.frame_ms * 1e3,
           f.frame1_ms * 1e3, wc.dev * 1e3, wc.dev_submit * 1e3, wc.pinned * 1e3, f.xuk,
           wc.pageable * 1e3, ok ? "" : "  MISMATCH");
    fflush(stdout);
    if (R.jf)
        fprintf(R.jf,
                "%s\n {\"scene\":\"%s\",\"width\":%d,\"height\":%d,\"objects\":%d,"
                "\"format\":\"%s\","
                "\"variant\":\"%s\",\"kernel_ms\":%.5f,\"kernel_cold_ms\":%.5f,"
                "\"floor_ms\":%.5f,\"ref_ms\":%.3f,\"torch_ms\":%.4f,"
                "\"torch_variant\":\"%s\",\"upload_ms\":%.4f,\"frame_ms\":%.4f,"
                "\"frame_1band_ms\":%.4f,\"kernel_default_ms\":%.5f,"
                "\"dev_ms\":%.5f,\"dev_submit_ms\":%.5f,\"pinned_ms\":%.5f,"
                "\"pinned_x_upload_kernel\":%.3f,\"pageable_ms\":%.4f,"
                "\"match\":%s}",
                R.first ? "" : ",", scene_names[f.kind], f.sc->width, f.sc->height, m, fname,
                vn.c_str(), hot, cms, f.floor_ms, f.ref_ms, f.torch_ms, f.tv, f.up_ms, f.frame_ms,
                f.frame1_ms, f.kdef, wc.dev, wc.dev_submit, wc.pinned, f.xuk, wc.pageable,
                ok ? "true" : "false");
    R.first = 0;
    return 0;
}

/* The scene of kind with w x h and m objects, in every format: its rows. 0,
 * or 1 on a failure. */
int kern_scene(kern_run &R, int kind, int w, int h, int m)
{
    struct trk_scene sc;
    if (make_scene(kind, w, h, m, R.o->seed, &sc)) return 1;
    for (int fmt : R.o->fmts) {
        pinned_image pi;
        if (make_pinned(sc, fmt, pi)) return 1;
        kern_frame f;
        f.sc = &sc, f.pi = &pi, f.kind = kind, f.fmt = fmt, f.m = m;
        snprintf(f.scene, sizeof(f.scene), "%dx%d m=%d%s%s", w, h, m,
                 kind == SCENE_STANDARD ? "" : " ",
                 kind == SCENE_STANDARD ? "" : scene_names[kind]);
        if (kern_measure(R, f)) return 1;
        for (auto &vn : R.o->vars)
            if (kern_variant(R, f, vn)) return 1;
        free_pinned(pi);
    }
    trk_scene_free(&sc);
    return 0;
}

/* The device, its one-read ceiling (one cold read of 1 GiB: the floor
 * column's), the upload target and the baseline. 0, or 1. */
int kern_open(kern_run &R)
{
    const kern_opts &o = *R.o;
    if (o.torch) {
        char err[256];
        if (!(R.tb.root = trk_json_load(o.torch, err, sizeof(err)))) {
            fprintf(stderr, "cuda-kernels: %s: %s\n", o.torch, err);
            return 1;
        }
    }
    if (ctx_open(R.g)) return 1;
    void *big;
    size_t bytes = (size_t)1 << 30;
    BENCH_TRY(cudaMalloc(&big, bytes));
    BENCH_TRY(cudaMemset(big, 1, bytes));
    R.read_gbs = bytes / (time_read(R.g, big, bytes, 10, true) * 1e6);
    cudaFree(big);
    size_t copy_bytes = 0;
    for (int s = 0; s < o.sizes.n; s++)
        copy_bytes = std::max(copy_bytes, (size_t)o.sizes.v[s][0] * o.sizes.v[s][1] * 4 + 4096);
    BENCH_TRY(cudaMalloc(&R.d_copy, copy_bytes));
    return 0;
}

int run_kernels(int argc, char **argv)
{
    kern_opts o;
    int rc = kern_parse(argc, argv, o);
    if (rc) return rc;
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("# cuda-kernels skipped: %s\n", why);
        return 0;
    }
    if ((rc = kern_lists(o))) return rc;
    static kern_run R; /* the result arrays are large */
    R.o = &o;
    if (kern_open(R)) return 1;
    kern_head(R.g, o, R.read_gbs);
    R.jf = o.json ? fopen(o.json, "w") : NULL;
    if (o.json && !R.jf) {
        fprintf(stderr, "cuda-kernels: cannot write %s\n", o.json);
        return 1;
    }
    if (R.jf)
        fprintf(R.jf,
                "{\"tool\":\"cuda-kernels\",\"device\":\"%s\",\"read_gbs\":%.1f,\"seed\":%llu,"
                "\"warmup\":%d,\"iters\":%d,\"truth\":\"%s\",\"results\":[",
                R.g.name, R.read_gbs, (unsigned long long)o.seed, o.warmup, o.iters,
                o.truth_kind == TRK_BACKEND_CPU ? "cpu" : "cpu-ref");
    const int nk = (int)o.kinds.size();
    for (int s = 0; s < o.sizes.n; s++)
        /* Each object count runs the listed scenes in turn: side by side. */
        for (int k = 0; k < o.objs.n * nk; k++)
            if (kern_scene(R, o.kinds[k % nk], o.sizes.v[s][0], o.sizes.v[s][1],
                           o.objs.v[k / nk][0]))
                return 1;
    if (R.jf) {
        fprintf(R.jf, "\n],\"mismatches\":%d}\n", R.mismatches);
        fclose(R.jf);
    }
    cudaFree(R.d_copy);
    trk_json_free(R.tb.root);
    ctx_close(R.g);
    if (R.mismatches) fprintf(stderr, "cuda-kernels: %d MISMATCH(es)\n", R.mismatches);
    return R.mismatches ? 1 : 0;
}

/* ----------------------------------------------------------- cuda-seed */

/* One run of cuda-seed: the device, the frame size, the tallies. */
struct seed_run {
    gpu_ctx g;
    int w = 0, h = 0, iters = 20;
    uint64_t seed = 20240601u;
    FILE *jf = nullptr;
    int mismatches = 0;
    struct trk_obj_result truth[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
};

/* Experiment 1: time vs number of objects. "per-object" = one
 * single-object MOCT reduction per object, summed (the seed's Bru07). 0,
 * or 1 on a failure. */
int seed_vs_objects(seed_run &S, const list &objs)
{
    const char *v1[] = { "moct-h-r4", "moct-v-r4", "moct-s-r4", "per-object",
                         "naive",     "lut",       "fused" };
    printf("# cuda-seed on %s, %dx%d: kernel time (us, CUDA-event medians, frame resident)\n",
           S.g.name, S.w, S.h);
    printf("# experiment 1: time vs number of objects\n%-6s", "M");
    for (const char *v : v1)
        printf(" %11s", v);
    printf("\n");
    if (S.jf) fprintf(S.jf, "\"vs_objects\":[");
    for (int k = 0; k < objs.n; k++) {
        const int m = objs.v[k][0];
        struct trk_scene sc;
        if (trk_scene_standard(S.w, S.h, m, S.seed, &sc)) return 1;
        pinned_image pi;
        if (make_pinned(sc, TRK_FMT_RGB24, pi)) return 1;
        if (ref_truth(pi.img, sc.objects, m, S.truth, NULL)) return 1;
        printf("%-6d", m);
        if (S.jf) fprintf(S.jf, "%s\n {\"objects\":%d", k ? "," : "", m);
        for (const char *v : v1) {
            double hot = 0, cold;
            int err = 0;
            if (!strcmp(v, "per-object")) {
                for (int i = 0; i < m && !err; i++) {
                    double one;
                    err = kernel_time(S.g, "moct-h-r4", pi.img, &sc.objects[i], 1, 2, S.iters,
                                      false, &one, &cold, &S.got[i]);
                    hot += one;
                }
            } else {
                err = kernel_time(S.g, v, pi.img, sc.objects, m, 3, S.iters, false, &hot, &cold,
                                  S.got);
            }
            if (err) {
                fprintf(stderr, "cuda-seed: %s m=%d: %s\n", v, m, trk_strerror(err));
                return 1;
            }
            bool ok = same(S.truth, S.got, m);
            if (!ok) S.mismatches++;
            printf(" %10.1f%s", hot * 1e3, ok ? " " : "!");
            if (S.jf) fprintf(S.jf, ",\"%s\":%.5f", v, hot);
        }
        printf("\n");
        fflush(stdout);
        if (S.jf) fprintf(S.jf, "}");
        free_pinned(pi);
        trk_scene_free(&sc);
    }
    return 0;
}

/* Experiment 2: time vs reduction factor, per arrangement, with m_for_r
 * objects. 0, or 1 on a failure. */
int seed_vs_r(seed_run &S, const list &rs, int m_for_r)
{
    printf("# experiment 2: MOCT time vs reduction factor r, M = %d\n%-6s %11s %11s %11s\n",
           m_for_r, "r", "horizontal", "vertical", "square");
    if (S.jf) fprintf(S.jf, "],\"m_for_r\":%d,\"vs_r\":[", m_for_r);
    struct trk_scene sc;
    if (trk_scene_standard(S.w, S.h, m_for_r, S.seed, &sc)) return 1;
    pinned_image pi;
    if (make_pinned(sc, TRK_FMT_RGB24, pi)) return 1;
    if (ref_truth(pi.img, sc.objects, m_for_r, S.truth, NULL)) return 1;
    for (int i = 0; i < rs.n; i++) {
        const int r = rs.v[i][0];
        printf("%-6d", r);
        if (S.jf) fprintf(S.jf, "%s\n {\"r\":%d", i ? "," : "", r);
        for (char arr : { 'h', 'v', 's' }) {
            char name[48];
            snprintf(name, sizeof(name), "moct:arr=%c,r=%d", arr, r);
            double hot, cold;
            int err = kernel_time(S.g, name, pi.img, sc.objects, m_for_r, 3, S.iters, false, &hot,
                                  &cold, S.got);
            if (err) {
                fprintf(stderr, "cuda-seed: %s: %s\n", name, trk_strerror(err));
                return 1;
            }
            bool ok = same(S.truth, S.got, m_for_r);
            if (!ok) S.mismatches++;
            printf(" %10.1f%s", hot * 1e3, ok ? " " : "!");
            if (S.jf) fprintf(S.jf, ",\"%c\":%.5f", arr, hot);
        }
        printf("\n");
        if (S.jf) fprintf(S.jf, "}");
    }
    free_pinned(pi);
    trk_scene_free(&sc);
    return 0;
}

int run_seed(int argc, char **argv)
{
    list size, objs, rs;
    parse_sizes("640x480", size);
    parse_ints("1,2,4,8,16,32,64,128,256", objs, 1, TRK_MAX_OBJECTS);
    parse_ints("2,4,8,16,32,64,128,256", rs, 2, TRK_MOCT_MAX_R);
    static seed_run S; /* the result arrays are large */
    int m_for_r = 16;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        if (!ok) {
        } else if (!strcmp(a, "--size"))
            ok = parse_sizes(v, size);
        else if (!strcmp(a, "--objects"))
            ok = parse_ints(v, objs, 1, TRK_MAX_OBJECTS);
        else if (!strcmp(a, "--rs"))
            ok = parse_ints(v, rs, 2, TRK_MOCT_MAX_R);
        else if (!strcmp(a, "--m"))
            ok = (m_for_r = atoi(v)) >= 1 && m_for_r <= TRK_MAX_OBJECTS;
        else if (!strcmp(a, "--iters"))
            ok = (S.iters = atoi(v)) >= 1;
        else if (!strcmp(a, "--json"))
            json = v;
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "cuda-seed: bad option %s\n", a);
            return 2;
        }
        i++;
    }
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("# cuda-seed skipped: %s\n", why);
        return 0;
    }
    if (ctx_open(S.g)) return 1;
    S.w = size.v[0][0], S.h = size.v[0][1];
    S.jf = json ? fopen(json, "w") : NULL;
    if (S.jf)
        fprintf(S.jf, "{\"tool\":\"cuda-seed\",\"device\":\"%s\",\"width\":%d,\"height\":%d,",
                S.g.name, S.w, S.h);
    if (seed_vs_objects(S, objs) || seed_vs_r(S, rs, m_for_r)) return 1;
    if (S.jf) {
        fprintf(S.jf, "\n],\"mismatches\":%d}\n", S.mismatches);
        fclose(S.jf);
    }
    ctx_close(S.g);
    if (S.mismatches) fprintf(stderr, "cuda-seed: %d MISMATCH(es) (marked !)\n", S.mismatches);
    return S.mismatches ? 1 : 0;
}

void sleep_ms(double ms)
{
    if (ms <= 0) return;
    struct timespec ts = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
    nanosleep(&ts, NULL);
}

/* cuda-upload's options. */
struct up_opts {
    list sizes, objs;
    const char *formats = "rgb24,nv12", *bands = "default,copy,1,2";
    int iters = 100;
    double pace_ms = 16.7, nudge_us = 300;
    int nudge_kind = 1; /* 1 memset on the device, 2 a 64-byte upload, 3 both */
    uint64_t seed = 20240601u;
};

/* The command line into o. 0, or 2 after a message. */
int up_parse(int argc, char **argv, up_opts &o)
{
    parse_sizes("1920x1080,3840x2160", o.sizes);
    parse_ints("8,128", o.objs, 0, TRK_MAX_OBJECTS);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        if (!ok)
            ;
        else if (!strcmp(a, "--sizes"))
            ok = parse_sizes(v, o.sizes);
        else if (!strcmp(a, "--objects"))
            ok = parse_ints(v, o.objs, 1, TRK_MAX_OBJECTS);
        else if (!strcmp(a, "--formats"))
            o.formats = v;
        else if (!strcmp(a, "--bands"))
            o.bands = v;
        else if (!strcmp(a, "--iters"))
            o.iters = atoi(v);
        else if (!strcmp(a, "--pace-ms"))
            o.pace_ms = atof(v);
        else if (!strcmp(a, "--nudge-us"))
            o.nudge_us = atof(v);
        else if (!strcmp(a, "--nudge"))
            ok = (o.nudge_kind = !strcmp(v, "memset") ? 1
                                 : !strcmp(v, "copy") ? 2
                                 : !strcmp(v, "both") ? 3
                                                      : 0) != 0;
        else
            ok = false;
        if (!ok || o.iters < 3 || o.pace_ms < 0 || o.nudge_us < 0 ||
            (o.pace_ms > 0 && o.nudge_us > o.pace_ms * 1e3)) {
            fprintf(stderr, "cuda-upload: bad option %s\n", a);
            return 2;
        }
        i++;
    }
    return 0;
}

/* One run of cuda-upload: the device, the nudge's buffers, the tallies. */
struct up_run {
    const up_opts *o;
    gpu_ctx g;
    void *d_nudge = nullptr, *h_nudge = nullptr;
    cudaStream_t s_nudge;
    int mismatches = 0;
    struct trk_obj_result truth[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
};

void up_head(const up_run &R)
{
    const up_opts &o = *R.o;
    printf("# cuda-upload on %s; iters %d; paced: %.1f ms sleep before each call; medians in us\n",
           R.g.name, o.iters, o.pace_ms);
    printf("# copy: 1d = one cudaMemcpyAsync of the frame, 2d = cudaMemcpy2DAsync per plane as "
           "the backend issues it; dev = events, wall = host call -> stream done\n");
    printf("# paced_up/paced_k: the backend's upload/kernel split of the paced calls; nudged: "
           "paced, with a nudge (%s) %.0f us before each call\n",
           o.nudge_kind == 1   ? "4-byte memset"
           : o.nudge_kind == 2 ? "64-byte upload"
                               : "both",
           o.nudge_us);
    printf("%-22s %-6s %-10s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "scene", "format", "bands",
           "1d_dev", "1d_wall", "2d_dev", "call_us", "up_us", "kern_us", "paced_us", "paced_up",
           "paced_k", "nudged");
}

/* The copy engine alone on the pinned frame: one cudaMemcpyAsync (device
 * and wall time) and one cudaMemcpy2DAsync per plane (device time), as
 * text columns c[3] (us medians). 0, or 1 on a CUDA error. */
int up_copies(up_run &R, const pinned_image &pi, char c[3][16])
{
    gpu_ctx &g = R.g;
    void *d = nullptr;
    BENCH_TRY(cudaMalloc(&d, pi.bytes));
    std::vector<double> dev1, wall1, dev2;
    for (int i = -5; i < R.o->iters; i++) {
        double a = trk_bench_now_ms();
        cudaEventRecord(g.e0, 0);
        cudaMemcpyAsync(d, pi.mem, pi.bytes, cudaMemcpyHostToDevice, 0);
        cudaEventRecord(g.e1, 0);
        while (cudaEventQuery(g.e1) == cudaErrorNotReady)
            ;
        double z = trk_bench_now_ms();
        float ms = 0;
        cudaEventElapsedTime(&ms, g.e0, g.e1);
        if (i >= 0) dev1.push_back(ms), wall1.push_back(z - a);
        struct trk_plane_layout L;
        trk_image_plane_layout(pi.img.fmt, pi.img.width, pi.img.height, &L);
        cudaEventRecord(g.e0, 0);
        uint8_t *dp = (uint8_t *)d;
        for (int p = 0; p < L.planes; p++) {
            cudaMemcpy2DAsync(dp, L.row_bytes[p], pi.img.plane[p], pi.img.pitch[p], L.row_bytes[p],
                              L.rows[p], cudaMemcpyHostToDevice, 0);
            dp += L.row_bytes[p] * (size_t)L.rows[p];
        }
        cudaEventRecord(g.e1, 0);
        cudaEventSynchronize(g.e1);
        cudaEventElapsedTime(&ms, g.e0, g.e1);
        if (i >= 0) dev2.push_back(ms);
    }
    BENCH_TRY(cudaGetLastError());
    cudaFree(d);
    snprintf(c[0], 16, "%.1f", median(dev1) * 1e3);
    snprintf(c[1], 16, "%.1f", median(wall1) * 1e3);
    snprintf(c[2], 16, "%.1f", median(dev2) * 1e3);
    return 0;
}

/* The paced calls (a sleep of --pace-ms before each, as a camera's frames
 * come) and then the same with a nudge: a tiny GPU operation --nudge-us
 * before the frame (the GPU wakes from idle before the frame comes, as
 * --spin wakes the CPU). Each call checked. 0, or 1 when a call failed. */
int up_paced(up_run &R, struct trk_backend *b, const struct trk_image &himg, int m,
             std::vector<double> &paced, std::vector<double> &pup, std::vector<double> &pk,
             std::vector<double> &nudged)
{
    const up_opts &o = *R.o;
    const int np = o.iters < 40 ? o.iters : 40;
    struct trk_backend_timing tm;
    for (int pass = 0; pass < 2 && o.pace_ms > 0; pass++)
        for (int i = -2; i < np; i++) {
            const double lead = pass ? o.nudge_us * 1e-3 : 0;
            sleep_ms(o.pace_ms - lead);
            if (pass) {
                if (o.nudge_kind & 1) cudaMemsetAsync(R.d_nudge, 0, 4, R.s_nudge);
                if (o.nudge_kind & 2)
                    cudaMemcpyAsync(R.d_nudge, R.h_nudge, 64, cudaMemcpyHostToDevice, R.s_nudge);
                const double t = trk_bench_now_ms() + lead;
                while (trk_bench_now_ms() < t)
                    ;
            }
            double a = trk_bench_now_ms();
            if (trk_backend_process(b, &himg, NULL, R.got, &tm)) return 1;
            if (i >= 0 && !pass)
                paced.push_back(trk_bench_now_ms() - a), pup.push_back(tm.upload_ms),
                    pk.push_back(tm.kernel_ms);
            if (i >= 0 && pass) nudged.push_back(trk_bench_now_ms() - a);
            if (!same(R.truth, R.got, m)) R.mismatches++;
        }
    return 0;
}

/* One --bands entry bs on the frame: trk_backend_process back to back, then
 * paced and nudged (up_paced), from trk_backend_host_alloc memory; its
 * row, the copy columns c1 first. 0, or 1 on a failure. */
int up_band(up_run &R, const struct trk_scene &sc, const pinned_image &pi, const char *scene,
            const char *fs, const std::string &bs, const char c1[3][16])
{
    const int m = sc.n_objects;
    std::string var = bs == "default"                 ? ""
                      : isdigit((unsigned char)bs[0]) ? "fused:bands=" + bs
                                                      : "fused:" + bs;
    variant_run v;
    if (v.create(var.empty() ? NULL : var.c_str(), sc.width, sc.height) ||
        trk_backend_set_objects(v.b, sc.objects, m))
        return 1;
    /* The daemon's frame pools: trk_backend_host_alloc memory. */
    void *hp = trk_backend_host_alloc(v.b, pi.bytes);
    if (!hp) return 1;
    memcpy(hp, pi.page, pi.bytes);
    const struct trk_image himg = rebase(pi.page_img, pi.page, hp);
    std::vector<double> call, up, kern, paced, pup, pk, nudged;
    struct trk_backend_timing tm;
    for (int i = -5; i < R.o->iters; i++) {
        double a = trk_bench_now_ms();
        if (trk_backend_process(v.b, &himg, NULL, R.got, &tm)) return 1;
        double z = trk_bench_now_ms();
        if (i >= 0) call.push_back(z - a), up.push_back(tm.upload_ms), kern.push_back(tm.kernel_ms);
        if (!same(R.truth, R.got, m)) R.mismatches++;
    }
    if (up_paced(R, v.b, himg, m, paced, pup, pk, nudged)) return 1;
    trk_backend_host_free(v.b, hp);
    printf("%-22s %-6s %-10s %9s %9s %9s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f "
           "%9.1f\n",
           scene, fs, bs.c_str(), c1[0], c1[1], c1[2], median(call) * 1e3, median(up) * 1e3,
           median(kern) * 1e3, paced.empty() ? 0.0 : median(paced) * 1e3,
           pup.empty() ? 0.0 : median(pup) * 1e3, pk.empty() ? 0.0 : median(pk) * 1e3,
           nudged.empty() ? 0.0 : median(nudged) * 1e3);
    fflush(stdout);
    return 0;
}

/* The standard scene of w x h with m objects in every format and band
 * setting. 0, 1 on a failure, 2 for an unknown format. */
int up_scene(up_run &R, int w, int h, int m)
{
    struct trk_scene sc;
    if (make_scene(SCENE_STANDARD, w, h, m, R.o->seed, &sc)) return 1;
    char scene[64];
    snprintf(scene, sizeof(scene), "%dx%d m=%d", w, h, m);
    for (auto &fs : split(R.o->formats)) {
        const int fmt = parse_fmt(fs);
        if (fmt < 0) {
            fprintf(stderr, "cuda-upload: unknown format %s\n", fs.c_str());
            return 2;
        }
        pinned_image pi;
        if (make_pinned(sc, fmt, pi)) return 1;
        if (ref_truth(pi.img, sc.objects, m, R.truth, NULL)) return 1;
        char c1[3][16];
        if (up_copies(R, pi, c1)) return 1;
        for (auto &bs : split(R.o->bands)) {
            if (up_band(R, sc, pi, scene, fs.c_str(), bs, c1)) return 1;
            c1[0][0] = c1[1][0] = c1[2][0] = 0; /* the first row only */
        }
        free_pinned(pi);
    }
    trk_scene_free(&sc);
    return 0;
}

/* --experiment cuda-upload: where a pinned whole call's time goes. For
 * each size and format, with pinned frames: the copy engine alone (one
 * cudaMemcpyAsync of the frame, and the same as the backend issues it:
 * cudaMemcpy2DAsync per plane), device time (events) and host wall time
 * (call -> stream done); then trk_backend_process on the frame in
 * trk_backend_host_alloc memory (the daemon's pools) per --bands entry:
 * "default" (the kernel reads the frame in place where it can), N
 * (fused:bands=N: N bands, uploaded), any other word W the fused variant's
 * option W (fused:W: "copy" the banded upload, "copyback" results copied
 * back instead of handed over) -- back to back, paced (a sleep of --pace-ms before each
 * call, as a camera's frames come) with the backend's own upload/kernel
 * split, and paced with a nudge (--nudge memset|copy|both, --nudge-us
 * before the call: whether waking the GPU ahead of the frame helps).
 * Every call's results are checked against cpu-ref. */
int run_upload(int argc, char **argv)
{
    up_opts o;
    int rc = up_parse(argc, argv, o);
    if (rc) return rc;
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("# cuda-upload skipped: %s\n", why);
        return 0;
    }
    static up_run R; /* the result arrays are large */
    R.o = &o;
    if (ctx_open(R.g)) return 1;
    up_head(R);
    BENCH_TRY(cudaMalloc(&R.d_nudge, 64));
    BENCH_TRY(cudaMallocHost(&R.h_nudge, 64));
    BENCH_TRY(cudaStreamCreateWithFlags(&R.s_nudge, cudaStreamNonBlocking));
    for (int s = 0; s < o.sizes.n; s++)
        for (int k = 0; k < o.objs.n; k++)
            if ((rc = up_scene(R, o.sizes.v[s][0], o.sizes.v[s][1], o.objs.v[k][0]))) return rc;
    if (R.mismatches) fprintf(stderr, "cuda-upload: %d MISMATCH(es)\n", R.mismatches);
    return R.mismatches ? 1 : 0;
}

const struct trk_bench_experiment exp_floor = { "cuda-floor",
                                                "CUDA: device memory copy/read ceilings",
                                                run_floor };
const struct trk_bench_experiment exp_kernels = {
    "cuda-kernels", "CUDA: kernel time per variant vs floor, cpu-ref, torch", run_kernels
};
const struct trk_bench_experiment exp_seed = {
    "cuda-seed", "CUDA: the seed's time-vs-objects and time-vs-r experiments", run_seed
};

const struct trk_bench_experiment exp_upload = {
    "cuda-upload", "CUDA: a pinned whole call against its copy, by band count, paced", run_upload
};

__attribute__((constructor)) void register_cuda_experiments()
{
    trk_bench_register(&exp_upload);
    trk_bench_register(&exp_floor);
    trk_bench_register(&exp_kernels);
    trk_bench_register(&exp_seed);
}

} // namespace

/* For the blobs experiment (bench_blobs.c, plain C; bench.h): the GPU
 * one-read floor of a frame, with the read kernel above, hot (a frame the
 * backend has just uploaded is in L2 when it fits, as here). */
extern "C" int trk_bench_cuda_read_ms(const void *h, size_t bytes, int iters, double *ms)
{
    gpu_ctx g;
    *ms = 0;
    if (ctx_open(g)) return -1;
    void *d = nullptr;
    int rc = 0;
    if (cudaMalloc(&d, bytes) != cudaSuccess ||
        cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "trackd-bench cuda: floor upload: %s\n",
                cudaGetErrorString(cudaGetLastError()));
        rc = -1;
    } else {
        *ms = time_read(g, d, bytes, iters, false);
    }
    cudaFree(d);
    ctx_close(g);
    return rc;
}
