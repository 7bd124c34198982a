/* trk_source_file_seek (daemon/source/source.h), what a replay of a copy
 * bundle's input file seeks with: clips made by the ffmpeg CLI (MJPEG, all
 * key frames; MPEG-4 part 2 and H.264 with B-frames, a key frame every 12;
 * H.264 with open GOPs; a raw H.264 elementary stream) are read forward
 * with --loop for two and a half passes, each frame's pixels hashed; then
 * a seeded sequence of seeks, back and ahead, across the passes: every
 * frame read after a seek is the one reading forward gave (pixels, pts,
 * number), and where the clip's frames decode from their key frame the
 * seek started at the last key frame at or before the target (a short
 * decode, not one from the start). A source that has read nothing has no
 * key frame to start at (-ENOENT). Seeded, no timing.
 *
 *     test_daemon_file_seek CASE DIR   (CASE: mjpeg mpeg4 h264 h264_open h264_raw) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "image.h"
#include "source/source.h"

#define N_CLIP 60               /* frames of the clip                      */
#define N_READ (5 * N_CLIP / 2) /* frames read forward, --loop          */
#define GOP    12               /* key frame interval of the inter clips   */
#define SEEKS  40

struct seen {
    uint64_t hash;
    double pts;
    int width, height;
    enum trk_pixfmt fmt;
};

/* FNV-1a over the picture's rows (padding left out). */
static uint64_t image_hash(const struct trk_image *im)
{
    struct trk_plane_layout L;
    uint64_t h = 1469598103934665603ull;
    if (trk_image_plane_layout(im->fmt, im->width, im->height, &L)) return 0;
    for (int p = 0; p < L.planes; p++)
        for (int y = 0; y < L.rows[p]; y++) {
            const uint8_t *row = im->plane[p] + (size_t)y * im->pitch[p];
            for (size_t x = 0; x < L.row_bytes[p]; x++)
                h = (h ^ row[x]) * 1099511628211ull;
        }
    return h;
}

static struct seen seen_of(const struct trk_frame *f)
{
    return (struct seen){ image_hash(&f->img), f->pts, f->img.width, f->img.height, f->img.fmt };
}

static bool same_seen(const struct seen *a, const struct seen *b)
{
    return a->hash == b->hash && a->pts == b->pts && a->width == b->width &&
           a->height == b->height && a->fmt == b->fmt;
}

/* The clip for a case, made by the ffmpeg CLI: moving test pattern with
 * noise, so no two frames are alike. */
static int make_clip(const char *dir, const char *c, char *path, size_t len)
{
    const char *ext = "mp4", *codec = NULL;
    if (!strcmp(c, "mjpeg")) ext = "avi", codec = "-c:v mjpeg -q:v 4";
    if (!strcmp(c, "mpeg4")) codec = "-c:v mpeg4 -bf 2 -g 12 -q:v 5";
    if (!strcmp(c, "h264"))
        codec = "-c:v libx264 -preset veryfast -bf 3 -g 12 -keyint_min 12 -sc_threshold 0";
    if (!strcmp(c, "h264_open"))
        codec = "-c:v libx264 -preset veryfast -x264-params open-gop=1:keyint=12:min-keyint=12:"
                "bframes=3:scenecut=0";
    if (!strcmp(c, "h264_raw"))
        ext = "h264", codec = "-c:v libx264 -preset veryfast -bf 3 -g 12 -sc_threshold 0";
    if (!codec) return -1;
    snprintf(path, len, "%s/file-seek-%s.%s", dir, c, ext);
    char cmd[8192];
    snprintf(
        cmd, sizeof(cmd),
        "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=96x64:rate=25,noise=alls=30:allf=t "
        "-frames:v %d %s -pix_fmt yuv420p '%s'",
        N_CLIP, codec, path);
    return system(cmd) ? -1 : 0;
}

/* Reads on until frame n (at most N_READ reads); 0 with f holding it. A
 * read that says the seek landed elsewhere opens the file again, as the
 * replay does. */
