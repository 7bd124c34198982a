/* Images as every backend sees them: the pixel formats, struct trk_image
 * and the one definition of plane geometry. Below the pre-filter and the
 * backends (backend.h includes this header), above base/ only.
 *
 * Plain C, no CUDA types. */
#ifndef TRK_GPU_IMAGE_H
#define TRK_GPU_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trk_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum trk_pixfmt {
    TRK_FMT_RGB24 = 0, /* packed R,G,B bytes                                  */
    TRK_FMT_RGBA,      /* packed R,G,B,A bytes (A ignored)                    */
    TRK_FMT_BGR24,     /* packed B,G,R bytes                                  */
    TRK_FMT_BGRA,      /* packed B,G,R,A bytes (A ignored)                    */
    TRK_FMT_YUYV,      /* packed 4:2:2: Y0 U Y1 V per 2 pixels                */
    TRK_FMT_NV12,      /* 4:2:0: Y plane, then interleaved U,V plane          */
    TRK_FMT_I420,      /* 4:2:0 planar: Y plane, U plane, V plane             */
    TRK_FMT_COUNT
};

enum trk_matrix { TRK_MATRIX_BT601 = 0, TRK_MATRIX_BT709 = 1 };

/* Where an image's planes live. TRK_MEM_HOST (0, what every initializer
 * that leaves mem out gets): ordinary host memory, pageable or pinned.
 * TRK_MEM_CUDA: device memory of the CUDA backend's device, in the
 * current (primary) context of the CUDA runtime: e.g. an NVDEC surface
 * that FFmpeg decoded with a CUDA device made on the primary context
 * (daemon/source/ffmpeg.c). Only the CUDA backend takes device images
 * (trk_backend_accepts_device); it reads them in place, never writes to
 * them, and copies nothing from the host (upload_bytes 0). The pixels must
 * be complete before submit: written on the legacy default stream (what
 * FFmpeg's decoders use unless told otherwise) or synchronised by the
 * producer; the backend orders its reads after the legacy stream's work. */
enum trk_mem { TRK_MEM_HOST = 0, TRK_MEM_CUDA };

/* One frame as the backend sees it. plane[] / pitch[] per format:
 *   packed RGB/BGR/YUYV: plane[0], pitch[0]
 *   NV12: plane[0] = Y, plane[1] = UV; I420: plane[0] = Y, [1] = U, [2] = V
 * pitch is in bytes and may exceed the row's payload (V4L2 bytesperline,
 * FFmpeg linesize). 4:2:x chroma planes have ceil(width/2) samples per row
 * and (4:2:0) ceil(height/2) rows. Width and height may be odd.
 * matrix/full_range describe the YCbCr encoding: for YUV formats, how to
 * convert to RGB; for RGB formats, which YCbCr to derive for ycbcr objects.
 * RGB sources normally say BT.601 full range (JPEG's YCbCr). */
struct trk_image {
    const uint8_t *plane[3];
    size_t pitch[3];
    int width, height;
    enum trk_pixfmt fmt;
    enum trk_matrix matrix;
    bool full_range;
    enum trk_mem mem; /* where plane[] points: host (0) or device memory */
};

/* Bytes per pixel of a packed format (0 for planar/semi-planar). */
int trk_pixfmt_bpp(enum trk_pixfmt fmt);
const char *trk_pixfmt_name(enum trk_pixfmt fmt);

/* The planes of a width x height frame of one format, without padding: the
 * one definition of plane geometry that frame buffers, camera and file
 * copies, scenes, checks and the CUDA upload all use. */
struct trk_plane_layout {
    int planes;          /* 1 packed, 2 NV12 (Y, UV), 3 I420 (Y, U, V)     */
    size_t row_bytes[3]; /* payload bytes of one row: the least pitch      */
    int rows[3];         /* rows of each plane                             */
    int vshift[3];       /* frame row r uses row r >> vshift[p] of plane p */
};
/* Fills *L for fmt at width x height (entries past L->planes are 0): 4:2:x
 * chroma planes have ceil(width/2) samples per row and, 4:2:0, ceil(height/2)
 * rows. 0, or TRK_EINVAL for an unknown format or a size <= 0. */
int trk_image_plane_layout(enum trk_pixfmt fmt, int width, int height, struct trk_plane_layout *L);
/* Checks plane pointers, pitches, sizes and mem; 0 or TRK_EINVAL. For a
 * device image only the values are checked (the pointers are not read). */
int trk_image_check(const struct trk_image *img);

/* ------------------------------------------------------- point gathers */

/* One pixel to read, x < width, y < height (TRK_MAX_SIDE fits 16 bits). */
struct trk_gather_point {
    uint16_t x, y;
};
/* A read pixel's native samples (color.h trk_pixel_native: R, G, B for the
 * RGB formats, Y, Cb, Cr for the YUV ones); the object spaces come from
 * them with trk_pixel_triples, as every backend derives them. */
struct trk_gather_value {
    uint8_t s[3];
    uint8_t pad; /* 0 */
};
/* 0 when every point lies inside img, else TRK_EINVAL. */
int trk_image_gather_check(const struct trk_image *img, const struct trk_gather_point *pts, int n);
/* The native samples of the n points of a host image (checked) into out:
 * the definition every backend's gather equals (backend.h,
 * trk_backend_set_gather). */
void trk_image_gather(const struct trk_image *img, const struct trk_gather_point *pts, int n,
                      struct trk_gather_value *out);

#ifdef __cplusplus
}
#endif
#endif
