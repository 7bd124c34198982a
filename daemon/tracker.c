#include "tracker.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

/* Velocity smoothing (the filter's beta): the velocity moves this share of
 * the way to the step just measured. 0.5 follows a change of speed within
 * a few frames and halves the jitter of a noisy centroid. */
#define BETA 0.5
/* A region reaches this many pixels beyond the blob's predicted box on
 * every side, plus (times the instance's grow factor):
 *   - while the prediction is young (fewer than SURE_OBS measurements):
 *     half the blob's size and its speed, room for a change of speed of up
 *     to half the blob's size per frame;
 *   - after that, ERR_GAIN x the instance's recent prediction error (err),
 *     its speed times the frames skipped and its box's last growth: a blob
 *     on a steady path gets a region MARGIN_PX larger than itself, so the
 *     regions cost little more than the blobs (1080p, 128 disks of 45 px:
 *     ~22% of the frame). A blob that reaches the border (a bounce, a
 *     sudden turn, one coming out from under a cover) reruns its object
 *     over grown regions (grown_region: a fraction of a whole-frame rerun,
 *     so tight regions pay) and doubles the grow factor, and its error
 *     widens the next regions. A box that pokes past the frame's edge by
 *     d reaches 2 d farther inside (axis_of: bounces).
 * trackd-bench --experiment rrm --regions tracker counts those reruns. */
#define MARGIN_PX 4
#define SURE_OBS  3
#define ERR_GAIN  2.0
/* Most a region's margin grows after blobs touched its border (doubling
 * each time, halving back after each frame clean inside it). */
#define GROW_MAX 2
/* The gate: a blob is a candidate for an instance when its centroid lies
 * within 2 x (size + speed) + GATE_PX of the prediction, times 1 + frames
 * lost: about twice a region's half-extent, so a blob that moved past its
 * region is still claimed by the whole-frame search that follows. */
#define GATE_PX 8.0
/* A measurement with less than PARTIAL x the instance's whole mass (ref)
 * is a part of its blob: partly covered by another object's blob, partly
 * out of the frame, or a piece of it. It is still the instance (reported
 * as measured) but says little about where the blob is or how large: the
 * filter keeps to its predicted path and its size, as for a merge. Without
 * this a sliver of a covered disk set the size to a few pixels, the gate
 * and region shrank to match, and the disk coming out from under the cover
 * fell outside the gate: lost, and replaced by a new id (the id switch of
 * rrm --regions tracker, 1080p, M = 128 and 256). ref follows whole
 * measurements and decays by REF_DECAY a partial frame, so a blob that
 * really shrank is whole again after a few frames. */
#define PARTIAL   0.5
#define REF_DECAY 0.8
/* Association cost per halving of mass between a candidate and the
 * instance's whole mass: a region can hold a large part of a covered blob
 * and a few-pixel piece of it nearer the prediction; the large part is the
 * better match (and the one a whole-frame list of K blobs holds). */
#define MASS_COST 0.1
/* The orientation filter (an alpha-beta filter on the axis, degrees): the
 * orientation moves ALPHA_TH of the way to the measured axis, the turn per
 * frame BETA_TH of the measured error per frame; BETA_TH = ALPHA_TH^2 /
 * (2 - ALPHA_TH), Benedict and Bordner's choice: a steady spin is followed
 * without lag once the turn has settled, and a noisy axis is halved. The
 * second measurement sets the turn outright (gains 1). Both gains are
 * weighed by how much the measured axis says (axis_weight): a disc or a
 * square has none, so it neither turns nor gains a spin from pixel noise;
 * a blob whose axes' variances differ by AXIS_FULL of their sum or more
 * (its major axis 1.36 times its minor: any bar, a 3:1 ellipse) counts
 * fully. */
#define ALPHA_TH  0.5
#define BETA_TH   (ALPHA_TH * ALPHA_TH / (2.0 - ALPHA_TH))
#define AXIS_FULL 0.3

struct inst {
    struct trk_instance pub;
    double x, y;       /* filter position, at seq last_seq            */
    uint64_t last_seq; /* seq of x, y                                 */
    uint64_t n_obs;    /* frames it was measured in                   */
    double px, py;     /* prediction for the frame being processed   */
    int w, h;          /* size of its last whole measured box         */
    int gw, gh;        /* how much that box grew at that measurement */
    int fw, fh;        /* the whole blob's size: the largest box lately
                        * measured, less a pixel a frame (region_of)  */
    int grow;          /* region margin factor 1..GROW_MAX            */
    double err;        /* recent prediction error, px (region_of)     */
    double ref;        /* its mass when whole (PARTIAL)               */
    double th, pth;    /* orientation at last_seq, degrees [0, 180),
                        * and its prediction for this frame (not folded) */
    double mth, mw;    /* this frame's measured orientation and its
                        * weight (axis_weight)                         */
    bool cut;          /* its blob touched its region's border this frame */
    bool merged;       /* its blob also holds another's prediction    */
    int match;         /* candidate index this round, -1 = none       */
};