static int read_to(struct trk_source *src, uint64_t n, struct trk_frame *f, int *reads, int *eseeks)
{
    for (int i = 0; i < 2 * N_READ; i++) {
        int err = trk_source_read(src, f);
        if (err == TRK_SOURCE_ESEEK) {
            (*eseeks)++;
            trk_source_close(src);
            if ((err = trk_source_open(src))) return err;
            continue;
        }
        if (err) return err;
        (*reads)++;
        if (f->src_index == n) return 0;
        if (f->src_index > n) return -ERANGE;
    }
    return -ELOOP;
}

static void run_case(const char *c, const char *path)
{
    /* Key frames come at every frame (MJPEG) or every GOP; the open-GOP
     * clip's may need the fallback, the raw stream may not seek at all. */
    const bool intra = !strcmp(c, "mjpeg");
    const bool exact_keys = intra || !strcmp(c, "mpeg4") || !strcmp(c, "h264");
    struct trk_file_cfg fc = { .path = path, .loop = true, .seekable = true };
    struct trk_source src;
    CHECK(trk_source_file_create(&fc, &src) == 0);
    if (trk_source_open(&src)) {
        CHECKF(false, "%s: cannot open %s", c, path);
        trk_source_destroy(&src);
        return;
    }
    uint64_t next = 0;
    CHECKF(trk_source_file_seek(&src, 5, &next) == -ENOENT, "%s: nothing read, no key frame", c);
    static struct seen want[N_READ];
    struct trk_frame f = { 0 };
    for (int i = 0; i < N_READ; i++) {
        int err = trk_source_read(&src, &f);
        CHECKF(err == 0 && f.src_index == (uint64_t)i, "%s: frame %d read forward (%d)", c, i, err);
        if (err) goto out;
        want[i] = seen_of(&f);
    }
    CHECKF(want[N_CLIP].hash == want[0].hash && want[N_CLIP].pts > want[N_CLIP - 1].pts,
           "%s: the second pass gives the first frame again, later", c);
    uint32_t rng = 2024;
    int seeks_ok = 0, eseeks = 0, long_decodes = 0;
    for (int s = 0; s < SEEKS; s++) {
        rng = rng * 1103515245u + 12345u;
        const uint64_t t = (rng >> 8) % N_READ;
        int err = trk_source_file_seek(&src, t, &next);
        if (err) {
            /* The replay's way: from the start. */
            CHECKF(!exact_keys, "%s: seek to %llu refused (%d)", c, (unsigned long long)t, err);
            trk_source_close(&src);
            if (trk_source_open(&src)) break;
        } else {
            seeks_ok++;
            CHECKF(next <= t, "%s: the seek to %llu starts at %llu", c, (unsigned long long)t,
                   (unsigned long long)next);
        }
        int reads = 0;
        err = read_to(&src, t, &f, &reads, &eseeks);
        CHECKF(err == 0, "%s: seek to %llu: read on to it (%d)", c, (unsigned long long)t, err);
        if (err) break;
        const struct seen got = seen_of(&f);
        CHECKF(same_seen(&got, &want[t]), "%s: frame %llu after a seek is the frame read forward",
               c, (unsigned long long)t);
        if (intra)
            CHECKF(reads == 1, "%s: seek to %llu decoded %d frames", c, (unsigned long long)t,
                   reads);
        long_decodes += reads > GOP;
    }
    if (exact_keys) {
        CHECKF(eseeks == 0 && seeks_ok == SEEKS && long_decodes == 0,
               "%s: every seek starts at the key frame before its target (%d of %d seeks, %d "
               "landed elsewhere, %d decoded more than a GOP)",
               c, seeks_ok, SEEKS, eseeks, long_decodes);
    }
    printf("%s: %d of %d seeks from a key frame, %d landed elsewhere (read from the start)\n", c,
           seeks_ok, SEEKS, eseeks);
out:
    trk_frame_free_data(&f);
    trk_source_destroy(&src);
}

int main(int argc, char **argv)
{
    if (argc < 3) return 64;
    char path[4200];
    if (make_clip(argv[2], argv[1], path, sizeof(path))) {
        fprintf(stderr, "cannot make the %s clip with the ffmpeg CLI\n", argv[1]);
        return 1;
    }
    run_case(argv[1], path);
    remove(path);
    return check_exit(argv[1]);
}
