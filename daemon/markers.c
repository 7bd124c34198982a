/* Markers from spots: the rules are in markers.h. */
#include "markers.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

#define DEG (180.0 / M_PI)
/* Spots whose used flags fit on the stack: a frame's listed blobs are at
 * most config/objects.h's TRK_FRAME_ITEMS_MAX (1024) results. */
#define TRK_MARKERS_SPOTS_STACK 1024

/* Angle of (x, y) in degrees, [0, 360). */
static double angle_deg(double x, double y)
{
    double a = atan2(y, x) * DEG;
    if (a < 0) a += 360.0;
    return a >= 360.0 ? 0.0 : a;
}

/* fmin and fmax for an accumulator a that is never NaN (b NaN: a, as
 * fmin and fmax give), inlined: libm's are calls, many per frame here. */
static inline double lesser(double a, double b)
{
    return b < a ? b : a;
}

static inline double greater(double a, double b)
{
    return b > a ? b : a;
}

static double disc_radius(double mass)
{
    return sqrt(mass / M_PI);
}

/* ------------------------------------------------------- centre + dots */

/* A dot candidate: the spot and its offset from the centre in the
 * pattern's maths frame (y up), with its angle. */
struct cand {
    size_t spot;
    double ox, oy, ang, miss;
};

static int by_angle(const void *a, const void *b)
{
    const struct cand *p = a, *q = b;
    if (p->ang != q->ang) return p->ang < q->ang ? -1 : 1;
    return p->spot < q->spot ? -1 : p->spot > q->spot;
}

static int by_miss(const void *a, const void *b)
{
    const struct cand *p = a, *q = b;
    if (p->miss != q->miss) return p->miss < q->miss ? -1 : 1;
    return p->spot < q->spot ? -1 : p->spot > q->spot;
}

/* Sorts a few candidates by cmp: insertion, as qsort would order them
 * (both orders are total: the spot index breaks ties), without its calls
 * and set-up for the handful a centre has. */
static void sort_cands(struct cand *v, size_t n, int (*cmp)(const void *, const void *))
{
    for (size_t i = 1; i < n; i++) {
        struct cand t = v[i];
        size_t j = i;
        for (; j > 0 && cmp(&v[j - 1], &t) > 0; j--)
            v[j] = v[j - 1];
        v[j] = t;
    }
}

/* dot[obj]: object obj is one of p's dot colours (objects >= TRK_MAX_OBJECTS
 * are none), looked up once per pattern and call rather than per spot. */
static void dot_colours(const struct trk_pattern *p, bool dot[TRK_MAX_OBJECTS])
{
    memset(dot, 0, TRK_MAX_OBJECTS * sizeof dot[0]);
    for (unsigned i = 0; i < p->n_ids; i++)
        for (unsigned d = 0; d < p->n_dots; d++)
            if (p->id_colors[i][d] < TRK_MAX_OBJECTS) dot[p->id_colors[i][d]] = true;
}

/* The template's slots ordered by angle: slot[k] is the k-th dot index. */
static void template_order(const struct trk_pattern *p, unsigned *slot)
{
    double ang[TRK_PATTERN_DOTS_MAX];
    for (unsigned d = 0; d < p->n_dots; d++) {
        slot[d] = d;
        ang[d] = angle_deg(p->dot_x[d], p->dot_y[d]);
    }
    for (unsigned i = 1; i < p->n_dots; i++) /* insertion sort: n <= 8 */
        for (unsigned j = i; j > 0 && ang[slot[j]] < ang[slot[j - 1]]; j--) {
            unsigned t = slot[j];
            slot[j] = slot[j - 1];
            slot[j - 1] = t;
        }
}

/* Collects the n dots for a centre; false when there are fewer. */
/* What every centre of one dots pattern shares, worked out once per
 * pattern and call: its dot colours, slot order and dot radii. */
struct plan {
    bool dot[TRK_MAX_OBJECTS];
    unsigned slot[TRK_PATTERN_DOTS_MAX];
    double dr[TRK_PATTERN_DOTS_MAX]; /* each dot's distance from the origin, mm */
    double dr_max, tol;
};

static void plan_pattern(const struct trk_pattern *p, struct plan *pl)
{
    dot_colours(p, pl->dot);
    template_order(p, pl->slot);
    pl->tol = p->tol > 0 ? p->tol : 0.4;
    pl->dr_max = 0;
    for (unsigned d = 0; d < p->n_dots; d++) {
        pl->dr[d] = hypot(p->dot_x[d], p->dot_y[d]);
        pl->dr_max = greater(pl->dr_max, pl->dr[d]);
    }
}

