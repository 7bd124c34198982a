/* The outputs door (daemon/out/outputs.h): every entry point reaches the
 * outputs that have the hook, in registration order; the frame message is
 * the one trk_msg_frame writes of the result, encoded once for every JSON
 * output; close runs for every output and returns the first error; a full
 * door refuses (and closes) the next output. Then the real NDJSON output
 * through the door: lines into a file, and lost lines (a write to
 * /dev/full) that make its close fail, as trackd's exit 74. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "objects.h"
#include "out/ndjson.h"
#include "out/outputs.h"

/* What the recording outputs saw, in order: "A:frame B:status ...". */
static char trail[4096];
static const char *last_json[3];
static size_t last_len[3];

struct rec {
    char name;
    int id;
    int close_err;
};

static void note(const struct rec *r, const char *what)
{
    size_t at = strlen(trail);
    snprintf(trail + at, sizeof(trail) - at, "%s%c:%s", at ? " " : "", r->name, what);
}

static void rec_frame(void *ctx, const struct trk_frame_result *res, const char *json, size_t len)
{
    struct rec *r = ctx;
    (void)res;
    last_json[r->id] = json;
    last_len[r->id] = len;
    note(r, json ? "frame+json" : "frame");
}

static void rec_status(void *ctx, const struct trk_source_status *s)
{
    char what[64];
    snprintf(what, sizeof(what), "status(%s,%d)", s->state, s->width);
    note(ctx, what);
}

static void rec_objects(void *ctx, const struct trk_objects *set)
{
    char what[32];
    snprintf(what, sizeof(what), "objects(%d)", set->n);
    note(ctx, what);
}

static void rec_tally(void *ctx, struct trk_outputs_tally *t)
{
    note(ctx, "tally");
    t->info->clients += 2;
    int n = snprintf(t->log + t->log_at, t->log_len - t->log_at, "; %c", ((struct rec *)ctx)->name);
    if (n > 0) t->log_at += (size_t)n;
}

static void rec_stats(void *ctx, const struct trk_stats_info *st)
{
    char what[32];
    snprintf(what, sizeof(what), "stats(%d)", st->clients);
    note(ctx, what);
}

static void rec_flush(void *ctx)
{
    note(ctx, "flush");
}

static int rec_close(void *ctx)
{
    note(ctx, "close");
    return ((struct rec *)ctx)->close_err;
}

/* A: JSON frames only; B: everything, no JSON; C: status and close only. */
static const struct trk_output_ops ops_a = {
    .name = "a", .json = true, .frame = rec_frame, .close = rec_close
};
static const struct trk_output_ops ops_b = { .name = "b",
                                             .frame = rec_frame,
                                             .status = rec_status,
                                             .objects = rec_objects,
                                             .tally = rec_tally,
                                             .stats = rec_stats,
                                             .flush = rec_flush,
                                             .close = rec_close };
static const struct trk_output_ops ops_c = { .name = "c",
                                             .status = rec_status,
                                             .close = rec_close };

/* One frame of two objects, as the pipeline fills it. */
static void make_result(struct trk_frame_result *r)
{
    static struct trk_object_def defs[2] = { { .name = "red", .min_mass = 1 }, { .name = "blue" } };
    const struct trk_obj_result res[2] = {
        { .mass = 3, .sum_x = 30, .sum_y = 6, .x0 = 9, .y0 = 1, .x1 = 11, .y1 = 3 },
        { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 },
    };
    const struct trk_frame_meta m = { .seq = 42, .width = 64, .height = 48, .backend = "cpu" };
    CHECK(trk_frame_result_fill(r, &m, defs, 2, res, NULL, NULL, NULL) == 0);
}

