/* --record and --replay without the pipeline (daemon/out/record.h,
 * daemon/source/replay.h): frames of every pixel format, odd sizes and
 * padded pitches, a size change mid-run, handed to the recorder as the
 * capture thread would; two object sets through the outputs door, each
 * tied to the frame message after it; then the bundle opened as a replay
 * source: every frame comes back bit-exact (payload bytes, pts, format,
 * matrix), the sets are installed at their frames (frame_due), and the
 * manifest's account matches. Seeded pixels, no timing. All of it twice:
 * frames.raw, and FFV1 in Matroska (--record-storage ffv1: a new file at
 * each format or size change, every format rearranged without loss). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "control/control.h"
#include "objects.h"
#include "out/outputs.h"
#include "out/record.h"
#include "record_fixture.h"
#include "result.h"
#include "same_image.h"
#include "source/replay.h"

struct shape {
    enum trk_pixfmt fmt;
    int w, h;
    size_t pad; /* extra pitch bytes per row */
};

/* rgb24 first (the set changes at frame 3), odd sizes, a size change. */
static const struct shape shapes[] = {
    { TRK_FMT_RGB24, 33, 17, 5 }, { TRK_FMT_RGB24, 33, 17, 0 }, { TRK_FMT_BGR24, 20, 9, 3 },
    { TRK_FMT_RGBA, 15, 7, 8 },   { TRK_FMT_BGRA, 16, 8, 0 },   { TRK_FMT_YUYV, 31, 11, 6 },
    { TRK_FMT_NV12, 29, 13, 4 },  { TRK_FMT_I420, 27, 15, 2 },  { TRK_FMT_I420, 64, 48, 0 },
};
#define N_FRAMES ((int)(sizeof(shapes) / sizeof(shapes[0])))

static uint32_t rng = 12345;
static uint8_t next_byte(void)
{
    rng = rng * 1103515245u + 12345u;
    return (uint8_t)(rng >> 16);
}

/* A frame of shape s with seeded payload and garbage in the padding. */
static void make_frame(struct trk_frame *f, const struct shape *s, uint64_t seq)
{
    struct trk_plane_layout L;
    trk_image_plane_layout(s->fmt, s->w, s->h, &L);
    size_t total = 0;
    for (int p = 0; p < L.planes; p++)
        total += (L.row_bytes[p] + s->pad) * (size_t)L.rows[p];
    free(f->data);
    memset(f, 0, sizeof(*f));
    f->data = malloc(total);
    f->cap = total;
    size_t off = 0;
    for (int p = 0; p < L.planes; p++) {
        f->img.plane[p] = f->data + off;
        f->img.pitch[p] = L.row_bytes[p] + s->pad;
        off += f->img.pitch[p] * (size_t)L.rows[p];
    }
    for (size_t i = 0; i < total; i++)
        f->data[i] = next_byte();
    f->img.fmt = s->fmt;
    f->img.width = s->w;
    f->img.height = s->h;
    f->img.matrix = seq & 1 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
    f->img.full_range = seq % 3 == 0;
    f->seq = seq;
    f->pts = seq * 0.04;
    f->t_capture = 100 + seq * 0.04;
}

static void load_set(struct trk_objects *o, const char *json)
{
    CHECK(trk_objects_load_string(json, strlen(json), "test", o, NULL) == 0);
}

/* Records N_FRAMES frames (kept in want[]) into dir with set a from frame 0
 * and set b from frame 3. */
static void record(const char *dir, struct trk_frame *want, const struct trk_objects *a,
                   const struct trk_objects *b, bool ffv1)
{
    struct trk_outputs *o = NULL;
    CHECK(trk_outputs_create(&o) == 0);
    struct record_fixture fx;
    record_fixture_init(&fx, dir, ffv1 ? "ffv1" : "raw", "demo", "unit test frames", 25);
    fx.cfg.width = 33;
    fx.cfg.height = 17;
    struct trk_record *r = NULL;
    CHECK(trk_record_add(&fx.cfg, o, &r) == 0 && r);
    struct trk_frame_result *res = calloc(1, sizeof(*res));
    for (int i = 0; i < N_FRAMES; i++) {
        make_frame(&want[i], &shapes[i], (uint64_t)i);
        trk_record_frame(r, &want[i]);
        if (i == 0) trk_outputs_objects(o, a);
        if (i == 3) trk_outputs_objects(o, b);
        if (i == 5) trk_outputs_objects(o, b); /* unchanged: no new version */
        res->meta = (struct trk_frame_meta){
            .seq = (uint64_t)i, .pts = want[i].pts, .width = shapes[i].w, .height = shapes[i].h
        };
        trk_outputs_frame(o, res);
    }
    free(res);
    CHECK(trk_outputs_destroy(&o) == 0);
}

