/* Frame sources: the built-in demo scene, files through FFmpeg, V4L2
 * cameras and recorded bundles (--replay). create/destroy own memory,
 * open/close own OS resources, so a source can be closed and reopened in a
 * loop. */
#ifndef TRK_DAEMON_SOURCE_H
#define TRK_DAEMON_SOURCE_H

#include <stdbool.h>

#include "frame.h"

/* read() returns 0 with a frame, TRK_SOURCE_EOF at the end of a file, or a
 * negative code. */
#define TRK_SOURCE_EOF 1
/* read() of a source that has no frame to give now but may later (a paused
 * replay): the caller checks whether it should stop and asks again. */
#define TRK_SOURCE_AGAIN 2
/* open() of a file that is there but holds no video FFmpeg can decode (a
 * text file, audio only, an unknown container); the source has logged
 * why. Apart from -errno values and the backend's TRK_E* codes. */
#define TRK_SOURCE_ENOTVIDEO (-10100)
/* read() of a file whose video cannot be decoded: a decoder or demuxer
 * error, or the end of a file (or of a --loop pass) where no frame decoded
 * at all. The source has logged why and put it in trk_source.error. */
#define TRK_SOURCE_EDECODE (-10101)
/* open() of a camera path that is there but is no video capture device (a
 * regular file, a directory, a character device that is not V4L2, a V4L2
 * node without video capture such as a UVC metadata node): waiting cannot
 * help. The reason is in trk_source.error. (-10102 is hwdec.h's.) */
#define TRK_SOURCE_ENOTCAMERA (-10103)
/* read() of a file after trk_source_file_seek: the file did not come back
 * at a key frame of its index (its demuxer seeks elsewhere, or the decoder
 * gives frames before the key frame first). Nothing is lost: open it
 * again and read from the start. */
#define TRK_SOURCE_ESEEK (-10104)

struct trk_source;
struct trk_hwdec_cfg;

struct trk_source_ops {
    const char *kind; /* "demo", "file", ... */
    /* Opens resources and fills info->desc, width, height, fps. */
    int (*open)(void *self, struct trk_source *info);
    /* Fills f (layout, pixels, pts, matrix/range); seq and t_capture are set
     * by the caller. Blocks until a frame is decoded (not paced). */
    int (*read)(void *self, struct trk_frame *f);
    void (*close)(void *self);
    void (*destroy)(void *self);
};

struct trk_source {
    const struct trk_source_ops *ops;
    void *self;
    char desc[256];    /* e.g. "file clip.mp4 (h264 1280x720 30.00 fps)"  */
    int width, height; /* known after open                                 */
    double fps;        /* nominal frame rate, for pacing; 0 if unknown     */
    bool live;         /* live sources drop stale frames, files don't      */
    /* Set by read() (the capture thread's): the frame just read is not
     * paced (a replay's step, seek or re-run); the pacing clock starts over
     * at the next paced frame. */
    bool unpaced;
    /* The backend whose host memory (pinned on CUDA) the source decodes or
     * captures into where it can (FFmpeg's pinned pool, V4L2 buffers
     * registered with it); NULL = plain memory. Set by the pipeline before
     * its first read; it must outlive the source's buffers (destroy the
     * source first). */
    struct trk_backend *host_mem;
    /* --record-storage copy: keep each frame's compressed bytes as they
     * came (trk_frame.packet: an MJPEG camera's JPEG). Set before the
     * first read; sources with no such bytes ignore it. */
    bool keep_packets;
    /* Why the last read failed when the code alone says too little (a
     * file's FFmpeg message with TRK_SOURCE_EDECODE); "" otherwise. */
    char error[256];
};

/* The demo scene's size and rate when --size / --fps are not given. */
#define TRK_DEMO_WIDTH  1280
#define TRK_DEMO_HEIGHT 720
#define TRK_DEMO_FPS    30

struct trk_demo_cfg {
    int width, height;
    double fps;
    unsigned seed;
};
/* The demo scene: coloured balls moving over a textured gray background,
 * matching config's built-in demo objects (trk_objects_demo_json). */
int trk_source_demo_create(const struct trk_demo_cfg *cfg, struct trk_source *out);
/* Where demo ball i (0..6) is at time t seconds, and the balls' radius: the
 * scene's ground truth, for tests. */
void trk_demo_ball_position(int i, double t, int width, int height, double *x, double *y);
int trk_demo_ball_radius(int width, int height);

struct trk_file_cfg {
    const char *path;
    /* Start again at the end of the file: seek back, or reopen it when it
     * cannot seek (raw .h264 and other elementary streams). */
    bool loop;
    /* --hwdec (daemon/source/hwdec.h): NVDEC frames as device images when it
     * allows; NULL = software decoding. Copied at create. */
    const struct trk_hwdec_cfg *hwdec;
    /* Index the key frames read, for trk_source_file_seek (a replay's
     * input file); off, a run that never seeks keeps no index. */
    bool seekable;
};
/* Any file FFmpeg can read; frames stay in their native pixel format where
 * backends take it (yuv420p, nv12, yuyv422, rgb24, bgr24, rgba, bgra),
 * others are converted to RGB24 with swscale. */
int trk_source_file_create(const struct trk_file_cfg *cfg, struct trk_source *out);
/* An open file source (created by trk_source_file_create with seekable)
 * made to give frame n (trk_frame.src_index, counted across --loop passes)
 * again without reading from the start: it goes back (or ahead) to the
 * last key frame at or before n that earlier reads passed (the source
 * indexes them as it reads), unless reading on from where it is comes no
 * later; *next is the number the next read gives (or an earlier key
 * frame's, where the demuxer lands before it), and reads go on to n. The frames are the ones
 * reading forward gave: key frames decode by themselves and the first frame after the seek is
 * checked to be the key frame (else that read returns TRK_SOURCE_ESEEK). 0; -ENOENT (no key frame
 * at or before n known yet), -ESPIPE (the file cannot seek: raw elementary streams), -EINVAL (not a
 * file source), -EBADF (not open) or -errno: the caller opens it again and reads from the start. */
int trk_source_file_seek(struct trk_source *src, uint64_t n, uint64_t *next);

static inline int trk_source_open(struct trk_source *s)
{
    return s->ops->open(s->self, s);
}
static inline int trk_source_read(struct trk_source *s, struct trk_frame *f)
{
    return s->ops->read(s->self, f);
}
static inline void trk_source_close(struct trk_source *s)
{
    s->ops->close(s->self);
}
void trk_source_destroy(struct trk_source *s);

#endif
