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

/* The second step: *rgb (from trk_preview_rgb) as a JPEG in the encoder's
 * own buffer, valid until the next call. 0, TRK_ENOMEM, TRK_EBACKEND. */
int trk_preview_compress(struct trk_preview *p, const struct trk_image *rgb, const uint8_t **jpeg,
                         size_t *size);

#endif
