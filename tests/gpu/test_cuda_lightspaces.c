/* The lab and rg spaces on the CUDA backend == the CPU reference, exactly:
 * every variant (the fused kernel's LIGHT copies, lut, naive, moct), every
 * input format and matrix/range, lab objects alone, rg alone and both mixed
 * with objects of every other space, 1..256 objects (1, 2, 4 and 8 mask
 * words), without and with ROIs; blob lists of such objects; the regional
 * form. The objects are boxes around the frame's own pixels
 * (trk_scene_pixel_objects), so each catches something. A set of rgb
 * objects alone runs alongside, so the kernels without the new spaces are
 * checked in the same run. Needs a GPU: without one it exits 77 (ctest
 * SKIP) and says why. */
#include "cuda_compare.h"

/* 0: lab only, 1: rg only, 2: every space mixed, 3: rgb only (the kernels
 * without the new spaces). */
static void light_objects(uint64_t *st, const struct trk_image *img, int n, int mode,
                          struct trk_object_def *objs)
{
    static const int sp[4] = { TRK_SPACE_LAB, TRK_SPACE_RG, -1, TRK_SPACE_RGB };
    trk_scene_pixel_objects(st, img, sp[mode], n, objs);
}

int main(int argc, char **argv)
{
    return run_spaces_test(argc, argv, "test_cuda_lightspaces", 4, light_objects, 500u, 4242);
}
