/* Synthetic scenes with known answers, shared by tests and the benchmark.
 * Plain C, no dependencies beyond libc and gpu/'s headers (builds on the GPU
 * machine). */
#ifndef TRK_SCENE_SCENE_H
#define TRK_SCENE_SCENE_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A scene: an RGB24 picture plus the objects that describe it. */
struct trk_scene {
    uint8_t *rgb; /* width * height * 3 bytes, pitch = width * 3 */
    int width, height;
    int n_objects;
    struct trk_object_def objects[TRK_MAX_OBJECTS];
    int cx[TRK_MAX_OBJECTS], cy[TRK_MAX_OBJECTS]; /* disk centres (standard scene) */
    int radius;                                   /* disk radius (standard scene) */
};

/* The standard benchmark scene of docs/ARCHITECTURE.md section 6: gray background with
 * per-pixel noise (values 60..195, R=G=B), m solid disks of radius
 * 2% of min(width, height) in distinct saturated colours at seeded random
 * positions, +-3 sensor noise on the disks, each object an rgb box = its
 * colour +-8 per channel. Deterministic for (width, height, m, seed).
 * Disks lie inside the frame (when they fit) and may overlap each other:
 * they are painted in object order, so a later disk covers an earlier one.
 * The colours do not depend on the seed, and no box matches gray or another
 * disk's colour. Returns 0 or TRK_EINVAL / TRK_ENOMEM. */
int trk_scene_standard(int width, int height, int m, uint64_t seed, struct trk_scene *out);

/* The dense worst case (issue 14): every pixel in every object. Seeded RGB
 * noise (each channel 0..255, so no format or table lookup sees a special
 * frame) and m objects, each the whole rgb cube (0..255 on every channel):
 * every object's mass is width x height. Deterministic for (width, height,
 * m, seed). Returns 0 or TRK_EINVAL / TRK_ENOMEM. */
int trk_scene_dense(int width, int height, int m, uint64_t seed, struct trk_scene *out);

/* Random per-pixel subsets of the objects: seeded RGB noise with a few flat
 * regions (light noise), m objects in random spaces (rgb, hsv with wrapping
 * hue windows, ycbcr), each channel a random window over part of its range:
 * a third of the objects wide (70..100 % per channel), a third medium
 * (35..70 %), a third narrow (5..35 %). A noise pixel matches a random
 * subset (about half of the wide objects, few narrow ones); a flat region
 * matches a fixed subset, so how many objects a stretch of a row holds
 * varies from none to all. Deterministic for (width, height, m, seed). */
int trk_scene_halfdense(int width, int height, int m, uint64_t seed, struct trk_scene *out);

/* A random test scene for exactness tests: random pixels (with regions of
 * flat colour so boxes match something), m random objects in random spaces
 * (rgb, hsv with and without hue wrap, ycbcr), overlapping ranges, some
 * objects that match nothing, some touching the borders. */
int trk_scene_random(int width, int height, int m, uint64_t seed, struct trk_scene *out);

/* The fast CPU backend's worst case (issue 14): a noise frame (every byte
 * uniform 0..255) and m rgb objects, each a random half-range box (per
 * channel lo uniform in 0..127, hi = lo + 127), so a pixel matches ~m/8
 * objects and every object's mask changes at nearly every pixel.
 * Deterministic for (width, height, m, seed). */
int trk_scene_noisebox(int width, int height, int m, uint64_t seed, struct trk_scene *out);

/* n objects in space sp (a random space of every enum trk_space when sp <
 * 0) for exactness tests of the spaces: each a box around the channels of a
 * random pixel of img (so boxes catch real pixels: lab and rg values
 * crowd a small part of their range), half-widths 2..60 per channel (hsv
 * hue wraps), min_mass 1, nothing else set. *st: the PRNG state. */
void trk_scene_pixel_objects(uint64_t *st, const struct trk_image *img, int sp, int n,
                             struct trk_object_def *o);

/* Turns every k-th object of o[0..n) (k = every; the first at index
 * first) into a painted class object (TRK_SPACE_CLASS) whose table,
 * tabs[j] for the j-th such object (at most TRK_MAX_CLASSES), holds the
 * cells of a few random pixels of img and their neighbours, plus some
 * random cells: so classes catch real pixels and share cells with each
 * other. Returns how many it made. *st: the PRNG state. */
int trk_scene_class_objects(uint64_t *st, const struct trk_image *img, int n, int first, int every,
                            struct trk_object_def *o, uint8_t (*tabs)[TRK_CLASS_BYTES]);

void trk_scene_free(struct trk_scene *s);

/* Converts an RGB24 picture to fmt with the given row padding (extra bytes per
 * row of every plane), into one malloc'd buffer (*buf, free() it) and fills
 * img. YUV formats use the given matrix/range (RGB -> YCbCr per color.h, then
 * chroma of each 2x1 / 2x2 block = the rounded average of its samples). */
int trk_image_from_rgb(const uint8_t *rgb, int width, int height, enum trk_pixfmt fmt,
                       enum trk_matrix matrix, bool full_range, int pad, uint8_t **buf,
                       struct trk_image *img);

/* Deterministic PRNG used by the scenes (splitmix64). */
uint64_t trk_rand_next(uint64_t *state);

#ifdef __cplusplus
}
#endif
#endif
