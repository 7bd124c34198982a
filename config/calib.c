/* World coordinates from a calibration (calib.h says what and how).
 *
 * Everything here is small dense linear algebra in doubles: a 9x9
 * symmetric eigen problem for the DLT, an 8x8 linear solve per
 * Levenberg-Marquardt step. Jacobi rotations are used for the eigen
 * problem: a few dozen lines, accurate to the last bits for matrices this
 * small, no library needed.
 */
#include "calib.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "trk_error.h" /* TRK_EINVAL */

__attribute__((format(printf, 3, 4))) static int fault(struct trk_calib_fault *f, int point,
                                                       const char *fmt, ...)
{
    if (f) {
        f->point = point;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->msg, sizeof f->msg, fmt, ap);
        va_end(ap);
    }
    return TRK_EINVAL;
}

/* ------------------------------------------------------------- the lens */

/* OpenCV's distortion model on normalised coordinates (x, y). */
static void distort(const double k[5], double x, double y, double *xd, double *yd)
{
    double r2 = x * x + y * y;
    double radial = 1 + ((k[4] * r2 + k[1]) * r2 + k[0]) * r2;
    *xd = x * radial + 2 * k[2] * x * y + k[3] * (r2 + 2 * x * x);
    *yd = y * radial + k[2] * (r2 + 2 * y * y) + 2 * k[3] * x * y;
}

bool trk_calib_undistort(const struct trk_calib *c, double px, double py, double *ux, double *uy)
{
    if (!c->lens) {
        *ux = px;
        *uy = py;
        return true;
    }
    const double *k = c->dist;
    const double x0 = (px - c->cx) / c->fx, y0 = (py - c->cy) / c->fy;
    double x = x0, y = y0;
    /* OpenCV's iteration (undistortPoints): divide the distorted point,
     * less the tangential part at the current guess, by the radial factor
     * at the current guess. It converges where the model is invertible;
     * it is run until the guess stops moving, not a fixed 5 steps. */
    for (int i = 0; i < TRK_CALIB_UNDISTORT_ITERS; i++) {
        double r2 = x * x + y * y;
        double radial = 1 + ((k[4] * r2 + k[1]) * r2 + k[0]) * r2;
        if (!(radial > 0) || !isfinite(radial)) return false;
        double dx = 2 * k[2] * x * y + k[3] * (r2 + 2 * x * x);
        double dy = k[2] * (r2 + 2 * y * y) + 2 * k[3] * x * y;
        double nx = (x0 - dx) / radial, ny = (y0 - dy) / radial;
        double step = fabs(nx - x) + fabs(ny - y);
        x = nx;
        y = ny;
        if (!(step > 4e-16 * (1 + fabs(x) + fabs(y)))) break; /* also stops on NaN */
    }
    double xd, yd;
    distort(k, x, y, &xd, &yd);
    double miss = hypot((xd - x0) * c->fx, (yd - y0) * c->fy);
    if (!(miss <= TRK_CALIB_UNDISTORT_TOL)) return false;
    *ux = x * c->fx + c->cx;
    *uy = y * c->fy + c->cy;
    return true;
}

/* ------------------------------------------------------- linear algebra */

/* Eigen decomposition of the symmetric n x n matrix a (row-major, n <= 9;
 * destroyed): eigenvalues in w, eigenvectors in the columns of v. Cyclic
 * Jacobi: each rotation zeroes one off-diagonal pair; sweeps until the
 * off-diagonal part is negligible against the diagonal. */
