/* Pinned host frames on the CUDA backend (issue 14): a frame in memory from
 * trk_backend_host_alloc, in memory pinned with trk_backend_host_register,
 * in pageable memory and in a buffer only partly registered (the upload
 * must see that the plane runs past the pinned range and stage it) all give
 * the same results, equal to cpu-ref's, bit for bit; trk_backend_image_pinned
 * says which frames are pinned. Many seeded random scenes, packed RGB and
 * NV12 / I420 planes (random bytes), even and odd sizes, pitches a driver's
 * odd padding (uploaded) and 64-byte aligned (a pinned frame the kernel
 * reads in place: the call says so with upload_bytes > 0, upload_ms 0,
 * and a pageable one never is). Needs a GPU:
 * without one it exits 77 (skipped). Prints the first differing case. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

enum mem { PAGEABLE, ALLOCED, REGISTERED, HALF_REGISTERED, N_MEM };
static const char *const mem_name[N_MEM] = { "pageable", "host_alloc", "host_register",
                                             "half registered" };

/* A plane's pitch: odd padding (aligned = false), or rows rounded up to
 * 64 bytes. */
static size_t pitch_of(size_t row_bytes, bool aligned)
{
    return aligned ? (row_bytes + 63) / 64 * 64 : row_bytes + 13;
}

/* Lays src (RGB scene or random planes) out in buf as fmt with padded
 * pitches; returns the image. */
static struct trk_image lay_out(uint8_t *buf, enum trk_pixfmt fmt, int w, int h, const uint8_t *rgb,
                                uint64_t seed, bool aligned)
{
    struct trk_plane_layout L;
    trk_image_plane_layout(fmt, w, h, &L);
    struct trk_image img = { .width = w, .height = h, .fmt = fmt, .matrix = TRK_MATRIX_BT709 };
    size_t off = 0;
    for (int p = 0; p < L.planes; p++) {
        img.plane[p] = buf + off;
        img.pitch[p] = pitch_of(L.row_bytes[p], aligned);
        off += img.pitch[p] * (size_t)L.rows[p];
    }
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int p = 0; p < L.planes; p++)
        for (int y = 0; y < L.rows[p]; y++) {
            uint8_t *row = buf + (img.plane[p] - buf) + (size_t)y * img.pitch[p];
            if (fmt == TRK_FMT_RGB24) {
                memcpy(row, rgb + (size_t)y * w * 3, (size_t)w * 3);
            } else {
                for (size_t i = 0; i < L.row_bytes[p]; i++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    row[i] = (uint8_t)(x >> 24);
                }
            }
        }
    return img;
}

static size_t image_bytes(enum trk_pixfmt fmt, int w, int h, bool aligned)
{
    struct trk_plane_layout L;
    trk_image_plane_layout(fmt, w, h, &L);
    size_t n = 0;
    for (int p = 0; p < L.planes; p++)
        n += pitch_of(L.row_bytes[p], aligned) * (size_t)L.rows[p];
    return n;
}

/* --probe: only whether a GPU is usable (77 when not); --quick: the small
 * sizes and two seeds (one odd pitch, one aligned), for compute-sanitizer. */
