/* trackd backend interface: the one plain-C boundary between the daemon and
 * every tracking backend (CPU reference, fast CPU, CUDA).
 *
 * A backend takes a frame in its native pixel format and, for every object,
 * returns exact integer accumulators: mass, sum of x, sum of y, the second
 * moments (sums of x*x, y*y, x*y) and the inclusive bounding box of the
 * pixels that match the object's colour box.
 * All backends return bit-identical trk_obj_result arrays for the same input;
 * the CPU reference (cpu_ref.c) is the definition, the others are tested
 * against it. The pixel rules (colour conversion, HSV, chroma siting) are in
 * color.h.
 *
 * No CUDA types appear here: C code includes only this header.
 */
#ifndef TRK_GPU_BACKEND_H
#define TRK_GPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"     /* pixel formats, struct trk_image, plane geometry */
#include "trk_error.h" /* TRK_E* codes, trk_strerror: the ground floor, base/ */

#ifdef __cplusplus
extern "C" {
#endif

/* Most objects one backend instance tracks at once (bitmask width of the
 * fast backends: 256 bits = 8 x uint32). */
#define TRK_MAX_OBJECTS 256
#define TRK_NAME_MAX    64

/* --------------------------------------------------------------- objects */

/* The colour spaces an object's box can be in. lab and rg separate light
 * from colour (a and b, r and g barely move when the light dims); their
 * integer definitions are in color.h (trk_rgb_to_lab, trk_rgb_to_rg). */
enum trk_space {
    TRK_SPACE_RGB = 0,
    TRK_SPACE_HSV,
    TRK_SPACE_YCBCR,
    TRK_SPACE_LAB,
    TRK_SPACE_RG,
    TRK_SPACE_COUNT, /* not a space: how many box spaces there are */
    /* A painted colour class instead of a box: def.cls points to its table
     * (struct trk_object_def). Not counted in TRK_SPACE_COUNT: arrays of the
     * box spaces have no row for it. */
    TRK_SPACE_CLASS = TRK_SPACE_COUNT
};

/* Painted colour classes: a 64 x 64 x 64 bit table over R, G, B (the top 6
 * bits of each channel: cell = (R >> 2) << 12 | (G >> 2) << 6 | B >> 2,
 * bit cell & 7 of byte cell >> 3). A pixel is in the class when its cell's
 * bit is set; its R, G, B are those every rgb object tests (YUV frames:
 * trk_yuv_to_rgb per the frame's matrix and range, color.h), so a class
 * painted on one camera format holds on the others. At most
 * TRK_MAX_CLASSES class objects per set (trk_backend_set_objects refuses
 * more: TRK_EINVAL). */
#define TRK_CLASS_CELLS (64 * 64 * 64)
#define TRK_CLASS_BYTES (TRK_CLASS_CELLS / 8)
#define TRK_MAX_CLASSES 16

/* A colour box. Channels per space: rgb (R, G, B), hsv (H in degrees 0..359,
 * S 0..255, V 0..255), ycbcr (Y, Cb, Cr), lab (L* scaled to 0..255, a* + 128,
 * b* + 128), rg (r = 255 R / (R + G + B), g likewise, I = (R + G + B) / 3;
 * all rounded, color.h). A pixel matches when every channel
 * c satisfies lo[c] <= c <= hi[c], except hue: when lo[0] > hi[0] the hue
 * range wraps through 0 (match when h >= lo[0] || h <= hi[0]). */
struct trk_object_def {
    char name[TRK_NAME_MAX];
    enum trk_space space;
    uint16_t lo[3], hi[3];
    uint64_t min_mass; /* found = mass >= min_mass (>= 1) */
    /* Blobs (connected components of this object's own mask; see struct
     * trk_blob). blobs = K, the most listed: 0 = off (the default: no
     * labelling cost), 1..TRK_MAX_BLOBS. Components with mass < min_area are
     * dropped (0 counts as 1). connectivity 4 or 8 (0 counts as 8). */
    uint16_t blobs;
    uint8_t connectivity;
    uint32_t min_area;
    /* Tracker settings (daemon/tracker.h); backends ignore them. track:
     * each of the object's blobs (at most blobs K, then >= 1) is followed
     * as an instance with a stable id; coast_frames: frames an instance
     * that is not seen is kept, on its predicted path, before it is
     * dropped (0 = dropped at once; the objects file's default is 10). */
    bool track;
    uint16_t coast_frames;
    /* space TRK_SPACE_CLASS: the class table (TRK_CLASS_BYTES bytes; lo and
     * hi are ignored), read by trk_backend_set_objects, which keeps its own
     * copy, and by trk_pixel_matches (color.h); NULL for the box spaces.
     * cls_slot: the objects set's own index of the table (config/objects.h),
     * which backends ignore. */
    const uint8_t *cls;
    uint8_t cls_slot;
};

/* Most blobs listed per object. */
#define TRK_MAX_BLOBS 64

/* Optional region of interest per object, inclusive, in pixels. Only pixels
 * inside an object's ROI count for that object. A ROI is clipped to the frame;
 * an empty ROI (x0 > x1 or y0 > y1 after clipping) counts nothing. */
struct trk_roi {
    int32_t x0, y0, x1, y1;
};

/* Largest frame side (width or height) any backend accepts:
 * trk_backend_create refuses a larger max_width / max_height (TRK_EINVAL).
 * It bounds the exact sums below: coordinates are below 2^16, so a square
 * or product of two is below 2^32, and on a W x H frame every sum is
 * largest when every pixel matches; at W = H = 65536
 *   sum x*x = H * (W-1) W (2W-1) / 6 < 6.2e18,
 *   sum x*y = (W (W-1) / 2) * (H (H-1) / 2) < 4.7e18,
 * both below 2^63 (9.2e18), so uint64 never wraps (at 8K, 7680 x 4320, the
 * largest is sum x*x < 6.6e14). Some backends take less (cpu-ref: fewer
 * than 2^32 pixels; CUDA blobs and MOCT: sides up to 65535). */
#define TRK_MAX_SIDE 65536

/* Exact per-object accumulators. When mass == 0: sums are 0 and the bbox is
 * {-1, -1, -1, -1}. Centroid = sum / mass, computed by the caller; the
 * second moments (sum_xx = sum of x*x over the pixels, sum_yy, sum_xy)
 * give orientation and axes through trk_moments_shape (moments.h). */
struct trk_obj_result {
    uint64_t mass;
    uint64_t sum_x, sum_y;
    int32_t x0, y0, x1, y1; /* inclusive bounding box */
    uint64_t sum_xx, sum_yy, sum_xy;
};

/* One blob: a connected component (4- or 8-connected, per the object) of
 * the object's mask, restricted to the object's clipped ROI when ROIs are
 * given. A pixel may be in several objects' masks; each object's components
 * are defined on its own mask alone.
 * perimeter counts crack edges: the pixel sides between a blob pixel and a
 * pixel outside the blob or outside the frame (4 for a lone pixel). A
 * 4-neighbour in the mask is always in the same blob, so it is
 * sum over the blob's pixels of (4 - its 4-neighbours in the mask).
 * first is the raster index y * width + x of the blob's first pixel in raster
 * order (its top row, leftmost pixel).
 * An object's list holds at most K blobs with mass >= min_area, ordered by
 * mass descending, ties by first ascending (trk_blob_before). */
struct trk_blob {
    uint64_t mass;
    uint64_t sum_x, sum_y;
    int32_t x0, y0, x1, y1; /* inclusive bounding box */
    uint64_t perimeter;
    uint64_t first;
    uint64_t sum_xx, sum_yy, sum_xy; /* second moments, as trk_obj_result's */
};

/* The list order: a before b. */
static inline bool trk_blob_before(const struct trk_blob *a, const struct trk_blob *b)
{
    return a->mass != b->mass ? a->mass > b->mass : a->first < b->first;
}

/* -------------------------------------------------------------- backends */

enum trk_backend_kind {
    TRK_BACKEND_AUTO = 0, /* CUDA if a usable GPU exists, else fast CPU       */
    TRK_BACKEND_CPU_REF,  /* plain C reference: the definition of results     */
    TRK_BACKEND_CPU,      /* fast CPU (cpu_fast.c)                          */
    TRK_BACKEND_CUDA,
};

struct trk_backend_cfg {
    enum trk_backend_kind kind;
    int max_width, max_height; /* largest frame; buffers are sized at create */
    int threads;               /* CPU backends: worker threads, 0 = cores     */
    int cuda_device;           /* CUDA: device ordinal                        */
    const char *variant;       /* backend-specific variant name, NULL = default*/
};

/* Per-call timing, filled by process/wait when non-NULL (milliseconds;
 * 0 where a stage does not exist for the backend). */
struct trk_backend_timing {
    double upload_ms; /* host to device copy */
    /* Threshold + reduction. CUDA: GPU time between events, or for a
     * kernel that hands its results over itself (the default fused
     * kernel) the kernel's own span on the GPU clock, launch gap excluded. */
    double kernel_ms;
    double total_ms;       /* whole call, wall clock              */
    uint64_t upload_bytes; /* frame bytes copied host to device (0 for CPU backends) */
    /* Of upload_bytes, those the kernels read over the bus where they lie
     * (CUDA: a pinned frame read in place, no copy; its time is in
     * kernel_ms), 0 when the frame was copied. */
    uint64_t in_place_bytes;
};

struct trk_backend;

/* Creates a backend of cfg->kind. AUTO resolves to CUDA when compiled in and a
 * device is usable, else to the fast CPU backend; trk_backend_name() tells
 * which. Returns 0 or a negative code (TRK_ENODEV when the kind is not
 * available); *out is NULL on failure. */
int trk_backend_create(const struct trk_backend_cfg *cfg, struct trk_backend **out);

/* Frees everything; safe on NULL and twice (sets *b = NULL). */
void trk_backend_destroy(struct trk_backend **b);

/* Replaces the object set (0..TRK_MAX_OBJECTS objects). Not per frame: may
 * rebuild tables and upload them. */
int trk_backend_set_objects(struct trk_backend *b, const struct trk_object_def *objs, int n);

/* The denoising pre-filter (gpu/prefilter.h defines it): a separable
 * Gaussian of standard deviation sigma pixels applied to every frame before
 * thresholding, so aggregates and blobs both see the filtered frame; every
 * backend gives the same bytes. 0 = off (the default); TRK_EINVAL unless
 * 0 <= sigma <= TRK_PREFILTER_MAX_SIGMA (4.0) or while a frame is in flight;
 * TRK_ENOMEM when its buffers (sized for the create-time maximum, made when
 * first turned on) cannot be had. Not per frame. */
int trk_backend_set_prefilter(struct trk_backend *b, double sigma);

/* Processes one frame synchronously: out[i] for each of the n objects set.
 * (wait's out has one entry per object after submit, per region after
 * submit_regions.)
 * rois: NULL = full frame for every object, else one trk_roi per object. */
int trk_backend_process(struct trk_backend *b, const struct trk_image *img,
                        const struct trk_roi *rois, struct trk_obj_result *out,
                        struct trk_backend_timing *timing);

/* Asynchronous form: submit starts work on img (which must stay valid until
 * wait returns), wait collects it. At most one frame in flight per backend.
 * CPU backends do the work in submit. process() == submit + wait.
 * A device image (img->mem == TRK_MEM_CUDA) is read in place by the GPU
 * until wait returns: its memory (a decoder's surface: keep the decoded
 * frame referenced) must not be freed, reused or written before then. A
 * backend that does not take device images answers TRK_EINVAL and logs
 * why (trk_backend_accepts_device tells beforehand). */
int trk_backend_submit(struct trk_backend *b, const struct trk_image *img,
                       const struct trk_roi *rois);
int trk_backend_wait(struct trk_backend *b, struct trk_obj_result *out,
                     struct trk_backend_timing *timing);

/* Whether submit returns before the work is done (CUDA: it queues the
 * copies and kernels), so that the caller can do something else, e.g. send
 * the previous frame's results, until wait; false: the work is done in
 * submit (CPU backends). */
bool trk_backend_async(const struct trk_backend *b);

/* Object obj's blob list of the last frame waited for: points *blobs at
 * the backend's copy (valid until the next submit or set_objects) and
 * returns its length, 0..def.blobs (0 when blobs are off for obj). After
 * submit_regions, obj is a region index (see there). TRK_EINVAL when obj
 * is out of range, a frame is in flight or none was waited for since
 * set_objects. */
int trk_backend_blobs(const struct trk_backend *b, int obj, const struct trk_blob **blobs);

/* ------------------------------------------ regions (regional reduction) */

/* Most regions one submit_regions takes. */
#define TRK_MAX_REGIONS 1024

/* One region of the regional multiple reduction (RRM): object obj's colour
 * box (and blob settings) evaluated only inside roi, inclusive, clipped to
 * the frame like a trk_roi (empty after clipping: nothing found). Several
 * regions may name the same object and may overlap; each is measured on
 * its own, exactly as if it were the only one. */
struct trk_region {
    int32_t obj;
    struct trk_roi roi;
};

/* The regional form of submit: instead of one result per object over the
 * frame (or its ROI), one result per region. wait then writes n results
 * (out[j] for regions[j]) and trk_backend_blobs(b, j, ...) gives region j's
 * blob list: the components of object obj's mask restricted to the region
 * (a blob cut by the region's border is measured as seen inside it: its
 * perimeter counts the cut sides), at most that object's K, the same
 * order and min_area rule. For every backend, region j's result equals
 * submit with rois[obj] = regions[j].roi, bit for bit (the definition);
 * the regional form costs what the regions cover, not the frame (a GPU
 * backend may upload only the regions' rows or rectangles: timing's
 * upload_bytes says how much). n = 0..TRK_MAX_REGIONS; TRK_EINVAL for an
 * obj outside the set. */
int trk_backend_submit_regions(struct trk_backend *b, const struct trk_image *img,
                               const struct trk_region *regions, int n);
/* Whether b has a native regional form (cost follows the regions' area);
 * false: submit_regions runs one submit per region (correct, not fast). */
bool trk_backend_regions_native(const struct trk_backend *b);

/* submit_regions + wait: out has n entries. */
int trk_backend_process_regions(struct trk_backend *b, const struct trk_image *img,
                                const struct trk_region *regions, int n, struct trk_obj_result *out,
                                struct trk_backend_timing *timing);

/* --------------------------------------------------------- point gathers */

/* Most points one gather reads (daemon/light.c plans at most about 10^4). */
#define TRK_MAX_GATHER 16384

/* Arms the next submit or submit_regions to read the native samples of n
 * pixels of its image (struct trk_gather_point and trk_gather_value,
 * image.h) with the frame's own work, once (the rounds after it read
 * none): a device image (TRK_MEM_CUDA) on the GPU in the same submission
 * (CUDA: a small kernel on the frame's stream before its kernels, the
 * values written to mapped host memory, there when wait returns: no
 * extra synchronisation, no copy of the frame); a host image from host
 * memory where it lies, on every backend, after the frame's work is
 * queued (trk_image_gather, the definition every backend equals). pts are
 * copied. A point outside the image fails that submit (TRK_EINVAL).
 * n = 0 disarms. TRK_EINVAL for n outside 0..TRK_MAX_GATHER or while a
 * frame is in flight; TRK_ENOMEM. Between frames, like set_objects. */
int trk_backend_set_gather(struct trk_backend *b, const struct trk_gather_point *pts, int n);
/* The values the armed submit read, once it was waited for: *vals points
 * at n values (the backend's copy, valid until the next set_gather) and
 * n is returned; TRK_EINVAL (and *vals NULL) when no armed submit was
 * waited for since the last set_gather, or a frame is in flight. */
int trk_backend_gathered(const struct trk_backend *b, const struct trk_gather_value **vals);

/* ------------------------------------------------------ host memory */

/* Host memory for frames the backend reads without a detour. On CUDA,
 * pageable frames are copied row by row into a pinned staging buffer before
 * the copy engine can read them (1080p: 0.55 ms a call against 0.15 ms from
 * pinned memory); frames that already lie in pinned memory the backend knows
 * of are uploaded directly (asynchronously, no staging copy).
 *
 * host_alloc: bytes (> 0) of host memory, aligned to at least 64 bytes:
 * pinned (cudaHostAlloc, portable to every device) on CUDA, plain aligned
 * memory on the CPU backends; NULL when it cannot be had (callers fall back
 * to malloc). Free it with trk_backend_host_free on a backend of the same
 * kind, before the last backend of that kind is destroyed. Pinned memory is
 * a scarce system resource: allocate frame pools, not per frame.
 * host_free: NULL is ignored. */
void *trk_backend_host_alloc(struct trk_backend *b, size_t bytes);
void trk_backend_host_free(struct trk_backend *b, void *p);

/* Pins memory that someone else allocated (V4L2 mmap buffers): CUDA
 * cudaHostRegister, so the backend uploads frames in it directly; a no-op
 * returning 0 on the CPU backends. 0, TRK_EINVAL (NULL or n == 0) or
 * TRK_EBACKEND when the driver refuses (some mmap'd device memory cannot be
 * pinned: the caller keeps using it pageable). unregister undoes it before
 * the memory goes away; p not registered is ignored. */
int trk_backend_host_register(struct trk_backend *b, void *p, size_t n);
void trk_backend_host_unregister(struct trk_backend *b, void *p);

/* Whether the n bytes at p lie in host memory this backend reads directly
 * (from host_alloc or host_register on any backend of its kind): what a frame
 * is counted as in the stats. Always false on the CPU backends (they read
 * every host memory alike). */
bool trk_backend_host_pinned(const struct trk_backend *b, const void *p, size_t n);
/* Whether every plane of img lies in such memory (the whole plane, from
 * its first byte to the last row's payload). */
bool trk_backend_image_pinned(const struct trk_backend *b, const struct trk_image *img);

/* Whether b reads device images (struct trk_image's mem = TRK_MEM_CUDA) in
 * place: true for the CUDA backend, false for the CPU ones, which refuse
 * them (TRK_EINVAL). A caller with device frames and a backend that says
 * false must give it host frames instead. */
bool trk_backend_accepts_device(const struct trk_backend *b);

/* "cpu-ref", "cpu", "cuda" (+ ":" variant where not default). */
const char *trk_backend_name(const struct trk_backend *b);

/* Lists the variant names a kind accepts in cfg->variant (the first is the
 * default); returns how many, writing at most max names. Variants let the
 * benchmark run every design side by side (e.g. the seed-faithful MOCT with
 * its arrangement and reduction factor, and the fused kernel). */
int trk_backend_variants(enum trk_backend_kind kind, const char **names, int max);

/* Parses "auto", "cpu", "cpu-ref", "cuda"; -1 if unknown. */
int trk_backend_kind_parse(const char *s);

/* True when the CUDA backend is compiled in and at least one device is usable;
 * writes a one-line reason to why (if non-NULL) when not. */
bool trk_cuda_available(char *why, size_t why_len);

/* Why CUDA is or is not usable, so callers can tell a machine that simply
 * has no NVIDIA hardware (normal: say so quietly) from one whose GPU is
 * broken for this build (worth a warning). */
enum trk_cuda_status {
    TRK_CUDA_USABLE = 0,
    TRK_CUDA_ABSENT,    /* no NVIDIA driver, or a driver but no GPU */
    TRK_CUDA_NOT_BUILT, /* trackd was built without nvcc */
    TRK_CUDA_UNUSABLE,  /* driver and GPU present but unable to run this build */
};

/* The status, and unless usable a one-line reason in why (if non-NULL)
 * with the CUDA runtime's own error text. */
enum trk_cuda_status trk_cuda_check(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
