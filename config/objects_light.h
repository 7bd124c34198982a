/* The objects file's light keys (issue 27; OBJECTS.md, "Light"): the
 * top-level "illumination" reference and each object's "adapt" rule. The
 * loader fills them (config/objects_light.c); the daemon's light module
 * (daemon/light.h) moves the ranges by them between frames. Backends never
 * see them: they get plain colour boxes.
 */
#ifndef TRK_CONFIG_OBJECTS_LIGHT_H
#define TRK_CONFIG_OBJECTS_LIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h" /* TRK_MAX_OBJECTS */

#ifdef __cplusplus
extern "C" {
#endif

enum trk_illum_ref {
    TRK_ILLUM_OFF = 0,    /* no "illumination": ranges as taught          */
    TRK_ILLUM_PATCH,      /* a white or grey patch: the rectangle's means */
    TRK_ILLUM_GREY_WORLD, /* the frame's (or the rectangle's) mean colour */
};

/* "illumination": {"reference": "patch" | "grey-world", "rect": [x, y, w,
 * h], "means": [R, G, B]}. rect is required for a patch, optional for
 * grey-world (absent: the whole frame). means: the reference's per-channel
 * means when the ranges were taught (absent: the first frame measured
 * after a load gives them; a save writes them), kept as Q8 (value * 256). */
struct trk_illum_cfg {
    enum trk_illum_ref reference;
    bool has_rect;
    int32_t rect[4];
    bool has_means;
    uint32_t means_q8[3];
};

/* Defaults of "adapt": {} (OBJECTS.md says why these). */
#define TRK_ADAPT_DRIFT_DEFAULT     32 /* channel units (hue: degrees: 12) */
#define TRK_ADAPT_HUE_DRIFT_DEFAULT 12
#define TRK_ADAPT_RATE_DEFAULT      2    /* channel units per frame */
#define TRK_ADAPT_RING_DEFAULT      0.02 /* background share of the ring */
#define TRK_ADAPT_RING_PX           4    /* the ring's width around an instance */

/* An object's "adapt": {"max_drift": [a, b, c], "rate": [a, b, c], "ring":
 * SHARE}: after each frame the range's centre moves toward the mean of the
 * best instance's pixels by at most rate[c] per frame and at most
 * max_drift[c] from the taught centre; a move that would make more than
 * SHARE of the ring around the instance match is not made (daemon/light.h). */
struct trk_adapt_cfg {
    bool on;
    uint16_t max_drift[3];
    uint16_t rate[3];
    uint16_t ring_permille; /* SHARE * 1000, rounded */
};

struct trk_light_cfg {
    struct trk_illum_cfg illum;
    struct trk_adapt_cfg adapt[TRK_MAX_OBJECTS];
};

#ifdef __cplusplus
}
#endif
#endif