/* A centre's scale (px per mm), > 0 and finite, or 0: no marker. */
static double centre_scale(const struct trk_pattern *p, const struct trk_spot *c)
{
    double scale = p->px_per_mm > 0 ? p->px_per_mm : 2.0 * disc_radius(c->mass) / p->centre_mm;
    return scale > 0 && isfinite(scale) ? scale : 0;
}

/* The spots that may be dots, bucketed by position (cells of a fixed size,
 * each cell's spots in index order) so that a centre looks only at those
 * near it instead of at every spot: the same candidates, found sooner.
 * Off (every centre scans all spots) when a dot spot is not finite or the
 * spots do not fit the stack arrays. */
#define GRID_CELLS 4096
struct grid {
    bool on;
    int nx, ny;
    double x0, y0, cell;
    uint32_t start[GRID_CELLS + 1]; /* cell k's spots: item[start[k] .. start[k + 1]) */
    uint32_t item[TRK_MARKERS_SPOTS_STACK];
};

/* The cell column (or row) of v from origin o: clamped to [lo, hi]. */
static int cell_of(double v, double o, double cell, int lo, int hi)
{
    double t = floor((v - o) / cell);
    return t < lo ? lo : t > hi ? hi : (int)t;
}

/* Buckets the spots of any pattern's dot colours; the cell is the widest
 * ring a centre searches across (grown while the cells would not fit): a
 * centre looks at 2 x 2 or 3 x 3 cells, and a frame has few to count. */
static void grid_build(struct grid *g, const struct trk_pattern *pats, size_t n_pats,
                       const struct plan *plans, const struct trk_spot *spots, size_t n_spots)
{
    bool dot[TRK_MAX_OBJECTS] = { false };
    double cell = 0, x1 = -INFINITY, y1 = -INFINITY;
    g->on = false;
    g->x0 = g->y0 = INFINITY;
    if (n_spots > TRK_MARKERS_SPOTS_STACK) return;
    for (size_t pi = 0; pi < n_pats; pi++) {
        if (pats[pi].kind != TRK_PATTERN_DOTS) continue;
        for (size_t o = 0; o < TRK_MAX_OBJECTS; o++)
            dot[o] |= plans[pi].dot[o];
        for (size_t s = 0; s < n_spots; s++)
            if (spots[s].object == pats[pi].centre)
                cell = greater(cell, 2 * plans[pi].dr_max * centre_scale(&pats[pi], &spots[s]) *
                                         (1 + plans[pi].tol));
    }
    for (size_t s = 0; s < n_spots; s++) {
        const struct trk_spot *p = &spots[s];
        if (p->object >= TRK_MAX_OBJECTS || !dot[p->object]) continue;
        if (!isfinite(p->x) || !isfinite(p->y)) return;
        g->x0 = lesser(g->x0, p->x), g->y0 = lesser(g->y0, p->y);
        x1 = greater(x1, p->x), y1 = greater(y1, p->y);
    }
    if (!(cell >= 1) || !isfinite(cell) || !isfinite(g->x0)) return;
    for (;; cell *= 2) {
        double nx = floor((x1 - g->x0) / cell) + 1, ny = floor((y1 - g->y0) / cell) + 1;
        if (nx * ny <= GRID_CELLS) {
            g->nx = (int)nx, g->ny = (int)ny;
            break;
        }
    }
    g->cell = cell;
    memset(g->start, 0, (size_t)(g->nx * g->ny + 1) * sizeof(g->start[0]));
    uint32_t at[TRK_MARKERS_SPOTS_STACK];
    for (size_t s = 0; s < n_spots; s++) {
        if (spots[s].object >= TRK_MAX_OBJECTS || !dot[spots[s].object]) continue;
        int k = cell_of(spots[s].y, g->y0, cell, 0, g->ny - 1) * g->nx +
                cell_of(spots[s].x, g->x0, cell, 0, g->nx - 1);
        at[s] = (uint32_t)k;
        g->start[k + 1]++;
    }
    for (int k = 0; k < g->nx * g->ny; k++)
        g->start[k + 1] += g->start[k];
    uint32_t fill[GRID_CELLS];
    memcpy(fill, g->start, (size_t)(g->nx * g->ny) * sizeof(fill[0]));
    for (size_t s = 0; s < n_spots; s++)
        if (spots[s].object < TRK_MAX_OBJECTS && dot[spots[s].object])
            g->item[fill[at[s]]++] = (uint32_t)s;
    g->on = true;
}

