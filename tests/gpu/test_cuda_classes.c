/* Painted colour classes (backend.h, TRK_SPACE_CLASS) on the CUDA backend
 * == the CPU reference, exactly: every variant (the fused kernel's
 * extended copies, lut, naive, moct, and fused with its results copied
 * back), every input format and matrix/range, class objects alone (up to
 * TRK_MAX_CLASSES, the rest rgb boxes), mixed with objects of every space,
 * and mixed with lab objects only, 1..256 objects (1, 2, 4 and 8 mask
 * words), without and with ROIs; blob lists of class objects; the regional
 * form. The classes hold the cells of the frame's own pixels
 * (trk_scene_class_objects), so each catches something, and share cells.
 * A set of rgb objects alone runs alongside, so the kernels without classes
 * are checked in the same run. Needs a GPU: without one it exits 77 (ctest
 * SKIP) and says why. */
#include "cuda_compare.h"

/* 0: classes only (the rest rgb boxes), 1: every space mixed with
 * classes, 2: lab and classes, 3: rgb only (the kernels without classes). */
static void class_objects(uint64_t *st, const struct trk_image *img, int n, int mode,
                          struct trk_object_def *objs)
{
    static const int sp[4] = { TRK_SPACE_RGB, -1, TRK_SPACE_LAB, TRK_SPACE_RGB };
    static uint8_t tabs[TRK_MAX_CLASSES][TRK_CLASS_BYTES];
    trk_scene_pixel_objects(st, img, sp[mode], n, objs);
    const int every = mode == 0 ? 1 : n > 48 ? n / 16 + 1 : 3;
    if (mode < 3) trk_scene_class_objects(st, img, n, mode == 0 ? 0 : 1, every, objs, tabs);
}

int main(int argc, char **argv)
{
    return run_spaces_test(argc, argv, "test_cuda_classes", 4, class_objects, 900u, 4343);
}
