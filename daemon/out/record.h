/* --record DIR: a bundle (docs/RECORDING.md, "trackd-bundle 1") of the
 * frames as the source delivered them, each frame's seq / t_capture / pts,
 * every object set with the first frame it applied to, and the results.
 *
 * The recorder owns the whole bundle: the capture thread hands it each frame
 * (trk_record_frame, a copy into one of a few preallocated slots), and it is
 * also an output behind the outputs door (frame messages -> results.ndjson,
 * object sets -> objects/NNNN.json), so both halves share one writer thread,
 * one byte limit and one failure state. Owning both is what lets a set
 * change be tied to the frame it took effect from: the door calls objects()
 * and then frame() for the first frame under that set, on one thread.
 *
 * Nothing here ever waits on the disk from the capture or processing
 * thread: a full queue drops the recorded frame (counted, logged), a write
 * error or the byte limit stops recording (logged once); tracking and the
 * other outputs go on, and what is already in the bundle stays readable
 * (index lines are written only after their frame's bytes).
 *
 * Threads: trk_record_frame from the capture thread; the output's hooks
 * from the processing thread; one writer thread of its own.
 * Lifecycle: trk_record_add (creates DIR's files and the writer, registers
 * the output); the door's destroy closes it (drains the queue, finishes the
 * manifest). The capture thread must be done before that (the pipeline
 * ends before the door is destroyed). */
#ifndef TRK_DAEMON_RECORD_H
#define TRK_DAEMON_RECORD_H

#include <stdint.h>

#include "frame.h"

/* The bundle format's name and version, in manifest.json. */
#define TRK_BUNDLE_FORMAT  "trackd-bundle"
#define TRK_BUNDLE_VERSION 1
/* The version of bundles whose frames are FFV1 (--record-storage ffv1):
 * readers of version 1 would look for frames.raw. */
#define TRK_BUNDLE_VERSION_FFV1 2
/* The version of bundles with --record-storage copy: index lines may name
 * JPEGs in frames.mjpeg or frames of the input file by number, which
 * older readers would misread as frames.raw offsets. */
#define TRK_BUNDLE_VERSION_COPY 3
/* copy storage of a file input: the manifest's input_blocks has one CRC-32
 * per block of at least this many bytes (larger for files over 4096 of
 * them), so a damaged input is named with the offset where it differs. */
#define TRK_RECORD_BLOCK      (1u << 16)
#define TRK_RECORD_MAX_BLOCKS 4096

/* Frames the writer may be behind by before recorded frames are dropped. */
#define TRK_RECORD_SLOTS 8

struct trk_objects;
struct trk_outputs;
struct trk_record;

/* One frame's pixels as a bundle stores them (tightly packed planes, no
 * pitch) with what its index line says. buf / cap are the owner's. */
struct trk_record_frame {
    uint8_t *buf;
    size_t cap, len;
    uint64_t seq;
    double t_capture, pts;
    enum trk_pixfmt fmt;
    int width, height;
    enum trk_matrix matrix;
    bool full_range;
    /* --record-storage copy: buf holds the compressed bytes the frame was
     * decoded from (trk_frame.packet), not its pixels; or (ref) nothing:
     * the frame is number src_index of the input file. */
    bool packet, ref;
    uint64_t src_index;
};

/* A result line or an object set version (the set's JSON, applying from
 * seq on), in the order they came. */
struct trk_record_text {
    struct trk_record_text *next;
    bool objects; /* an object set applying from seq on, else a result line */
    bool state;   /* --record-rotate: the state before frame seq (state.h) */
    uint64_t seq;
    size_t len;
    char data[];
};