static void jacobi_eigen(double *a, int n, double *v, double *w)
{
    for (int i = 0; i < n * n; i++)
        v[i] = (i % (n + 1)) == 0;
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0, diag = 0;
        for (int p = 0; p < n; p++) {
            diag += a[p * n + p] * a[p * n + p];
            for (int q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        }
        if (off <= 1e-34 * diag || off == 0) break;
        for (int p = 0; p < n; p++) {
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (apq == 0) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double cs = 1 / sqrt(t * t + 1), sn = t * cs;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = cs * akp - sn * akq;
                    a[k * n + q] = sn * akp + cs * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = cs * apk - sn * aqk;
                    a[q * n + k] = sn * apk + cs * aqk;
                }
                for (int k = 0; k < n; k++) {
                    double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = cs * vkp - sn * vkq;
                    v[k * n + q] = sn * vkp + cs * vkq;
                }
            }
        }
    }
    for (int i = 0; i < n; i++)
        w[i] = a[i * n + i];
}

/* Solves the n x n system m x = b (m row-major, both destroyed; x in b) by
 * Gaussian elimination with partial pivoting. False when singular. */
static bool solve_linear(double *m, double *b, int n)
{
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(m[r * n + c]) > fabs(m[piv * n + c])) piv = r;
        if (!(fabs(m[piv * n + c]) > 0)) return false;
        if (piv != c) {
            for (int k = 0; k < n; k++) {
                double t = m[c * n + k];
                m[c * n + k] = m[piv * n + k];
                m[piv * n + k] = t;
            }
            double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = m[r * n + c] / m[c * n + c];
            for (int k = c; k < n; k++)
                m[r * n + k] -= f * m[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        for (int k = c + 1; k < n; k++)
            b[c] -= m[c * n + k] * b[k];
        b[c] /= m[c * n + c];
    }
    return true;
}

/* ------------------------------------------------------ the point sets */

/* Twice the area of triangle abc over its longest side squared: the
 * triangle's height as a fraction of that side (0: on one line). */
static double flatness(const double *a, const double *b, const double *c)
{
    double cross = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    double l1 = hypot(b[0] - a[0], b[1] - a[1]), l2 = hypot(c[0] - a[0], c[1] - a[1]),
           l3 = hypot(c[0] - b[0], c[1] - b[1]);
    double l = fmax(l1, fmax(l2, l3));
    return l > 0 ? fabs(cross) / (l * l) : 0;
}

/* Whether 4 points of p[0..n) have no three on one line. For n == 4 the
 * first flat triple goes to bad[] and its flatness to *worst. */
static bool general_position(const double (*p)[2], int n, int bad[3], double *worst)
{
    if (n == 4) {
        static const int tri[4][3] = { { 0, 1, 2 }, { 0, 1, 3 }, { 0, 2, 3 }, { 1, 2, 3 } };
        for (int t = 0; t < 4; t++) {
            double fl = flatness(p[tri[t][0]], p[tri[t][1]], p[tri[t][2]]);
            if (fl < TRK_CALIB_COLLINEAR_TOL) {
                memcpy(bad, tri[t], sizeof tri[t]);
                *worst = fl;
                return false;
            }
        }
        return true;
    }
    /* More points may have three on one line (corners and edge midpoints
     * of a rectangle); it is enough that some 4 are in general position. */
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            for (int c = b + 1; c < n; c++) {
                if (flatness(p[a], p[b], p[c]) < TRK_CALIB_COLLINEAR_TOL) continue;
                for (int d = c + 1; d < n; d++)
                    if (flatness(p[a], p[b], p[d]) >= TRK_CALIB_COLLINEAR_TOL &&
                        flatness(p[a], p[c], p[d]) >= TRK_CALIB_COLLINEAR_TOL &&
                        flatness(p[b], p[c], p[d]) >= TRK_CALIB_COLLINEAR_TOL)
                        return true;
            }
    return false;
}

static int collinear_fault(struct trk_calib_fault *f, const double (*p)[2], int n,
                           const char *space)
{
    int bad[3];
    double worst;
    if (general_position(p, n, bad, &worst)) return 0;
    if (n == 4)
        return fault(f, bad[2],
                     "points[%d], [%d] and [%d] lie on one line in %s: their triangle's height "
                     "is %.2g%% of its longest side (at least %g%% is needed)",
                     bad[0], bad[1], bad[2], space, worst * 100, TRK_CALIB_COLLINEAR_TOL * 100);
    return fault(f, -1,
                 "no 4 of the %d points are free of three on one line in %s (three count as on "
                 "one line when their triangle's height is under %g%% of its longest side)",
                 n, space, TRK_CALIB_COLLINEAR_TOL * 100);
}

