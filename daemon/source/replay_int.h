/* The replay's insides, shared by replay.c (the bundle, read() and
 * --verify) and replay_transport.c (pause, step, seek and re-runs). */
#ifndef TRK_DAEMON_REPLAY_INT_H
#define TRK_DAEMON_REPLAY_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "image.h"
#include "replay.h"

struct trk_replay_transport;

/* One frame of index.ndjson. */
struct entry {
    uint64_t seq;
    double pts;
    enum trk_pixfmt fmt;
    int width, height;
    enum trk_matrix matrix;
    bool full_range;
    uint64_t offset, size;
    int file;        /* ffv1: its file in files[], else -1 (frames.raw) */
    uint64_t packet; /* ffv1: its packet in that file                   */
    /* copy storage: a JPEG of frames.mjpeg (offset, packet bytes), or
     * frame number `packet` of the input file; else COPY_NONE. */
    enum { COPY_NONE, COPY_MJPEG, COPY_INPUT } copy;
};

/* --record-storage ffv1: one of the bundle's Matroska files. */
struct ffv1_file {
    char name[64];
    struct trk_ffv1_in *in;
    uint64_t next; /* the packet in->next decodes */
};

/* One object set of objects.ndjson. */
struct version {
    uint64_t first_seq;
    struct trk_objects *set;
};

struct trk_replay {
    char dir[4096];
    int fd; /* frames.raw */
    /* frames.storage "ffv1": its files, and one decoded frame's bytes. */
    bool ffv1;
    struct ffv1_file *files;
    int n_files;
    uint8_t *scratch;
    size_t scratch_cap;
    /* frames.storage "copy" (version 3): frames.mjpeg and the decoder the
     * live run used (trk_mjpeg_decode, software); the input file the index
     * refers to, read with the file source as the live run read it. */
    bool copy;
    int mjpeg_fd;
    struct trk_mjpeg *mjpeg;
    char input[4096];
    bool input_loop;
    json_t *input_want; /* the manifest's input_size, _sha256, _blocks */
    struct trk_source in;
    bool in_open;
    uint64_t in_next; /* the input's frame number its next read gives */
    /* A stored frame turned out damaged while playing (said where):
     * trk_replay_damaged. */
    bool damaged;
    struct entry *idx;
    size_t n, next; /* entries; the next one read() gives */
    struct version *ver;
    int n_ver, installed; /* versions; the number (1..) of the one frame_due
                           * installed last, 0 none */
    struct trk_control *control;
    int width, height;
    double fps;
    char desc[200];
    /* The verifier (processing thread): results.ndjson, read along. */
    FILE *results;
    long results_line;
    bool verifying, differs;
    uint64_t compared, differing, unrecorded;
    /* The manifest's end.stopped, or no end: the recording stopped early
     * (full disk, limit, killed), so results.ndjson may end before
     * index.ndjson does. */
    bool stopped_early;
    /* The manifest has "rewind": a saved rewind buffer, which starts mid-run
     * (tracked objects' instances had a history before its first frame). */
    bool mid_run;
    /* Its state.bin (daemon/state.h): the state before its first frame;
     * NULL when it has none (a recording, or an older rewind save). */
    uint8_t *state;
    size_t state_len;
    /* The manifest's track_mode (enum trk_track_mode), -1 when absent. */
    int track_mode;
    /* A live camera's recording: frames the live tracker skipped (the pool
     * keeps the newest) have no result, and are left out of the replay. */
    bool live;
    /* The source's description, ours from open (capture thread's): read()
     * says there when a frame is not paced, takes host_mem from it for the
     * input file's frames, and writes a damaged frame's error there. */
    struct trk_source *info;
    /* The transport (replay_transport.c); NULL until it is added. */
    struct trk_replay_transport *t;
    /* The control version the last recorded set installed made (atomic:
     * the transport reads it on the capture thread); 0 before the first. */
    uint64_t inst_version;
};

/* why = "DIR/FILE...: ..." (the formatted text); returns code. */
int trk_replay_fail(char *why, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The first path where a and b differ into path, the two values there
 * into d[0], d[1] (borrowed; NULL = missing); with top, the timing fields
 * of a frame message are skipped. */
bool trk_replay_differ(json_t *a, json_t *b, char *path, size_t len, bool top, json_t **d);

/* The transport's part of read(), capture thread: the index of the frame
 * to give now into *k, or TRK_SOURCE_EOF / TRK_SOURCE_AGAIN; *unpaced
 * says the frame is not to be paced. */
int trk_replay_transport_next(struct trk_replay *r, size_t *k, bool *unpaced);
/* Capture thread: the frame transport_next just gave could not be read
 * (why): it is taken back, the replay pauses and says so. */
void trk_replay_transport_failed(struct trk_replay *r, const char *why);
void trk_replay_transport_destroy(struct trk_replay_transport **t);

/* The index of the bundle frame the pipeline's frame seq is (the
 * transport's record of what read() gave; seq itself without one). */
size_t trk_replay_frame_of(struct trk_replay *r, uint64_t seq);

#endif