/* Spot s as a candidate dot of the centre c: false when it is not one. */
static bool candidate(const struct trk_spot *spots, size_t s, const bool *used, const bool *dot,
                      const struct trk_spot *c, const double *rad, unsigned n_dots, double lo,
                      double hi, struct cand *out)
{
    if (used[s] || spots[s].object >= TRK_MAX_OBJECTS || !dot[spots[s].object]) return false;
    double ox = spots[s].x - c->x, oy = c->y - spots[s].y; /* y up */
    /* Clearly out of the ring by the squared distance (a margin far above
     * the rounding of either form): no hypot for the spots of the robots
     * around. */
    double d2 = ox * ox + oy * oy;
    if (d2 > hi * hi * (1 + 1e-9) || d2 < lo * lo * (1 - 1e-9)) return false;
    double r = hypot(ox, oy);
    if (r < lo || r > hi) return false;
    double miss = INFINITY;
    for (unsigned d = 0; d < n_dots; d++) {
        double m = fabs(r - rad[d]);
        miss = lesser(miss, m);
    }
    *out = (struct cand){ s, ox, oy, 0, miss };
    return true;
}

/* The candidates near c from the grid, at most CANDS_MAX; -1 when there
 * are more (the scan in spot order then decides which CANDS_MAX). */
#define CANDS_MAX 64
static int grid_cands(const struct grid *g, const struct trk_spot *spots, const bool *used,
                      const bool *dot, const struct trk_spot *c, const double *rad, unsigned n_dots,
                      double lo, double hi, struct cand *out)
{
    /* A 1 px margin: a spot within hi of c is never in a cell left out by
     * the rounding of the cell arithmetic. */
    int cx0 = cell_of(c->x - hi - 1, g->x0, g->cell, 0, g->nx);
    int cx1 = cell_of(c->x + hi + 1, g->x0, g->cell, -1, g->nx - 1);
    int cy0 = cell_of(c->y - hi - 1, g->y0, g->cell, 0, g->ny);
    int cy1 = cell_of(c->y + hi + 1, g->y0, g->cell, -1, g->ny - 1);
    int n = 0;
    for (int y = cy0; y <= cy1; y++)
        for (int x = cx0; x <= cx1; x++) {
            int k = y * g->nx + x;
            for (uint32_t i = g->start[k]; i < g->start[k + 1]; i++) {
                struct cand cd;
                if (!candidate(spots, g->item[i], used, dot, c, rad, n_dots, lo, hi, &cd)) continue;
                if (n == CANDS_MAX) return -1;
                out[n++] = cd;
            }
        }
    return n;
}

/* Collects the n dots for a centre; false when there are fewer. */
static bool collect_dots(const struct trk_pattern *p, const struct plan *pl, const struct grid *g,
                         const struct trk_spot *spots, size_t n_spots, const bool *used,
                         const struct trk_spot *c, double scale, struct cand *out)
{
    struct cand cands[CANDS_MAX];
    double rad[TRK_PATTERN_DOTS_MAX], rmin = INFINITY, rmax = 0, tol = pl->tol;
    for (unsigned d = 0; d < p->n_dots; d++) {
        rad[d] = pl->dr[d] * scale;
        rmin = lesser(rmin, rad[d]);
        rmax = greater(rmax, rad[d]);
    }
    double lo = rmin * (1 - tol), hi = rmax * (1 + tol);
    int found = g->on && isfinite(c->x) && isfinite(c->y) && isfinite(hi)
                    ? grid_cands(g, spots, used, pl->dot, c, rad, p->n_dots, lo, hi, cands)
                    : -1;
    size_t n = found >= 0 ? (size_t)found : 0;
    for (size_t s = 0; found < 0 && s < n_spots && n < CANDS_MAX; s++)
        n += candidate(spots, s, used, pl->dot, c, rad, p->n_dots, lo, hi, &cands[n]);
    if (n < p->n_dots) return false;
    sort_cands(cands, n, by_miss);
    memcpy(out, cands, p->n_dots * sizeof out[0]);
    /* Angles only for the dots kept: the rest never need one. */
    for (unsigned i = 0; i < p->n_dots; i++)
        out[i].ang = angle_deg(out[i].ox, out[i].oy);
    sort_cands(out, p->n_dots, by_angle);
    return true;
}

