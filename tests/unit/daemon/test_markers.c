/* Marker assembly (daemon/markers.h) on spots placed from known poses:
 * the league's standard 16-id pattern (a blue centre, pink and green dots at
 * the standard offsets, ids in the order of its pattern image) at random
 * positions, headings and scales with centroid noise, in shuffled order,
 * beside a ball and stray blobs: every robot found once with its id, its
 * heading within the noise's reach and its centre exact; a missing or
 * wrongly coloured dot gives no marker (never a wrong id); two touching
 * robots keep their own dots; the scale from the centre's area; colour
 * codes at every angle, with the wrong order or a gap rejected; the
 * follower's state saved mid-run (a track coasting) and loaded into a fresh
 * follower steps as the saved one bit for bit (daemon/state.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "markers.h"
#include "state.h"

enum { BLUE = 0, PINK = 1, GREEN = 2, ORANGE = 3, RED = 4 };

/* Slots: front-left, front-right, back-left, back-right (mm, +x forward,
 * +y left); ids 0..15: P = pink, G = green in that slot order. */
static const double DOT_X[4] = { 35.0, 35.0, -54.772, -54.772 };
static const double DOT_Y[4] = { 54.772, -54.772, 35.0, -35.0 };
static const char *const STD16[16] = { "PPGP", "GPGP", "GGGP", "PGGP", "PPPG", "GPPG",
                                       "GGPG", "PGPG", "GGGG", "PPPP", "PPGG", "GGPP",
                                       "GPGG", "GPPP", "PGGG", "PGPP" };

static void standard_pattern(struct trk_pattern *p)
{
    memset(p, 0, sizeof *p);
    strcpy(p->name, "blue");
    p->kind = TRK_PATTERN_DOTS;
    p->centre = BLUE;
    p->centre_mm = 50.0;
    p->n_dots = 4;
    memcpy(p->dot_x, DOT_X, sizeof DOT_X);
    memcpy(p->dot_y, DOT_Y, sizeof DOT_Y);
    p->n_ids = 16;
    for (int i = 0; i < 16; i++) {
        p->id[i] = i;
        for (int d = 0; d < 4; d++)
            p->id_colors[i][d] = STD16[i][d] == 'P' ? PINK : GREEN;
    }
}

static unsigned long long rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
    double u = uniform() + 1e-12, v = uniform();
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* Appends a robot's five spots: centre (x, y) px, heading deg (CCW on
 * screen), scale px/mm, dot colours per slot, centroid noise sigma px. */
static size_t add_robot(struct trk_spot *s, size_t n, double x, double y, double heading,
                        double scale, const char *colours, double sigma)
{
    double th = heading * M_PI / 180, co = cos(th), si = sin(th);
    s[n++] = (struct trk_spot){ x, y, M_PI * pow(25.0 * scale, 2), BLUE };
    for (int d = 0; d < 4; d++) {
        double wx = co * DOT_X[d] - si * DOT_Y[d], wy = si * DOT_X[d] + co * DOT_Y[d];
        s[n++] =
            (struct trk_spot){ x + wx * scale + sigma * gauss(), y - wy * scale + sigma * gauss(),
                               M_PI * pow(20.0 * scale, 2), colours[d] == 'P' ? PINK : GREEN };
    }
    return n;
}

static void shuffle(struct trk_spot *s, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(uniform() * (double)i);
        struct trk_spot t = s[i - 1];
        s[i - 1] = s[j];
        s[j] = t;
    }
}

static double angle_diff(double a, double b)
{
    double d = fmod(fabs(a - b), 360.0);
    return d > 180 ? 360 - d : d;
}

