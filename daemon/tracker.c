#include "tracker.h"

#include <stdlib.h>
#include <string.h>

struct trk_tracker {
    int max, n;
    uint64_t *min_mass;       /* per object: found = mass >= min_mass */
    struct trk_track *tracks; /* per object */
};

int trk_tracker_create(const struct trk_tracker_cfg *cfg, struct trk_tracker **out)
{
    *out = NULL;
    if (!cfg || cfg->max_objects < 1 || cfg->max_objects > TRK_MAX_OBJECTS) return TRK_EINVAL;
    struct trk_tracker *t = calloc(1, sizeof(*t));
    if (!t) return TRK_ENOMEM;
    t->max = cfg->max_objects;
    t->min_mass = calloc((size_t)t->max, sizeof(*t->min_mass));
    t->tracks = calloc((size_t)t->max, sizeof(*t->tracks));
    if (!t->min_mass || !t->tracks) {
        trk_tracker_destroy(&t);
        return TRK_ENOMEM;
    }
    *out = t;
    return 0;
}

void trk_tracker_destroy(struct trk_tracker **pt)
{
    struct trk_tracker *t = *pt;
    if (!t) return;
    free(t->min_mass);
    free(t->tracks);
    free(t);
    *pt = NULL;
}

int trk_tracker_reset(struct trk_tracker *t, const struct trk_object_def *defs, int n)
{
    t->n = 0;
    if (n < 0 || n > t->max || (n > 0 && !defs)) return TRK_EINVAL;
    memset(t->tracks, 0, sizeof(*t->tracks) * (size_t)t->max);
    for (int i = 0; i < n; i++)
        /* The same rule as the result messages: min_mass 0 counts as 1, so
         * an empty frame never "finds" anything. */
        t->min_mass[i] = defs[i].min_mass ? defs[i].min_mass : 1;
    t->n = n;
    return 0;
}

const struct trk_roi *trk_tracker_rois(struct trk_tracker *t, const struct trk_image *img)
{
    /* Full-frame search for every object until ROI tracking exists: it is
     * also what a lost object falls back to. */
    (void)t;
    (void)img;
    return NULL;
}

int trk_tracker_update(struct trk_tracker *t, uint64_t seq, const struct trk_obj_result *res, int n)
{
    if (n != t->n || (n > 0 && !res)) return TRK_EINVAL;
    for (int i = 0; i < n; i++) {
        struct trk_track *k = &t->tracks[i];
        k->found = res[i].mass >= t->min_mass[i];
        if (!k->found) continue;
        k->seen = true;
        k->last_seen = seq;
        k->mass = res[i].mass;
        k->cx = (double)res[i].sum_x / (double)res[i].mass;
        k->cy = (double)res[i].sum_y / (double)res[i].mass;
    }
    return 0;
}

int trk_tracker_count(const struct trk_tracker *t)
{
    return t->n;
}

const struct trk_track *trk_tracker_track(const struct trk_tracker *t, int i)
{
    return i >= 0 && i < t->n ? &t->tracks[i] : NULL;
}
