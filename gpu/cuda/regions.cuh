/* The CUDA regional form (trk_backend_submit_regions): the RRM kernels and
 * the labelling of blob objects inside regions (regions.cu). Private to
 * gpu/cuda/; cuda_regional.cu (the backend side, top to bottom) owns the frame and the
 * streams and calls these.
 * The designs, their layouts and the memory bounds are in gpu/cuda/NOTES.md,
 * "Regions". */
#ifndef TRK_GPU_CUDA_REGIONS_CUH
#define TRK_GPU_CUDA_REGIONS_CUH

#include "cuda_internal.cuh"

/* Designs of the aggregate pass (trk_cu_rrm_config). */
enum {
    TRK_RRM_DEFAULT = 0, /* the faster of the two (TRK_RRM_FLAT)                  */
    TRK_RRM_SEED = 1,    /* quadrants and patches, id = Q alpha + y' beta + x'    */
    TRK_RRM_FLAT = 2,    /* flat list of (region, 8-row tile), warp per row       */
};
/* Largest alpha (patches per quadrant) the seed layout takes. */
#define TRK_RRM_MAX_ALPHA 64
/* One block of rows of a ROI-only upload: rows rows of bytes bytes each,
 * back to back at src in the packed buffer, to dst in the device frame,
 * dpitch apart; row0 = the rows of the blocks before it. */
struct trk_cu_copy {
    unsigned long long dst, src;
    unsigned bytes, rows, dpitch, row0;
};
/* Most blocks of one upload: a rectangle per region, per plane. */
#define TRK_RRM_MAX_COPIES (3 * TRK_MAX_REGIONS)

struct trk_cu_rrm;

/* State for frames up to max_w x max_h (frame_bytes in the device layout)
 * on a device with sms SMs; 0 or TRK_ENOMEM (what blobs need is allocated
 * on first use). */
int trk_cu_rrm_create(int max_w, int max_h, size_t frame_bytes, int sms, struct trk_cu_rrm **out);
/* A call, in order: trk_cu_rrm_prepare (host only: the regions' tables
 * into one pinned block), then for a ROI-only upload the caller fills the
 * copy table (trk_cu_rrm_copies, pinned, TRK_RRM_MAX_COPIES entries),
 * queues it with the tables in one copy (trk_cu_rrm_upload_table), copies
 * the packed bytes (pinned h_packed, at most frame_bytes, in pieces as it
 * packs them: trk_cu_rrm_upload_bytes) and puts the n blocks' rows in place
 * in frame (trk_cu_rrm_upload_scatter), all on one stream; then
 * trk_cu_rrm_queue on that stream. */
int trk_cu_rrm_prepare(struct trk_cu_rrm *r, int width, int height, const struct trk_region *regs,
                       int n);
struct trk_cu_copy *trk_cu_rrm_copies(struct trk_cu_rrm *r);
int trk_cu_rrm_upload_table(struct trk_cu_rrm *r, int n, cudaStream_t s);
int trk_cu_rrm_upload_bytes(struct trk_cu_rrm *r, const uint8_t *h_packed, size_t off, size_t bytes,
                            cudaStream_t s);
int trk_cu_rrm_upload_scatter(struct trk_cu_rrm *r, uint8_t *frame, int n, cudaStream_t s);
void trk_cu_rrm_destroy(struct trk_cu_rrm *r);
/* The blob settings of the objects (K, connectivity, min_area). */
void trk_cu_rrm_set_objects(struct trk_cu_rrm *r, const struct trk_object_def *objs, int n);
/* The design and, for the seed layout, alpha (multiple of beta, 1 ..
 * TRK_RRM_MAX_ALPHA) and beta (>= 1); 0 = derived from the ROI sizes and the
 * SM count per call. TRK_EINVAL for values out of range. */
int trk_cu_rrm_config(struct trk_cu_rrm *r, int design, int alpha, int beta);
/* What the last queued call used: design (1 or 2), alpha, beta. */
void trk_cu_rrm_used(const struct trk_cu_rrm *r, int *design, int *alpha, int *beta);
/* Queues the prepared regions' kernels on s over the device frame f (whose
 * objects are d_objs, in object order; the tables first unless the upload
 * took them), then one copy of the results to the host; timed by the
 * state's own events. No host sync. */
int trk_cu_rrm_queue(struct trk_cu_rrm *r, const struct trk_cu_frame *f,
                     const struct trk_cu_obj *d_objs, cudaStream_t s);
/* After the stream has passed the queued work: the n results, and the
 * kernels' device time. */
void trk_cu_rrm_collect(struct trk_cu_rrm *r, struct trk_obj_result *out, double *kernel_ms);
/* Region j's blob list of the last collected call. */
int trk_cu_rrm_blobs(struct trk_cu_rrm *r, int j, const struct trk_blob **out);

#endif