/* Hartley's normalisation of p[0..n): centroid to the origin, mean
 * distance sqrt(2). t = {scale, centroid x, centroid y}; q the result. */
static void normalise(const double (*p)[2], int n, double t[3], double (*q)[2])
{
    double mx = 0, my = 0, d = 0;
    for (int i = 0; i < n; i++) {
        mx += p[i][0];
        my += p[i][1];
    }
    mx /= n;
    my /= n;
    for (int i = 0; i < n; i++)
        d += hypot(p[i][0] - mx, p[i][1] - my);
    d /= n;
    double s = d > 0 ? sqrt(2.0) / d : 1;
    for (int i = 0; i < n; i++) {
        q[i][0] = (p[i][0] - mx) * s;
        q[i][1] = (p[i][1] - my) * s;
    }
    t[0] = s;
    t[1] = mx;
    t[2] = my;
}

/* ------------------------------------------------------ the homography */

/* The DLT: h (9, unit norm) minimising |A h| for the rows
 * [x y 1 0 0 0 -ux -uy -u], [0 0 0 x y 1 -vx -vy -v] of each pair
 * (x, y) -> (u, v): the eigenvector of A^T A with the smallest eigenvalue. */
static void dlt(const double (*s)[2], const double (*d)[2], int n, double h[9])
{
    double ata[81] = { 0 };
    for (int i = 0; i < n; i++) {
        const double x = s[i][0], y = s[i][1], u = d[i][0], v = d[i][1];
        const double r[2][9] = { { x, y, 1, 0, 0, 0, -u * x, -u * y, -u },
                                 { 0, 0, 0, x, y, 1, -v * x, -v * y, -v } };
        for (int k = 0; k < 2; k++)
            for (int a = 0; a < 9; a++)
                for (int b = 0; b < 9; b++)
                    ata[a * 9 + b] += r[k][a] * r[k][b];
    }
    double vec[81], w[9];
    jacobi_eigen(ata, 9, vec, w);
    int m = 0;
    for (int i = 1; i < 9; i++)
        if (w[i] < w[m]) m = i;
    for (int i = 0; i < 9; i++)
        h[i] = vec[i * 9 + m];
}

/* The sum of squared distances between H s_i and d_i (h[8] = 1 implied for
 * the 8 parameters), and when jtj is not NULL the Gauss-Newton normal
 * equations jtj (8x8) and jtr (8). */
static double residuals(const double h[8], const double (*s)[2], const double (*d)[2], int n,
                        double *jtj, double *jtr)
{
    double cost = 0;
    if (jtj) {
        memset(jtj, 0, 64 * sizeof *jtj);
        memset(jtr, 0, 8 * sizeof *jtr);
    }
    for (int i = 0; i < n; i++) {
        const double x = s[i][0], y = s[i][1];
        const double X = h[0] * x + h[1] * y + h[2], Y = h[3] * x + h[4] * y + h[5];
        const double W = h[6] * x + h[7] * y + 1, iw = 1 / W;
        const double u = X * iw, v = Y * iw;
        const double r[2] = { u - d[i][0], v - d[i][1] };
        cost += r[0] * r[0] + r[1] * r[1];
        if (!jtj) continue;
        const double j[2][8] = { { x * iw, y * iw, iw, 0, 0, 0, -u * x * iw, -u * y * iw },
                                 { 0, 0, 0, x * iw, y * iw, iw, -v * x * iw, -v * y * iw } };
        for (int k = 0; k < 2; k++)
            for (int a = 0; a < 8; a++) {
                jtr[a] += j[k][a] * r[k];
                for (int b = 0; b < 8; b++)
                    jtj[a * 8 + b] += j[k][a] * j[k][b];
            }
    }
    return cost;
}

