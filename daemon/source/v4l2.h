/* V4L2 cameras: the source (source.h's trk_source_v4l2_create) and its
 * testable parts without a device: format choice, copying a driver buffer
 * with its bytesperline into a frame, and control-name matching. */
#ifndef TRK_DAEMON_V4L2_H
#define TRK_DAEMON_V4L2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame.h"
#include "objects.h" /* struct trk_camera_control, TRK_CAMERA_MAX_CONTROLS */
#include "source.h"

/* What --format asks for. */
enum trk_cam_format {
    TRK_CAM_AUTO = 0,
    TRK_CAM_YUYV,
    TRK_CAM_MJPEG,
    TRK_CAM_NV12,
    TRK_CAM_RGB24,
};

/* "auto", "yuyv", "mjpeg", "nv12", "rgb24"; -1 if unknown. */
int trk_cam_format_parse(const char *s);

/* How frames leave the driver (--camera-io). Auto: raw formats the backends
 * take go to them in the driver's own buffers (V4L2_MEMORY_USERPTR into the
 * backend's host memory, pinned on CUDA: no copy), falling back to mmap +
 * copy where the driver refuses; MJPEG is decoded from mmap buffers. Mmap:
 * always mmap + copy (comparisons, drivers whose USERPTR is broken). */
enum trk_cam_io {
    TRK_CAM_IO_AUTO = 0,
    TRK_CAM_IO_MMAP,
};

/* "auto", "mmap"; -1 if unknown. */
int trk_cam_io_parse(const char *s);

/* The size asked of a camera when --size is not given (the demo scene has
 * its own: source.h). */
#define TRK_V4L2_WIDTH  640
#define TRK_V4L2_HEIGHT 480

struct trk_hwdec_cfg;
struct trk_camctl;
struct trk_v4l2_cfg {
    const char *device; /* /dev/videoN or a /dev/v4l/by-id/... link */
    enum trk_cam_format format;
    int width, height; /* wanted size; the driver may pick the nearest */
    double fps;        /* wanted rate; 0 = the driver's */
    /* Set in order: the objects file's "camera" settings, then --control. */
    struct trk_camera_control controls[2 * TRK_CAMERA_MAX_CONTROLS];
    int n_controls;
    /* When set, the controls come from it at every open instead (the
     * section as clients and reloads left it, then --control); not owned,
     * it must outlive the source. */
    struct trk_camctl *camctl;
    double timeout; /* seconds without a frame before read fails with -ETIMEDOUT */
    /* --hwdec (daemon/source/hwdec.h) for MJPEG: NVDEC frames as device images
     * when it allows; NULL = software decoding. Copied at create. */
    const struct trk_hwdec_cfg *hwdec;
    enum trk_cam_io io;
};

/* A camera. open() negotiates the format, sets the controls and starts
 * streaming (see trk_cam_io); read() returns the newest frame (older queued
 * ones are dropped and counted), with pts and t_capture from the driver's
 * CLOCK_MONOTONIC buffer timestamp. With USERPTR the frame's planes point
 * into the driver buffer itself, held (trk_frame_hold) until the pool's last
 * holder lets go of the frame, then queued to the driver again; buffers
 * lent out when the camera closes are freed when given back. read() fails
 * with -ENODEV / -EIO when the camera goes away and -ETIMEDOUT when it stops
 * delivering; the caller closes and reopens it (same settings). live =
 * true. */
int trk_source_v4l2_create(const struct trk_v4l2_cfg *cfg, struct trk_source *out);

/* Frames dropped inside the source (newer ones already queued). */
uint64_t trk_source_v4l2_drops(const struct trk_source *s);

/* Frames passed on in the driver's buffers (USERPTR, no copy) and frames
 * copied or decoded out of them, since create. */
struct trk_v4l2_io_stats {
    uint64_t lent;
    uint64_t copied;
};
void trk_source_v4l2_io_stats(const struct trk_source *s, struct trk_v4l2_io_stats *st);