/* 16 robots on a grid, random headings, the scale from the centre's area. */
static void test_standard_field(void)
{
    struct trk_pattern p;
    standard_pattern(&p);
    for (int round = 0; round < 200; round++) {
        struct trk_spot spots[128];
        size_t n = 0;
        double scale = 0.2 + 0.3 * uniform(), head[16];
        for (int id = 0; id < 16; id++) {
            head[id] = 360 * uniform();
            n = add_robot(spots, n, 200 + (id % 4) * 250 * scale * 4,
                          150 + (id / 4) * 250 * scale * 4, head[id], scale, STD16[id], 0.15);
        }
        spots[n++] = (struct trk_spot){ 20, 20, 300, ORANGE }; /* the ball */
        spots[n++] = (struct trk_spot){ 40, 25, 50, PINK };    /* stray dots */
        spots[n++] = (struct trk_spot){ 60, 25, 50, GREEN };
        shuffle(spots, n);
        struct trk_marker m[32];
        size_t k = trk_markers_find(&p, 1, spots, n, m, 32);
        CHECKF(k == 16, "round %d: %zu markers", round, k);
        int seen[16] = { 0 };
        for (size_t i = 0; i < k && i < 32; i++) {
            int id = m[i].id;
            CHECK(id >= 0 && id < 16);
            if (id < 0 || id >= 16) continue;
            seen[id]++;
            double ex = 200 + (id % 4) * 250 * scale * 4, ey = 150 + (id / 4) * 250 * scale * 4;
            CHECK(m[i].cx == ex && m[i].cy == ey);
            /* dots 40-65 mm out: 0.15 px noise at >= 0.2 px/mm moves the
             * fitted axis by well under 2 degrees */
            CHECKF(angle_diff(m[i].heading, head[id]) < 2.0, "id %d: %.2f vs %.2f", id,
                   m[i].heading, head[id]);
            CHECK(m[i].heading >= 0 && m[i].heading < 360);
            CHECK(m[i].confidence > 0.5 && m[i].confidence <= 1);
            CHECK(fabs(m[i].px_per_mm - scale) < 1e-9 * scale);
        }
        for (int id = 0; id < 16; id++)
            CHECKF(seen[id] == 1, "id %d seen %d times", id, seen[id]);
    }
}

/* Exact spots: heading exact, confidence 1; headings in every quadrant. */
static void test_exact(void)
{
    struct trk_pattern p;
    standard_pattern(&p);
    const double heads[] = { 0, 30, 90, 135, 180, 225, 270, 359.5 };
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
        struct trk_spot s[5];
        add_robot(s, 0, 500, 400, heads[h], 1.0, STD16[5], 0);
        struct trk_marker m;
        CHECK(trk_markers_find(&p, 1, s, 5, &m, 1) == 1);
        CHECK(m.id == 5);
        CHECKF(angle_diff(m.heading, heads[h]) < 1e-9, "%.12f vs %.1f", m.heading, heads[h]);
        CHECK(m.confidence > 1 - 1e-9);
    }
}

/* A dot missing or of a colour no id has there: no marker, never a wrong
 * id; a fixed scale given instead of the centre's area. */
static void test_missing_and_wrong(void)
{
    struct trk_pattern p;
    standard_pattern(&p);
    struct trk_spot s[8];
    add_robot(s, 0, 300, 300, 10, 0.5, STD16[3], 0);
    struct trk_marker m;
    CHECK(trk_markers_find(&p, 1, s, 4, &m, 1) == 0); /* last dot gone */
    s[2].object = ORANGE;                             /* not a dot colour */
    CHECK(trk_markers_find(&p, 1, s, 5, &m, 1) == 0);
    add_robot(s, 0, 300, 300, 10, 0.5, STD16[3], 0);
    s[0].mass = 1; /* a centre far too small: its scale finds no dots */
    CHECK(trk_markers_find(&p, 1, s, 5, &m, 1) == 0);
    p.px_per_mm = 0.5; /* a fixed scale does not read the centre's area */
    CHECK(trk_markers_find(&p, 1, s, 5, &m, 1) == 1 && m.id == 3);
    /* a pattern whose id table lacks the colours seen */
    standard_pattern(&p);
    add_robot(s, 0, 300, 300, 10, 0.5, STD16[3], 0);
    p.n_ids = 3;
    CHECK(trk_markers_find(&p, 1, s, 5, &m, 1) == 0);
}

/* Two robots touching (centres 180 mm apart): each keeps its own dots; two
 * patterns (blue and yellow teams) share the dot colours. */