/* Levenberg-Marquardt on the squared world distances from the DLT's h
 * (scaled to h[8] = 1, which the normalisation keeps well away from 0 for
 * points in front of the camera). The DLT minimises an algebraic error;
 * this minimises the geometric one, like OpenCV's findHomography. */
static void refine(double h[9], const double (*s)[2], const double (*d)[2], int n)
{
    if (!(fabs(h[8]) > 1e-9)) return; /* folded or singular: reported after */
    double p[8];
    for (int i = 0; i < 8; i++)
        p[i] = h[i] / h[8];
    double jtj[64], jtr[8];
    double cost = residuals(p, s, d, n, jtj, jtr);
    double lambda = 1e-3;
    for (int it = 0; it < 200 && cost > 0; it++) {
        double m[64], step[8], q[8];
        memcpy(m, jtj, sizeof m);
        for (int a = 0; a < 8; a++) {
            m[a * 8 + a] += lambda * (jtj[a * 8 + a] > 0 ? jtj[a * 8 + a] : 1);
            step[a] = -jtr[a];
        }
        if (!solve_linear(m, step, 8)) {
            lambda *= 10;
            if (lambda > 1e16) break;
            continue;
        }
        double moved = 0, size = 0;
        for (int a = 0; a < 8; a++) {
            q[a] = p[a] + step[a];
            moved += fabs(step[a]);
            size += fabs(p[a]);
        }
        double c2 = residuals(q, s, d, n, NULL, NULL);
        if (c2 < cost) {
            bool done = cost - c2 <= 1e-15 * cost || moved <= 1e-15 * size;
            memcpy(p, q, sizeof p);
            cost = residuals(p, s, d, n, jtj, jtr);
            lambda = fmax(lambda / 10, 1e-12);
            if (done) break;
        } else {
            lambda *= 10;
            if (lambda > 1e16 || moved <= 1e-15 * size) break;
        }
    }
    memcpy(h, p, sizeof p);
    h[8] = 1;
}

/* The ratio of the smallest to the largest singular value of the 3x3 m. */
static double singular_ratio(const double m[9])
{
    double mtm[9], v[9], w[3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            mtm[a * 3 + b] = m[0 * 3 + a] * m[0 * 3 + b] + m[1 * 3 + a] * m[1 * 3 + b] +
                             m[2 * 3 + a] * m[2 * 3 + b];
    jacobi_eigen(mtm, 3, v, w);
    double lo = fmin(w[0], fmin(w[1], w[2])), hi = fmax(w[0], fmax(w[1], w[2]));
    return hi > 0 ? sqrt(fmax(lo, 0) / hi) : 0;
}

static bool finite_in(double v, double bound)
{
    return isfinite(v) && fabs(v) <= bound;
}

/* ----------------------------------------------------------- the pose */

/* inv = m^-1 for a 3 x 3 row-major m; false when singular. */
static bool invert3(const double m[9], double inv[9])
{
    double c0 = m[4] * m[8] - m[5] * m[7], c1 = m[5] * m[6] - m[3] * m[8];
    double c2 = m[3] * m[7] - m[4] * m[6], det = m[0] * c0 + m[1] * c1 + m[2] * c2;
    if (!(fabs(det) > 0) || !isfinite(det)) return false;
    double a[9] = { c0, m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
                    c1, m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
                    c2, m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3] };
    for (int i = 0; i < 9; i++)
        inv[i] = a[i] / det;
    return true;
}

static void mul3(const double a[9], const double b[9], double out[9])
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            out[r * 3 + k] = a[r * 3] * b[k] + a[r * 3 + 1] * b[3 + k] + a[r * 3 + 2] * b[6 + k];
}

