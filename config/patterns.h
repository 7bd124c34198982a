/* Marker patterns as the objects file defines them ("patterns",
 * config/OBJECTS.md) and the markers assembly finds with them
 * (daemon/markers.h, which says how): here, below the daemon, because the
 * objects set (config/) carries the patterns and the frame result
 * (protocol/result.h) carries the markers. */
#ifndef TRK_CONFIG_PATTERNS_H
#define TRK_CONFIG_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h" /* TRK_NAME_MAX */

/* The most patterns one objects set has (each one's markers are looked for
 * in every frame). */
#define TRK_PATTERNS_MAX 16

#define TRK_PATTERN_DOTS_MAX 8
#define TRK_PATTERN_IDS_MAX  64
#define TRK_CODE_MAX         5

enum trk_pattern_kind {
    TRK_PATTERN_DOTS = 0, /* centre + dots */
    TRK_PATTERN_CODE,     /* colour code   */
};

/* SSL-Vision teams (the --ssl output sends a pattern's markers as robots of
 * its team; none: not sent as robots). */
enum trk_pattern_team {
    TRK_TEAM_NONE = 0,
    TRK_TEAM_BLUE,
    TRK_TEAM_YELLOW,
};

struct trk_pattern {
    char name[TRK_NAME_MAX];
    enum trk_pattern_kind kind;
    enum trk_pattern_team team;
    double height; /* world units above the calibration's plane (0: on it) */
    /* TRK_PATTERN_DOTS */
    uint16_t centre;  /* the centre colour: an object index */
    double centre_mm; /* the centre spot's diameter (mm), for the scale */
    double px_per_mm; /* > 0: a fixed scale instead of the centre's area */
    double tol;       /* distance tolerance, a fraction (0 counts as 0.4) */
    unsigned n_dots;  /* 2..TRK_PATTERN_DOTS_MAX */
    double dot_x[TRK_PATTERN_DOTS_MAX], dot_y[TRK_PATTERN_DOTS_MAX]; /* mm */
    unsigned n_ids;                                                  /* 1..TRK_PATTERN_IDS_MAX */
    int32_t id[TRK_PATTERN_IDS_MAX];
    uint16_t id_colors[TRK_PATTERN_IDS_MAX][TRK_PATTERN_DOTS_MAX]; /* per dot slot */
    /* TRK_PATTERN_CODE */
    unsigned n_code; /* 2..TRK_CODE_MAX */
    uint16_t code[TRK_CODE_MAX];
    int32_t code_id;
    double gap; /* adjacency factor (0 counts as 1.5) */
};

/* A blob as assembly needs it: its centroid (px), mass and object. */
struct trk_spot {
    double x, y;
    double mass;
    uint16_t object;
};

struct trk_marker {
    uint16_t pattern; /* index into the pattern array */
    int32_t id;
    double cx, cy;     /* px: the centre spot's centroid / the code's mean */
    double heading;    /* degrees, counter-clockwise on screen from +x, [0, 360) */
    double confidence; /* [0, 1] */
    double px_per_mm;  /* the scale used (0 for colour codes) */
    /* Set by trk_markers_follow (0 before): */
    uint64_t track_id; /* >= 1, unique within the follower's life, never reused */
    uint32_t lost;     /* frames since seen; 0 = found this frame */
    double vx, vy;     /* px per frame */
    double vheading;   /* degrees per frame, (-180, 180] */
};

#endif