static void test_fan_out(void)
{
    static struct rec a = { 'A', 0, 0 }, b = { 'B', 1, -5 }, c = { 'C', 2, -7 };
    struct trk_outputs *o = NULL;
    CHECK(trk_outputs_create(&o) == 0 && o);
    CHECK(trk_outputs_add(o, &ops_a, &a) == 0);
    CHECK(trk_outputs_add(o, &ops_b, &b) == 0);
    CHECK(trk_outputs_add(o, &ops_c, &c) == 0);
    static struct trk_frame_result r;
    make_result(&r);
    trail[0] = 0;
    trk_outputs_frame(o, &r);
    CHECKF(!strcmp(trail, "A:frame+json B:frame"), "%s", trail);
    /* The message A got is the frame message of the result. */
    struct trk_buf want = { 0 };
    CHECK(trk_msg_frame(&want, &r) == 0);
    CHECK(last_json[0] && last_len[0] == want.len && !memcmp(last_json[0], want.data, want.len));
    CHECK(last_json[1] == NULL);
    trk_buf_free(&want);

    trail[0] = 0;
    trk_outputs_status(o, &(struct trk_source_status){ .state = "lost", .text = "gone" });
    trk_outputs_status(o,
                       &(struct trk_source_status){ .state = "ok", .width = 640, .height = 480 });
    static struct trk_objects set = { .n = 3 };
    trk_outputs_objects(o, &set);
    CHECKF(!strcmp(trail, "B:status(lost,0) C:status(lost,0) B:status(ok,640) C:status(ok,640) "
                          "B:objects(3)"),
           "%s", trail);

    trail[0] = 0;
    struct trk_stats_info st = { 0 };
    char log[64] = "";
    struct trk_outputs_tally t = { .info = &st, .log = log, .log_len = sizeof(log) };
    trk_outputs_tally(o, &t);
    trk_outputs_stats(o, &st);
    trk_outputs_flush(o);
    CHECKF(!strcmp(trail, "B:tally B:stats(2) B:flush"), "%s", trail);
    CHECK(!strcmp(log, "; B") && t.log_at == 3);

    /* Every output closes, in order; the first error is returned. */
    trail[0] = 0;
    CHECK(trk_outputs_destroy(&o) == -5 && o == NULL);
    CHECKF(!strcmp(trail, "A:close B:close C:close"), "%s", trail);
    CHECK(trk_outputs_destroy(&o) == 0); /* twice is safe */
    trk_frame_result_free(&r);

    /* No door: the entry points do nothing. */
    trk_outputs_frame(NULL, &r);
    trk_outputs_status(NULL, &(struct trk_source_status){ .state = "ok" });
    trk_outputs_flush(NULL);
}

static void test_full(void)
{
    static struct rec many[TRK_OUTPUTS_MAX + 1];
    struct trk_outputs *o = NULL;
    CHECK(trk_outputs_create(&o) == 0);
    for (int i = 0; i < TRK_OUTPUTS_MAX; i++) {
        many[i] = (struct rec){ .name = 'x' };
        CHECK(trk_outputs_add(o, &ops_c, &many[i]) == 0);
    }
    /* The one too many is refused and closed at once. */
    many[TRK_OUTPUTS_MAX] = (struct rec){ .name = 'Z' };
    trail[0] = 0;
    CHECK(trk_outputs_add(o, &ops_c, &many[TRK_OUTPUTS_MAX]) == TRK_EINVAL);
    CHECKF(!strcmp(trail, "Z:close"), "%s", trail);
    trk_outputs_destroy(&o);
}

/* The NDJSON output through the door: one line per frame message. */
static void test_ndjson(void)
{
    char path[] = "/tmp/trk_outputs_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    struct trk_outputs *o = NULL;
    CHECK(trk_outputs_create(&o) == 0);
    CHECK(trk_ndjson_add(o, fdopen(fd, "w"), path, false, NULL) == 0);
    static struct trk_frame_result r;
    make_result(&r);
    trk_outputs_frame(o, &r);
    r.meta.seq = 43;
    trk_outputs_frame(o, &r);
    CHECK(trk_outputs_destroy(&o) == 0); /* writes, closes the file */
    struct trk_buf want = { 0 };
    r.meta.seq = 42;
    trk_msg_frame(&want, &r);
    trk_buf_puts(&want, "\n");
    r.meta.seq = 43;
    trk_msg_frame(&want, &r);
    trk_buf_puts(&want, "\n");
    char got[4096] = "";
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(got, 1, sizeof(got) - 1, f) : 0;
    if (f) fclose(f);
    CHECKF(n == want.len && !memcmp(got, want.data, n), "%zu bytes: %s", n, got);
    unlink(path);

    /* Lines that cannot be written are lost: its close says so. */
    FILE *full = fopen("/dev/full", "w");
    CHECK(full != NULL);
    if (full) {
        CHECK(trk_outputs_create(&o) == 0);
        CHECK(trk_ndjson_add(o, full, "/dev/full", true, NULL) == 0);
        trk_outputs_frame(o, &r);
        CHECK(trk_outputs_destroy(&o) < 0);
    }
    trk_buf_free(&want);
    trk_frame_result_free(&r);
}

int main(void)
{
    test_fan_out();
    test_full();
    test_ndjson();
    return check_exit("daemon_outputs");
}