struct obj {
    struct trk_object_def def;
    int k; /* instances at most: def.blobs (tracked), capped */
    int n; /* instances                                      */
    struct inst *inst;
    int last_full;    /* blobs its last whole-frame search found        */
    int unit0, units; /* its units in the current round (0: none)       */
    bool whole;       /* this round's unit is the whole frame           */
    bool rerun;       /* needs another round after this one             */
    bool grown;       /* this round's units are its grown regions       */
    /* The frame's output. */
    struct trk_obj_result res;
    struct trk_blob *out;
    int n_out;
    struct trk_instance *pub; /* instances in id order, for readers */
    int n_pub;
};

/* A blob offered to an object's association. */
struct cand {
    struct trk_blob b;
    double cx, cy;
    int unit; /* region it came from (whole-frame lists: -1) */
    bool cut; /* touches its region's border inside the frame */
    bool used;
};

struct pair {
    double cost;
    int inst, cand;
};

struct trk_tracker {
    int max, n;
    enum trk_track_mode mode;
    int full_every;
    struct obj *objs;
    struct trk_track *tracks;
    uint64_t next_id;
    /* The frame in progress. */
    uint64_t seq, frame_no; /* frame_no: frames begun since the reset */
    int width, height;
    int round; /* -1: no frame in progress */
    bool plan_full, was_full;
    int rounds;
    struct trk_tracker_stats stats;
    int n_regions;
    struct trk_region regions[TRK_MAX_REGIONS];
    struct trk_region prev[TRK_MAX_REGIONS]; /* round 0's, while growing them */
    /* Scratch for one object's association. */
    struct cand *cand;
    struct pair *pairs;
};

/* Candidates and pairs one object may need: K instances, each region a
 * list of at most K blobs. */
#define MAX_CANDS (TRK_MAX_BLOBS * TRK_MAX_BLOBS)

