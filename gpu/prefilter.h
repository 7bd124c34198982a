/* The denoising pre-filter: an optional separable Gaussian applied to the
 * frame before thresholding (trk_backend_set_prefilter), defined here in
 * integer arithmetic so every backend gives the same bytes.
 *
 * Definition (trk_prefilter_ref is its plain transcription):
 *   - Weights: for a standard deviation s > 0, the 1-D kernel has radius
 *     r = min(ceil(3 s), TRK_PREFILTER_MAX_RADIUS) and weights
 *     w[i] = floor(e(i)), e(i) = 256 g(i) / sum g, g(i) = exp(-i^2 / (2 s^2)),
 *     i = -r..r, then what flooring left is handed back one at a time (an
 *     odd one to the centre, then +1 to both w[i] and w[-i] by largest
 *     remainder e(i) - w[i], nearer the centre on ties): the weights sum to
 *     exactly 256, are symmetric and never rise away from the centre; zero
 *     outer taps are dropped (they change nothing). They are
 *     computed once on the host (trk_prefilter_init) and handed to every
 *     backend as integers: no floating point runs per pixel anywhere.
 *   - Passes: horizontal h(x, y) = sum_i w[i] S(x + i, y) into 16 bits
 *     (at most 255 * 256 = 65280), vertical v = sum_i w[i] h(x, y + i) in 32
 *     bits, output (v + 32768) >> 16, a byte. No rounding happens between the
 *     passes, so the result is the exact 2-D sum rounded once, whatever the
 *     order of the passes (an implementation may go vertical first).
 *   - Borders replicate the edge sample: S(x, y) reads the sample at x and y
 *     clamped to its grid.
 *   - Channels: each sample grid of the format on its own
 *     (trk_prefilter_chans): every byte channel of packed RGB/BGR(A) (alpha
 *     too: nothing reads it); Y at full resolution; Cb and Cr in their own
 *     grids (YUYV: ceil(w/2) x h; NV12 and I420: ceil(w/2) x ceil(h/2)).
 *     Along a direction where chroma is subsampled by 2 the kernel is the
 *     one for s/2: one chroma sample spans two pixels, so s/2 samples are s
 *     pixels and colour is blurred as far across the picture as luma is
 *     (with s in samples chroma would spread twice as far as luma and colour
 *     would bleed past the edges the luma keeps).
 * The output is an image of the input's format and size, which every
 * backend's threshold code then reads unchanged. Samples outside the grids
 * (row padding, the missing luma of an odd-width YUYV row) are not written.
 *
 * Plain C, no CUDA types: the CUDA backend includes it for the structs. */
#ifndef TRK_GPU_PREFILTER_H
#define TRK_GPU_PREFILTER_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest standard deviation accepted, in pixels. */
#define TRK_PREFILTER_MAX_SIGMA 4.0
/* Largest kernel radius: ceil(3 * TRK_PREFILTER_MAX_SIGMA). */
#define TRK_PREFILTER_MAX_RADIUS 12
#define TRK_PREFILTER_TAPS       (2 * TRK_PREFILTER_MAX_RADIUS + 1)
/* What each 1-D kernel's weights sum to (2^8: the two passes scale by 2^16). */
#define TRK_PREFILTER_ONE 256

/* One 1-D kernel: w[radius + i] weighs offset i, i = -radius..radius;
 * symmetric, summing to TRK_PREFILTER_ONE; entries past 2 * radius are 0. */
struct trk_prefilter_kernel {
    int radius; /* 0..TRK_PREFILTER_MAX_RADIUS; 0 = identity */
    uint16_t w[TRK_PREFILTER_TAPS];
};

enum { TRK_PREFILTER_FULL = 0, TRK_PREFILTER_HALF = 1 };

/* A pre-filter setting: sigma and its two kernels, [TRK_PREFILTER_FULL] for
 * sigma and [TRK_PREFILTER_HALF] for sigma / 2 (subsampled chroma). */
struct trk_prefilter {
    double sigma; /* 0 = off */
    struct trk_prefilter_kernel k[2];
};

/* Fills *pf for sigma (0 = off: kernels of radius 0). TRK_EINVAL when
 * sigma is not a number in 0..TRK_PREFILTER_MAX_SIGMA (*pf is then off). */
int trk_prefilter_init(struct trk_prefilter *pf, double sigma);

/* One sample grid of a frame: samples (x, y), x < width, y < height, are
 * the bytes plane[plane][y * pitch + offset + x * step]; kx and ky say which
 * kernel (TRK_PREFILTER_FULL or _HALF) runs along x and along y. */