/* The camera's pose from the plane's homography and the camera matrix
 * (Zhang's decomposition): K^-1 H^-1 = s [r1 r2 t] for the plane Z = 0;
 * s from the mean length of the first two columns, its sign putting the
 * plane in front of the camera (t_z > 0); r3 = r1 x r2, and the nearest
 * rotation to [r1 r2 r3] (the polar factor A (A^T A)^-1/2), as r1 and r2
 * of a least-squares fit are orthonormal only approximately. */
static void derive_pose(struct trk_calib *c)
{
    c->pose = false;
    double g[9], m[9],
        kinv[9] = { 1 / c->fx, 0, -c->cx / c->fx, 0, 1 / c->fy, -c->cy / c->fy, 0, 0, 1 };
    if (!c->lens || !invert3(c->h, g)) return;
    mul3(kinv, g, m);
    double n1 = sqrt(m[0] * m[0] + m[3] * m[3] + m[6] * m[6]);
    double n2 = sqrt(m[1] * m[1] + m[4] * m[4] + m[7] * m[7]);
    double s = (n1 + n2) / 2 * (m[8] < 0 ? -1 : 1);
    if (!(fabs(s) > 0) || !isfinite(s)) return;
    double a[9], r1[3] = { m[0] / s, m[3] / s, m[6] / s }, r2[3] = { m[1] / s, m[4] / s, m[7] / s };
    double r3[3] = { r1[1] * r2[2] - r1[2] * r2[1], r1[2] * r2[0] - r1[0] * r2[2],
                     r1[0] * r2[1] - r1[1] * r2[0] };
    for (int i = 0; i < 3; i++) {
        a[i * 3 + 0] = r1[i];
        a[i * 3 + 1] = r2[i];
        a[i * 3 + 2] = r3[i];
    }
    double ata[9], v[9], w[3], root[9];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            ata[i * 3 + k] = a[i] * a[k] + a[3 + i] * a[3 + k] + a[6 + i] * a[6 + k];
    jacobi_eigen(ata, 3, v, w);
    for (int i = 0; i < 3; i++) {
        if (!(w[i] > 0)) return;
        w[i] = 1 / sqrt(w[i]);
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            root[i * 3 + k] = v[i * 3] * w[0] * v[k * 3] + v[i * 3 + 1] * w[1] * v[k * 3 + 1] +
                              v[i * 3 + 2] * w[2] * v[k * 3 + 2];
    mul3(a, root, c->rot);
    for (int i = 0; i < 3; i++)
        c->tvec[i] = m[i * 3 + 2] / s;
    for (int i = 0; i < 3; i++) /* centre = -rot^T tvec */
        c->centre[i] =
            -(c->rot[i] * c->tvec[0] + c->rot[3 + i] * c->tvec[1] + c->rot[6 + i] * c->tvec[2]);
    c->pose = true;
}

/* The point where the ray through undistorted pixel (x, y) reaches world
 * height Z (Z on the pose's own axis); false when it does not in front of
 * the camera. */
static bool ray_at(const struct trk_calib *c, double x, double y, double Z, double *X, double *Y)
{
    double d[3] = { (x - c->cx) / c->fx, (y - c->cy) / c->fy, 1 }, dw[3];
    for (int i = 0; i < 3; i++) /* rot^T d */
        dw[i] = c->rot[i] * d[0] + c->rot[3 + i] * d[1] + c->rot[6 + i] * d[2];
    double t = (Z - c->centre[2]) / dw[2];
    if (!(t > 0) || !isfinite(t)) return false;
    *X = c->centre[0] + t * dw[0];
    *Y = c->centre[1] + t * dw[1];
    return isfinite(*X) && isfinite(*Y);
}

int trk_calib_solve(struct trk_calib *c, struct trk_calib_fault *f)
{
    if (f) {
        f->point = -1;
        f->msg[0] = 0;
    }
    const int n = c->n;
    if (n < TRK_CALIB_MIN_POINTS || n > TRK_CALIB_MAX_POINTS)
        return fault(f, -1, "points has %d point pairs (%d..%d are needed)", n,
                     TRK_CALIB_MIN_POINTS, TRK_CALIB_MAX_POINTS);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            double bound = k < 2 ? TRK_CALIB_PIXEL_MAX : TRK_CALIB_WORLD_MAX;
            if (!finite_in(c->pt[i][k], bound))
                return fault(f, i, "points[%d][%d] = %g is not a finite number within +-%g", i, k,
                             c->pt[i][k], bound);
        }
    if (c->lens) {
        const double m[4] = { c->fx, c->fy, c->cx, c->cy };
        for (int k = 0; k < 4; k++)
            if (!finite_in(m[k], TRK_CALIB_LENS_MAX))
                return fault(f, -1, "camera_matrix %s = %g is not a finite number within +-%g",
                             (const char *[]){ "fx", "fy", "cx", "cy" }[k], m[k],
                             TRK_CALIB_LENS_MAX);
        if (!(c->fx > 0 && c->fy > 0))
            return fault(f, -1, "camera_matrix fx and fy must be > 0 (pixels), not %g and %g",
                         c->fx, c->fy);
    }
    if (c->n_dist && !c->lens)
        return fault(f, -1, "distortion needs a camera_matrix (its fx, fy, cx, cy)");
    for (int k = 0; k < 5; k++)
        if (!finite_in(c->dist[k], TRK_CALIB_LENS_MAX))
            return fault(f, -1, "distortion[%d] = %g is not a finite number within +-%g", k,
                         c->dist[k], TRK_CALIB_LENS_MAX);

    double s[TRK_CALIB_MAX_POINTS][2], d[TRK_CALIB_MAX_POINTS][2];
    for (int i = 0; i < n; i++) {
        if (!trk_calib_undistort(c, c->pt[i][0], c->pt[i][1], &s[i][0], &s[i][1]))
            return fault(f, i,
                         "points[%d]: pixel (%g, %g) cannot be undistorted: the distortion "
                         "model has no inverse there",
                         i, c->pt[i][0], c->pt[i][1]);
        d[i][0] = c->pt[i][2];
        d[i][1] = c->pt[i][3];
    }
    int rc =
        collinear_fault(f, (const double(*)[2])s, n, c->lens ? "pixels (undistorted)" : "pixels");
    if (rc) return rc;

    double ts[3], td[3], sn[TRK_CALIB_MAX_POINTS][2], dn[TRK_CALIB_MAX_POINTS][2], hn[9];
    normalise((const double(*)[2])s, n, ts, sn);
    normalise((const double(*)[2])d, n, td, dn);
    dlt((const double(*)[2])sn, (const double(*)[2])dn, n, hn);
    refine(hn, (const double(*)[2])sn, (const double(*)[2])dn, n);
    bool finite = true;
    for (int i = 0; i < 9; i++)
        finite = finite && isfinite(hn[i]);
    double ratio = finite ? singular_ratio(hn) : 0;
    if (!(ratio >= TRK_CALIB_SINGULAR_TOL))
        return fault(f, -1,
                     "the homography is singular (its singular values' ratio is %.2g, under "
                     "%g): it would map the plane onto a line; are three world points on one "
                     "line?",
                     ratio, TRK_CALIB_SINGULAR_TOL);
    rc = collinear_fault(f, (const double(*)[2])d, n, "world units");
    if (rc) return rc;

    /* Back to the points' own coordinates: H = Td^-1 Hn Ts. The third row
     * is Hn's third row times Ts, so it still gives hn[8] at the pixel
     * centroid. */
    const double a = ts[0], ax = ts[1], ay = ts[2], b = td[0], bx = td[1], by = td[2];
    double m[9]; /* Hn Ts */
    for (int r = 0; r < 3; r++) {
        m[r * 3 + 0] = hn[r * 3 + 0] * a;
        m[r * 3 + 1] = hn[r * 3 + 1] * a;
        m[r * 3 + 2] = hn[r * 3 + 2] - hn[r * 3 + 0] * a * ax - hn[r * 3 + 1] * a * ay;
    }
    double h[9];
    for (int k = 0; k < 3; k++) {
        h[0 * 3 + k] = m[0 * 3 + k] / b + bx * m[2 * 3 + k];
        h[1 * 3 + k] = m[1 * 3 + k] / b + by * m[2 * 3 + k];
        h[2 * 3 + k] = m[2 * 3 + k];
    }
    double w0 = h[6] * ax + h[7] * ay + h[8];
    if (!(fabs(w0) > 0) || !isfinite(w0))
        return fault(f, -1, "the homography maps the points' centre to infinity");
    for (int i = 0; i < 9; i++)
        c->h[i] = h[i] / w0;
    /* A camera sees the plane on one side of its horizon: points on both
     * sides come from pixel and world points listed in different orders. */
    double sq = 0;
    for (int i = 0; i < n; i++) {
        const double *hh = c->h;
        double W = hh[6] * s[i][0] + hh[7] * s[i][1] + hh[8];
        if (!(W > 0))
            return fault(f, i,
                         "points[%d] is past the horizon of the homography the points give: "
                         "the pixel and world points are not in the same order (the plane "
                         "would fold over)",
                         i);
        double u = (hh[0] * s[i][0] + hh[1] * s[i][1] + hh[2]) / W;
        double v = (hh[3] * s[i][0] + hh[4] * s[i][1] + hh[5]) / W;
        sq += (u - d[i][0]) * (u - d[i][0]) + (v - d[i][1]) * (v - d[i][1]);
    }
    c->rms = sqrt(sq / n);
    /* The world size of a pixel at the centroid: sqrt |det J| of the map
     * there (W = 1 at the centroid by the scaling above). */
    const double *hh = c->h;
    double u0 = hh[0] * ax + hh[1] * ay + hh[2], v0 = hh[3] * ax + hh[4] * ay + hh[5];
    double j00 = hh[0] - u0 * hh[6], j01 = hh[1] - u0 * hh[7];
    double j10 = hh[3] - v0 * hh[6], j11 = hh[4] - v0 * hh[7];
    double px = sqrt(fabs(j00 * j11 - j01 * j10));
    int dec = px > 0 ? (int)ceil(-log10(px / 100) - 1e-9) : 6;
    c->decimals = dec < 0 ? 0 : dec > 6 ? 6 : dec;
    derive_pose(c);
    return 0;
}

