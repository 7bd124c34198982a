/* The NDJSON output (--output): whole lines or nothing. Lines are
 * buffered and written with write(2), so a failed write tells exactly how
 * many complete lines reached the file and whether one was cut. A line that
 * cannot be written is lost and counted, never retried (the buffer would
 * grow without bound on a full disk); writing goes on with the next line, so
 * the file resumes when space comes back. A cut line (a partial write: disk
 * full or file size limit mid-line) is removed by truncating a regular file
 * back to the end of its last complete line; where that is impossible (a
 * pipe, a terminal) the next write first ends the cut line with a newline,
 * and the log says so either way.
 *
 * Threads: one output belongs to one thread (the processing thread).
 * Lifecycle: create / destroy (flushes); the fd stays the caller's. */
#ifndef TRK_DAEMON_NDJSON_H
#define TRK_DAEMON_NDJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trk_ndjson;

struct trk_ndjson_cfg {
    int fd;           /* where lines go (not closed by destroy)            */
    const char *name; /* for the log, e.g. the --output path or "stdout"   */
    bool flush_each;  /* write every line at once (pipes, terminals)       */
};

/* What happened to the lines given to trk_ndjson_line. */
struct trk_ndjson_stats {
    uint64_t lines;    /* given                                           */
    uint64_t written;  /* reached the fd complete                         */
    uint64_t lost;     /* never written (lines = written + lost + buffered) */
    uint64_t cut;      /* partial lines a failed write left in the file   */
    uint64_t repaired; /* of those, removed again by truncating the file  */
    int first_err;     /* -errno of the first failed write, 0 = none      */
};

/* 0, TRK_EINVAL (fd < 0) or TRK_ENOMEM. */
int trk_ndjson_create(const struct trk_ndjson_cfg *cfg, struct trk_ndjson **out);

/* Appends data[0..len) and a newline as one line. A failure is logged once
 * (again after writes worked in between) and counted, never returned: the
 * caller's other sinks go on. */
void trk_ndjson_line(struct trk_ndjson *o, const char *data, size_t len);

/* Writes what is buffered. 0, or the -errno of a failed write. */
int trk_ndjson_flush(struct trk_ndjson *o);

void trk_ndjson_get_stats(const struct trk_ndjson *o, struct trk_ndjson_stats *st);

/* Flushes, then frees; safe on NULL and twice (sets *o = NULL). */
void trk_ndjson_destroy(struct trk_ndjson **o);

struct trk_outputs;
struct trk_metrics;

/* Registers an NDJSON output writing file (name for the log, flush_each as
 * above) with the outputs door (outputs.h): every frame message one line,
 * its losses so far to metrics (NULL = none). Whatever the caller left in
 * file's buffer goes first. At close it logs its account (lines lost, cut)
 * and closes file unless it is stdout; lost lines make close fail (exit
 * 74). 0, or TRK_ENOMEM / -errno: file is closed then too. */
int trk_ndjson_add(struct trk_outputs *o, FILE *file, const char *name, bool flush_each,
                   struct trk_metrics *metrics);

#endif
