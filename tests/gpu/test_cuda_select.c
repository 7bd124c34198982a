/* Backend selection around the CUDA backend. Runs everywhere CUDA is compiled,
 * with or without a GPU (CI has nvcc but no GPU):
 *   - the CUDA kind lists its variants, the fused design first;
 *   - without a usable GPU: asking for cuda gives TRK_ENODEV, and auto falls
 *     back to a CPU backend whose results equal the reference's;
 *   - with one: auto picks cuda, and its results equal the reference's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

int main(void)
{
    char why[256] = "";
    bool gpu = trk_cuda_available(why, sizeof(why));
    printf("CUDA usable: %s%s%s\n", gpu ? "yes" : "no", gpu ? "" : " - ", why);
    if (!gpu) CHECK(why[0] != '\0');

    const char *names[32];
    int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 32);
    CHECK(nv >= 4);
    if (nv >= 1) CHECK(!strcmp(names[0], "fused"));
    bool have[4] = { false, false, false, false };
    for (int i = 0; i < nv && i < 32; i++) {
        have[0] |= !strcmp(names[i], "lut");
        have[1] |= !strcmp(names[i], "moct-h-r4");
        have[2] |= !strcmp(names[i], "moct-v-r4");
        have[3] |= !strcmp(names[i], "moct-s-r4");
    }
    CHECK(have[0] && have[1] && have[2] && have[3]);

    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CUDA, .max_width = 96, .max_height = 64 };
    struct trk_backend *b = (struct trk_backend *)&cfg; /* must be reset to NULL */
    int err = trk_backend_create(&cfg, &b);
    if (gpu) {
        CHECK(err == 0 && b);
    } else {
        CHECK(err == TRK_ENODEV);
        CHECK(b == NULL);
    }
    trk_backend_destroy(&b);

    cfg.kind = TRK_BACKEND_AUTO;
    err = trk_backend_create(&cfg, &b);
    CHECK(err == 0 && b);
    if (!b) return 1;
    const char *name = trk_backend_name(b);
    printf("auto -> %s\n", name);
    if (gpu)
        CHECK(!strncmp(name, "cuda", 4));
    else
        CHECK(!strncmp(name, "cpu", 3));

    struct trk_backend *ref = NULL;
    cfg.kind = TRK_BACKEND_CPU_REF;
    CHECK(trk_backend_create(&cfg, &ref) == 0);
    struct trk_scene sc;
    CHECK(trk_scene_random(95, 63, 40, 7, &sc) == 0);
    CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
    CHECK(trk_backend_set_objects(ref, sc.objects, sc.n_objects) == 0);
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        uint8_t *buf;
        struct trk_image img;
        CHECK(trk_image_from_rgb(sc.rgb, 95, 63, (enum trk_pixfmt)fmt, TRK_MATRIX_BT709, false, 5,
                                 &buf, &img) == 0);
        CHECK(trk_backend_process(ref, &img, NULL, want, NULL) == 0);
        CHECK(trk_backend_process(b, &img, NULL, got, NULL) == 0);
        CHECK(memcmp(want, got, sizeof(want[0]) * (size_t)sc.n_objects) == 0);
        free(buf);
    }
    trk_scene_free(&sc);
    trk_backend_destroy(&b);
    trk_backend_destroy(&ref);
    return check_exit("test_cuda_select");
}