int trk_tracker_create(const struct trk_tracker_cfg *cfg, struct trk_tracker **out)
{
    *out = NULL;
    if (!cfg || cfg->max_objects < 1 || cfg->max_objects > TRK_MAX_OBJECTS) return TRK_EINVAL;
    if ((unsigned)cfg->mode > TRK_TRACK_FULL || cfg->full_every < 0 || cfg->full_every > 1000000)
        return TRK_EINVAL;
    struct trk_tracker *t = calloc(1, sizeof(*t));
    if (!t) return TRK_ENOMEM;
    t->max = cfg->max_objects;
    t->mode = cfg->mode;
    t->full_every = cfg->full_every ? cfg->full_every : TRK_TRACK_FULL_EVERY;
    t->next_id = 1;
    t->round = -1;
    t->objs = calloc((size_t)t->max, sizeof(*t->objs));
    t->tracks = calloc((size_t)t->max, sizeof(*t->tracks));
    t->cand = malloc(MAX_CANDS * sizeof(*t->cand));
    t->pairs = malloc(MAX_CANDS * sizeof(*t->pairs));
    bool ok = t->objs && t->tracks && t->cand && t->pairs;
    for (int i = 0; ok && i < t->max; i++) {
        struct obj *o = &t->objs[i];
        o->inst = calloc(TRK_MAX_BLOBS, sizeof(*o->inst));
        o->out = calloc(TRK_MAX_BLOBS, sizeof(*o->out));
        o->pub = calloc(TRK_MAX_BLOBS, sizeof(*o->pub));
        ok = o->inst && o->out && o->pub;
    }
    if (!ok) {
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
    for (int i = 0; t->objs && i < t->max; i++) {
        free(t->objs[i].inst);
        free(t->objs[i].out);
        free(t->objs[i].pub);
    }
    free(t->objs);
    free(t->tracks);
    free(t->cand);
    free(t->pairs);
    free(t);
    *pt = NULL;
}

int trk_tracker_reset(struct trk_tracker *t, const struct trk_object_def *defs, int n)
{
    t->n = 0;
    t->round = -1;
    t->frame_no = 0;
    if (n < 0 || n > t->max || (n > 0 && !defs)) return TRK_EINVAL;
    memset(t->tracks, 0, sizeof(*t->tracks) * (size_t)t->max);
    for (int i = 0; i < n; i++) {
        struct obj *o = &t->objs[i];
        o->def = defs[i];
        /* The same rule as the result messages: min_mass 0 counts as 1, so
         * an empty frame never "finds" anything. */
        if (!o->def.min_mass) o->def.min_mass = 1;
        o->k = o->def.track ? (o->def.blobs < TRK_MAX_BLOBS ? o->def.blobs : TRK_MAX_BLOBS) : 0;
        o->n = o->last_full = o->n_out = o->n_pub = 0;
        o->res = (struct trk_obj_result){ .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 };
    }
    t->n = n;
    return 0;
}

static bool tracked(const struct obj *o)
{
    return o->k > 0;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* One axis of a region: the predicted box [lo_box, hi_box] plus m on each
 * side, and where the box pokes past
 * the frame's edge [0, n - 1] by d, d x 2 more on the inside: a blob that
 * bounces off the edge comes back mirrored (a ball off a table's edge, the
 * bench's disks), one that leaves is cut by the edge and its centroid
 * shifts inwards. Clamped in double first: a prediction far outside must
 * not overflow. */
static void axis_of(double lo_box, double hi_box, double m, int n, int32_t *lo, int32_t *hi)
{
    double a = lo_box - m, b = hi_box + m;
    const double under = -lo_box, over = hi_box - (n - 1);
    if (under > 0) b += 2 * under;
    if (over > 0) a -= 2 * over;
    const double big = 4.0 * n + 16;
    *lo = (int32_t)floor(clampd(a, -big, big));
    *hi = (int32_t)ceil(clampd(b, -big, big));
    if (*lo < 0) *lo = 0;
    if (*hi > n - 1) *hi = n - 1;
}

/* Instance a's region for this frame: its predicted box (widened to the
 * whole blob's size around a covered part) grown by the margin, its speed
 * and its box's recent growth (a blob coming out from under a cover),
 * clipped to the frame (possibly empty). */
static struct trk_roi region_of(const struct trk_tracker *t, const struct inst *a)
{
    const double dt = (double)(t->seq - a->last_seq);
    const int size = a->w > a->h ? a->w : a->h;
    const bool young = a->n_obs < SURE_OBS;
    const double margin = (MARGIN_PX + (young ? size / 2.0 : ERR_GAIN * a->err)) * a->grow;
    const double sdt = young ? dt : dt - 1.0; /* frames the velocity is trusted over */
    const double mx = fabs(a->pub.vx) * sdt + a->gw * dt + margin;
    const double my = fabs(a->pub.vy) * sdt + a->gh * dt + margin;
    /* The last measured box, moved as the prediction moved, and widened to
     * every place a whole blob holding it can be: a part of a covered blob
     * (its box smaller than the whole one) may be anywhere in the whole
     * blob, and the cover moves on its own path, so the next frame's part
     * may lie on either side of this one. A box around the centroid with
     * the part's size put the part on the region's border (a second round)
     * on most frames of rrm --regions tracker at M = 128; a whole blob's
     * box is the same either way. Pixel x spans [x - 0.5, x + 0.5]. */
    const struct trk_blob *b = &a->pub.blob;
    const int fw = a->fw > a->w ? a->fw : a->w, fh = a->fh > a->h ? a->fh : a->h;
    const double sx = a->px - a->x, sy = a->py - a->y;
    struct trk_roi r;
    axis_of(fmin(b->x0, b->x1 - fw + 1) - 0.5 + sx, fmax(b->x1, b->x0 + fw - 1) + 0.5 + sx, mx,
            t->width, &r.x0, &r.x1);
    axis_of(fmin(b->y0, b->y1 - fh + 1) - 0.5 + sy, fmax(b->y1, b->y0 + fh - 1) + 0.5 + sy, my,
            t->height, &r.y0, &r.y1);
    return r;
}

static struct trk_roi whole(const struct trk_tracker *t)
{
    return (struct trk_roi){ 0, 0, t->width - 1, t->height - 1 };
}

/* Instance a's region for round 1, after its round-0 region r did not
 * explain it: r grown on every side by the blob's size, its speed over the
 * frames since it was measured and the margin, clipped to the frame. A
 * blob of the instance's size that touched r's border (a bounce, a turn, a
 * blob coming out from under a cover) lies wholly inside; one that moved
 * past r by up to its size plus its speed is inside too. Much less than
 * the frame: 1080p, a 45 px disk at 9 px/frame: about 180 x 180 px. */
static struct trk_roi grown_region(const struct trk_tracker *t, const struct inst *a,
                                   const struct trk_roi *r)
{
    const double dt = (double)(t->seq - a->last_seq);
    const int size = a->w > a->h ? a->w : a->h;
    const double gx = size + fabs(a->pub.vx) * dt + MARGIN_PX;
    const double gy = size + fabs(a->pub.vy) * dt + MARGIN_PX;
    const double big = 4.0 * (t->width + t->height);
    struct trk_roi g = {
        .x0 = (int32_t)floor(clampd(r->x0 - gx, -big, big)),
        .y0 = (int32_t)floor(clampd(r->y0 - gy, -big, big)),
        .x1 = (int32_t)ceil(clampd(r->x1 + gx, -big, big)),
        .y1 = (int32_t)ceil(clampd(r->y1 + gy, -big, big)),
    };
    if (g.x0 < 0) g.x0 = 0;
    if (g.y0 < 0) g.y0 = 0;
    if (g.x1 > t->width - 1) g.x1 = t->width - 1;
    if (g.y1 > t->height - 1) g.y1 = t->height - 1;
    return g;
}

/* Whether object o must be searched over the whole frame this frame (roi
 * mode, not a periodic pass): untracked, an instance lost, or fewer
 * instances than its last whole-frame search found. */
static bool needs_whole(const struct obj *o)
{
    if (!tracked(o) || o->n < o->last_full) return true;
    for (int a = 0; a < o->n; a++)
        if (o->inst[a].pub.lost) return true;
    return false;
}

int trk_tracker_begin(struct trk_tracker *t, uint64_t seq, int width, int height,
                      struct trk_tracker_plan *plan)
{
    if (width <= 0 || height <= 0) return TRK_EINVAL;
    t->seq = seq;
    t->width = width, t->height = height;
    t->round = 0;
    t->rounds = 1;
    for (int i = 0; i < t->n; i++) {
        struct obj *o = &t->objs[i];
        o->units = 0;
        o->whole = o->rerun = o->grown = false;
        for (int a = 0; a < o->n; a++) {
            struct inst *x = &o->inst[a];
            const double dt = (double)(seq - x->last_seq);
            x->px = x->x + x->pub.vx * dt;
            x->py = x->y + x->pub.vy * dt;
            x->pth = x->th + x->pub.vth * dt;
            x->cut = x->merged = false;
        }
    }
    bool full = t->mode == TRK_TRACK_FULL || t->frame_no % (uint64_t)t->full_every == 0;
    t->n_regions = 0;
    if (!full) {
        /* Count first: more regions than a call takes means a full frame,
         * and so does an object with blob lists that must be searched over
         * the whole frame (untracked, or tracked with an instance lost or
         * fewer than its last whole-frame search found): its whole-frame
         * region, labelled in a regional call, costs more than a full-frame
         * pass of every object, on both backends (docs/BENCHMARKS.md,
         * "Re-acquisition as a full-frame pass"). An untracked object
         * without lists (aggregates only) keeps its whole-frame region. */
        int need = 0, wholes = 0, labelled = 0;
        for (int i = 0; i < t->n; i++) {
            const struct obj *o = &t->objs[i];
            bool w = needs_whole(o);
            need += w ? 1 : o->n;
            wholes += w;
            labelled += w && o->def.blobs > 0;
        }
        full = need > TRK_MAX_REGIONS || (t->n > 0 && wholes == t->n) || labelled > 0;
    }
    if (!full) {
        for (int i = 0; i < t->n; i++) {
            struct obj *o = &t->objs[i];
            o->unit0 = t->n_regions;
            o->whole = needs_whole(o);
            if (o->whole) {
                t->regions[t->n_regions++] = (struct trk_region){ .obj = i, .roi = whole(t) };
            } else {
                for (int a = 0; a < o->n; a++)
                    t->regions[t->n_regions++] =
                        (struct trk_region){ .obj = i, .roi = region_of(t, &o->inst[a]) };
            }
            o->units = t->n_regions - o->unit0;
        }
    } else {
        for (int i = 0; i < t->n; i++) {
            t->objs[i].unit0 = i;
            t->objs[i].units = 1;
            t->objs[i].whole = true;
        }
    }
    t->plan_full = full;
    *plan = (struct trk_tracker_plan){ .full = full,
                                       .n = full ? 0 : t->n_regions,
                                       .regions = full ? NULL : t->regions };
    return 0;
}

static int cmp_pair(const void *pa, const void *pb)
{
    const struct pair *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost < b->cost ? -1 : 1;
    if (a->inst != b->inst) return a->inst - b->inst;
    return a->cand - b->cand;
}

static double gate_of(const struct trk_tracker *t, const struct inst *a)
{
    const double dt = (double)(t->seq - a->last_seq);
    const double size = a->w > a->h ? a->w : a->h;
    const double speed = hypot(a->pub.vx, a->pub.vy) * dt;
    return (2.0 * (size + speed) + GATE_PX) * (1.0 + a->pub.lost);
}

/* Adds unit j's list (at most o's K) to the candidates; region: the
 * clipped region it was measured in (NULL: the whole frame). */
static int add_cands(const struct trk_tracker *t, const struct obj *o, int nc,
                     const struct trk_blob *list, int nb, int unit, const struct trk_roi *region)
{
    if (!list || nb < 0) nb = 0;
    if (nb > o->k) nb = o->k;
    for (int b = 0; b < nb && nc < MAX_CANDS; b++) {
        const struct trk_blob *x = &list[b];
        if (!x->mass) continue;
        struct cand *c = &t->cand[nc++];
        c->b = *x;
        trk_centroid(x->sum_x, x->sum_y, x->mass, &c->cx, &c->cy);
        c->unit = unit;
        c->used = false;
        c->cut = false;
        if (region) {
            const struct trk_roi *r = region;
            c->cut = (x->x0 == r->x0 && r->x0 > 0) || (x->y0 == r->y0 && r->y0 > 0) ||
                     (x->x1 == r->x1 && r->x1 < t->width - 1) ||
                     (x->y1 == r->y1 && r->y1 < t->height - 1);
        }
    }
    return nc;
}

/* Greedy association of o's instances with the nc candidates; with
 * per_region, instance a only takes candidates of unit o->unit0 + a, and a
 * blob taken in one region is taken in all (copies share their first
 * pixel and mass). */
static void associate(struct trk_tracker *t, struct obj *o, int nc, bool per_region)
{
    int np = 0;
    for (int a = 0; a < o->n; a++) {
        struct inst *x = &o->inst[a];
        x->match = -1;
        const double gate = gate_of(t, x);
        for (int c = 0; c < nc; c++) {
            if (per_region && t->cand[c].unit != o->unit0 + a) continue;
            const double d = hypot(t->cand[c].cx - x->px, t->cand[c].cy - x->py);
            const double dm = fabs(log2((double)t->cand[c].b.mass / x->ref));
            if (d <= gate && np < MAX_CANDS)
                t->pairs[np++] =
                    (struct pair){ .cost = d / gate + MASS_COST * dm, .inst = a, .cand = c };
        }
    }
    qsort(t->pairs, (size_t)np, sizeof(*t->pairs), cmp_pair);
    for (int p = 0; p < np; p++) {
        struct inst *x = &o->inst[t->pairs[p].inst];
        struct cand *c = &t->cand[t->pairs[p].cand];
        if (x->match >= 0 || c->used) continue;
        x->match = t->pairs[p].cand;
        for (int e = 0; e < nc; e++)
            if (t->cand[e].b.first == c->b.first && t->cand[e].b.mass == c->b.mass)
                t->cand[e].used = true;
    }
}

/* Whether candidate c is part of a blob some instance took: the same blob
 * or a piece of it cut by another region (its box inside the taken one). */
static bool explained(const struct trk_tracker *t, const struct obj *o, const struct cand *c)
{
    if (c->used) return true;
    for (int a = 0; a < o->n; a++) {
        if (o->inst[a].match < 0) continue;
        const struct trk_blob *m = &t->cand[o->inst[a].match].b;
        if (c->b.x0 >= m->x0 && c->b.x1 <= m->x1 && c->b.y0 >= m->y0 && c->b.y1 <= m->y1)
            return true;
    }
    return false;
}

/* An angle in degrees folded into [0, 180): an axis has no head. */
static double fold180(double deg)
{
    double d = fmod(deg, 180.0);
    if (d < 0) d += 180.0;
    return d < 180.0 ? d : 0.0; /* -tiny + 180 rounds up */
}

/* How much a measured axis says: (major^2 - minor^2) / (major^2 +
 * minor^2) / AXIS_FULL, at most 1: 0 with no preferred direction (a disc,
 * a square, one pixel). */
static double axis_weight(const struct trk_shape *s)
{
    const double a = s->major * s->major, b = s->minor * s->minor;
    const double w = a > 0 ? (a - b) / (a + b) / AXIS_FULL : 0.0;
    return w < 1.0 ? w : 1.0;
}

/* Candidate c as x's measurement: its blob, centroid and shape (the
 * orientation goes to the filter: turn). */
static void set_measured(struct inst *x, const struct cand *c)
{
    x->pub.blob = c->b;
    x->pub.cx = c->cx;
    x->pub.cy = c->cy;
    struct trk_shape sh;
    trk_moments_shape(c->b.mass, c->b.sum_x, c->b.sum_y, c->b.sum_xx, c->b.sum_yy, c->b.sum_xy,
                      &sh);
    x->pub.major = sh.major;
    x->pub.minor = sh.minor;
    x->mth = sh.orientation;
    x->mw = axis_weight(&sh);
}

/* The orientation filter's step for a measurement dt frames after the
 * last: the measured axis is taken as the nearer of its two directions (m,
 * m + 180) to the prediction, so an axis turning through 0/180 keeps its
 * turn (one turning more than 90 degrees a frame is seen as turning the
 * other way: the axis cannot tell). */
static void turn(struct inst *x, double dt)
{
    double e = fold180(x->mth - x->pth);
    if (e >= 90.0) e -= 180.0; /* [-90, 90): the nearer direction */
    const bool first = x->n_obs == 1;
    const double a = (first ? 1.0 : ALPHA_TH) * x->mw, b = (first ? 1.0 : BETA_TH) * x->mw;
    x->th = fold180(x->pth + a * e);
    if (dt > 0) x->pub.vth += b * e / dt;
}

static void new_instance(struct trk_tracker *t, struct obj *o, const struct cand *c)
{
    struct inst *x = &o->inst[o->n++];
    memset(x, 0, sizeof(*x));
    x->pub.id = t->next_id++;
    x->pub.age = 1;
    set_measured(x, c);
    x->x = x->px = c->cx;
    x->y = x->py = c->cy;
    x->th = x->pth = x->mth;
    x->pub.orientation = x->th;
    x->last_seq = t->seq;
    x->n_obs = 1;
    x->w = x->fw = c->b.x1 - c->b.x0 + 1;
    x->h = x->fh = c->b.y1 - c->b.y0 + 1;
    x->grow = 1;
    x->ref = (double)c->b.mass;
    x->match = -1;
}

static void remove_instance(struct obj *o, int a)
{
    memmove(&o->inst[a], &o->inst[a + 1], (size_t)(o->n - a - 1) * sizeof(*o->inst));
    o->n--;
}

/* Applies the association to o's instances: measurements, filters, lost
 * counts, merges; with whole (a whole-frame list), drops the expired and
 * makes the unclaimed candidates new instances. */
static void commit(struct trk_tracker *t, struct obj *o, int nc, bool whole_list, bool via_roi)
{
    /* An instance that found nothing while its prediction lies in a blob
     * another took has merged with it: neither centroid is its own. */
    for (int a = 0; a < o->n; a++) {
        const struct inst *u = &o->inst[a];
        if (u->match >= 0) continue;
        for (int b = 0; b < o->n; b++) {
            struct inst *w = &o->inst[b];
            if (w->match < 0) continue;
            const struct trk_blob *m = &t->cand[w->match].b;
            if (u->px >= m->x0 && u->px <= m->x1 + 1 && u->py >= m->y0 && u->py <= m->y1 + 1)
                w->merged = true;
        }
    }
    for (int a = 0; a < o->n; a++) {
        struct inst *x = &o->inst[a];
        x->pub.age++;
        if (x->match < 0) {
            x->pub.lost++;
            x->pub.cx = x->px;
            x->pub.cy = x->py;
            x->pub.orientation = fold180(x->pth);
            continue;
        }
        const struct cand *c = &t->cand[x->match];
        const double dt = (double)(t->seq - x->last_seq);
        set_measured(x, c);
        x->pub.lost = 0;
        /* The whole blob's size: a cover shrinks the box for a while, a
         * blob that really shrank is its own size again after a few
         * frames. */
        const int bw = c->b.x1 - c->b.x0 + 1, bh = c->b.y1 - c->b.y0 + 1;
        x->fw = bw > x->fw - 1 ? bw : x->fw - 1;
        x->fh = bh > x->fh - 1 ? bh : x->fh - 1;
        x->pub.via_roi = via_roi;
        const bool partial = (double)c->b.mass < PARTIAL * x->ref;
        if (partial) x->ref *= REF_DECAY;
        if (x->merged || partial) {
            /* Keep to its own path (and size and turn) until the blobs
             * part again or it is whole again. */
            x->x = x->px, x->y = x->py;
            x->th = fold180(x->pth);
        } else {
            turn(x, dt);
            x->ref = (double)c->b.mass;
            if (dt > 0) {
                /* The prediction's error: a jump shows at once, then it
                 * halves back frame by frame. */
                const double e = fmax(fabs(c->cx - x->px), fabs(c->cy - x->py)) / dt;
                x->err = x->n_obs == 1 ? 0.0 : fmax(e, (x->err + e) / 2.0);
                if (x->n_obs == 1) {
                    x->pub.vx = (c->cx - x->x) / dt;
                    x->pub.vy = (c->cy - x->y) / dt;
                } else {
                    x->pub.vx += BETA * (c->cx - x->px) / dt;
                    x->pub.vy += BETA * (c->cy - x->py) / dt;
                }
            }
            x->x = c->cx, x->y = c->cy;
            const int w = c->b.x1 - c->b.x0 + 1, h = c->b.y1 - c->b.y0 + 1;
            x->gw = w > x->w ? w - x->w : 0;
            x->gh = h > x->h ? h - x->h : 0;
            x->w = w, x->h = h;
            x->n_obs++;
        }
        x->last_seq = t->seq;
        x->pub.orientation = x->th;
        /* A blob that reached its region's border: a wider margin next
         * frame; a clean frame in its region: back towards 1. */
        if (x->cut)
            x->grow = x->grow * 2 > GROW_MAX ? GROW_MAX : x->grow * 2;
        else if (via_roi && x->grow > 1)
            x->grow /= 2;
    }
    for (int a = 0; a < o->n;)
        if (o->inst[a].pub.lost > o->def.coast_frames)
            remove_instance(o, a);
        else
            a++;
    if (!whole_list) return;
    o->last_full = nc;
    for (int c = 0; c < nc; c++) {
        if (t->cand[c].used) continue;
        if (o->n == o->k) {
            /* Full: the instance lost longest makes room; one seen in this
             * frame never does. */
            int worst = -1;
            for (int a = 0; a < o->n; a++)
                if (o->inst[a].pub.lost &&
                    (worst < 0 || o->inst[a].pub.lost > o->inst[worst].pub.lost))
                    worst = a;
            if (worst < 0) break;
            remove_instance(o, worst);
        }
        new_instance(t, o, &t->cand[c]);
    }
}

/* The object's unit j of this round is a whole-frame list: associate and
 * commit, or copy it out for an untracked object. */
static void measure_whole(struct trk_tracker *t, struct obj *o, const struct trk_obj_result *res,
                          const struct trk_blob *list, int nb)
{
    if (!tracked(o)) {
        o->res = *res;
        if (!list || nb < 0) nb = 0;
        if (nb > o->def.blobs) nb = o->def.blobs;
        if (nb > TRK_MAX_BLOBS) nb = TRK_MAX_BLOBS;
        if (nb) memcpy(o->out, list, (size_t)nb * sizeof(*list));
        o->n_out = nb;
        return;
    }
    int nc = add_cands(t, o, 0, list, nb, -1, NULL);
    associate(t, o, nc, false);
    commit(t, o, nc, true, false);
}

/* Object o's instance regions (round 0, or grown in round 1): associate;
 * commit unless the regions do not explain what they saw (then o->rerun). */
static void measure_regions(struct trk_tracker *t, struct obj *o,
                            const struct trk_blob *const *blobs, const int *n_blobs)
{
    int nc = 0;
    for (int a = 0; a < o->n; a++) {
        const int j = o->unit0 + a;
        nc = add_cands(t, o, nc, blobs ? blobs[j] : NULL, n_blobs ? n_blobs[j] : 0, j,
                       &t->regions[j].roi);
    }
    associate(t, o, nc, true);
    for (int a = 0; a < o->n; a++) {
        struct inst *x = &o->inst[a];
        if (x->match < 0)
            o->rerun = true;
        else if (t->cand[x->match].cut)
            o->rerun = x->cut = true;
    }
    for (int c = 0; c < nc && !o->rerun && o->n < o->k; c++)
        if (!explained(t, o, &t->cand[c])) o->rerun = true;
    if (!o->rerun) commit(t, o, nc, false, true);
}

static int cmp_blob(const void *pa, const void *pb)
{
    const struct trk_blob *a = pa, *b = pb;
    return trk_blob_before(a, b) ? -1 : trk_blob_before(b, a) ? 1 : 0;
}

/* The frame is complete: each tracked object's result over its seen
 * instances, the public copies, and every object's track. */
static void finish(struct trk_tracker *t)
{
    for (int i = 0; i < t->n; i++) {
        struct obj *o = &t->objs[i];
        if (tracked(o)) {
            struct trk_obj_result r = { .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 };
            o->n_out = 0;
            for (int a = 0; a < o->n; a++) {
                const struct trk_blob *b = &o->inst[a].pub.blob;
                o->pub[a] = o->inst[a].pub;
                if (o->inst[a].pub.lost) continue;
                o->out[o->n_out++] = *b;
                if (!r.mass || b->x0 < r.x0) r.x0 = b->x0;
                if (!r.mass || b->y0 < r.y0) r.y0 = b->y0;
                if (!r.mass || b->x1 > r.x1) r.x1 = b->x1;
                if (!r.mass || b->y1 > r.y1) r.y1 = b->y1;
                r.mass += b->mass;
                r.sum_x += b->sum_x;
                r.sum_y += b->sum_y;
                r.sum_xx += b->sum_xx;
                r.sum_yy += b->sum_yy;
                r.sum_xy += b->sum_xy;
            }
            qsort(o->out, (size_t)o->n_out, sizeof(*o->out), cmp_blob);
            o->res = r;
            o->n_pub = o->n;
        } else {
            o->n_pub = 0;
        }
        struct trk_track *k = &t->tracks[i];
        k->found = o->res.mass >= o->def.min_mass;
        if (!k->found) continue;
        k->seen = true;
        k->last_seen = t->seq;
        k->mass = o->res.mass;
        trk_centroid(o->res.sum_x, o->res.sum_y, o->res.mass, &k->cx, &k->cy);
    }
    t->was_full = t->plan_full;
    t->frame_no++;
    t->stats.frames++;
    t->stats.full += t->plan_full;
    t->stats.grown += t->rounds >= 2;
    t->stats.whole += t->rounds >= 3;
    t->round = -1;
}

int trk_tracker_measure(struct trk_tracker *t, const struct trk_obj_result *res,
                        const struct trk_blob *const *blobs, const int *n_blobs, int n,
                        struct trk_tracker_plan *plan)
{
    if (t->round < 0) return TRK_EINVAL;
    /* Round 0 is as planned, round 1 over grown regions, round 2 a
     * full-frame pass (the whole frame for the objects still unexplained). */
    const bool full = t->round == 0 ? t->plan_full : t->round == 2;
    if (n != (full ? t->n : t->n_regions) || (n > 0 && !res)) return TRK_EINVAL;
    bool again = false;
    for (int i = 0; i < t->n; i++) {
        struct obj *o = &t->objs[i];
        if (!o->units) continue;
        const int j = o->unit0;
        if (o->whole)
            measure_whole(t, o, &res[j], blobs ? blobs[j] : NULL, n_blobs ? n_blobs[j] : 0);
        else
            measure_regions(t, o, blobs, n_blobs);
        again |= o->rerun;
    }
    if (!again) {
        finish(t);
        return 0;
    }
    /* The next round, for each object this one did not explain: after its
     * round-0 regions, its regions grown (round 1); after those, the whole
     * frame. Every object in a round is in the same case: round 0 measured
     * rerun objects in regions, round 1 in grown ones. */
    const bool grow = t->round == 0;
    t->round++;
    t->rounds++;
    struct trk_region *prev = t->prev;
    if (grow) memcpy(prev, t->regions, (size_t)t->n_regions * sizeof(*prev));
    t->n_regions = 0;
    for (int i = 0; i < t->n; i++) {
        struct obj *o = &t->objs[i];
        const int p0 = o->unit0;
        o->units = 0;
        if (!o->rerun) continue;
        o->rerun = false;
        o->unit0 = t->n_regions;
        if (grow) {
            o->grown = true;
            for (int a = 0; a < o->n; a++)
                t->regions[t->n_regions++] =
                    (struct trk_region){ .obj = i,
                                         .roi = grown_region(t, &o->inst[a], &prev[p0 + a].roi) };
            t->stats.grown_objects++;
        } else {
            /* The whole frame: its unit is the object's own in a full-frame
             * pass (the same result and list as a whole-frame region, for a
             * fraction of the cost); the others have no unit this round. */
            o->whole = true;
            o->unit0 = i;
            t->stats.whole_objects++;
        }
        o->units = grow ? t->n_regions - o->unit0 : 1;
    }
    *plan =
        grow ? (struct trk_tracker_plan){ .full = false, .n = t->n_regions, .regions = t->regions }
             : (struct trk_tracker_plan){ .full = true };
    return 1;
}

const struct trk_obj_result *trk_tracker_result(const struct trk_tracker *t, int i)
{
    return i >= 0 && i < t->n ? &t->objs[i].res : NULL;
}

int trk_tracker_blobs(const struct trk_tracker *t, int i, const struct trk_blob **blobs)
{
    *blobs = NULL;
    if (i < 0 || i >= t->n) return 0;
    *blobs = t->objs[i].out;
    return t->objs[i].n_out;
}

int trk_tracker_instances(const struct trk_tracker *t, int i, const struct trk_instance **v)
{
    *v = NULL;
    if (i < 0 || i >= t->n) return 0;
    *v = t->objs[i].pub;
    return t->objs[i].n_pub;
}

int trk_tracker_count(const struct trk_tracker *t)
{
    return t->n;
}

const struct trk_track *trk_tracker_track(const struct trk_tracker *t, int i)
{
    return i >= 0 && i < t->n ? &t->tracks[i] : NULL;
}

bool trk_tracker_was_full(const struct trk_tracker *t)
{
    return t->was_full;
}

int trk_tracker_rounds(const struct trk_tracker *t)
{
    return t->rounds;
}

void trk_tracker_get_stats(const struct trk_tracker *t, struct trk_tracker_stats *out)
{
    *out = t->stats;
}

int trk_track_mode_parse(const char *s)
{
    if (!strcmp(s, "roi")) return TRK_TRACK_ROI;
    if (!strcmp(s, "full")) return TRK_TRACK_FULL;
    if (!strcmp(s, "auto")) return TRK_TRACK_AUTO;
    return -1;
}

/* ------------------------------------------------------------ state */

#define STATE_TAG 0x54524b54u /* "TKRT" little-endian: a tracker's state */

void trk_tracker_save(const struct trk_tracker *t, struct trk_bytes *b)
{
    const uint32_t head[3] = { STATE_TAG, (uint32_t)sizeof(struct inst), (uint32_t)t->n };
    trk_bytes_put(b, head, sizeof(head));
    trk_bytes_put(b, &t->next_id, sizeof(t->next_id));
    trk_bytes_put(b, &t->frame_no, sizeof(t->frame_no));
    for (int i = 0; i < t->n; i++) {
        const struct obj *o = &t->objs[i];
        const int32_t v[2] = { o->n, o->last_full };
        trk_bytes_put(b, v, sizeof(v));
        trk_bytes_put(b, &t->tracks[i], sizeof(t->tracks[i]));
        trk_bytes_put(b, o->inst, (size_t)o->n * sizeof(*o->inst));
    }
}

/* A loaded instance the step can take: its numbers finite, its sizes and
 * box within what a frame can hold (a damaged file must not steer the
 * regions out of range). */
static bool sane(const struct inst *x, uint64_t next_id)
{
    const double d[] = {
        x->x,      x->y,      x->px,      x->py,        x->err,       x->ref,
        x->th,     x->pth,    x->mth,     x->mw,        x->pub.cx,    x->pub.cy,
        x->pub.vx, x->pub.vy, x->pub.vth, x->pub.major, x->pub.minor, x->pub.orientation
    };
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        if (!isfinite(d[i])) return false;
    const int32_t lim = 1 << 20;
    const int32_t v[] = { x->w,  x->h,           x->gw,          x->gh,          x->fw,
                          x->fh, x->pub.blob.x0, x->pub.blob.y0, x->pub.blob.x1, x->pub.blob.y1 };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (v[i] < -lim || v[i] > lim) return false;
    return x->pub.id && x->pub.id < next_id && x->grow >= 1 && x->grow <= GROW_MAX;
}

int trk_tracker_load(struct trk_tracker *t, struct trk_rd *r, uint64_t delta)
{
    uint32_t head[3] = { 0 };
    const size_t at = r->off;
    trk_rd_get(r, head, sizeof(head));
    /* A wrong word is reported at its own offset. */
    const int wrong = r->bad                           ? -1
                      : head[0] != STATE_TAG           ? 0
                      : head[1] != sizeof(struct inst) ? 1
                      : head[2] != (uint32_t)t->n      ? 2
                                                       : -1;
    static const char *const why[3] = { "no tracker state here",
                                        "a tracker state of another build's layout",
                                        "the tracker state's object count is not the first set's" };
    if (wrong >= 0) {
        r->off = at + 4 * (size_t)wrong;
        trk_rd_fail(r, why[wrong]);
    }
    trk_rd_get(r, &t->next_id, sizeof(t->next_id));
    trk_rd_get(r, &t->frame_no, sizeof(t->frame_no));
    if (!r->bad && !t->next_id) trk_rd_fail(r, "the tracker state's next id is 0");
    for (int i = 0; i < t->n && !r->bad; i++) {
        struct obj *o = &t->objs[i];
        int32_t v[2] = { 0 };
        const size_t at = r->off;
        trk_rd_get(r, v, sizeof(v));
        if (v[0] < 0 || v[0] > o->k || v[1] < 0 || v[1] > TRK_MAX_BLOBS) {
            r->off = at;
            trk_rd_fail(r, "an object's instance count is out of range");
            break;
        }
        trk_rd_get(r, &t->tracks[i], sizeof(t->tracks[i]));
        t->tracks[i].last_seen += delta;
        o->n = v[0];
        o->last_full = v[1];
        for (int a = 0; a < o->n && !r->bad; a++) {
            struct inst *x = &o->inst[a];
            const size_t at = r->off;
            trk_rd_get(r, x, sizeof(*x));
            if (!r->bad && !sane(x, t->next_id)) {
                r->off = at;
                trk_rd_fail(r, "an instance out of range (its id, a size, a number not finite)");
            }
            x->last_seq += delta;
        }
    }
    return r->bad ? TRK_EINVAL : 0;
}
