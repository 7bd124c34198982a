/* --record-storage copy for an MJPEG camera, without the camera: real
 * JPEGs (libjpeg-turbo, 4:2:0 and 4:2:2 as webcams send, a size change)
 * go through the camera source's decode path as v4l2_read does it
 * (trk_mjpeg_decode, then the JPEG kept with trk_frame_set_packet), into
 * the recorder; the bundle holds the JPEGs byte for byte (frames.mjpeg,
 * the index's offset and packet_size, nothing in frames.raw), and its
 * replay decodes them to the very pixels the live decode gave. Then the
 * damage a replay must name: a JPEG whose first bytes are gone (refused
 * at open, file and byte), frames.mjpeg cut short (refused at open), and
 * a JPEG that passes the open's check but does not decode (the read fails,
 * trk_replay_damaged says so: exit 65 in trackd). Seeded pixels. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "../check.h"
#include "objects.h"
#include "out/outputs.h"
#include "out/record.h"
#include "record_fixture.h"
#include "result.h"
#include "same_image.h"
#include "source/replay.h"
#include "source/v4l2.h"

#define N_FRAMES 6

struct jpeg {
    unsigned char *data;
    unsigned long len;
    uint64_t offset; /* where the bundle should hold it */
};

/* Frame i: 64x48 for the first half, then 80x40 (a size change), 4:2:2
 * on odd frames; seeded noise over a gradient so no two are alike. */
static void make_jpeg(int i, struct jpeg *j)
{
    const int w = i < N_FRAMES / 2 ? 64 : 80, h = i < N_FRAMES / 2 ? 48 : 40;
    static uint8_t rgb[80 * 48 * 3];
    uint32_t rng = 777u + (uint32_t)i;
    for (int p = 0; p < w * h * 3; p++) {
        rng = rng * 1103515245u + 12345u;
        rgb[p] = (uint8_t)((p % (w * 3)) * 2 + ((rng >> 16) & 31));
    }
    tjhandle tj = tjInitCompress();
    CHECK(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &j->data, &j->len,
                      i & 1 ? TJSAMP_422 : TJSAMP_420, 90, 0) == 0);
    tjDestroy(tj);
}

/* Records the JPEGs as a camera with --record-storage copy would; want[i]
 * gets the live decode of each. */
static void record(const char *dir, struct jpeg *jpegs, struct trk_frame *want,
                   const struct trk_objects *set)
{
    struct trk_outputs *o = NULL;
    CHECK(trk_outputs_create(&o) == 0);
    struct record_fixture fx;
    record_fixture_init(&fx, dir, "copy", "camera", "unit test JPEGs", 30);
    fx.cfg.input = "/dev/video-test";
    fx.cfg.width = 64;
    fx.cfg.height = 48;
    struct trk_record *r = NULL;
    CHECK(trk_record_add(&fx.cfg, o, &r) == 0 && r);
    struct trk_mjpeg *d = NULL;
    CHECK(trk_mjpeg_create(&d) == 0);
    struct trk_frame_result *res = calloc(1, sizeof(*res));
    uint64_t off = 0;
    for (int i = 0; i < N_FRAMES; i++) {
        struct trk_frame *f = &want[i];
        /* v4l2_read's MJPEG branch with keep_packets. */
        CHECK(trk_mjpeg_decode(d, jpegs[i].data, jpegs[i].len, f) == 0);
        CHECK(trk_frame_set_packet(f, jpegs[i].data, jpegs[i].len) == 0);
        f->seq = (uint64_t)i;
        f->pts = f->t_capture = 50 + i * 0.04; /* exact in the index's 6 decimals */
        jpegs[i].offset = off;
        off += jpegs[i].len;
        trk_record_frame(r, f);
        if (i == 0) trk_outputs_objects(o, set);
        res->meta = (struct trk_frame_meta){
            .seq = (uint64_t)i, .pts = f->pts, .width = f->img.width, .height = f->img.height
        };
        trk_outputs_frame(o, res);
    }
    free(res);
    trk_mjpeg_destroy(&d);
    CHECK(trk_outputs_destroy(&o) == 0);
}