/* Pairing k's sums of the template's cross and dot products with the
 * seen dots (the rotation's sine and cosine, scaled). */
static void pairing_sums(const struct trk_pattern *p, const unsigned *slot, const struct cand *seen,
                         double scale, unsigned k, double *sc, double *sd)
{
    unsigned n = p->n_dots;
    *sc = 0, *sd = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned d = slot[(i + k) % n];
        double tx = p->dot_x[d] * scale, ty = p->dot_y[d] * scale;
        *sc += tx * seen[i].oy - ty * seen[i].ox;
        *sd += tx * seen[i].ox + ty * seen[i].oy;
    }
}

/* Pairing k's summed squared residual at its best rotation (from its sums
 * sc, sd), and that rotation (radians). */
static double pairing_residual(const struct trk_pattern *p, const unsigned *slot,
                               const struct cand *seen, double scale, unsigned k, double sc,
                               double sd, double *theta)
{
    unsigned n = p->n_dots;
    double th = atan2(sc, sd), co = cos(th), si = sin(th), res = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned d = slot[(i + k) % n];
        double tx = p->dot_x[d] * scale, ty = p->dot_y[d] * scale;
        double ex = seen[i].ox - (co * tx - si * ty), ey = seen[i].oy - (si * tx + co * ty);
        res += ex * ex + ey * ey;
    }
    *theta = th;
    return res;
}

/* The best cyclic pairing of seen dots (by angle) with template slots (by
 * angle): its rotation (radians), the shift and the summed squared
 * residual. A pairing's residual at its best rotation is also
 * |o|^2 + |t|^2 - 2 hypot(sum t x o, sum t . o) without the trigonometry:
 * that closed form rules out the pairings clearly worse than the best
 * (by far more than the rounding of either form), and only the others get
 * the residual computed as before, in the same order, so the same pairing
 * wins with the same numbers. */
static double fit_rotation(const struct trk_pattern *p, const unsigned *slot,
                           const struct cand *seen, double scale, unsigned *best_shift,
                           double *best_res)
{
    unsigned n = p->n_dots;
    double approx[TRK_PATTERN_DOTS_MAX], sc[TRK_PATTERN_DOTS_MAX], sd[TRK_PATTERN_DOTS_MAX];
    double sq = 0, amin = INFINITY;
    for (unsigned i = 0; i < n; i++) {
        double tx = p->dot_x[i] * scale, ty = p->dot_y[i] * scale;
        sq += seen[i].ox * seen[i].ox + seen[i].oy * seen[i].oy + tx * tx + ty * ty;
    }
    for (unsigned k = 0; k < n; k++) {
        pairing_sums(p, slot, seen, scale, k, &sc[k], &sd[k]);
        approx[k] = sq - 2 * hypot(sc[k], sd[k]);
        amin = lesser(amin, approx[k]);
    }
    const double margin = 1e-9 * (sq + 1);
    const bool all = !isfinite(amin) || !isfinite(sq);
    double best_theta = 0;
    *best_res = INFINITY;
    for (unsigned k = 0; k < n; k++) {
        if (!all && approx[k] > amin + margin) continue;
        double th, res = pairing_residual(p, slot, seen, scale, k, sc[k], sd[k], &th);
        if (res < *best_res) {
            *best_res = res;
            *best_shift = k;
            best_theta = th;
        }
    }
    return best_theta;
}

/* The id whose colours match the slots exactly, or -1 (index into id[]). */
static int lookup_id(const struct trk_pattern *p, const unsigned *slot, const struct cand *seen,
                     unsigned shift, const struct trk_spot *spots)
{
    uint16_t colour[TRK_PATTERN_DOTS_MAX];
    for (unsigned i = 0; i < p->n_dots; i++)
        colour[slot[(i + shift) % p->n_dots]] = spots[seen[i].spot].object;
    for (unsigned i = 0; i < p->n_ids; i++)
        if (memcmp(p->id_colors[i], colour, p->n_dots * sizeof colour[0]) == 0) return (int)i;
    return -1;
}