/* The replay's frames against want[]; its sets installed at 0 (the first,
 * over the control's initial copy of it) and 3. */
static void replay(const char *dir, const struct trk_frame *want, const struct trk_objects *b)
{
    struct trk_source src;
    struct trk_replay *rp = NULL;
    char why[512] = "";
    int err = trk_replay_open(dir, &src, &rp, why, sizeof(why));
    CHECKF(err == 0, "replay open: %s", why);
    if (err) return;
    CHECK(src.width == 33 && src.height == 17 && src.fps == 25);
    CHECK(trk_replay_first_set(rp)->n == 1);
    struct trk_control *c = NULL;
    struct trk_control_cfg cc = { .objects = trk_replay_first_set(rp) };
    CHECK(trk_control_create(&cc, &c) == 0);
    trk_replay_set_control(rp, c);
    struct trk_objects *got = malloc(sizeof(*got));
    uint64_t version = 0;
    CHECK(trk_control_poll(c, &version, got));
    struct trk_frame f = { 0 };
    for (int i = 0; i < N_FRAMES; i++) {
        trk_replay_frame_due(rp, (uint64_t)i);
        bool changed = trk_control_poll(c, &version, got);
        CHECKF(changed == (i == 0 || i == 3), "frame %d: set change %d", i, changed);
        if (i == 3) CHECK(got->n == b->n && !strcmp(got->def[1].name, b->def[1].name));
        CHECKF(trk_source_read(&src, &f) == 0, "frame %d read", i);
        CHECKF(same_image(&f.img, &want[i].img), "frame %d (%s %dx%d) bit-exact", i,
               trk_pixfmt_name(shapes[i].fmt), shapes[i].w, shapes[i].h);
        CHECK(f.pts == want[i].pts && f.img.matrix == want[i].img.matrix &&
              f.img.full_range == want[i].img.full_range);
    }
    CHECK(trk_source_read(&src, &f) == TRK_SOURCE_EOF);
    trk_frame_free_data(&f);
    free(got);
    trk_control_destroy(&c);
    trk_source_destroy(&src);
}

/* The bundle as a reader sees it: two versions, the second from 3; then
 * replayed against want[]. */
static void check_bundle(const char *bundle, const struct trk_frame *want,
                         const struct trk_objects *b)
{
    char path[128], text[512] = "";
    snprintf(path, sizeof(path), "%s/objects.ndjson", bundle);
    FILE *fp = fopen(path, "r");
    size_t n = fp ? fread(text, 1, sizeof(text) - 1, fp) : 0;
    if (fp) fclose(fp);
    text[n] = 0;
    CHECK_STR(text, "{\"version\":1,\"first_seq\":0,\"file\":\"objects/0001.json\"}\n"
                    "{\"version\":2,\"first_seq\":3,\"file\":\"objects/0002.json\"}\n");
    replay(bundle, want, b);
}

int main(void)
{
    char path[128];
    char dir[] = "/tmp/trk-unit-record-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char bundle[64];
    snprintf(bundle, sizeof(bundle), "%s/b", dir);
    struct trk_objects *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    load_set(a, "{\"objects\":[{\"name\":\"red\",\"space\":\"rgb\",\"lo\":[200,0,0],"
                "\"hi\":[255,80,80]}]}");
    load_set(b, "{\"objects\":[{\"name\":\"red\",\"space\":\"rgb\",\"lo\":[200,0,0],"
                "\"hi\":[255,80,80]},{\"name\":\"taught\",\"space\":\"rgb\",\"lo\":[0,0,200],"
                "\"hi\":[80,80,255]}]}");
    struct trk_frame want[N_FRAMES] = { 0 };
    for (int ffv1 = 0; ffv1 < 2; ffv1++) {
        snprintf(bundle, sizeof(bundle), "%s/%s", dir, ffv1 ? "ffv1" : "b");
        record(bundle, want, a, b, ffv1);
        check_bundle(bundle, want, b);
        if (ffv1) {
            /* A file per format and size: 8 of the 9 frames change it. */
            snprintf(path, sizeof(path), "%s/frames-0008.mkv", bundle);
            CHECK(access(path, R_OK) == 0);
        }
    }
    /* A second recording into the same folder is refused, never overwrites. */

    struct trk_outputs *o = NULL;
    trk_outputs_create(&o);
    struct trk_record *r = NULL;
    struct trk_record_cfg again = { .dir = bundle, .version = "test" };
    CHECK(trk_record_add(&again, o, &r) != 0 && !r);
    trk_outputs_destroy(&o);
    for (int i = 0; i < N_FRAMES; i++)
        free(want[i].data);
    free(a);
    free(b);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_exit("unit_daemon_record");
}