static long file_size(const char *dir, const char *name)
{
    char path[256];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* frames.mjpeg is the JPEGs one after another; each index line names its
 * offset and packet_size. */
static void check_files(const char *dir, const struct jpeg *jpegs)
{
    char path[256], line[512];
    long total = 0;
    for (int i = 0; i < N_FRAMES; i++)
        total += (long)jpegs[i].len;
    CHECK(file_size(dir, "frames.mjpeg") == total);
    CHECK(file_size(dir, "frames.raw") == 0);
    snprintf(path, sizeof(path), "%s/frames.mjpeg", dir);
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = malloc((size_t)total);
    CHECK(fp && fread(buf, 1, (size_t)total, fp) == (size_t)total);
    if (fp) fclose(fp);
    for (int i = 0; i < N_FRAMES; i++)
        CHECKF(!memcmp(buf + jpegs[i].offset, jpegs[i].data, jpegs[i].len),
               "JPEG %d stored as it came", i);
    free(buf);
    snprintf(path, sizeof(path), "%s/index.ndjson", dir);
    fp = fopen(path, "r");
    for (int i = 0; fp && i < N_FRAMES; i++) {
        char want[160];
        snprintf(want, sizeof(want),
                 "\"offset\":%llu,\"file\":\"frames.mjpeg\",\"copy\":\"mjpeg\",\"packet_size\":%lu",
                 (unsigned long long)jpegs[i].offset, jpegs[i].len);
        CHECKF(fgets(line, sizeof(line), fp) && strstr(line, want), "index line %d: %s", i, line);
    }
    if (fp) fclose(fp);
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    fp = fopen(path, "r");
    size_t n = fp ? fread(line, 1, sizeof(line) - 1, fp) : 0;
    line[n] = 0;
    if (fp) fclose(fp);
    CHECK(strstr(line, "\"version\": 3") != NULL);
}

/* The bundle in dir opened as *src; NULL (a failed check) when it does not
 * open. */
static struct trk_replay *open_ok(const char *dir, struct trk_source *src)
{
    struct trk_replay *rp = NULL;
    char why[512] = "";
    int err = trk_replay_open(dir, src, &rp, why, sizeof(why));
    CHECKF(err == 0, "replay open: %s", why);
    return err ? NULL : rp;
}

/* Every frame of the replay is the live decode, bit for bit. */
static void replay(const char *dir, const struct trk_frame *want)
{
    struct trk_source src;
    struct trk_replay *rp = open_ok(dir, &src);
    if (!rp) return;
    struct trk_frame f = { 0 };
    for (int i = 0; i < N_FRAMES; i++) {
        CHECKF(trk_source_read(&src, &f) == 0, "frame %d read", i);
        CHECKF(same_image(&f.img, &want[i].img), "frame %d (%dx%d) bit-exact", i, want[i].img.width,
               want[i].img.height);
        CHECK(f.pts == want[i].pts && f.img.full_range == want[i].img.full_range &&
              f.img.matrix == want[i].img.matrix);
    }
    CHECK(trk_source_read(&src, &f) == TRK_SOURCE_EOF);
    CHECK(!trk_replay_damaged(rp));
    trk_frame_free_data(&f);
    trk_source_destroy(&src);
}

/* Overwrites len bytes of frames.mjpeg at off with b. */
static void poke(const char *dir, uint64_t off, const void *b, size_t len)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/frames.mjpeg", dir);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, b, len, (off_t)off) == (ssize_t)len);
    if (fd >= 0) close(fd);
}

static int open_fails(const char *dir, const char *want)
{
    struct trk_source src;
    struct trk_replay *rp = NULL;
    char why[512] = "";
    int err = trk_replay_open(dir, &src, &rp, why, sizeof(why));
    CHECKF(err == TRK_REPLAY_EDAMAGED && strstr(why, want), "damaged: %d %s (want %s)", err, why,
           want);
    if (!err) trk_source_destroy(&src);
    return err;
}

static void damage(const char *dir, const struct jpeg *jpegs)
{
    char want[128];
    /* JPEG 2's start marker gone: refused at open, with its byte. */
    const uint8_t zero[2] = { 0, 0 }, soi[2] = { 0xff, 0xd8 };
    poke(dir, jpegs[2].offset, zero, 2);
    snprintf(want, sizeof(want), "frames.mjpeg: frame 2 at byte %llu is no JPEG",
             (unsigned long long)jpegs[2].offset);
    open_fails(dir, want);
    poke(dir, jpegs[2].offset, soi, 2);
    /* JPEG 3 blanked after its start marker: the open's check passes, the
     * decoder refuses it at its frame. */
    uint8_t *blank = calloc(1, jpegs[3].len);
    blank[0] = 0xff, blank[1] = 0xd8;
    poke(dir, jpegs[3].offset, blank, jpegs[3].len);
    free(blank);
    struct trk_source src;
    struct trk_replay *rp = open_ok(dir, &src);
    if (!rp) return;
    struct trk_frame f = { 0 };
    for (int i = 0; i < 3; i++)
        CHECK(trk_source_read(&src, &f) == 0);
    CHECK(trk_source_read(&src, &f) == TRK_SOURCE_EDECODE && trk_replay_damaged(rp));
    snprintf(want, sizeof(want), "frames.mjpeg at byte %llu: frame 3",
             (unsigned long long)jpegs[3].offset);
    CHECKF(strstr(src.error, want) != NULL, "read error names file and byte: %s", src.error);
    trk_frame_free_data(&f);
    trk_source_destroy(&src);
    /* Cut inside the last JPEG: refused at open. */
    char path[256];
    snprintf(path, sizeof(path), "%s/frames.mjpeg", dir);
    CHECK(truncate(path, (off_t)(jpegs[N_FRAMES - 1].offset + 10)) == 0);
    snprintf(want, sizeof(want), "frames.mjpeg: frame %d is bytes %llu..", N_FRAMES - 1,
             (unsigned long long)jpegs[N_FRAMES - 1].offset);
    open_fails(dir, want);
}

int main(void)
{
    char dir[] = "/tmp/trk-unit-record-copy-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char bundle[96];
    snprintf(bundle, sizeof(bundle), "%s/cam", dir);
    struct trk_objects *set = malloc(sizeof(*set));
    const char *js = "{\"objects\":[{\"name\":\"red\",\"space\":\"rgb\",\"lo\":[200,0,0],"
                     "\"hi\":[255,80,80]}]}";
    CHECK(trk_objects_load_string(js, strlen(js), "test", set, NULL) == 0);
    struct jpeg jpegs[N_FRAMES] = { 0 };
    struct trk_frame want[N_FRAMES] = { 0 };
    for (int i = 0; i < N_FRAMES; i++)
        make_jpeg(i, &jpegs[i]);
    record(bundle, jpegs, want, set);
    check_files(bundle, jpegs);
    replay(bundle, want);
    damage(bundle, jpegs);
    for (int i = 0; i < N_FRAMES; i++) {
        tjFree(jpegs[i].data);
        trk_frame_free_data(&want[i]);
    }
    free(set);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_exit("unit_daemon_record_copy");
}
