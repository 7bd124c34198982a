/* calib_dump OBJECTS_FILE: loads the file with the daemon's loader and
 * prints its solved calibration, then for each "x y" line on stdin the
 * undistorted pixel and the world point, as one JSON object on stdout
 * (every number with 17 significant digits, null where there is none);
 * a line "x y z" also gives the world point at height z
 * (trk_calib_to_world_at), and the camera's pose is printed when derived.
 * test_calib_opencv.py compares this with OpenCV. Exit 78 and the loader's
 * message for a file it refuses, 65 for a file without a calibration. */
#include <stdio.h>

#include "objects.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: calib_dump OBJECTS_FILE < points\n");
        return 64;
    }
    static struct trk_objects o;
    struct trk_config_error e;
    if (trk_objects_load_file(argv[1], &o, &e)) {
        char m[600];
        trk_config_error_format(&e, m, sizeof m);
        fprintf(stderr, "%s\n", m);
        return 78;
    }
    const struct trk_calib *c = &o.calib;
    if (!c->on) {
        fprintf(stderr, "%s: no calibration\n", argv[1]);
        return 65;
    }
    printf("{\"h\": [");
    for (int i = 0; i < 9; i++)
        printf("%s%.17g", i ? ", " : "", c->h[i]);
    printf("], \"rms\": %.17g, \"decimals\": %d", c->rms, c->decimals);
    if (c->pose) {
        printf(", \"rot\": [");
        for (int i = 0; i < 9; i++)
            printf("%s%.17g", i ? ", " : "", c->rot[i]);
        printf("], \"tvec\": [%.17g, %.17g, %.17g]", c->tvec[0], c->tvec[1], c->tvec[2]);
    }
    printf(", \"points\": [");
    char line[256];
    for (int n = 0; fgets(line, sizeof line, stdin);) {
        double x, y, z, ux, uy, wx, wy;
        int k = sscanf(line, "%lf %lf %lf", &x, &y, &z);
        if (k < 2) continue;
        printf("%s{\"px\": [%.17g, %.17g]", n++ ? ", " : "", x, y);
        if (k == 3) {
            if (trk_calib_to_world_at(c, x, y, z, &wx, &wy))
                printf(", \"z\": %.17g, \"world_at\": [%.17g, %.17g]", z, wx, wy);
            else
                printf(", \"z\": %.17g, \"world_at\": null", z);
        }
        if (trk_calib_undistort(c, x, y, &ux, &uy))
            printf(", \"undistorted\": [%.17g, %.17g]", ux, uy);
        else
            printf(", \"undistorted\": null");
        if (trk_calib_to_world(c, x, y, &wx, &wy))
            printf(", \"world\": [%.17g, %.17g]}", wx, wy);
        else
            printf(", \"world\": null}");
    }
    printf("]}\n");
    return 0;
}
