/* The fused kernel's 32-bit block sums (gpu/cuda/fused_acc.cuh,
 * TRK_FUSED_ACC32), on the CPU: runs wherever CUDA is compiled, GPU or not.
 * A block is laid out as the kernel does it (units = 128-pixel row segments
 * of rows row0.., a block owns per = ceil(units / grid) consecutive ones, yb
 * its first row); each unit's pixels of one object become one event
 * (count, offset sum, offset-square sum), added with the kernel's terms in
 * 32-bit words that wrap as the device's would; the widened sums must equal
 * 64-bit sums taken pixel by pixel. Frames from 1 x 1 to 65536 wide or
 * high, with the grid the launch takes (acc32_grid from the resident
 * blocks); the worst block (every pixel matched) and seeded masks. The
 * bound is also shown to matter: a grid it refuses overflows. */
#include <stdint.h>
#include <stdio.h>

#include "../unit/check.h"
#include "cuda/fused_acc.cuh"
#include "scene.h"

namespace
{

int cases;

struct frame_case {
    int w, h, row0, row1;
    long long grid; /* resident blocks the launch starts from */
};

/* Block b of the launch, every pixel matched with probability p256 / 256
 * (seeded): the widened 32-bit sums against pixel-by-pixel 64-bit sums.
 * Returns whether some 64-bit sum of the block's 32-bit words exceeded
 * 2^32 - 1 (the words wrapped); *equal: the widened sums were right. */
bool run_block(const frame_case &fc, long long grid, long long b, unsigned p256, uint64_t *st,
               bool *equal)
{
    const int segs = (fc.w + 127) / 128;
    const long long units = (long long)(fc.row1 - fc.row0) * segs;
    const long long per = (units + grid - 1) / grid, u0 = b * per;
    const long long u1 = u0 + per < units ? u0 + per : units;
    const unsigned yb = (unsigned)(fc.row0 + u0 / segs);
    unsigned p[trk_facc::NSUM] = { 0 };
    unsigned long long big[trk_facc::NSUM] = { 0 };
    unsigned long long mass = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (long long u = u0; u < u1; u++) {
        const unsigned y = (unsigned)(fc.row0 + u / segs), s = (unsigned)(u % segs);
        unsigned cnt = 0, so = 0, soo = 0;
        for (unsigned o = 0; o < 128 && 128 * s + o < (unsigned)fc.w; o++) {
            if (p256 < 256 && (trk_rand_next(st) & 255u) >= p256) continue;
            const unsigned long long x = 128ull * s + o;
            cnt++, so += o, soo += o * o;
            mass++, sx += x, sy += y, sxx += x * x, syy += (unsigned long long)y * y, sxy += x * y;
        }
        if (!cnt) continue;
        const trk_facc::terms t = trk_facc::event_terms(cnt, so, soo, s, y - yb);
        for (int f = 0; f < trk_facc::NSUM; f++) {
            p[f] += t.v[f];
            big[f] += t.v[f];
        }
    }
    const trk_facc::wide wd = trk_facc::widen(p, yb);
    *equal = wd.mass == mass && wd.sx == sx && wd.sy == sy && wd.sxx == sxx && wd.syy == syy &&
             wd.sxy == sxy;
    bool wrapped = false;
    for (int f = 0; f < trk_facc::NSUM; f++)
        wrapped |= big[f] > 0xffffffffull;
    return wrapped;
}

/* The launch's grid for fc; its first, a middle and its last block, full
 * and at a seeded density: all exact. */
void check_frame(const frame_case &fc, uint64_t *st)
{
    const int segs = (fc.w + 127) / 128;
    const long long units = (long long)(fc.row1 - fc.row0) * segs;
    const long long grid = trk_facc::acc32_grid(units, segs, fc.w, fc.grid);
    CHECKF(grid >= 1 && grid <= (units > fc.grid ? units : fc.grid), "%dx%d grid %lld", fc.w, fc.h,
           grid);
    CHECKF(trk_facc::acc32_fits(units, segs, fc.w, grid), "%dx%d: grid %lld does not fit", fc.w,
           fc.h, grid);
    const long long per = (units + grid - 1) / grid, last = (units - 1) / per;
    const long long blocks[3] = { 0, last / 2, last };
    const unsigned dens[2] = { 256, 77 };
    for (long long b : blocks)
        for (unsigned d : dens) {
            bool equal = false;
            const bool wrapped = run_block(fc, grid, b, d, st, &equal);
            cases++;
            CHECKF(equal && !wrapped, "%dx%d rows %d..%d grid %lld block %lld density %u/256", fc.w,
                   fc.h, fc.row0, fc.row1, grid, b, d);
        }
}

} // namespace

int main()
{
    uint64_t st = 20261127u;
    /* grid: 132 SMs x 2 blocks (the H100's default), x 1 (1024 threads) and
     * a small device; rows row0..row1 of a band. */
    const frame_case frames[] = {
        { 1, 1, 0, 1, 264 },
        { 37, 23, 0, 23, 264 },
        { 129, 67, 3, 60, 264 },
        { 1920, 1080, 0, 1080, 264 },
        { 1920, 1080, 540, 1080, 2 },
        { 3840, 2160, 0, 2160, 264 },
        { 3840, 2160, 0, 2160, 132 },
        { 7680, 4320, 0, 4320, 264 },
        { 7680, 4320, 0, 4320, 16 },
        { 65536, 1, 0, 1, 264 },
        { 1, 65536, 0, 65536, 264 },
        { 65536, 64, 0, 64, 1 },
        { 16384, 16384, 0, 16384, 264 },
    };
    for (const frame_case &fc : frames)
        check_frame(fc, &st);

    /* The bound matters: 16384 x 16384 in 264 blocks without the launch's
     * extra blocks wraps a 32-bit sum in its worst block (sum x alone is
     * ~1 M pixels x 8192), and acc32_fits says so. */
    {
        const frame_case fc = { 16384, 16384, 0, 16384, 264 };
        const int segs = (fc.w + 127) / 128;
        const long long units = (long long)fc.h * segs;
        bool equal = true;
        const bool wrapped = run_block(fc, 264, 0, 256, &st, &equal);
        cases++;
        CHECKF(wrapped && !trk_facc::acc32_fits(units, segs, fc.w, 264),
               "16384^2 in 264 blocks: wrapped %d, fits %d", wrapped,
               trk_facc::acc32_fits(units, segs, fc.w, 264));
        /* 1080p and 4K need no extra blocks on a 132-SM device. */
        CHECK(trk_facc::acc32_grid(1080LL * 15, 15, 1920, 264) == 264);
        CHECK(trk_facc::acc32_grid(2160LL * 30, 30, 3840, 264) == 264);
    }
    printf("test_fused_acc: %d blocks' widened 32-bit sums equal to 64-bit per-pixel sums\n",
           cases);
    return check_exit("test_fused_acc");
}
