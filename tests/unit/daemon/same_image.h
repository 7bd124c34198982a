/* Whether two images are the same picture: one format and size, the same
 * pixels row by row, each image with its own pitch (padding not compared).
 * Header-only, for the test files of this folder (the camera's decode
 * against its wrap, a replay's frame against the recorded one). */
#ifndef TRK_TEST_SAME_IMAGE_H
#define TRK_TEST_SAME_IMAGE_H

#include <stdbool.h>
#include <string.h>

#include "image.h"

static inline bool same_image(const struct trk_image *a, const struct trk_image *b)
{
    struct trk_plane_layout L;
    if (a->fmt != b->fmt || a->width != b->width || a->height != b->height ||
        trk_image_plane_layout(a->fmt, a->width, a->height, &L))
        return false;
    for (int p = 0; p < L.planes; p++)
        for (int y = 0; y < L.rows[p]; y++)
            if (memcmp(a->plane[p] + (size_t)y * a->pitch[p], b->plane[p] + (size_t)y * b->pitch[p],
                       L.row_bytes[p]))
                return false;
    return true;
}

#endif