static bool find_dots_marker(const struct trk_pattern *p, const struct plan *pl,
                             const struct grid *g, const struct trk_spot *spots, size_t n_spots,
                             bool *used, size_t c, struct trk_marker *m)
{
    double tol = pl->tol, scale = centre_scale(p, &spots[c]);
    if (scale == 0) return false;
    struct cand seen[TRK_PATTERN_DOTS_MAX];
    if (!collect_dots(p, pl, g, spots, n_spots, used, &spots[c], scale, seen)) return false;
    unsigned shift = 0;
    double res, theta = fit_rotation(p, pl->slot, seen, scale, &shift, &res);
    int idx = lookup_id(p, pl->slot, seen, shift, spots);
    if (idx < 0) return false;
    double mean_r = 0;
    for (unsigned d = 0; d < p->n_dots; d++)
        mean_r += pl->dr[d] * scale;
    mean_r /= p->n_dots;
    double rms = sqrt(res / p->n_dots), conf = 1.0 - rms / (tol * mean_r);
    *m = (struct trk_marker){ .id = p->id[idx],
                              .cx = spots[c].x,
                              .cy = spots[c].y,
                              .heading = angle_deg(cos(theta), sin(theta)),
                              .confidence = conf < 0   ? 0
                                            : conf > 1 ? 1
                                                       : conf,
                              .px_per_mm = scale };
    used[c] = true;
    for (unsigned i = 0; i < p->n_dots; i++)
        used[seen[i].spot] = true;
    return true;
}

/* --------------------------------------------------------- colour codes */

/* The next link of a chain: the nearest unused spot of colour obj adjacent
 * to spot prev and turning less than 45 degrees from (dx, dy); SIZE_MAX if
 * none. */
static size_t next_link(const struct trk_pattern *p, const struct trk_spot *spots, size_t n_spots,
                        const bool *used, const size_t *chain, unsigned len, uint16_t obj)
{
    double gap = p->gap > 0 ? p->gap : 1.5;
    const struct trk_spot *prev = &spots[chain[len - 1]];
    size_t best = SIZE_MAX;
    double best_d = INFINITY;
    for (size_t s = 0; s < n_spots; s++) {
        if (used[s] || spots[s].object != obj) continue;
        bool in_chain = false;
        for (unsigned i = 0; i < len; i++)
            in_chain |= chain[i] == s;
        if (in_chain) continue;
        double dx = spots[s].x - prev->x, dy = spots[s].y - prev->y, d = hypot(dx, dy);
        if (d > gap * (disc_radius(prev->mass) + disc_radius(spots[s].mass)) || d >= best_d)
            continue;
        if (len >= 2) {
            const struct trk_spot *pp = &spots[chain[len - 2]];
            double px = prev->x - pp->x, py = prev->y - pp->y;
            if (px * dx + py * dy <= cos(M_PI / 4) * hypot(px, py) * d) continue;
        }
        best = s;
        best_d = d;
    }
    return best;
}

static bool find_code_marker(const struct trk_pattern *p, const struct trk_spot *spots,
                             size_t n_spots, bool *used, size_t first, struct trk_marker *m)
{
    size_t chain[TRK_CODE_MAX] = { first };
    for (unsigned k = 1; k < p->n_code; k++) {
        chain[k] = next_link(p, spots, n_spots, used, chain, k, p->code[k]);
        if (chain[k] == SIZE_MAX) return false;
    }
    const struct trk_spot *a = &spots[chain[0]], *b = &spots[chain[p->n_code - 1]];
    double mass = 0, sx = 0, sy = 0, lx = b->x - a->x, ly = b->y - a->y, len = hypot(lx, ly);
    double worst = 0;
    for (unsigned k = 0; k < p->n_code; k++) {
        const struct trk_spot *s = &spots[chain[k]];
        mass += s->mass;
        sx += s->x * s->mass;
        sy += s->y * s->mass;
        if (k > 0 && k + 1 < p->n_code && len > 0) {
            double off = fabs((s->x - a->x) * ly - (s->y - a->y) * lx) / len;
            worst = fmax(worst, off / disc_radius(s->mass));
        }
    }
    double conf = 1.0 - worst;
    *m = (struct trk_marker){ .id = p->code_id,
                              .cx = sx / mass,
                              .cy = sy / mass,
                              .heading = angle_deg(lx, -ly),
                              .confidence = conf < 0   ? 0
                                            : conf > 1 ? 1
                                                       : conf };
    for (unsigned k = 0; k < p->n_code; k++)
        used[chain[k]] = true;
    return true;
}

/* ---------------------------------------------------------------- entry */

