/* Seam carving's CUDA form == its definition (gpu/seam.h), exactly: every
 * variant of the cumulative map on seeded random frames (noise, smooth,
 * flat; odd sizes, 1 wide and 1 high, every packed format, padded pitches,
 * protection masks from none to dense, targets from k = 0 to one pixel
 * wide), frames wider than a tile and taller than a launch's rows, and a
 * 720p frame with protected objects; every carved byte, both maps and the
 * count of protected pixels cut. Needs a GPU: without one it exits 77
 * (ctest SKIP) and says why.
 *
 *   test_cuda_seam           the full matrix
 *   test_cuda_seam --quick   a small one (compute-sanitizer: racecheck
 *                            is slow on the shared-memory kernels)
 *   test_cuda_seam --probe   exits 0 with a GPU, 77 without
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/gpu/seam_cases.h"

struct carver {
    struct trk_seam_cuda *s;
    int variant;
};

static int cuda_carver(const struct trk_seam_job *job, struct trk_seam_info *info, void *user)
{
    const struct carver *c = user;
    double ms = -1;
    int rc = trk_seam_cuda_carve(c->s, c->variant, job, info, &ms);
    CHECK(rc != 0 || ms >= 0);
    return rc;
}

/* One larger frame: w x h to dw x dh, kind, protection pct %. */
static void big(struct carver *c, int w, int h, int dw, int dh, enum seam_kind kind, int pct)
{
    seam_rng = (uint32_t)(w * 31 + h * 7 + dw + kind);
    uint8_t *px = malloc((size_t)w * h * 3), *m = malloc((size_t)w * h);
    seam_frame(px, (size_t)w * 3, w, h, 3, kind);
    seam_mask(m, (size_t)w, w, h, pct);
    struct trk_image src = { { px },        { (size_t)w * 3 }, w,    h,
                             TRK_FMT_RGB24, TRK_MATRIX_BT601,  true, TRK_MEM_HOST };
    char what[128];
    snprintf(what, sizeof what, "%s: %dx%d -> %dx%d %s prot %d%%",
             trk_seam_cuda_variant_name(c->variant), w, h, dw, dh, seam_kind_name[kind], pct);
    seam_compare(cuda_carver, c, &src, m, (size_t)w, dw, dh, what);
    free(px);
    free(m);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int probe = argc > 1 && !strcmp(argv[1], "--probe");
    struct carver c = { NULL, 0 };
    int rc = trk_seam_cuda_create(&c.s, 1280, 720);
    if (rc == TRK_ENODEV) {
        printf("test_cuda_seam: no usable GPU, skipped\n");
        return 77;
    }
    CHECK(rc == 0);
    if (rc) return check_exit("test_cuda_seam");
    if (probe) {
        trk_seam_cuda_destroy(&c.s);
        return 0;
    }
    for (c.variant = 0; c.variant < TRK_SEAM_CUDA_VARIANTS; c.variant++) {
        seam_matrix(cuda_carver, &c, quick ? 16 : 48, quick ? 12 : 300);
        big(&c, 300, 70, 294, 66, SEAM_SMOOTH, 10); /* 2 tiles wide, 3 bands tall */
        if (!quick) {
            big(&c, 641, 97, 400, 60, SEAM_SMOOTH, 10); /* 4 tiles wide, 3 bands tall */
            big(&c, 97, 641, 60, 500, SEAM_NOISE, 0);
            big(&c, 300, 1, 1, 1, SEAM_NOISE, 30);
            big(&c, 1, 300, 1, 17, SEAM_FLAT, 0);
            big(&c, 1280, 720, 1200, 700, SEAM_SMOOTH, 20);
            big(&c, 1280, 720, 1270, 720, SEAM_NOISE, 0);
            big(&c, 385, 257, 190, 100, SEAM_FLAT, 100);
        }
    }
    /* Frames past create's size are refused. */
    uint8_t px[3 * 2 * 721], dst[3];
    struct trk_image tall = { { px },           { 6 }, 2,           721, TRK_FMT_RGB24,
                              TRK_MATRIX_BT601, true,  TRK_MEM_HOST };
    struct trk_seam_job job = { &tall, NULL, 0, 1, 1, dst, 3, NULL, NULL };
    CHECK(trk_seam_cuda_carve(c.s, 0, &job, NULL, NULL) == TRK_ETOOBIG);
    CHECK(trk_seam_cuda_carve(c.s, TRK_SEAM_CUDA_VARIANTS, &job, NULL, NULL) == TRK_EINVAL);
    trk_seam_cuda_destroy(&c.s);
    trk_seam_cuda_destroy(&c.s);
    CHECK(c.s == NULL);
    return check_exit("test_cuda_seam");
}
