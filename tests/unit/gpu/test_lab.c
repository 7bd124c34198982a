/* The lab and rg spaces of color.h against their textbook definitions:
 * the written-out sRGB table against the IEC 61966-2-1 formula, the f
 * table against the CIE f in floating point, every lab byte of a colour
 * grid against CIE L*a*b* (D65) computed here in doubles (within the
 * rounding the integer pipeline is allowed: one byte), some published
 * values by hand, and rg against its formula on every colour of a grid. */
#include "../check.h"
#include "color.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double eotf(double v)
{
    return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

static double cie_f(double t)
{
    const double e = 216.0 / 24389;
    return t > e ? cbrt(t) : (24389.0 / 27 * t + 16) / 116;
}

/* CIE L*a*b* of an sRGB byte triple, D65, in doubles. */
static void lab_double(int r, int g, int b, double lab[3])
{
    const double R = eotf(r / 255.0), G = eotf(g / 255.0), B = eotf(b / 255.0);
    const double X = 0.4124564 * R + 0.3575761 * G + 0.1804375 * B;
    const double Y = 0.2126729 * R + 0.7151522 * G + 0.0721750 * B;
    const double Z = 0.0193339 * R + 0.1191920 * G + 0.9503041 * B;
    const double fx = cie_f(X / 0.95047), fy = cie_f(Y), fz = cie_f(Z / 1.08883);
    lab[0] = 116 * fy - 16;
    lab[1] = 500 * (fx - fy);
    lab[2] = 200 * (fy - fz);
}

static void test_tables(void)
{
    const struct trk_light_tab *t = trk_light_tables();
    CHECKF(t == trk_light_tables(), "one table");
    for (int v = 0; v < 256; v++) {
        const long want = lround(65535 * eotf(v / 255.0));
        CHECKF(t->lin[v] == want, "lin[%d] = %u, formula %ld", v, t->lin[v], want);
    }
    for (int i = 0; i <= TRK_LAB_T_ONE; i++) {
        const double want = 32768 * cie_f(i / 16384.0);
        CHECKF(fabs(t->f[i] - want) <= 0.5 + 1e-9, "f[%d] = %u, formula %.3f", i, t->f[i], want);
        CHECKF(t->f[i] == trk_lab_f(i), "f[%d] is trk_lab_f", i);
    }
}

static void test_lab_grid(void)
{
    const struct trk_light_tab *t = trk_light_tables();
    int worst[3] = { 0, 0, 0 };
    for (int r = 0; r < 256; r += 5)
        for (int g = 0; g < 256; g += 3)
            for (int b = 0; b < 256; b += 7) {
                uint8_t L, A, B;
                trk_rgb_to_lab(t, r, g, b, &L, &A, &B);
                double lab[3];
                lab_double(r, g, b, lab);
                const double want[3] = { lab[0] * 2.55, lab[1] + 128, lab[2] + 128 };
                const int got[3] = { L, A, B };
                for (int c = 0; c < 3; c++) {
                    const int d = abs(got[c] - (int)lround(want[c]));
                    if (d > worst[c]) worst[c] = d;
                    CHECKF(d <= 1, "rgb %d,%d,%d: lab[%d] = %d, CIE %.3f", r, g, b, c, got[c],
                           want[c]);
                }
            }
    printf("lab grid: largest differences from CIE (bytes) L %d a %d b %d\n", worst[0], worst[1],
           worst[2]);
}

/* Published values (sRGB, D65): white, black, the primaries, a mid grey. */
static void test_lab_known(void)
{
    static const struct {
        int rgb[3];
        double L, a, b;
    } k[] = {
        { { 255, 255, 255 }, 100, 0, 0 },         { { 0, 0, 0 }, 0, 0, 0 },
        { { 255, 0, 0 }, 53.24, 80.09, 67.20 },   { { 0, 255, 0 }, 87.73, -86.18, 83.18 },
        { { 0, 0, 255 }, 32.30, 79.19, -107.86 }, { { 128, 128, 128 }, 53.59, 0, 0 },
    };
    const struct trk_light_tab *t = trk_light_tables();
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        uint8_t L, A, B;
        trk_rgb_to_lab(t, k[i].rgb[0], k[i].rgb[1], k[i].rgb[2], &L, &A, &B);
        CHECKF(abs(L - (int)lround(k[i].L * 2.55)) <= 1 &&
                   abs(A - 128 - (int)lround(k[i].a)) <= 1 &&
                   abs(B - 128 - (int)lround(k[i].b)) <= 1,
               "rgb %d,%d,%d -> %u,%u,%u, published L*a*b* %.2f %.2f %.2f", k[i].rgb[0],
               k[i].rgb[1], k[i].rgb[2], L, A, B, k[i].L, k[i].a, k[i].b);
    }
    /* Greys are exactly neutral: a = b = 128 whatever the brightness. */
    for (int v = 0; v < 256; v++) {
        uint8_t L, A, B;
        trk_rgb_to_lab(t, v, v, v, &L, &A, &B);
        CHECKF(A == 128 && B == 128, "grey %d: a %u b %u", v, A, B);
    }
    uint8_t L, A, B;
    trk_rgb_to_lab(t, 255, 255, 255, &L, &A, &B);
    CHECKF(L == 255, "white L %u", L);
}