size_t trk_markers_find(const struct trk_pattern *pats, size_t n_pats, const struct trk_spot *spots,
                        size_t n_spots, struct trk_marker *out, size_t max)
{
    /* A frame's spots are its listed blobs (at most TRK_MARKERS_SPOTS_STACK):
     * their flags live on the stack, so a frame allocates nothing. */
    bool stack_used[TRK_MARKERS_SPOTS_STACK] = { false };
    bool *used = n_spots <= TRK_MARKERS_SPOTS_STACK ? stack_used : calloc(n_spots, sizeof *used);
    if (!used) return 0;
    struct plan plans[TRK_PATTERNS_MAX];
    struct grid grid;
    grid.on = false;
    bool dots = false;
    n_pats = n_pats < TRK_PATTERNS_MAX ? n_pats : TRK_PATTERNS_MAX;
    for (size_t pi = 0; pi < n_pats; pi++)
        if (pats[pi].kind == TRK_PATTERN_DOTS) plan_pattern(&pats[pi], &plans[pi]), dots = true;
    if (dots) grid_build(&grid, pats, n_pats, plans, spots, n_spots);
    size_t found = 0;
    for (size_t pi = 0; pi < n_pats; pi++) {
        const struct trk_pattern *p = &pats[pi];
        uint16_t lead = p->kind == TRK_PATTERN_DOTS ? p->centre : p->code[0];
        for (size_t s = 0; s < n_spots; s++) {
            if (used[s] || spots[s].object != lead) continue;
            struct trk_marker m;
            bool ok = p->kind == TRK_PATTERN_DOTS
                          ? find_dots_marker(p, &plans[pi], &grid, spots, n_spots, used, s, &m)
                          : find_code_marker(p, spots, n_spots, used, s, &m);
            if (!ok) continue;
            m.pattern = (uint16_t)pi;
            if (found < max) out[found] = m;
            found++;
        }
    }
    if (used != stack_used) free(used);
    return found;
}

/* ------------------------------------------------------------ following */

struct track {
    struct trk_marker m; /* last pose (predicted while lost) */
    bool taken;          /* matched this frame */
};

struct trk_marker_follower {
    struct track *t;
    size_t n, cap;
    uint32_t coast;
    uint64_t next_id;
};

struct trk_marker_follower *trk_markers_follower_create(uint32_t coast_frames)
{
    struct trk_marker_follower *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->coast = coast_frames ? coast_frames : 10;
    f->next_id = 1;
    return f;
}

void trk_markers_follower_destroy(struct trk_marker_follower *f)
{
    if (!f) return;
    free(f->t);
    free(f);
}

void trk_markers_follower_reset(struct trk_marker_follower *f)
{
    f->n = 0;
}

static double wrap180(double d)
{
    d = fmod(d, 360.0);
    if (d > 180) d -= 360;
    if (d <= -180) d += 360;
    return d;
}

/* The nearest untaken track of m's pattern and id to m, or NULL. */
static struct track *match(struct trk_marker_follower *f, const struct trk_marker *m)
{
    struct track *best = NULL;
    double best_d = INFINITY;
    for (size_t i = 0; i < f->n; i++) {
        struct track *t = &f->t[i];
        if (t->taken || t->m.pattern != m->pattern || t->m.id != m->id) continue;
        double d = hypot(t->m.cx - m->cx, t->m.cy - m->cy);
        if (d < best_d) {
            best = t;
            best_d = d;
        }
    }
    return best;
}

/* m measured on track t: velocities half way to the step, t takes m. */
static void update(struct track *t, struct trk_marker *m)
{
    double steps = t->m.lost + 1.0; /* frames since the last measurement */
    double last_x = t->m.cx - t->m.vx * t->m.lost, last_y = t->m.cy - t->m.vy * t->m.lost;
    double last_h = t->m.heading - t->m.vheading * t->m.lost;
    m->track_id = t->m.track_id;
    m->lost = 0;
    m->vx = t->m.vx + ((m->cx - last_x) / steps - t->m.vx) / 2;
    m->vy = t->m.vy + ((m->cy - last_y) / steps - t->m.vy) / 2;
    m->vheading = t->m.vheading + (wrap180(m->heading - last_h) / steps - t->m.vheading) / 2;
    t->m = *m;
    t->taken = true;
}

static bool reserve(struct trk_marker_follower *f, size_t n)
{
    if (n <= f->cap) return true;
    size_t cap = f->cap ? f->cap * 2 : 16;
    while (cap < n)
        cap *= 2;
    struct track *t = realloc(f->t, cap * sizeof *t);
    if (!t) return false;
    f->t = t;
    f->cap = cap;
    return true;
}

