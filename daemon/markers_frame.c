/* The pipeline's marker step: see markers.h (trk_marker_stage). */
#include "markers.h"

#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "result.h"
#include "state.h"
#include "trk_error.h"

/* The most coasting markers a frame reports: every pattern's centres at
 * their largest lists. */
#define COAST_MAX ((size_t)TRK_PATTERNS_MAX * TRK_MAX_BLOBS)

struct trk_marker_stage {
    struct trk_marker_follower *follower;
    /* What the follower's tracks belong to: a change starts it over. */
    struct trk_pattern patterns[TRK_PATTERNS_MAX];
    int n_patterns, n_objects, width, height;
    /* Objects some pattern names: only their blobs become spots. */
    bool used[TRK_MAX_OBJECTS];
    /* Scratch sized for the set: spots (every listed blob of a used
     * object) and markers (found ones plus as many coasting). */
    struct trk_spot *spots;
    struct trk_marker *found;
    size_t spots_cap, found_cap;
};

struct trk_marker_stage *trk_marker_stage_create(void)
{
    struct trk_marker_stage *s = calloc(1, sizeof(*s));
    if (s && !(s->follower = trk_markers_follower_create(0))) {
        free(s);
        return NULL;
    }
    return s;
}

void trk_marker_stage_destroy(struct trk_marker_stage *s)
{
    if (!s) return;
    trk_markers_follower_destroy(s->follower);
    free(s->spots);
    free(s->found);
    free(s);
}

/* Marks the objects pat names in used[]. */
static void mark_used(bool *used, const struct trk_pattern *pat)
{
    if (pat->kind == TRK_PATTERN_CODE) {
        for (unsigned k = 0; k < pat->n_code; k++)
            used[pat->code[k]] = true;
        return;
    }
    used[pat->centre] = true;
    for (unsigned i = 0; i < pat->n_ids; i++)
        for (unsigned d = 0; d < pat->n_dots; d++)
            used[pat->id_colors[i][d]] = true;
}

/* Grows *v (of *cap elements of size sz) to n; false when memory runs out. */
static bool grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap) return true;
    void *g = realloc(*v, n * sz);
    if (!g) return false;
    *v = g;
    *cap = n;
    return true;
}

/* The set or the frame size changed: the tracks start over. */
static void restart(struct trk_marker_stage *s, const struct trk_objects *set, int n_objects,
                    int width, int height)
{
    trk_markers_follower_reset(s->follower);
    s->n_patterns = set->n_patterns;
    memcpy(s->patterns, set->patterns, (size_t)set->n_patterns * sizeof(*s->patterns));
    s->n_objects = n_objects, s->width = width, s->height = height;
    memset(s->used, 0, sizeof(s->used));
    for (int i = 0; i < set->n_patterns; i++)
        mark_used(s->used, &set->patterns[i]);
}

int trk_marker_stage_run(struct trk_marker_stage *s, const struct trk_objects *set,
                         struct trk_frame_result *r, int width, int height)
{
    if (set->n_patterns <= 0) return trk_frame_result_set_markers(r, NULL, 0, NULL, 0, NULL);
    if (set->n_patterns != s->n_patterns || r->n != s->n_objects || width != s->width ||
        height != s->height ||
        memcmp(set->patterns, s->patterns, (size_t)set->n_patterns * sizeof(*s->patterns)))
        restart(s, set, r->n, width, height);
    /* Spots, and the most markers: one per spot (a centre or first colour
     * at most), and up to COAST_MAX the follower coasts (also in a frame
     * where nothing is in view). */
    size_t n_spots = 0, max = 0;
    for (int i = 0; i < r->n; i++)
        if (s->used[i]) n_spots += (size_t)r->obj[i].n_blobs;
    max = n_spots + COAST_MAX;
    if (!grow((void **)&s->spots, &s->spots_cap, n_spots, sizeof(*s->spots)) ||
        !grow((void **)&s->found, &s->found_cap, max, sizeof(*s->found))) {
        trk_frame_result_set_markers(r, set->patterns, set->n_patterns, NULL, 0, NULL);
        return TRK_ENOMEM;
    }
    n_spots = 0;
    for (int i = 0; i < r->n; i++) {
        const struct trk_result_object *o = &r->obj[i];
        for (int k = 0; s->used[i] && k < o->n_blobs; k++) {
            const struct trk_point *c = &r->blob_c[o->blob0 + (size_t)k];
            s->spots[n_spots++] =
                (struct trk_spot){ .x = c->cx,
                                   .y = c->cy,
                                   .mass = (double)r->blobs[o->blob0 + (size_t)k].mass,
                                   .object = (uint16_t)i };
        }
    }
    size_t n =
        trk_markers_find(set->patterns, (size_t)set->n_patterns, s->spots, n_spots, s->found, max);
    if (n > max) n = max;
    n = trk_markers_follow(s->follower, s->found, n, max);
    return trk_frame_result_set_markers(r, set->patterns, set->n_patterns, s->found, n,
                                        set->calib.on ? &set->calib : NULL);
}

/* Whether s's tracks belong to set's patterns at this size (no restart at
 * the next run). */
static bool belongs(const struct trk_marker_stage *s, const struct trk_objects *set, int n_objects,
                    int width, int height)
{
    return set->n_patterns > 0 && set->n_patterns == s->n_patterns && n_objects == s->n_objects &&
           width == s->width && height == s->height &&
           !memcmp(set->patterns, s->patterns, (size_t)set->n_patterns * sizeof(*s->patterns));
}

void trk_marker_stage_save(const struct trk_marker_stage *s, const struct trk_objects *set,
                           int n_objects, int width, int height, struct trk_bytes *b)
{
    const uint32_t same = belongs(s, set, n_objects, width, height);
    trk_bytes_put(b, &same, sizeof(same));
    trk_markers_follower_save(s->follower, b);
}

int trk_marker_stage_load(struct trk_marker_stage *s, const struct trk_objects *set, int n_objects,
                          int width, int height, struct trk_rd *r)
{
    uint32_t same = 0;
    trk_rd_get(r, &same, sizeof(same));
    if (!r->bad && (same > 1 || (same && set->n_patterns <= 0))) {
        r->off -= sizeof(same);
        trk_rd_fail(r, "the marker stage's flag is not 0 or 1");
    }
    if (r->bad) return TRK_EINVAL;
    /* Not the same: the stage starts over at the frame, as it did live
     * (its tracks, of the set before, go; the next id still counts). */
    if (same) restart(s, set, n_objects, width, height);
    int err = trk_markers_follower_load(s->follower, r,
                                        same ? (size_t)set->n_patterns : (size_t)TRK_PATTERNS_MAX);
    if (!same) trk_markers_follower_reset(s->follower);
    return err;
}
