/* The bundles a live trackd can offer the page (PROTOCOL.md list_bundles;
 * docs/RECORDING.md, "The page's bundle view"): the --record bundle (or,
 * with --record-rotate, its parts) and the rewind saves in --rewind-dir, each with what its
 * manifest says and the command that opens it in the page. Reads the disk: call it off the
 * WebSocket thread (the control module's file worker). */
#ifndef TRK_DAEMON_BUNDLES_H
#define TRK_DAEMON_BUNDLES_H

#include "trk_buf.h"

/* At most this many bundles are listed (the newest names first). */
#define TRK_BUNDLES_MAX 200

struct trk_bundles_cfg {
    const char *record;     /* --record DIR, or NULL */
    const char *rewind_dir; /* --rewind-dir when --rewind is on, or NULL */
};

/* Appends the JSON array of the bundles found to out: {"dir" (absolute),
 * "name", "kind" ("record" or "rewind"), "frames" (null while it is being
 * written), "seconds", "started_wall_ms", "source", "trigger" (rewind),
 * "closed"}. A folder that cannot be read lists nothing of it. 0 or
 * TRK_ENOMEM. */
int trk_bundles_list(const struct trk_bundles_cfg *cfg, struct trk_buf *out);

#endif