struct trk_record_cfg {
    const char *dir;    /* created if missing; must be empty or absent      */
    uint64_t max_bytes; /* stop recording past this many bytes; 0 = none    */
    double max_seconds; /* likewise past this span of t_capture; 0 = none   */
    /* > 0: at a limit the part is closed and recording goes on in the next,
     * dir/part-0001, dir/part-0002, ..., the newest `rotate` kept; each
     * part after the first starts with the set in force and the state
     * before its first frame (trk_record_state), so it replays by itself. */
    unsigned rotate;
    /* Frames as FFV1 in Matroska (frames-NNNN.mkv, a new file when the
     * format or size changes; daemon/out/ffv1.h) instead of frames.raw. */
    bool ffv1;
    /* --record-storage copy: frames that carry their compressed bytes
     * (trk_frame.packet: an MJPEG camera's JPEGs) are stored as those bytes
     * in frames.mjpeg, others as in frames.raw; with input_ref, a file's
     * frames are not stored at all but named by their number in the input
     * (its size, SHA-256 and block CRCs go into the manifest before the
     * first frame's index line). Bundle version 3. */
    bool copy, input_ref;
    bool input_loop; /* input_ref: --loop (the replay reads it so too)    */
    /* A full queue makes trk_record_frame wait for a slot instead of
     * dropping: for files, the demo and replays, which have no real-time
     * deadline (the pool is lossless for them too): waiting delays their
     * next frame, dropping would leave a bundle that cannot replay
     * identically. Live cameras drop. */
    bool wait_when_full;
    int argc; /* the command line, for the manifest               */
    char *const *argv;
    const char *version; /* trackd's                                          */
    /* The source, for the manifest: kind ("demo", "file", "camera",
     * "replay"), description, nominal size and rate; input the file or
     * device path, NULL for the demo. */
    const char *source_kind, *source_desc, *input;
    /* input is a file: its size and SHA-256 go into the manifest (hashed
     * on the writer thread, so the start does not wait for a large file). */
    bool hash_input;
    int width, height;
    double fps;
    /* The run's --mode as resolved ("roi" / "full"), for the manifest: a
     * replay tracks the same way unless told otherwise. NULL: none. */
    const char *track_mode;
    /* A rewind save (trk_record_write): why it was saved, for the
     * manifest's "rewind" key, and the buffer's length in seconds; NULL
     * for a recording. */
    const char *trigger;
    double rewind_seconds;
    /* The manifest's started_wall_ms; 0 = now. */
    double started_wall_ms;
    /* A rewind save: the processing thread's state before its first frame
     * (daemon/state.h), written as state.bin; NULL (a recording, which
     * starts with the run) writes none. */
    const void *state;
    size_t state_len;
};

/* Creates cfg->dir and the bundle's files, starts the writer and registers
 * the recorder with the door; *out is for trk_record_frame (owned by the
 * door from here). 0, also when DIR cannot be made or written (read-only,
 * full: said why, *out NULL, tracking goes on unrecorded), or the exit
 * code after saying why (66: DIR already holds a bundle). */
int trk_record_add(const struct trk_record_cfg *cfg, struct trk_outputs *o,
                   struct trk_record **out);

/* Capture thread: f (seq, t_capture, pts set; host pixels) is copied for
 * the writer, or, when every slot is busy, dropped and counted (or waited
 * for: wait_when_full). NULL r or a stopped recording: nothing. */
void trk_record_frame(struct trk_record *r, struct trk_frame *f);

/* Whether r wants the processing thread's state before each frame
 * (rotation on): false for NULL. */
bool trk_record_wants_state(const struct trk_record *r);

/* Processing thread: the state (daemon/state.h) just before frame seq, for
 * the writer, which keeps it only when a new part starts at seq. */
void trk_record_state(struct trk_record *r, uint64_t seq, const void *data, size_t len);

/* Processing thread, an output's objects hook: the set's JSON becomes
 * *pending (for the next frame message, the first under it) and *last,
 * unless it is *last again (a grown backend re-applies the same set: no
 * new version). Out of memory: logged, nothing changes. */
void trk_record_set_changed(char **last, char **pending, const struct trk_objects *set);

/* f's host pixels into s, tightly packed (s->buf grown as needed), with
 * f's seq and times. 0, TRK_EINVAL (no host image) or TRK_ENOMEM. */
int trk_record_pack(struct trk_record_frame *s, struct trk_frame *f);

/* Writes a whole bundle at once into cfg->dir (new or empty): the n
 * frames, then the texts in order (object sets and result lines), then the
 * closed manifest. The rewind buffer's save; blocks on the disk, so it
 * runs on a thread of its own. 0, or -errno / TRK_E* with why set
 * ("DIR already holds a bundle", "writing frames.raw failed: No space
 * left on device"); a bundle cut by a failure is readable up to it. */
int trk_record_write(const struct trk_record_cfg *cfg, struct trk_record_frame *const *frames,
                     size_t n, const struct trk_record_text *texts, char *why, size_t why_len);

/* The input file of a bundle that stores frames by reference, as the
 * manifest keeps it: size, SHA-256 (hex) and the CRC-32 (zlib's) of each
 * block of `block` bytes (0: chosen from the size, TRK_RECORD_BLOCK at
 * least). */
struct trk_record_input {
    uint64_t size, block;
    char sha256[65];
    uint32_t *crc; /* size / block rounded up; malloc'd */
    size_t n_crc;
};
/* Reads path whole into *in (block as above). 0, -errno (-EINVAL: not a
 * regular file) or TRK_ENOMEM. */
int trk_record_hash_input(const char *path, uint64_t block, struct trk_record_input *in);

#endif