struct trk_prefilter_chan {
    int plane, offset, step;
    int width, height;
    int kx, ky;
};
#define TRK_PREFILTER_MAX_CHANS 4

/* The grids of a width x height frame of fmt into ch (at most
 * TRK_PREFILTER_MAX_CHANS); returns how many, or TRK_EINVAL. */
int trk_prefilter_chans(enum trk_pixfmt fmt, int width, int height,
                        struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS]);

/* Row pitch (bytes) of the pre-filter's output planes: row bytes rounded up
 * to this, so rows start aligned for vector loads. */
#define TRK_PREFILTER_PITCH_ALIGN 64

/* Bytes a buffer for trk_prefilter_frame_at needs for any format up to
 * max_width x max_height (with TRK_PREFILTER_PITCH_ALIGN bytes of slack
 * after the last row, for vector loads past a row's end). */
size_t trk_prefilter_frame_bytes(int max_width, int max_height);
/* *out = an image over buf with src's format, size, matrix and range, and
 * pitches of the row bytes rounded up to TRK_PREFILTER_PITCH_ALIGN; buf has
 * trk_prefilter_frame_bytes(src->width, src->height) bytes at least.
 * dst[p] (when dst is not NULL): out->plane[p], writable (NULL past the
 * format's planes). */
void trk_prefilter_frame_at(uint8_t *buf, const struct trk_image *src, struct trk_image *out,
                            uint8_t *dst[3]);

/* The definition, plainly: filters every grid of src (a checked image) into
 * dst (same format and size; dst[p] with pitch dst_pitch[p]). tmp holds
 * the largest grid, width * height uint16. pf must be on. */
void trk_prefilter_ref(const struct trk_prefilter *pf, const struct trk_image *src,
                       uint8_t *const dst[3], const size_t dst_pitch[3], uint16_t *tmp);
/* The same for one grid c of src alone (gpu/canny.h blurs a luma grid with
 * it); tmp holds c->width * c->height uint16. */
void trk_prefilter_ref_grid(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                            const struct trk_image *src, uint8_t *const dst[3],
                            const size_t dst_pitch[3], uint16_t *tmp);

/* ------------------------------------------------ the fast row passes */
/* The same bytes as trk_prefilter_ref, as two passes over rows that callers
 * split between threads: all horizontal rows of a grid must be done before
 * any of its vertical rows. Inner loops run over contiguous samples and
 * vectorise. */

/* Elements of a frame's 16-bit intermediate (every grid) for frames up to
 * max_width x max_height. Grid i of an image lives at tmp +
 * i * trk_prefilter_tmp_slab(width, height), rows tmp_pitch(width) apart. */
size_t trk_prefilter_tmp_elems(int max_width, int max_height);
size_t trk_prefilter_tmp_pitch(int width);
size_t trk_prefilter_tmp_slab(int width, int height);
/* Bytes of the per-thread scratch of trk_prefilter_hrows. */
size_t trk_prefilter_pad_bytes(int max_width);

/* Horizontal pass of rows [y0, y1) of grid c of src into its slab of tmp
 * (tmp_pitch elements per row); pad: trk_prefilter_pad_bytes scratch. */
void trk_prefilter_hrows(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                         const struct trk_image *src, int y0, int y1, uint16_t *slab,
                         size_t tmp_pitch, uint8_t *pad);
/* Vertical pass of rows [y0, y1) of grid c from its slab into dst. */
void trk_prefilter_vrows(const struct trk_prefilter *pf, const struct trk_prefilter_chan *c,
                         const uint16_t *slab, size_t tmp_pitch, int y0, int y1,
                         uint8_t *const dst[3], const size_t dst_pitch[3]);

/* A whole frame on the calling thread with the fast passes, into buffers
 * grown as needed (for code that filters now and then, e.g. the daemon's
 * mask view). Free with trk_prefilter_buf_free. */
struct trk_prefilter_buf {
    uint8_t *frame;
    size_t frame_cap;
    uint16_t *tmp;
    size_t tmp_cap;
    uint8_t *pad;
    size_t pad_cap;
};
/* *out = src filtered (an image over buf->frame). 0, TRK_EINVAL (src not
 * valid, pf off) or TRK_ENOMEM. */
int trk_prefilter_apply(const struct trk_prefilter *pf, const struct trk_image *src,
                        struct trk_prefilter_buf *buf, struct trk_image *out);
void trk_prefilter_buf_free(struct trk_prefilter_buf *buf);

#ifdef __cplusplus
}
#endif
#endif
