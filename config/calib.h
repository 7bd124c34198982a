/* World coordinates: the objects file's optional "calibration" section
 * (config/OBJECTS.md, Calibration). A planar homography from 4 or more
 * point pairs (pixel -> world, in a unit the user names), optionally after
 * undoing lens distortion given in OpenCV's convention (camera matrix fx,
 * fy, cx, cy; distortion k1, k2, p1, p2, k3). It maps result points (not
 * the image): aggregate and blob centroids get wx, wy.
 *
 * A pixel point p goes to the world as world = H * undistort(p), where
 * undistort is OpenCV's undistortPoints with P = the camera matrix (so the
 * homography works on undistorted pixels) and H is fitted to the
 * undistorted calibration points: the normalised DLT (Hartley) solved by an
 * eigen decomposition, then refined by Levenberg-Marquardt on the squared
 * world distances, as OpenCV's findHomography (method 0) does. For 4 points
 * the fit is exact. With a camera matrix the camera's pose is derived from
 * the homography too, so that a point seen at a height above the plane (a
 * robot's top) maps to the world point under it (trk_calib_to_world_at).
 *
 * Thread safety: every function is reentrant; a solved struct trk_calib is
 * read-only and may be shared between threads.
 */
#ifndef TRK_CONFIG_CALIB_H
#define TRK_CONFIG_CALIB_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Point pairs accepted: a homography has 8 degrees of freedom, 2 per pair;
 * the upper bound keeps the struct (copied with every object set) small and
 * the general-position search (at worst n^4 / 24 subsets) quick. */
#define TRK_CALIB_MIN_POINTS 4
#define TRK_CALIB_MAX_POINTS 64
/* The unit string's bytes, with the NUL ("mm", "m", "in", "field units"). */
#define TRK_CALIB_UNIT_MAX 32
/* Three points count as lying on one line when the height of their triangle
 * is below this fraction of its longest side (0.01: a point within 5 px of
 * the line through two others 500 px apart). Points that close to a line
 * leave the homography at the mercy of a pixel's error. */
#define TRK_CALIB_COLLINEAR_TOL 0.01
/* The homography between the normalised point sets (both centred, mean
 * distance sqrt(2)) is singular when its smallest singular value is below
 * this fraction of its largest: it would squash the plane onto a line. A
 * well-posed one has a ratio of order 0.1..1. */
#define TRK_CALIB_SINGULAR_TOL 1e-6
/* Largest |value| of a pixel coordinate (frames are at most 16384 wide),
 * of a world coordinate, and of a camera matrix or distortion entry: bounds
 * that keep every product in the solver finite. */
#define TRK_CALIB_PIXEL_MAX 1e6
#define TRK_CALIB_WORLD_MAX 1e12
#define TRK_CALIB_LENS_MAX  1e6
/* undistort: iterations at most, and how closely distorting the result
 * again must give back the pixel (pixels) for the point to count as
 * undistorted; farther out a lens model may have no inverse. */
#define TRK_CALIB_UNDISTORT_ITERS 100
#define TRK_CALIB_UNDISTORT_TOL   1e-6

/* A calibration: the file's values, then (trk_calib_solve) what is derived
 * from them. A zeroed struct is "no calibration". */
struct trk_calib {
    bool on; /* the objects file has a "calibration" section */
    int n;   /* point pairs, TRK_CALIB_MIN_POINTS..TRK_CALIB_MAX_POINTS */
    double pt[TRK_CALIB_MAX_POINTS][4]; /* px, py (pixels), wx, wy (unit) */
    char unit[TRK_CALIB_UNIT_MAX];      /* non-empty UTF-8, no control chars */
    /* "camera_matrix" given: fx, fy > 0 (pixels), cx, cy (pixels). */
    bool lens;
    double fx, fy, cx, cy;
    /* "distortion": 0 (absent), 4 (k1, k2, p1, p2) or 5 (k3 too) values;
     * dist[] holds 5, the missing ones 0. Needs lens. */
    int n_dist;
    double dist[5];

    /* Derived by trk_calib_solve. h: undistorted pixel -> world, row-major,
     * scaled so that the third row gives 1 at the centroid of the
     * calibration points (every point in front of the camera has a
     * positive third component; a point with <= 0 is past the horizon). */
    double h[9];
    double rms;   /* residual of the fit: root mean square world distance */
    int decimals; /* wx, wy decimals (trk_calib_solve says how chosen) */
    /* The camera's pose, derived when a camera matrix is given (pose):
     * world -> camera as OpenCV's solvePnP gives it, x_cam = rot x_world +
     * tvec (rot row-major), for the plane's points at world Z = 0 and Z =
     * the cross product of the world x and y axes; centre: the camera's
     * position in the world (its Z is the camera's height over the plane,
     * negative when the world axes make Z point away from the camera). */
    bool pose;
    double rot[9], tvec[3], centre[3];
};

/* Where a solve failed: the points as a whole (point < 0) or point k. */
struct trk_calib_fault {
    int point;
    char msg[200]; /* "points[0], [1] and [2] lie on one line ..." */
};

/* Checks c's values and derives h, rms and decimals. In order: the point
 * count, every value finite and within its bound, fx, fy > 0, distortion
 * only with a camera matrix, every calibration pixel undistortable, the
 * pixel points in general position (with 4 points: no three on one line,
 * TRK_CALIB_COLLINEAR_TOL; with more: some 4 of them so), the fit, the
 * homography not singular (TRK_CALIB_SINGULAR_TOL) and finite, the world
 * points in general position as the pixel ones, and every calibration
 * point on the same side of the horizon (pixel and world points listed in
 * a different order fold the plane over). decimals: the fewest (0..6) that
 * make one step of wx, wy no larger than the world size of 1/100 pixel at
 * the centroid, the precision of cx, cy. Returns 0, or TRK_EINVAL with
 * *f filled (f may be NULL); c->on is not looked at. */
int trk_calib_solve(struct trk_calib *c, struct trk_calib_fault *f);

/* The undistorted pixel of (px, py) (itself without a camera matrix):
 * OpenCV's undistortPoints fixed-point iteration, run until it no longer
 * moves (OpenCV stops after 5 steps unless given a criterion) or
 * TRK_CALIB_UNDISTORT_ITERS; false when the lens model has no inverse
 * there (its radial factor <= 0, or distorting the result misses the
 * pixel by over TRK_CALIB_UNDISTORT_TOL). */
bool trk_calib_undistort(const struct trk_calib *c, double px, double py, double *ux, double *uy);

/* The world point of pixel (px, py) by a solved calibration; false (and
 * *wx, *wy untouched) when it has none: not undistortable, or at or past
 * the horizon. */
bool trk_calib_to_world(const struct trk_calib *c, double px, double py, double *wx, double *wy);

/* The world point of pixel (px, py) seen at height z (world units, towards
 * the camera) above the plane: a robot's cover, a marker on a box. It is
 * trk_calib_to_world's floor point moved by the parallax the camera's pose
 * gives between heights 0 and z (exact when the calibration points fit
 * exactly; continuous with the floor point as z goes to 0). Without a pose
 * (no camera matrix) or with z == 0: trk_calib_to_world. False as that, or
 * when the ray through the pixel never reaches height z in front of the
 * camera (z at or above the camera). */
bool trk_calib_to_world_at(const struct trk_calib *c, double px, double py, double z, double *wx,
                           double *wy);

#ifdef __cplusplus
}
#endif
#endif
