/* The processing thread's state as bytes: the rules are in state.h. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "light.h"
#include "markers.h"
#include "objects.h"
#include "tracker.h"
#include "trk_error.h"

/* The header: magic, version, the seq of the frame the state precedes. */
static const char MAGIC[8] = { 'T', 'R', 'K', 'S', 'T', 'A', 'T', 'E' };

void trk_state_save(struct trk_bytes *b, const struct trk_tracker *t,
                    const struct trk_marker_stage *s, const struct trk_light *l,
                    const struct trk_frame_result *res, const struct trk_objects *set, int width,
                    int height, uint64_t seq)
{
    const uint32_t version = TRK_STATE_VERSION;
    trk_bytes_put(b, MAGIC, sizeof(MAGIC));
    trk_bytes_put(b, &version, sizeof(version));
    trk_bytes_put(b, &seq, sizeof(seq));
    trk_tracker_save(t, b);
    trk_marker_stage_save(s, set, trk_tracker_count(t), width, height, b);
    trk_light_save(l, res, b);
}

int trk_state_load(const void *data, size_t len, struct trk_tracker *t, struct trk_marker_stage *s,
                   struct trk_light *l, const struct trk_objects *set, int width, int height,
                   uint64_t seq, size_t *bad_off, const char **what)
{
    struct trk_rd r = { .p = data, .len = len };
    char magic[sizeof(MAGIC)];
    uint32_t version = 0;
    uint64_t saved = 0;
    trk_rd_get(&r, magic, sizeof(magic));
    if (!r.bad && memcmp(magic, MAGIC, sizeof(MAGIC))) {
        r.off = 0;
        trk_rd_fail(&r, "not a trackd state file (no TRKSTATE at its start)");
    }
    trk_rd_get(&r, &version, sizeof(version));
    if (!r.bad && version != TRK_STATE_VERSION && version != 1) {
        r.off -= sizeof(version);
        trk_rd_fail(&r, "a state version this trackd does not read");
    }
    trk_rd_get(&r, &saved, sizeof(saved));
    const int n = trk_tracker_count(t);
    int err = r.bad ? TRK_EINVAL : trk_tracker_load(t, &r, seq - saved);
    if (!err) err = trk_marker_stage_load(s, set, n, width, height, &r);
    /* Version 1 has no light section: the light starts over, as reset. */
    trk_light_reset(l, set, n);
    if (!err && version >= 2) err = trk_light_load(l, &r);
    if (!err && r.off != r.len) {
        trk_rd_fail(&r, "bytes after the state's end");
        err = TRK_EINVAL;
    }
    if (err) {
        trk_tracker_reset(t, set->def, n);
        trk_light_reset(l, set, n);
        *bad_off = r.bad_off;
        *what = r.bad ? r.what : "out of memory";
    }
    return err;
}

int trk_state_check(const void *data, size_t len, const struct trk_objects *set, size_t *bad_off,
                    const char **what)
{
    struct trk_tracker *t = NULL;
    struct trk_light *l = NULL;
    struct trk_marker_stage *s = trk_marker_stage_create();
    const struct trk_tracker_cfg cfg = { .max_objects = TRK_MAX_OBJECTS };
    int err = s ? trk_tracker_create(&cfg, &t) : TRK_ENOMEM;
    if (!err) err = trk_light_create(&l);
    if (!err) err = trk_tracker_reset(t, set->def, set->n);
    if (!err) err = trk_state_load(data, len, t, s, l, set, 1, 1, 0, bad_off, what);
    trk_light_destroy(&l);
    trk_tracker_destroy(&t);
    trk_marker_stage_destroy(s);
    return err;
}
