/* Preview JPEGs for the web page: any trk_image downscaled (nearest sample,
 * converted to RGB with the same pixel rules as the backends) and encoded
 * with libjpeg-turbo. Runs on the preview thread, never on the pipeline's. */
#ifndef TRK_DAEMON_PREVIEW_H
#define TRK_DAEMON_PREVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct trk_preview;

int trk_preview_create(int max_width, int quality, struct trk_preview **out);
void trk_preview_destroy(struct trk_preview **p);

/* Encodes img; *jpeg points into the encoder's own buffer, valid until the
 * next call. out_w/out_h: the preview's size. Same as trk_preview_rgb
 * without a mask, then trk_preview_compress. */
int trk_preview_encode(struct trk_preview *p, const struct trk_image *img, const uint8_t **jpeg,
                       size_t *size, int *out_w, int *out_h);

/* The first step of encode: img downscaled to at most the encoder's width
 * into its own RGB24 buffer, described by *rgb (writable: the snapshot
 * draws its overlay there; valid until the next call). With mask non-NULL
 * the mask view: pixels that match *mask (the backends' rule, gpu/color.h)
 * white, the rest a dimmed copy of the picture; the match is tested on
 * mask_img when non-NULL (the pre-filtered frame, same size), else on img.
 * 0, TRK_EINVAL, TRK_ENOMEM. */
int trk_preview_rgb(struct trk_preview *p, const struct trk_image *img,
                    const struct trk_object_def *mask, const struct trk_image *mask_img,
                    struct trk_image *rgb);

/* The edges view (focus peaking), drawn into *rgb (from trk_preview_rgb):
 * the Canny edges (gpu/canny.h, the focus check's setting: sigma 1.4,
 * thresholds 20/50, the CPU twin on the calling thread) of src, or of the
 * picture itself when src is NULL, white; every other pixel at half its
 * brightness. src must have rgb's size (the frame, for a full-size
 * picture). 0, TRK_EINVAL, TRK_ENOMEM. */
int trk_preview_edges(struct trk_preview *p, const struct trk_image *rgb,
                      const struct trk_image *src);

/* One tracked object in a picture's pixels (inclusive box, centroid). */
struct trk_preview_obj {
    int id; /* its index in the frame's objects; -1: none of it is shown */
    int box[4];
    double cx, cy;
};

/* The objects of a frame result (n, frame_w x frame_h pixels) that were
 * found, in the pixels of a w x h picture of it (nearest sample, as
 * trk_preview_rgb): at most TRK_MAX_OBJECTS into out; returns how many. */
struct trk_result_object;
int trk_preview_objects(const struct trk_result_object *obj, int n, int frame_w, int frame_h, int w,
                        int h, struct trk_preview_obj *out);

/* Seam carving (gpu/seam.h, the fast CPU twin, on the calling thread):
 * *rgb (from trk_preview_rgb) becomes
 * the carved tw x th picture in the encoder's own buffer (tw <= width,
 * th <= height). Energy: the definition's gradient, plus its protection
 * term on every pixel of each object's box: boxes, not masks, so a box
 * and its centroid move rigidly (seam.h: a solid rectangle cannot be cut
 * between its pixels) whenever the boxes fit in the carved size. objs (n)
 * are mapped in place: the box of their kept pixels and the centroid moved
 * with the box (when some box pixels had to go, cut_protected > 0, the
 * centroid is mapped itself, or is the kept pixels' when it was removed);
 * id -1 when nothing of it is kept. *info may be NULL. 0, TRK_EINVAL,
 * TRK_ENOMEM. */
struct trk_seam_info;
int trk_preview_carve(struct trk_preview *p, struct trk_image *rgb, int tw, int th,
                      struct trk_preview_obj *objs, int n, struct trk_seam_info *info);

/* *rgb (a picture trk_preview_carve made) scaled to w x h (nearest sample)
 * into the encoder's own buffer, objs (n) with it. 0 or TRK_ENOMEM. */
int trk_preview_scale(struct trk_preview *p, struct trk_image *rgb, int w, int h,
                      struct trk_preview_obj *objs, int n);

/* A carve's work bound, in pixel-seams (pixels times seams removed: a seam
 * costs about 0.2 us a pixel on one core, docs/BENCHMARKS.md): a picture
 * over it is carved scaled down (the work falls with the cube of the
 * scale). 1e8 is about 0.1-0.2 s on the 2-core machine. */
#define TRK_PREVIEW_CARVE_WORK 1e8

/* The width to carve a w x h picture to tw x th at (its own, or less to
 * keep the work within TRK_PREVIEW_CARVE_WORK; at least 16). */
int trk_preview_carve_width(int w, int h, int tw, int th);

/* The largest picture of aspect fit_w:fit_h within w x h (one of its sides
 * kept), at least 1 x 1. */
void trk_preview_fit(int w, int h, int fit_w, int fit_h, int *tw, int *th);

/* One view's binary preview message (protocol/PROTOCOL.md section 4) of
 * frame seq: host converted (trk_preview_rgb, mask tested on test), the
 * edges drawn in when v->edges, carved to v's aspect when v->carve (obj:
 * the frame's n result objects, their boxes protected and sent mapped),
 * compressed; into *msg (grown, *cap bytes) with *len its length. A carved
 * view's message is magic "TRKC", the 20-byte header, a uint32 LE length
 * and that many bytes of JSON, then the JPEG; the others "TRKP" and the
 * JPEG. 0, TRK_EINVAL, TRK_ENOMEM, TRK_EBACKEND. */
struct trk_control_view;
int trk_preview_message(struct trk_preview *p, const struct trk_image *host,
                        const struct trk_image *test, const struct trk_control_view *v,
                        uint64_t seq, const struct trk_result_object *obj, int n, uint8_t **msg,
                        size_t *cap, size_t *len);

/* The second step: *rgb (from trk_preview_rgb) as a JPEG in the encoder's
 * own buffer, valid until the next call. 0, TRK_ENOMEM, TRK_EBACKEND. */
int trk_preview_compress(struct trk_preview *p, const struct trk_image *rgb, const uint8_t **jpeg,
                         size_t *size);

#endif