/* Coasts the tracks not taken, drops those lost too long, compacts. */
static void coast(struct trk_marker_follower *f)
{
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        struct track t = f->t[i];
        if (!t.taken) {
            if (++t.m.lost > f->coast) continue;
            t.m.cx += t.m.vx;
            t.m.cy += t.m.vy;
            t.m.heading = angle_deg(cos((t.m.heading + t.m.vheading) / DEG),
                                    sin((t.m.heading + t.m.vheading) / DEG));
        }
        t.taken = false;
        f->t[k++] = t;
    }
    f->n = k;
}

size_t trk_markers_follow(struct trk_marker_follower *f, struct trk_marker *m, size_t n, size_t max)
{
    if (!reserve(f, f->n + n)) {
        for (size_t i = 0; i < n; i++)
            m[i].track_id = 0;
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        struct track *t = match(f, &m[i]);
        if (t) {
            update(t, &m[i]);
            continue;
        }
        m[i].track_id = f->next_id++;
        m[i].lost = 0;
        m[i].vx = m[i].vy = m[i].vheading = 0;
        f->t[f->n++] = (struct track){ .m = m[i], .taken = true };
    }
    coast(f);
    size_t out = n;
    for (size_t i = 0; i < f->n && out < max; i++)
        if (f->t[i].m.lost > 0) m[out++] = f->t[i].m;
    return out;
}

#define FOLLOWER_TAG 0x544b524du /* "MRKT" little-endian: a follower's state */

void trk_markers_follower_save(const struct trk_marker_follower *f, struct trk_bytes *b)
{
    const uint32_t head[2] = { FOLLOWER_TAG, (uint32_t)sizeof(struct trk_marker) };
    const uint64_t n = f->n;
    trk_bytes_put(b, head, sizeof(head));
    trk_bytes_put(b, &f->next_id, sizeof(f->next_id));
    trk_bytes_put(b, &n, sizeof(n));
    /* Between frames no track is taken: the poses are the state. */
    for (size_t i = 0; i < f->n; i++)
        trk_bytes_put(b, &f->t[i].m, sizeof(f->t[i].m));
}

/* A loaded track the follower and the result can take. */
static bool sane(const struct trk_marker *m, uint64_t next_id, uint32_t coast, size_t n_patterns)
{
    const double d[] = { m->cx, m->cy, m->heading, m->vx, m->vy, m->vheading };
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        if (!isfinite(d[i])) return false;
    return m->track_id && m->track_id < next_id && m->lost <= coast && m->pattern < n_patterns;
}

int trk_markers_follower_load(struct trk_marker_follower *f, struct trk_rd *r, size_t n_patterns)
{
    uint32_t head[2] = { 0 };
    uint64_t next_id = 0, n = 0;
    const size_t head_at = r->off;
    trk_rd_get(r, head, sizeof(head));
    if (!r->bad && head[0] != FOLLOWER_TAG) {
        r->off = head_at;
        trk_rd_fail(r, "no marker follower state here");
    } else if (!r->bad && head[1] != sizeof(struct trk_marker)) {
        r->off = head_at + 4;
        trk_rd_fail(r, "a marker follower state of another build's layout");
    }
    trk_rd_get(r, &next_id, sizeof(next_id));
    const size_t at = r->off;
    trk_rd_get(r, &n, sizeof(n));
    if (r->bad) return TRK_EINVAL;
    if (!next_id || n > (r->len - r->off) / sizeof(struct trk_marker)) {
        r->off = at;
        trk_rd_fail(r, "the marker track count is larger than the file holds");
        return TRK_EINVAL;
    }
    if (!reserve(f, (size_t)n)) return TRK_ENOMEM;
    f->n = 0;
    f->next_id = next_id;
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        const size_t mat = r->off;
        struct track *t = &f->t[f->n++];
        *t = (struct track){ .taken = false };
        trk_rd_get(r, &t->m, sizeof(t->m));
        if (!r->bad && !sane(&t->m, next_id, f->coast, n_patterns)) {
            r->off = mat;
            trk_rd_fail(r, "a marker track out of range (its id, pattern, lost count or a number "
                           "not finite)");
        }
    }
    if (r->bad) f->n = 0;
    return r->bad ? TRK_EINVAL : 0;
}
