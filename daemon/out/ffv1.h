/* A bundle's frames stored losslessly: FFV1 in Matroska (docs/RECORDING.md,
 * "storage": "ffv1"), written by the recorder's writer and read back by the
 * replay, bit-exact.
 *
 * FFV1 codes planar formats, so each frame is rearranged without loss
 * (never converted): RGB24 / BGR24 to packed B,G,R,X and RGBA / BGRA to
 * B,G,R,A (this FFmpeg's FFV1 has no 8-bit planar RGB), YUYV to 4:2:2 planes (its width rounded up
 * to even: a YUYV row holds 2 x ceil(w/2) luma samples, all kept), NV12 to 4:2:0 planes, I420 as it
 * is. One file holds one format and size; every frame is a key frame (FFV1 is intra only), so frame
 * k is packet k.
 *
 * Frames travel as the bundle's bytes: the planes of trk_image_plane_layout
 * one after another, rows without padding (what frames.raw holds).
 *
 * Threads: one writer or reader belongs to one thread.
 * Lifecycle: open / close (close is safe on NULL and twice). */
#ifndef TRK_DAEMON_FFV1_H
#define TRK_DAEMON_FFV1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"

struct trk_ffv1_out;
struct trk_ffv1_in;

/* Creates path (Matroska, one FFV1 stream) for width x height frames of
 * fmt; fps only sets the stream's nominal rate (0: 30). 0 or a negative
 * code (-errno, TRK_ENOMEM, TRK_EINVAL), with why. */
int trk_ffv1_out_open(const char *path, enum trk_pixfmt fmt, int width, int height, double fps,
                      struct trk_ffv1_out **out, char *why, size_t why_len);

/* Whether w holds frames of this format and size. */
bool trk_ffv1_out_fits(const struct trk_ffv1_out *w, enum trk_pixfmt fmt, int width, int height);

/* Encodes one frame (the bundle's bytes) and writes its packet; *offset is
 * where the packet starts in the file, *bytes how much the file grew. 0 or
 * a negative code with why (a full disk: -ENOSPC). */
int trk_ffv1_out_put(struct trk_ffv1_out *w, const uint8_t *frame, uint64_t *offset,
                     uint64_t *bytes, char *why, size_t why_len);

/* Writes the trailer (the cues) and closes; *w = NULL. 0 or a negative
 * code (the trailer could not be written: the packets are still there). */
int trk_ffv1_out_close(struct trk_ffv1_out **w);

/* Opens path for reading its frames in order. 0 or TRK_EINVAL with why
 * ("not a Matroska file with one FFV1 stream"). */
int trk_ffv1_in_open(const char *path, struct trk_ffv1_in **out, char *why, size_t why_len);

/* Packets in the file (read without decoding): what the index may name. */
int trk_ffv1_in_count(struct trk_ffv1_in *r, uint64_t *packets, char *why, size_t why_len);

/* Decodes the next frame into frame (the bundle's bytes of fmt at width x
 * height, which the file's stream must be). 0, TRK_EINVAL (another format
 * or size, a damaged packet) or -EIO at the end, with why. */
int trk_ffv1_in_next(struct trk_ffv1_in *r, enum trk_pixfmt fmt, int width, int height,
                     uint8_t *frame, char *why, size_t why_len);

/* Starts again from the first frame. 0 or a negative code. */
int trk_ffv1_in_rewind(struct trk_ffv1_in *r);

void trk_ffv1_in_close(struct trk_ffv1_in **r);

#endif