int main(int argc, char **argv)
{
    const bool probe = argc > 1 && !strcmp(argv[1], "--probe");
    const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("skipped: %s\n", why);
        return 77;
    }
    if (probe) return 0;
    static const int sizes[][2] = { { 1920, 1080 }, { 333, 201 }, { 64, 17 } };
    static const enum trk_pixfmt fmts[] = { TRK_FMT_RGB24, TRK_FMT_NV12, TRK_FMT_I420 };
    int cases = 0, shown = 0, in_place = 0;
    for (int si = quick ? 1 : 0; si < 3; si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        struct trk_backend *cuda = NULL, *ref = NULL, *copy = NULL;
        struct trk_backend_cfg cc = { .kind = TRK_BACKEND_CUDA, .max_width = w, .max_height = h };
        /* The same with in-place reads off ("copy"): the frames a kernel
         * would read in place are uploaded instead. */
        struct trk_backend_cfg kc = cc;
        kc.variant = "fused:copy";
        CHECK(trk_backend_create(&kc, &copy) == 0);
        struct trk_backend_cfg rc = { .kind = TRK_BACKEND_CPU_REF,
                                      .max_width = w,
                                      .max_height = h };
        CHECK(trk_backend_create(&cc, &cuda) == 0 && trk_backend_create(&rc, &ref) == 0);
        if (!cuda || !ref || !copy) return check_exit("cuda_pinned");
        for (int fi = 0; fi < 3; fi++)
            for (uint64_t seed = 1; seed <= (quick ? 2u : 6u); seed++) {
                const bool aligned = seed % 2 == 0;
                struct trk_scene sc;
                CHECK(trk_scene_random(w, h, 32, seed, &sc) == 0);
                CHECK(trk_backend_set_objects(cuda, sc.objects, sc.n_objects) == 0);
                CHECK(trk_backend_set_objects(ref, sc.objects, sc.n_objects) == 0);
                CHECK(trk_backend_set_objects(copy, sc.objects, sc.n_objects) == 0);
                const size_t n = image_bytes(fmts[fi], w, h, aligned);
                uint8_t *page = malloc(n);
                struct trk_image img = lay_out(page, fmts[fi], w, h, sc.rgb, seed, aligned);
                struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
                CHECK(trk_backend_process(ref, &img, NULL, want, NULL) == 0);
                for (int m = 0; m < N_MEM; m++) {
                    uint8_t *buf = NULL;
                    size_t reg = 0;
                    if (m == PAGEABLE) buf = malloc(n);
                    if (m == ALLOCED) buf = trk_backend_host_alloc(cuda, n);
                    if (m >= REGISTERED) {
                        buf = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
                        reg = m == REGISTERED ? n : n / 2;
                        CHECK(trk_backend_host_register(cuda, buf, reg) == 0);
                    }
                    CHECK(buf != NULL);
                    if (!buf) continue;
                    struct trk_image im = lay_out(buf, fmts[fi], w, h, sc.rgb, seed, aligned);
                    const bool pinned = trk_backend_image_pinned(cuda, &im);
                    CHECKF(pinned == (m == ALLOCED || m == REGISTERED), "%s: pinned says %d",
                           mem_name[m], pinned);
                    struct trk_backend_timing t;
                    memset(got, 0xa5, sizeof(got));
                    CHECK(trk_backend_process(cuda, &im, NULL, got, &t) == 0);
                    /* Read in place, all of it: exactly the aligned frames
                     * wholly in a mapped pinned range. */
                    const bool placed = t.in_place_bytes > 0;
                    CHECKF(t.upload_bytes > 0 && (!placed || t.in_place_bytes == t.upload_bytes),
                           "%s: in place %llu of %llu bytes", mem_name[m],
                           (unsigned long long)t.in_place_bytes,
                           (unsigned long long)t.upload_bytes);
                    CHECKF(placed == (aligned && (m == ALLOCED || m == REGISTERED)),
                           "%dx%d %s %s aligned %d: read in place says %d (upload %llu bytes, "
                           "%.4f ms)",
                           w, h, trk_pixfmt_name(fmts[fi]), mem_name[m], aligned, placed,
                           (unsigned long long)t.upload_bytes, t.upload_ms);
                    in_place += placed;
                    if (m == ALLOCED) {
                        struct trk_obj_result got2[TRK_MAX_OBJECTS];
                        CHECK(trk_backend_process(copy, &im, NULL, got2, &t) == 0);
                        CHECKF(!memcmp(got2, want, sizeof(*want) * (size_t)sc.n_objects),
                               "%dx%d %s seed %llu: fused:copy differs from cpu-ref", w, h,
                               trk_pixfmt_name(fmts[fi]), (unsigned long long)seed);
                        CHECKF(t.in_place_bytes == 0, "fused:copy read a frame in place");
                    }
                    for (int i = 0; i < sc.n_objects; i++) {
                        const struct trk_obj_result *a = &got[i], *b = &want[i];
                        if (!memcmp(a, b, sizeof(*a))) continue;
                        CHECKF(0,
                               "%dx%d %s seed %llu %s object %d: cuda mass %llu sx %llu "
                               "bbox %d,%d,%d,%d; cpu-ref mass %llu sx %llu bbox %d,%d,%d,%d",
                               w, h, trk_pixfmt_name(fmts[fi]), (unsigned long long)seed,
                               mem_name[m], i, (unsigned long long)a->mass,
                               (unsigned long long)a->sum_x, a->x0, a->y0, a->x1, a->y1,
                               (unsigned long long)b->mass, (unsigned long long)b->sum_x, b->x0,
                               b->y0, b->x1, b->y1);
                        if (++shown > 5) return check_exit("cuda_pinned");
                        break;
                    }
                    cases++;
                    if (m == PAGEABLE) free(buf);
                    if (m == ALLOCED) trk_backend_host_free(cuda, buf);
                    if (m >= REGISTERED) {
                        trk_backend_host_unregister(cuda, buf);
                        CHECK(!trk_backend_host_pinned(cuda, buf, reg));
                        free(buf);
                    }
                }
                free(page);
                trk_scene_free(&sc);
            }
        trk_backend_destroy(&cuda);
        trk_backend_destroy(&copy);
        trk_backend_destroy(&ref);
    }
    printf("%d cases (sizes x formats x seeds x memory kinds), %d read in place\n", cases,
           in_place);
    return check_exit("cuda_pinned");
}
