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
 * next call. out_w/out_h: the preview's size. */
int trk_preview_encode(struct trk_preview *p, const struct trk_image *img, const uint8_t **jpeg,
                       size_t *size, int *out_w, int *out_h);

#endif
