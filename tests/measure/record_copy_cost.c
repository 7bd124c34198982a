/* What --record costs for an MJPEG camera, raw (the decoded I420 frames)
 * against --record-storage copy (the JPEGs as they came), without a camera
 * (a measurement, not a test: it prints numbers for docs/BENCHMARKS.md,
 * "Recording").
 *
 * K distinct camera-like JPEGs (a gradient under seeded noise, 4:2:0,
 * quality Q, libjpeg-turbo as a webcam's encoder) are handed round-robin,
 * F frames, through the camera source's decode path as v4l2_read does it
 * (trk_mjpeg_decode, and with copy the JPEG kept by trk_frame_set_packet)
 * to trk_record_frame, with the recorder's writer thread writing the
 * bundle under DIR. CPU is the whole process's (getrusage: the decode, the
 * capture thread's copy and the writer's writes); "none" decodes without
 * recording, so each storage's cost is its CPU minus none's. Least of 3
 * alternated rounds; bytes are the bundle's.
 *
 *     trk_record_copy_cost WxH FPS [FRAMES] [DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "objects.h"
#include "out/outputs.h"
#include "out/record.h"
#include "../unit/daemon/record_fixture.h"
#include "source/v4l2.h"

#define K 8
#define Q 85

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static long long bundle_bytes(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "du -sb %s", dir);
    FILE *p = popen(cmd, "r");
    long long n = -1;
    if (p && fscanf(p, "%lld", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* One run: storage 0 none, 1 raw, 2 copy; CPU seconds, *bytes the bundle's. */
static double run(int storage, unsigned char **jpeg, unsigned long *len, int frames, double fps,
                  const char *dir, long long *bytes)
{
    struct trk_outputs *o = NULL;
    struct trk_record *r = NULL;
    struct record_fixture fx;
    record_fixture_init(&fx, dir, storage == 2 ? "copy" : "raw", "camera", "measured JPEGs", fps);
    struct trk_mjpeg *d = NULL;
    struct trk_frame f = { 0 };
    if (trk_mjpeg_create(&d) || trk_outputs_create(&o)) exit(1);
    const double t0 = cpu_now();
    if (storage && (trk_record_add(&fx.cfg, o, &r) || !r)) exit(1);
    for (int i = 0; i < frames; i++) {
        if (trk_mjpeg_decode(d, jpeg[i % K], len[i % K], &f)) exit(1);
        if (storage == 2 && trk_frame_set_packet(&f, jpeg[i % K], len[i % K])) exit(1);
        f.seq = (uint64_t)i;
        f.pts = f.t_capture = i / fps;
        trk_record_frame(r, &f);
    }
    trk_outputs_destroy(&o); /* drains the writer */
    const double cpu = cpu_now() - t0;
    *bytes = storage ? bundle_bytes(dir) : 0;
    trk_frame_free_data(&f);
    trk_mjpeg_destroy(&d);
    return cpu;
}

int main(int argc, char **argv)
{
    int w, h;
    if (argc < 3 || sscanf(argv[1], "%dx%d", &w, &h) != 2) {
        fprintf(stderr, "usage: %s WxH FPS [FRAMES] [DIR]\n", argv[0]);
        return 64;
    }
    const double fps = atof(argv[2]);
    const int frames = argc > 3 ? atoi(argv[3]) : 240;
    const char *base = argc > 4 ? argv[4] : "/tmp";
    unsigned char *rgb = malloc((size_t)w * h * 3), *jpeg[K] = { 0 };
    unsigned long len[K], total = 0;
    uint32_t rng = 1;
    tjhandle tj = tjInitCompress();
    for (int k = 0; k < K; k++) {
        for (size_t p = 0; p < (size_t)w * h * 3; p++) {
            rng = rng * 1103515245u + 12345u;
            rgb[p] = (uint8_t)((p / 3 % (size_t)w) * 200 / (size_t)w + ((rng >> 16) % 13));
        }
        if (tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg[k], &len[k], TJSAMP_420, Q, 0)) return 1;
        total += len[k];
    }
    tjDestroy(tj);
    double best[3] = { 1e9, 1e9, 1e9 };
    long long bytes[3] = { 0 };
    for (int round = 0; round < 3; round++)
        for (int s = 0; s < 3; s++) {
            char dir[512];
            snprintf(dir, sizeof(dir), "%s/trk-copy-cost-%d-%d-%d", base, (int)getpid(), round, s);
            double c = run(s, jpeg, len, frames, fps, dir, &bytes[s]);
            if (c < best[s]) best[s] = c;
            char cmd[600];
            snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
            if (system(cmd)) return 1;
        }
    printf("%dx%d @ %g fps, %d frames, JPEGs of %.0f KB (q%d 4:2:0): decoding alone %.2f ms "
           "CPU/frame\n",
           w, h, fps, frames, total / K / 1e3, Q, best[0] / frames * 1e3);
    static const char *names[] = { "none", "raw", "copy" };
    for (int s = 1; s < 3; s++) {
        const double ms = (best[s] - best[0]) / frames * 1e3;
        printf("  %-4s: recording %.2f ms CPU/frame (%.0f%% of one core), %.3f MB/frame, %.2f "
               "GB/minute\n",
               names[s], ms, ms * fps / 10, bytes[s] / (double)frames / 1e6,
               bytes[s] / (double)frames * fps * 60 / 1e9);
    }
    for (int k = 0; k < K; k++)
        tjFree(jpeg[k]);
    free(rgb);
    return 0;
}
