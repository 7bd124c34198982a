/* The fused kernel's dense-path arithmetic (gpu/cuda/fused_dense.cuh), on the
 * CPU: runs everywhere CUDA is compiled, GPU or not (CI has nvcc, no GPU).
 * The warp's five shuffle stages are emulated lane by lane with the kernel's
 * own merge function (a shuffle xor s hands lane L the word of lane L ^ s);
 * then, for every lane, the transpose property and the segment statistics
 * are compared with a per-pixel count over the original masks. Seeded masks
 * of every density, plus the corner cases (first / last pixel only, one
 * lane, one object, all set). The kernel's use of these on the device is
 * checked by test_cuda_exact's dense scenes. */
#include <stdint.h>
#include <stdio.h>

#include "../unit/check.h"
#include "cuda/fused_dense.cuh"
#include "scene.h"

namespace
{

int cases;

/* m[j][L]: lane L's mask word for pixel 4 L + j (bit b = object b). */
void check_masks(const uint32_t m[4][32], const char *what)
{
    uint32_t t[4][32];
    for (int j = 0; j < 4; j++)
        for (int L = 0; L < 32; L++)
            t[j][L] = m[j][L];
    for (int s = 16; s >= 1; s >>= 1)
        for (int j = 0; j < 4; j++) {
            uint32_t nt[32];
            for (unsigned L = 0; L < 32; L++)
                nt[L] = trk_dense::transpose_merge(t[j][L], t[j][L ^ (unsigned)s], L, s);
            for (int L = 0; L < 32; L++)
                t[j][L] = nt[L];
        }
    int bad = 0;
    for (int b = 0; b < 32; b++) {
        unsigned cnt = 0, sum = 0, sq = 0, first = 0, last = 0;
        for (int L = 0; L < 32; L++)
            for (int j = 0; j < 4; j++) {
                const unsigned want = (m[j][L] >> b) & 1u, got = (t[j][b] >> L) & 1u;
                if (want != got && bad++ < 3)
                    fprintf(stderr, "%s: transpose: lane %d bit %d word %d: want %u got %u\n", what,
                            b, L, j, want, got);
                if (!want) continue;
                const unsigned off = 4u * (unsigned)L + (unsigned)j;
                if (!cnt) first = off;
                cnt++;
                sum += off;
                sq += off * off;
                last = off;
            }
        const uint32_t tb[4] = { t[0][b], t[1][b], t[2][b], t[3][b] };
        const trk_dense::seg_stats st = trk_dense::segment_stats(tb);
        cases++;
        const bool ok = st.cnt == cnt && st.sum == sum && st.sq == sq &&
                        (!cnt || (st.first == first && st.last == last));
        if (!ok && bad++ < 3)
            fprintf(
                stderr,
                "%s: object %d: want cnt %u sum %u sq %u first %u last %u; got %u %u %u %u %u\n",
                what, b, cnt, sum, sq, first, last, st.cnt, st.sum, st.sq, st.first, st.last);
        CHECKF(ok, "%s: object %d statistics", what, b);
    }
    CHECKF(!bad, "%s: %d differences", what, bad);
}

} // namespace

int main()
{
    static uint32_t m[4][32];
    /* Seeded masks: per-bit probability from 0 to 1 in 1/16 steps. */
    uint64_t st = 20261124u;
    for (int rep = 0; rep < 400; rep++) {
        const unsigned p16 = (unsigned)(rep % 17); /* set with probability p16 / 16 */
        for (int j = 0; j < 4; j++)
            for (int L = 0; L < 32; L++) {
                uint32_t w = 0;
                for (int b = 0; b < 32; b++)
                    if ((unsigned)(trk_rand_next(&st) & 15u) < p16) w |= 1u << b;
                m[j][L] = w;
            }
        char what[64];
        snprintf(what, sizeof(what), "random rep %d density %u/16", rep, p16);
        check_masks(m, what);
    }
    /* Corner cases: one pixel (each of the 128), one object in one lane, a
     * whole lane, everything. */
    for (int px = 0; px < 128; px++) {
        for (int j = 0; j < 4; j++)
            for (int L = 0; L < 32; L++)
                m[j][L] = 0;
        m[px & 3][px >> 2] = 0x80000001u | (1u << (px % 32));
        char what[64];
        snprintf(what, sizeof(what), "only pixel %d", px);
        check_masks(m, what);
    }
    for (int j = 0; j < 4; j++)
        for (int L = 0; L < 32; L++)
            m[j][L] = L == 7 ? 0xffffffffu : 0u;
    check_masks(m, "one lane full");
    for (int j = 0; j < 4; j++)
        for (int L = 0; L < 32; L++)
            m[j][L] = 0xffffffffu;
    check_masks(m, "all set");
    for (int j = 0; j < 4; j++)
        for (int L = 0; L < 32; L++)
            m[j][L] = (j == 0 && L == 0) || (j == 3 && L == 31) ? 1u << 13 : 0u;
    check_masks(m, "first and last pixel, object 13");

    if (check_failures) {
        fprintf(stderr, "test_fused_dense: %d failures in %d objects\n", check_failures, cases);
        return 1;
    }
    printf("test_fused_dense: %d objects' segment statistics equal to a per-pixel count\n", cases);
    return 0;
}
