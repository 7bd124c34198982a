/* The tables of color.h's lab and rg spaces (trk_rgb_to_lab,
 * trk_rgb_to_rg): built once, in integers, from the written-out sRGB table,
 * an integer cube root and integer reciprocals, so the tables (and every
 * backend's bytes) are the same on every machine and compiler. */
#include "color.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* round(65535 * EOTF(v / 255)), the sRGB transfer function of IEC 61966-2-1
 * (tests/unit/gpu/test_lab.c recomputes it). */
static const uint16_t srgb_lin[256] = {
    0,     20,    40,    60,    80,    99,    119,   139,   159,   179,   199,   219,   241,
    264,   288,   313,   340,   367,   396,   427,   458,   491,   526,   562,   599,   637,
    677,   718,   761,   805,   851,   898,   947,   997,   1048,  1101,  1156,  1212,  1270,
    1330,  1391,  1453,  1517,  1583,  1651,  1720,  1790,  1863,  1937,  2013,  2090,  2170,
    2250,  2333,  2418,  2504,  2592,  2681,  2773,  2866,  2961,  3058,  3157,  3258,  3360,
    3464,  3570,  3678,  3788,  3900,  4014,  4129,  4247,  4366,  4488,  4611,  4736,  4864,
    4993,  5124,  5257,  5392,  5530,  5669,  5810,  5953,  6099,  6246,  6395,  6547,  6700,
    6856,  7014,  7174,  7335,  7500,  7666,  7834,  8004,  8177,  8352,  8528,  8708,  8889,
    9072,  9258,  9445,  9635,  9828,  10022, 10219, 10417, 10619, 10822, 11028, 11235, 11446,
    11658, 11873, 12090, 12309, 12530, 12754, 12980, 13209, 13440, 13673, 13909, 14146, 14387,
    14629, 14874, 15122, 15371, 15623, 15878, 16135, 16394, 16656, 16920, 17187, 17456, 17727,
    18001, 18277, 18556, 18837, 19121, 19407, 19696, 19987, 20281, 20577, 20876, 21177, 21481,
    21787, 22096, 22407, 22721, 23038, 23357, 23678, 24002, 24329, 24658, 24990, 25325, 25662,
    26001, 26344, 26688, 27036, 27386, 27739, 28094, 28452, 28813, 29176, 29542, 29911, 30282,
    30656, 31033, 31412, 31794, 32179, 32567, 32957, 33350, 33745, 34143, 34544, 34948, 35355,
    35764, 36176, 36591, 37008, 37429, 37852, 38278, 38706, 39138, 39572, 40009, 40449, 40891,
    41337, 41785, 42236, 42690, 43147, 43606, 44069, 44534, 45002, 45473, 45947, 46423, 46903,
    47385, 47871, 48359, 48850, 49344, 49841, 50341, 50844, 51349, 51858, 52369, 52884, 53401,
    53921, 54445, 54971, 55500, 56032, 56567, 57105, 57646, 58190, 58737, 59287, 59840, 60396,
    60955, 61517, 62082, 62650, 63221, 63795, 64372, 64952, 65535
};

/* floor(cbrt(v)) for v < 2^48, by bisection on integers. */
static uint64_t icbrt(uint64_t v)
{
    uint64_t lo = 0, hi = 1u << 16; /* hi^3 = 2^48 > v */
    while (lo + 1 < hi) {
        const uint64_t mid = (lo + hi) / 2;
        if (mid * mid * mid <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint16_t trk_lab_f(int i)
{
    /* t = i / 16384. Linear segment: t <= 216 / 24389, f = (24389 / 27 t + 16)
     * / 116, times 32768, rounded: (48778 i + 14155776 + 1566) / 3132. */
    if ((int64_t)i * 24389 <= (int64_t)216 * TRK_LAB_T_ONE)
        return (uint16_t)((48778 * (int64_t)i + 14155776 + 1566) / 3132);
    /* f = cbrt(t) * 32768 = cbrt(i * 2^31), rounded: r + 1 when (r + 1/2)^3
     * <= v, i.e. (2r + 1)^3 <= 8v. */
    const uint64_t v = (uint64_t)i << 31;
    uint64_t r = icbrt(v);
    if ((2 * r + 1) * (2 * r + 1) * (2 * r + 1) <= 8 * v) r++;
    return (uint16_t)r;
}

static struct trk_light_tab tab;
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_build(void)
{
    for (int v = 0; v < 256; v++)
        tab.lin[v] = srgb_lin[v];
    for (int i = 0; i <= TRK_LAB_T_ONE; i++)
        tab.f[i] = trk_lab_f(i);
    tab.rg_inv[0] = 0;
    for (uint64_t s = 1; s <= TRK_RG_SUM_MAX; s++)
        tab.rg_inv[s] = (uint32_t)(((1ull << 31) + s - 1) / s);
}

const struct trk_light_tab *trk_light_tables(void)
{
    pthread_once(&tab_once, tab_build);
    return &tab;
}

static struct trk_light_cells cells;
static pthread_once_t cells_once = PTHREAD_ONCE_INIT;

static void cells_build(void)
{
    const struct trk_light_tab *t = trk_light_tables();
    memset(cells.lo, 255, sizeof(cells.lo));
    memset(cells.hi, 0, sizeof(cells.hi));
    for (int r = 0; r < 256; r++)
        for (int g = 0; g < 256; g++)
            for (int b = 0; b < 256; b++) {
                const int cell = (r >> 3) << 10 | (g >> 3) << 5 | b >> 3;
                uint8_t v[2][3];
                trk_rgb_to_lab(t, r, g, b, &v[0][0], &v[0][1], &v[0][2]);
                trk_rgb_to_rg(t, r, g, b, &v[1][0], &v[1][1], &v[1][2]);
                for (int s = 0; s < 2; s++)
                    for (int c = 0; c < 3; c++) {
                        if (v[s][c] < cells.lo[cell][s][c]) cells.lo[cell][s][c] = v[s][c];
                        if (v[s][c] > cells.hi[cell][s][c]) cells.hi[cell][s][c] = v[s][c];
                    }
            }
}

const struct trk_light_cells *trk_light_cell_ranges(void)
{
    pthread_once(&cells_once, cells_build);
    return &cells;
}

/* sRGB OETF of linear light x (0..1), as a byte. */
static uint8_t to_srgb(double x)
{
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    const double v = x <= 0.0031308 ? 12.92 * x : 1.055 * pow(x, 1 / 2.4) - 0.055;
    return (uint8_t)lround(v * 255);
}

void trk_lab_to_rgb_display(int L, int a, int b, uint8_t rgb[3])
{
    const double fy = (L * 100.0 / 255 + 16) / 116, fx = fy + (a - 128) / 500.0,
                 fz = fy - (b - 128) / 200.0;
    const double e = 6.0 / 29, f[3] = { fx, fy, fz }, w[3] = { 0.95047, 1.0, 1.08883 };
    double xyz[3];
    for (int i = 0; i < 3; i++)
        xyz[i] = w[i] * (f[i] > e ? f[i] * f[i] * f[i] : 3 * e * e * (f[i] - 4.0 / 29));
    rgb[0] = to_srgb(3.2404542 * xyz[0] - 1.5371385 * xyz[1] - 0.4985314 * xyz[2]);
    rgb[1] = to_srgb(-0.9692660 * xyz[0] + 1.8760108 * xyz[1] + 0.0415560 * xyz[2]);
    rgb[2] = to_srgb(0.0556434 * xyz[0] - 0.2040259 * xyz[1] + 1.0572252 * xyz[2]);
}