bool trk_calib_to_world(const struct trk_calib *c, double px, double py, double *wx, double *wy)
{
    double x, y;
    if (!trk_calib_undistort(c, px, py, &x, &y)) return false;
    const double *h = c->h;
    double W = h[6] * x + h[7] * y + h[8];
    if (!(W > 0)) return false; /* at or past the horizon: no world point */
    double u = (h[0] * x + h[1] * y + h[2]) / W, v = (h[3] * x + h[4] * y + h[5]) / W;
    if (!isfinite(u) || !isfinite(v)) return false;
    *wx = u;
    *wy = v;
    return true;
}

bool trk_calib_to_world_at(const struct trk_calib *c, double px, double py, double z, double *wx,
                           double *wy)
{
    double fx, fy, x, y, x0, y0, xz, yz;
    if (!trk_calib_to_world(c, px, py, &fx, &fy)) return false;
    if (z != 0 && c->pose) {
        /* heights go towards the camera, whichever way the world's Z points */
        double Z = c->centre[2] < 0 ? -z : z;
        if (!trk_calib_undistort(c, px, py, &x, &y) || !ray_at(c, x, y, 0, &x0, &y0) ||
            !ray_at(c, x, y, Z, &xz, &yz))
            return false;
        fx += xz - x0;
        fy += yz - y0;
    }
    *wx = fx;
    *wy = fy;
    return true;
}