static void test_touching_teams(void)
{
    struct trk_pattern p[2];
    standard_pattern(&p[0]);
    standard_pattern(&p[1]);
    strcpy(p[1].name, "yellow");
    p[1].centre = RED;
    for (int round = 0; round < 100; round++) {
        struct trk_spot s[10];
        double scale = 0.3, h0 = 360 * uniform(), h1 = 360 * uniform();
        size_t n = add_robot(s, 0, 300, 300, h0, scale, STD16[7], 0.1);
        n = add_robot(s, n, 300 + 180 * scale, 300, h1, scale, STD16[12], 0.1);
        s[5].object = RED; /* the second robot is yellow */
        shuffle(s, n);
        struct trk_marker m[4];
        CHECK(trk_markers_find(p, 2, s, n, m, 4) == 2);
        CHECK(m[0].pattern == 0 && m[0].id == 7 && angle_diff(m[0].heading, h0) < 2);
        CHECK(m[1].pattern == 1 && m[1].id == 12 && angle_diff(m[1].heading, h1) < 2);
    }
}

/* Colour codes: red-green-blue in a row at every angle. */
static void test_codes(void)
{
    struct trk_pattern p;
    memset(&p, 0, sizeof p);
    p.kind = TRK_PATTERN_CODE;
    p.n_code = 3;
    p.code[0] = RED;
    p.code[1] = GREEN;
    p.code[2] = BLUE;
    p.code_id = 42;
    for (int a = 0; a < 360; a += 15) {
        double th = a * M_PI / 180, step = 12, r2 = 100; /* discs of radius 5.64, touching */
        struct trk_spot s[4] = {
            { 200, 200, r2, RED },
            { 200 + step * cos(th), 200 - step * sin(th), r2, GREEN },
            { 200 + 2 * step * cos(th), 200 - 2 * step * sin(th), r2, BLUE },
            { 200 - step * cos(th), 200 + step * sin(th), r2, BLUE }, /* behind: not a code */
        };
        struct trk_marker m;
        CHECK(trk_markers_find(&p, 1, s, 4, &m, 1) == 1);
        CHECK(m.id == 42 && angle_diff(m.heading, a) < 1e-9 && m.confidence > 1 - 1e-9);
        CHECK(fabs(m.cx - (200 + step * cos(th))) < 1e-2);
        /* the wrong order, and a gap too wide, give none */
        s[1].object = BLUE;
        s[2].object = GREEN;
        s[3].object = RED;
        CHECK(trk_markers_find(&p, 1, s, 3, &m, 1) == 0);
        s[1].object = GREEN;
        s[2].object = BLUE;
        s[2].x += 40 * cos(th);
        s[2].y -= 40 * sin(th);
        CHECK(trk_markers_find(&p, 1, s, 3, &m, 1) == 0);
    }
}

/* Following: two robots with the same pattern, one turning; a missed dot
 * for 3 frames keeps the track_id (coasting reported with lost > 0 at its
 * predicted pose), past coast_frames a new one; velocities converge. */
static void test_follow(void)
{
    struct trk_pattern p;
    standard_pattern(&p);
    struct trk_marker_follower *f = trk_markers_follower_create(5);
    CHECK(f != NULL);
    if (!f) return;
    uint64_t first[2] = { 0, 0 };
    for (int frame = 0; frame < 40; frame++) {
        struct trk_spot s[10];
        double x0 = 100 + 2.0 * frame, h1 = fmod(10 + 3.0 * frame, 360);
        size_t n = add_robot(s, 0, x0, 200, 90, 0.4, STD16[1], 0);
        bool hide = frame >= 10 && frame < 13; /* a dot missed: no marker */
        bool gone = frame >= 20 && frame < 27; /* longer than coast_frames */
        if (!gone) n = add_robot(s, n, 400, 300 - 1.0 * frame, h1, 0.4, STD16[2], 0);
        if (hide) n -= 1;
        struct trk_marker m[8];
        size_t k = trk_markers_find(&p, 1, s, n, m, 8);
        size_t all = trk_markers_follow(f, m, k, 8);
        CHECK(k == (gone ? 1u : hide ? 1u : 2u));
        for (size_t i = 0; i < all; i++) {
            int r = m[i].id == 1 ? 0 : 1;
            if (frame == 0) first[r] = m[i].track_id;
            if (r == 0) CHECK(m[i].track_id == first[0]);
            if (r == 1 && frame < 20) CHECKF(m[i].track_id == first[1], "frame %d", frame);
            if (r == 1 && frame >= 27) CHECK(m[i].track_id > first[0] && m[i].track_id > first[1]);
            CHECK(i < k ? m[i].lost == 0 : m[i].lost > 0);
            if (r == 1 && hide) /* coasting: predicted on its path */
                CHECKF(fabs(m[i].cy - (300 - 1.0 * frame)) < 0.6 &&
                           angle_diff(m[i].heading, h1) < 1.5,
                       "frame %d: %.2f %.2f", frame, m[i].cy, m[i].heading);
            if (frame > 8 && r == 0 && m[i].lost == 0) CHECK(fabs(m[i].vx - 2.0) < 0.01);
            if (frame > 8 && frame < 10 && r == 1) CHECK(fabs(m[i].vheading - 3.0) < 0.05);
        }
        CHECK(all == k + (hide ? 1u : 0u) + (gone && frame < 25 ? 1u : 0u));
    }
    trk_markers_follower_destroy(f);
}