/* The V4L2 pixel format to ask for. offered: the fourccs the device lists.
 * A specific want picks its fourcc if offered. Auto prefers formats the
 * backends take without conversion (YUYV, NV12, YU12, RGB3, BGR3), except
 * that MJPEG is chosen when the raw bandwidth width*height*bpp*fps exceeds
 * max_raw_bytes_per_s (USB 2 cameras cannot send raw HD at 30 fps).
 * Returns 0 and *out, or -EINVAL when nothing usable is offered. */
int trk_v4l2_choose_format(const uint32_t *offered, int n, enum trk_cam_format want, int width,
                           int height, double fps, double max_raw_bytes_per_s, uint32_t *out);

/* The backend pixel format for a raw V4L2 fourcc, or -1 (MJPEG is decoded). */
int trk_v4l2_pixfmt(uint32_t fourcc);

/* Copies one raw driver buffer of fourcc/width/height with the driver's
 * bytesperline (row pitch of the first plane; chroma pitches follow from
 * it) into f, laid out with trk_frame_layout. 0, or TRK_EINVAL when the
 * buffer is shorter than the layout needs (a wrong-size frame) or the
 * pitch is smaller than a row, TRK_ENOMEM. */
int trk_v4l2_copy(struct trk_frame *f, uint32_t fourcc, int width, int height,
                  uint32_t bytesperline, const uint8_t *buf, size_t bytesused);

/* Points f's image at one raw driver buffer as it is (same arguments and
 * checks as trk_v4l2_copy: the pixels trk_v4l2_copy would copy, in place).
 * f's previous hold is let go of first; the caller holds buf for as long
 * as f points into it. 0 or TRK_EINVAL. */
int trk_v4l2_wrap(struct trk_frame *f, uint32_t fourcc, int width, int height,
                  uint32_t bytesperline, const uint8_t *buf, size_t bytesused);

/* MJPEG frames: FFmpeg's mjpeg decoder, output as I420 (full range,
 * BT.601) in f. decode returns 0, TRK_EINVAL for a corrupt or unsupported
 * JPEG (the caller skips the frame), or TRK_ENOMEM. */
struct trk_mjpeg;
int trk_mjpeg_create(struct trk_mjpeg **out);
/* The same with --hwdec's state (NULL = software): 4:2:0 JPEGs that NVDEC
 * decodes come out as device frames (NV12, mem TRK_MEM_CUDA); the rest is
 * decoded on the host as above. hw is not owned. TRK_SOURCE_EHWDEC when
 * --hwdec cuda cannot be had. */
struct trk_hwdec_ctx;
int trk_mjpeg_create_hw(struct trk_mjpeg **out, struct trk_hwdec_ctx *hw);
int trk_mjpeg_decode(struct trk_mjpeg *d, const uint8_t *jpeg, size_t len, struct trk_frame *f);
void trk_mjpeg_destroy(struct trk_mjpeg **d);

/* Writes name in v4l2-ctl's style ("White Balance, Automatic" ->
 * "white_balance_automatic") into out. */
void trk_v4l2_ctrl_name(const char *name, char *out, size_t size);

/* ioctl(fd, req, arg) again after EINTR: 0 or -errno. */
int trk_v4l2_ioctl(int fd, unsigned long req, void *arg);

/* Sets controls c[0..n) in order on the camera open as fd (device: its
 * name in the log); a control the camera lacks or refuses is logged and
 * skipped. Returns how many failed. */
int trk_v4l2_set_controls(int fd, const char *device, const struct trk_camera_control *c, int n);

/* Parses "name=value" into c; false if malformed. */
bool trk_cam_control_parse(const char *s, struct trk_camera_control *c);

/* --list-devices / --list-formats / --list-controls: print to out.
 * list_devices returns how many cameras it printed (device nodes that
 * cannot be opened are logged); the others 0 or a negative code (the
 * device cannot be opened). */
int trk_v4l2_list_devices(FILE *out);
int trk_v4l2_list_formats(const char *device, FILE *out);
int trk_v4l2_list_controls(const char *device, FILE *out);

#endif