/* The point of lab: a colour's a and b barely move as its light dims
 * (here to 45 %, in linear light, as a camera sees a darker scene). */
static void test_lab_dims(void)
{
    const struct trk_light_tab *t = trk_light_tables();
    const int base[3] = { 220, 60, 40 };
    uint8_t L0, A0, B0, L1, A1, B1;
    int dim[3];
    for (int c = 0; c < 3; c++) {
        const double lin = eotf(base[c] / 255.0) * 0.45;
        dim[c] =
            (int)lround(255 * (lin <= 0.0031308 ? 12.92 * lin : 1.055 * pow(lin, 1 / 2.4) - 0.055));
    }
    trk_rgb_to_lab(t, base[0], base[1], base[2], &L0, &A0, &B0);
    trk_rgb_to_lab(t, dim[0], dim[1], dim[2], &L1, &A1, &B1);
    printf("lab of %d,%d,%d: %u %u %u; at 45%% light (%d,%d,%d): %u %u %u\n", base[0], base[1],
           base[2], L0, A0, B0, dim[0], dim[1], dim[2], L1, A1, B1);
    /* L falls by a third; a and b move toward neutral by (0.45)^(1/3) of
     * their distance at most (a cube root of the light), far less. */
    CHECKF(L0 - L1 > 30, "L falls with the light (%u -> %u)", L0, L1);
    CHECKF(A0 - A1 < (L0 - L1) / 2 && B0 - B1 < (L0 - L1) / 2, "a, b move less (%u %u -> %u %u)",
           A0, B0, A1, B1);
}

static void test_rg(void)
{
    const struct trk_light_tab *t = trk_light_tables();
    /* The reciprocal division is the plain one for every numerator the
     * rule makes (255 c + S / 2, c <= S). */
    long bad = 0;
    for (int sum = 1; sum <= TRK_RG_SUM_MAX; sum++)
        for (int c = 0; c <= sum && c <= 255; c++) {
            const int n = 255 * c + sum / 2;
            bad += trk_rg_div(t, n, sum) != n / sum;
        }
    CHECKF(bad == 0, "%ld reciprocal quotients differ from the division", bad);
    for (int r = 0; r < 256; r += 3)
        for (int g = 0; g < 256; g += 5)
            for (int b = 0; b < 256; b += 2) {
                uint8_t rn, gn, in;
                trk_rgb_to_rg(t, r, g, b, &rn, &gn, &in);
                const int s = r + g + b;
                const long wr = s ? (long)floor(255.0 * r / s + 0.5) : 85;
                const long wg = s ? (long)floor(255.0 * g / s + 0.5) : 85;
                const long wi = (long)floor(s / 3.0 + 0.5);
                CHECKF(rn == wr && gn == wg && in == wi,
                       "rgb %d,%d,%d: rg %u,%u,%u want %ld,%ld,%ld", r, g, b, rn, gn, in, wr, wg,
                       wi);
            }
    uint8_t rn, gn, in;
    trk_rgb_to_rg(t, 0, 0, 0, &rn, &gn, &in);
    CHECKF(rn == 85 && gn == 85 && in == 0, "black: %u %u %u", rn, gn, in);
    /* Halving the light keeps r and g (up to rounding). */
    uint8_t r2, g2, i2;
    trk_rgb_to_rg(t, 200, 80, 40, &rn, &gn, &in);
    trk_rgb_to_rg(t, 100, 40, 20, &r2, &g2, &i2);
    CHECKF(rn == r2 && gn == g2 && abs(in - 2 * i2) <= 1, "rg at half light: %u,%u,%u vs %u,%u,%u",
           rn, gn, in, r2, g2, i2);
}

int main(void)
{
    test_tables();
    test_lab_grid();
    test_lab_known();
    test_lab_dims();
    test_rg();
    return check_exit("test_gpu_lab");
}