/* Frame f's markers of test_follow's scene into m; how many. */
static size_t follow_scene(const struct trk_pattern *p, int frame, struct trk_marker *m)
{
    struct trk_spot s[10];
    size_t n = add_robot(s, 0, 100 + 2.0 * frame, 200, 90, 0.4, STD16[1], 0);
    if (frame < 20 || frame >= 27)
        n = add_robot(s, n, 400, 300 - 1.0 * frame, fmod(10 + 3.0 * frame, 360), 0.4, STD16[2], 0);
    if (frame >= 10 && frame < 13) n -= 1;
    return trk_markers_find(p, 1, s, n, m, 8);
}

static bool same_markers(const struct trk_marker *a, const struct trk_marker *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const double da[] = { a[i].cx, a[i].cy, a[i].heading, a[i].vx, a[i].vy, a[i].vheading };
        const double db[] = { b[i].cx, b[i].cy, b[i].heading, b[i].vx, b[i].vy, b[i].vheading };
        if (a[i].track_id != b[i].track_id || a[i].lost != b[i].lost || memcmp(da, db, sizeof(da)))
            return false;
    }
    return true;
}

static void test_follow_state(void)
{
    struct trk_pattern p;
    standard_pattern(&p);
    struct trk_marker_follower *f = trk_markers_follower_create(5),
                               *g = trk_markers_follower_create(5),
                               *h = trk_markers_follower_create(5);
    CHECK(f && g && h);
    if (!f || !g || !h) return;
    struct trk_marker m[8], mg[8], mh[8];
    for (int frame = 0; frame < 11; frame++)
        trk_markers_follow(f, m, follow_scene(&p, frame, m), 8);
    struct trk_bytes st = { 0 };
    trk_markers_follower_save(f, &st);
    struct trk_rd rd = { .p = st.p, .len = st.len };
    CHECK(!st.failed && trk_markers_follower_load(g, &rd, 1) == 0 && rd.off == st.len);
    bool same = true, fresh_same = true;
    for (int frame = 11; frame < 40; frame++) {
        const size_t k = follow_scene(&p, frame, m);
        memcpy(mg, m, sizeof(m));
        memcpy(mh, m, sizeof(m));
        const size_t a = trk_markers_follow(f, m, k, 8), b = trk_markers_follow(g, mg, k, 8),
                     c = trk_markers_follow(h, mh, k, 8);
        same = same && a == b && same_markers(m, mg, a);
        fresh_same = fresh_same && a == c && same_markers(m, mh, a);
    }
    CHECK(same);
    CHECK(!fresh_same); /* the test can tell */
    struct trk_rd cut = { .p = st.p, .len = st.len - 1 };
    CHECK(trk_markers_follower_load(h, &cut, 1) == TRK_EINVAL && cut.bad);
    struct trk_rd no_pattern = { .p = st.p, .len = st.len }; /* its tracks' pattern 0 */
    CHECK(trk_markers_follower_load(h, &no_pattern, 0) == TRK_EINVAL && no_pattern.bad_off > 0);
    free(st.p);
    trk_markers_follower_destroy(f);
    trk_markers_follower_destroy(g);
    trk_markers_follower_destroy(h);
}

int main(void)
{
    test_follow();
    test_follow_state();
    test_exact();
    test_standard_field();
    test_missing_and_wrong();
    test_touching_teams();
    test_codes();
    return check_exit("markers");
}
