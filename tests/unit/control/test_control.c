/* daemon/control/control.c and the mask view's rule: trk_pixel_matches (gpu/color.h) counts exactly
 * the CPU reference backend's mass for every object of random scenes in every pixel format and
 * matrix; trk_control_poll hands out each new version once; trk_control_reload keeps the current
 * set when the file is invalid. Through the reply handle: every control type has a handler, error
 * codes come from the failing rule, save/reload run off the calling (service) thread, a save of one
 * part changes only that section of the file on disk, and sample requests are bounded per client,
 * in all and in pixels read. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "source/camctl.h"
#include "color.h"
#include "control/control.h"
#include "scene.h"

static void mask_equals_mass(void)
{
    static const enum trk_pixfmt fmts[] = { TRK_FMT_RGB24, TRK_FMT_BGRA, TRK_FMT_YUYV, TRK_FMT_NV12,
                                            TRK_FMT_I420 };
    for (int seed = 1; seed <= 3; seed++) {
        struct trk_scene sc;
        CHECK(trk_scene_random(97, 61, 24, (uint64_t)seed, &sc) == 0);
        for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++) {
            for (int m = 0; m < 4; m++) {
                uint8_t *buf = NULL;
                struct trk_image img;
                CHECK(trk_image_from_rgb(sc.rgb, sc.width, sc.height, fmts[fi],
                                         (enum trk_matrix)(m / 2), m % 2, 3, &buf, &img) == 0);
                struct trk_backend *b = NULL;
                struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU_REF,
                                              .max_width = sc.width,
                                              .max_height = sc.height };
                CHECK(trk_backend_create(&bc, &b) == 0);
                CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
                struct trk_obj_result res[TRK_MAX_OBJECTS];
                CHECK(trk_backend_process(b, &img, NULL, res, NULL) == 0);
                for (int i = 0; i < sc.n_objects; i++) {
                    uint64_t n = 0;
                    for (int y = 0; y < sc.height; y++)
                        for (int x = 0; x < sc.width; x++)
                            n += trk_pixel_matches(&img, x, y, &sc.objects[i]);
                    CHECKF(n == res[i].mass,
                           "seed %d %s matrix/range %d object %d: mask %llu, "
                           "mass %llu",
                           seed, trk_pixfmt_name(fmts[fi]), m, i, (unsigned long long)n,
                           (unsigned long long)res[i].mass);
                }
                trk_backend_destroy(&b);
                free(buf);
            }
        }
        trk_scene_free(&sc);
    }
}

static void versions_and_reload(void)
{
    char path[] = "/tmp/trk_control_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *good = "{\"objects\":[{\"name\":\"a\",\"space\":\"rgb\",\"lo\":[1,2,3],"
                       "\"hi\":[4,5,6]}]}";
    CHECK(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
    close(fd);
    static struct trk_objects objs, got;
    struct trk_config_error cerr;
    CHECK(trk_objects_load_file(path, &objs, &cerr) == 0);
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    struct trk_control_cfg cfg = { .objects = &objs, .save = &tgt };
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    uint64_t v = 0;
    CHECK(trk_control_poll(c, &v, &got) && got.n == 1 && !strcmp(got.def[0].name, "a"));
    CHECK(!trk_control_poll(c, &v, &got)); /* nothing new */

    FILE *f = fopen(path, "w");
    fputs("{\"objects\":[{\"name\":\"b\",\"space\":\"rgb\",\"lo\":[1,2,3]}]}", f);
    fclose(f);
    char msg[600];
    CHECK(trk_control_reload(c, msg, sizeof(msg)) != 0);
    CHECKF(strstr(msg, path) && strstr(msg, ":1:"), "%s", msg);
    CHECK(!trk_control_poll(c, &v, &got)); /* the old set stays, same version */

    f = fopen(path, "w");
    fputs("{\"objects\":[{\"name\":\"b\",\"space\":\"hsv\",\"lo\":[350,2,3],"
          "\"hi\":[10,5,6]},{\"name\":\"c\",\"space\":\"ycbcr\",\"lo\":[0,0,0],"
          "\"hi\":[9,9,9]}]}",
          f);
    fclose(f);
    CHECK(trk_control_reload(c, msg, sizeof(msg)) == 0);
    CHECK(trk_control_poll(c, &v, &got) && got.n == 2 && !strcmp(got.def[1].name, "c"));
    trk_control_destroy(&c);
    CHECK(c == NULL);
    trk_objects_target_close(&tgt);
    unlink(path);
}

/* ------------------------------------------------- through the reply handle */

/* What the module sent through its struct trk_reply (the daemon wires it to
 * the WebSocket server; the "control" integration test runs that). */
struct sink {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    json_t *replies; /* array of the messages sent to clients */
    int hellos, broadcasts;
};

static void sink_send(void *ctx, uint64_t client, const struct trk_buf *msg)
{
    struct sink *s = ctx;
    json_t *j = json_loadb(msg->data, msg->len, 0, NULL);
    CHECKF(j && (client == 7 || client == 8), "reply to %llu: %s", (unsigned long long)client,
           msg->data);
    if (j) json_object_set_new(j, "to_client", json_integer((json_int_t)client));
    pthread_mutex_lock(&s->lock);
    if (j) json_array_append_new(s->replies, j);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void sink_broadcast(void *ctx, const struct trk_buf *msg)
{
    struct sink *s = ctx;
    json_t *j = json_loadb(msg->data, msg->len, 0, NULL);
    CHECKF(j && !strcmp(json_string_value(json_object_get(j, "type")), "objects"), "%s", msg->data);
    json_decref(j);
    pthread_mutex_lock(&s->lock);
    s->broadcasts++;
    pthread_mutex_unlock(&s->lock);
}

static void sink_hello(void *ctx, const struct trk_buf *msg)
{
    struct sink *s = ctx;
    json_t *j = json_loadb(msg->data, msg->len, 0, NULL);
    CHECKF(j && !strcmp(json_string_value(json_object_get(j, "type")), "hello"), "%s", msg->data);
    json_decref(j);
    pthread_mutex_lock(&s->lock);
    s->hellos++;
    pthread_mutex_unlock(&s->lock);
}

static void sink_init(struct sink *s, struct trk_control_cfg *cfg)
{
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->replies = json_array();
    s->hellos = s->broadcasts = 0;
    cfg->reply = (struct trk_reply){
        .ctx = s, .send = sink_send, .broadcast = sink_broadcast, .set_hello = sink_hello
    };
}

static void sink_free(struct sink *s)
{
    json_decref(s->replies);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
}

/* The reply with "id" == id (a new reference), waiting up to 10 s for it:
 * save and reload answer from the module's own thread. NULL when none came. */
static json_t *reply_to(struct sink *s, int id)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    json_t *found = NULL;
    pthread_mutex_lock(&s->lock);
    while (!found) {
        size_t i;
        json_t *j;
        json_array_foreach(s->replies, i, j)
        {
            if (json_integer_value(json_object_get(j, "id")) == id) found = json_incref(j);
        }
        if (!found && pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&s->lock);
    CHECKF(found, "no reply to request %d", id);
    return found;
}

static void send_msg(struct trk_control *c, const char *json)
{
    trk_control_on_message(c, 7, json, strlen(json));
}

/* The "code" of the reply to request id, or its "type" when it is no error. */
/* save_rewind's callback (daemon/out/rewind.h stands behind it in trackd):
 * the first call names a folder, the next is refused as within the gap. */
static int fake_rewind(void *ctx, char *dir, size_t dir_len, char *why, size_t why_len)
{
    int *calls = ctx;
    if ((*calls)++ == 0) {
        snprintf(dir, dir_len, "/saves/rewind-20261127-130000-1");
        return 0;
    }
    snprintf(why, why_len, "the last rewind save was 0.0 s ago; --rewind-gap is 10.0 s");
    return -EAGAIN;
}

static const char *outcome(struct sink *s, int id, char *buf, size_t n)
{
    json_t *r = reply_to(s, id);
    json_t *code = json_object_get(r, "code");
    snprintf(buf, n, "%s", r ? json_string_value(code ? code : json_object_get(r, "type")) : "-");
    json_decref(r);
    return buf;
}

static const char *const two_objects =
    "{\"objects\":[{\"name\":\"a\",\"space\":\"rgb\",\"lo\":[1,2,3],\"hi\":[4,5,6]},"
    "{\"name\":\"b\",\"space\":\"rgb\",\"lo\":[1,2,3],\"hi\":[4,5,6]}]}";

/* Every type of the one list gets its handler's answer (only "auth", the
 * server's, is "unsupported" here), with the documented error codes. */
static void every_type_answered(void)
{
    char path[] = "/tmp/trk_control_types_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, two_objects, strlen(two_objects)) == (ssize_t)strlen(two_objects));
    close(fd);
    static struct trk_objects objs;
    CHECK(trk_objects_load_file(path, &objs, NULL) == 0);
    struct sink s;
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    struct trk_control_cfg cfg = { .objects = &objs, .save = &tgt };
    cfg.hello.width = cfg.hello.height = 8;
    cfg.hello.preview.width = 8;
    sink_init(&s, &cfg);
    /* The camera module of a source without controls (the demo's). */
    struct trk_camctl *cam = NULL;
    struct trk_camctl_cfg cc = { .reason = "the demo scene has no camera controls" };
    CHECK(trk_camctl_create(&cc, &cam) == 0);
    trk_camctl_set_reply(cam, &cfg.reply);
    cfg.camera = cam;
    int rewinds = 0;
    cfg.save_rewind = fake_rewind;
    cfg.save_rewind_ctx = &rewinds;
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    CHECKF(s.hellos == 1 && s.broadcasts == 0, "hello set at create: %d", s.hellos);
    char msg[256], got[64];
    for (int t = 0; t < TRK_CTL_COUNT; t++) {
        snprintf(msg, sizeof(msg), "{\"type\":\"%s\",\"id\":%d,\"x\":3,\"y\":4}",
                 trk_msg_control_types[t], 100 + t);
        send_msg(c, msg);
        if (t == TRK_CTL_SAMPLE) { /* answered from the next frame */
            uint8_t rgb[8 * 8 * 3];
            memset(rgb, 90, sizeof(rgb));
            uint8_t *buf = NULL;
            struct trk_image img;
            CHECK(trk_image_from_rgb(rgb, 8, 8, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, &buf,
                                     &img) == 0);
            CHECK(trk_control_samples_pending(c));
            /* The 25 pixels asked for and the 64 of the frame (frame_share). */
            CHECK(trk_control_answer_samples(c, &img, 42) == 25 + 64);
            CHECK(!trk_control_samples_pending(c));
            free(buf);
        }
        outcome(&s, 100 + t, got, sizeof(got));
        /* auth is the server's; focus answers "unsupported" with the focus
         * check off, as here (unit_view_focus covers it on). */
        const bool unsupported = t == TRK_CTL_AUTH || t == TRK_CTL_FOCUS;
        CHECKF((strcmp(got, "unsupported") == 0) == unsupported, "%s -> %s",
               trk_msg_control_types[t], got);
    }
    json_t *r = reply_to(&s, 100 + TRK_CTL_SAMPLE);
    CHECKF(r && json_integer_value(json_object_get(r, "n")) == 25 &&
               json_integer_value(json_object_get(r, "seq")) == 42 &&
               json_integer_value(json_array_get(json_object_get(r, "rgb"), 1)) == 90,
           "sample from the frame");
    json_decref(r);
    r = reply_to(&s, 100 + TRK_CTL_GET_CAMERA);
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "type")), "camera") &&
               json_is_false(json_object_get(r, "available")) &&
               !strcmp(json_string_value(json_object_get(r, "reason")), cc.reason) &&
               json_array_size(json_object_get(r, "controls")) == 0,
           "get_camera without controls");
    json_decref(r);
    CHECKF(!strcmp(outcome(&s, 100 + TRK_CTL_SET_CAMERA, got, sizeof(got)), "bad_field"), "%s",
           got);
    send_msg(c, "{\"type\":\"set_camera\",\"id\":9,\"name\":\"gain\",\"value\":true}");
    CHECKF(!strcmp(outcome(&s, 9, got, sizeof(got)), "no_camera"), "%s", got);
    r = reply_to(&s, 100 + TRK_CTL_SAVE_REWIND);
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "dir")),
                        "/saves/rewind-20261127-130000-1"),
           "save_rewind ack names the folder");
    json_decref(r);
    send_msg(c, "{\"type\":\"save_rewind\",\"id\":8}");
    CHECKF(!strcmp(outcome(&s, 8, got, sizeof(got)), "busy"), "save_rewind in the gap: %s", got);
    r = reply_to(&s, 8);
    CHECK(r && strstr(json_string_value(json_object_get(r, "message")), "--rewind-gap"));
    json_decref(r);
    r = reply_to(&s, 100 + TRK_CTL_SAVE_OBJECTS);
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "path")), path) &&
               json_integer_value(json_object_get(r, "count")) == 2,
           "save_objects ack");
    json_decref(r);
    /* Codes chosen by the rule that failed, not by the message text. */
    send_msg(c, "{\"type\":\"set_objects\",\"id\":1,\"objects\":[{\"name\":\"x\","
                "\"space\":\"rgb\",\"lo\":[0,0,0],\"hi\":[1,1,1]},{\"name\":\"x\","
                "\"space\":\"rgb\",\"lo\":[0,0,0],\"hi\":[1,1,1]}]}");
    CHECKF(!strcmp(outcome(&s, 1, got, sizeof(got)), "duplicate_name"), "%s", got);
    send_msg(c, "{\"type\":\"set_objects\",\"id\":2,\"objects\":[{\"name\":\"x\","
                "\"space\":\"rgb\",\"lo\":[0,0,0],\"hi\":[1,1,300]}]}");
    CHECKF(!strcmp(outcome(&s, 2, got, sizeof(got)), "invalid_object"), "%s", got);
    send_msg(c, "{\"type\":\"rename_object\",\"id\":3,\"name\":\"a\",\"new_name\":\"b\"}");
    CHECKF(!strcmp(outcome(&s, 3, got, sizeof(got)), "duplicate_name"), "%s", got);
    int broadcasts = s.broadcasts, hellos = s.hellos;
    send_msg(c, "{\"type\":\"rename_object\",\"id\":4,\"name\":\"a\",\"new_name\":\"c\"}");
    CHECKF(!strcmp(outcome(&s, 4, got, sizeof(got)), "ack"), "%s", got);
    CHECK(s.broadcasts == broadcasts + 1 && s.hellos == hellos + 1); /* the rename was published */
    trk_control_destroy(&c);
    sink_free(&s);

    /* Without a file, save and reload say no_file. */
    cfg.save = NULL;
    sink_init(&s, &cfg);
    CHECK(trk_control_create(&cfg, &c) == 0);
    send_msg(c, "{\"type\":\"save_objects\",\"id\":5}");
    send_msg(c, "{\"type\":\"reload_objects\",\"id\":6}");
    CHECKF(!strcmp(outcome(&s, 5, got, sizeof(got)), "no_file"), "save: %s", got);
    CHECKF(!strcmp(outcome(&s, 6, got, sizeof(got)), "no_file"), "reload: %s", got);
    trk_control_destroy(&c);
    trk_camctl_destroy(&cam);
    trk_objects_target_close(&tgt);
    sink_free(&s);
    unlink(path);
}

/* A control module on objs with camera module cam, replying into s. */
static struct trk_control *create_with_camera(struct sink *s, const struct trk_objects *objs,
                                              const struct trk_objects_target *tgt,
                                              struct trk_camctl *cam)
{
    struct trk_control_cfg cfg = { .objects = objs, .save = tgt, .camera = cam };
    sink_init(s, &cfg);
    trk_camctl_set_reply(cam, &cfg.reply);
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    return c;
}

/* The camera section: set_objects keeps it, a save writes the camera
 * module's (what clients set), a reload hands the file's to the module;
 * --control entries are set after it and never saved. */
static void camera_section(void)
{
    const char *text = "{\"objects\":[{\"name\":\"a\",\"space\":\"rgb\",\"lo\":[1,2,3],"
                       "\"hi\":[4,5,6]}],\"camera\":{\"controls\":{\"gain\":7}}}";
    char path[] = "/tmp/trk_control_camera_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    static struct trk_objects objs, back;
    CHECK(trk_objects_load_file(path, &objs, NULL) == 0);
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    /* As a client would have left the module: gain 50 and automatic white
     * balance off; --control brightness=3 on the command line. */
    struct trk_camera_control section[TRK_CAMERA_MAX_CONTROLS], cli = { "brightness", 3 };
    int n = objs.n_camera;
    memcpy(section, objs.camera, sizeof(section[0]) * n);
    CHECK(trk_camera_controls_set(section, &n, "gain", 50) == 0);
    CHECK(trk_camera_controls_set(section, &n, "white_balance_automatic", 0) == 0);
    struct trk_camctl *cam = NULL;
    struct trk_camctl_cfg cc = {
        .reason = "none here", .section = section, .n_section = n, .cli = &cli, .n_cli = 1
    };
    CHECK(trk_camctl_create(&cc, &cam) == 0);
    struct trk_camera_control all[2 * TRK_CAMERA_MAX_CONTROLS];
    CHECK(trk_camctl_controls(cam, all, 2 * TRK_CAMERA_MAX_CONTROLS) == 3);
    CHECK(!strcmp(all[0].name, "white_balance_automatic") && !strcmp(all[1].name, "gain") &&
          all[1].value == 50 && !strcmp(all[2].name, "brightness"));
    struct sink s;
    struct trk_control *c = create_with_camera(&s, &objs, &tgt, cam);
    char got[64];
    send_msg(c, "{\"type\":\"set_objects\",\"id\":1,\"objects\":[{\"name\":\"b\","
                "\"space\":\"rgb\",\"lo\":[0,0,0],\"hi\":[1,1,1]}]}");
    CHECKF(!strcmp(outcome(&s, 1, got, sizeof(got)), "ack"), "%s", got);
    send_msg(c, "{\"type\":\"save_objects\",\"id\":2}");
    CHECKF(!strcmp(outcome(&s, 2, got, sizeof(got)), "ack"), "%s", got);
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    CHECKF(back.n == 1 && !strcmp(back.def[0].name, "b") && back.n_camera == 2 &&
               !strcmp(back.camera[0].name, "white_balance_automatic") &&
               back.camera[0].value == 0 && !strcmp(back.camera[1].name, "gain") &&
               back.camera[1].value == 50,
           "saved: %d objects, %d camera controls", back.n, back.n_camera);
    /* The file's section after a reload, --control still after it. */
    const char *edited = "{\"objects\":[],\"camera\":{\"gain\":9}}";
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, edited, strlen(edited)) == (ssize_t)strlen(edited));
    close(fd);
    send_msg(c, "{\"type\":\"reload_objects\",\"id\":3}");
    CHECKF(!strcmp(outcome(&s, 3, got, sizeof(got)), "ack"), "%s", got);
    CHECK(trk_camctl_controls(cam, all, 2 * TRK_CAMERA_MAX_CONTROLS) == 2);
    CHECK(!strcmp(all[0].name, "gain") && all[0].value == 9 && !strcmp(all[1].name, "brightness"));
    trk_control_destroy(&c);
    trk_camctl_destroy(&cam);
    trk_objects_target_close(&tgt);
    sink_free(&s);
    unlink(path);
}

/* The file's text now (NULL when it cannot be read). */
static char *file_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* Sends save_objects with part and returns its reply (the caller frees). */
static json_t *save_part(struct sink *s, struct trk_control *c, int id, const char *part)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "{\"type\":\"save_objects\",\"id\":%d,\"part\":%s}", id, part);
    send_msg(c, msg);
    return reply_to(s, id);
}

/* save_objects "part": only that section of the file on disk changes (an
 * object added but not saved stays out of it), a part the daemon lacks is
 * removed, no file yet writes the whole set and says so; a file that is
 * invalid or a symbolic link is refused and stays as it was. */
static void part_saves(void)
{
    const char *text =
        "{\"objects\":[{\"name\":\"a\",\"space\":\"hsv\",\"lo\":[350,2,3],\"hi\":[10,200,200],"
        "\"min_mass\":5,\"blobs\":4,\"track\":true,\"coast_frames\":3,\"color\":\"#123456\"}],"
        "\"camera\":{\"controls\":{\"gain\":7}},\"prefilter\":{\"gaussian\":1.5},"
        "\"calibration\":{\"unit\":\"mm\",\"points\":[[1,1,0,0],[9,1,100,0],[9,9,100,100],"
        "[1,9,0,100]]}}";
    char dir[] = "/tmp/trk_control_part_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64], secret[64];
    snprintf(path, sizeof(path), "%s/objects.json", dir);
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    static struct trk_objects objs, back;
    CHECK(trk_objects_load_file(path, &objs, NULL) == 0);
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    /* The camera card left gain at 50. */
    struct trk_camera_control section[TRK_CAMERA_MAX_CONTROLS];
    int n = objs.n_camera;
    memcpy(section, objs.camera, sizeof(section[0]) * n);
    CHECK(trk_camera_controls_set(section, &n, "gain", 50) == 0);
    struct trk_camctl *cam = NULL;
    struct trk_camctl_cfg cc = { .reason = "none here", .section = section, .n_section = n };
    CHECK(trk_camctl_create(&cc, &cam) == 0);
    struct sink s;
    struct trk_control *c = create_with_camera(&s, &objs, &tgt, cam);
    char got[64];
    /* Taught and added, not saved; a new calibration in metres. */
    send_msg(c, "{\"type\":\"add_object\",\"id\":1,\"object\":{\"name\":\"x\",\"space\":\"rgb\","
                "\"lo\":[0,0,0],\"hi\":[1,1,1]}}");
    CHECKF(!strcmp(outcome(&s, 1, got, sizeof(got)), "ack"), "add: %s", got);
    send_msg(c, "{\"type\":\"set_objects\",\"id\":2,\"calibration\":{\"unit\":\"m\",\"points\":"
                "[[0,0,0,0],[8,0,2,0],[8,8,2,2],[0,8,0,2]]}}");
    CHECKF(!strcmp(outcome(&s, 2, got, sizeof(got)), "ack"), "calibration: %s", got);

    json_t *r = save_part(&s, c, 3, "\"calibration\"");
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "part")), "calibration") &&
               json_is_false(json_object_get(r, "whole")) &&
               json_integer_value(json_object_get(r, "count")) == 1,
           "calibration save ack");
    json_decref(r);
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    CHECKF(back.n == 1 && !memcmp(&back.def[0], &objs.def[0], sizeof(back.def[0])) &&
               !memcmp(back.color[0], objs.color[0], 3) && back.n_camera == 1 &&
               back.camera[0].value == 7 && back.prefilter_sigma == 1.5 && back.calib.on &&
               !strcmp(back.calib.unit, "m") && back.calib.pt[1][2] == 2,
           "after the calibration save: %d objects, gain %ld, unit %s", back.n,
           back.camera[0].value, back.calib.unit);

    r = save_part(&s, c, 4, "\"camera\"");
    CHECKF(r && !strcmp(json_string_value(json_object_get(r, "part")), "camera"), "camera ack");
    json_decref(r);
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    CHECKF(back.n == 1 && back.n_camera == 1 && back.camera[0].value == 50 &&
               !strcmp(back.calib.unit, "m") && back.prefilter_sigma == 1.5,
           "after the camera save: %d objects, gain %ld", back.n, back.camera[0].value);

    /* The daemon has no calibration: the file's goes, the rest stays. */
    send_msg(c, "{\"type\":\"set_objects\",\"id\":5,\"calibration\":null}");
    CHECKF(!strcmp(outcome(&s, 5, got, sizeof(got)), "ack"), "no calibration: %s", got);
    r = save_part(&s, c, 6, "\"calibration\"");
    json_decref(r);
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    CHECKF(back.n == 1 && !back.calib.on && back.camera[0].value == 50, "calibration removed");

    /* Invalid on disk: refused with file:line:col, nothing of it quoted,
     * the file untouched. */
    const char *bad = "{\"objects\":[],\"supersecret\":1}";
    f = fopen(path, "w");
    fputs(bad, f);
    fclose(f);
    r = save_part(&s, c, 7, "\"calibration\"");
    const char *m = r ? json_string_value(json_object_get(r, "message")) : NULL;
    CHECKF(m && !strcmp(json_string_value(json_object_get(r, "code")), "io_error") &&
               strstr(m, "objects.json:1:") && !strstr(m, "supersecret"),
           "invalid file: %s", m ? m : "(none)");
    json_decref(r);
    char *now = file_text(path);
    CHECKF(now && !strcmp(now, bad), "invalid file changed: %s", now ? now : "(gone)");
    free(now);

    /* A link: refused, the link and its target stay. */
    CHECK(rename(path, secret) == 0 && symlink(secret, path) == 0);
    r = save_part(&s, c, 8, "\"camera\"");
    m = r ? json_string_value(json_object_get(r, "message")) : NULL;
    CHECKF(m && strstr(m, "symbolic link") && !strstr(m, "supersecret"), "link: %s",
           m ? m : "(none)");
    json_decref(r);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
    now = file_text(secret);
    CHECKF(now && !strcmp(now, bad), "link target changed: %s", now ? now : "(gone)");
    free(now);

    /* No file yet: the whole set, and the ack says so. */
    unlink(path);
    r = save_part(&s, c, 9, "\"camera\"");
    CHECKF(r && json_is_true(json_object_get(r, "whole")) &&
               json_integer_value(json_object_get(r, "count")) == 2,
           "no file: whole set");
    json_decref(r);
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    CHECKF(back.n == 2 && !strcmp(back.def[1].name, "x") && back.camera[0].value == 50,
           "no file: %d objects", back.n);

    /* Bad values of "part". */
    const char *bad_parts[][2] = { { "5", "bad_field" },
                                   { "null", "bad_field" },
                                   { "[\"camera\"]", "bad_field" },
                                   { "\"objects\"", "out_of_range" },
                                   { "\"\"", "out_of_range" },
                                   { "\"Camera\"", "out_of_range" } };
    for (size_t i = 0; i < sizeof(bad_parts) / sizeof(bad_parts[0]); i++) {
        char msg[128];
        snprintf(msg, sizeof(msg), "{\"type\":\"save_objects\",\"id\":%zu,\"part\":%s}", 20 + i,
                 bad_parts[i][0]);
        send_msg(c, msg);
        CHECKF(!strcmp(outcome(&s, 20 + (int)i, got, sizeof(got)), bad_parts[i][1]), "%s -> %s",
               bad_parts[i][0], got);
    }
    trk_control_destroy(&c);
    trk_camctl_destroy(&cam);
    trk_objects_target_close(&tgt);
    sink_free(&s);
    unlink(path);
    unlink(secret);
    rmdir(dir);
}

/* reload_objects of something that is not a regular file (a FIFO nobody
 * writes: reading it would wait for a writer) or of a symbolic link (to a
 * file the client may not read) is refused at once, without its content in
 * the reply; a save replaces neither. The alarm ends a module that blocks. */
static void reload_refuses_unsafe(void)
{
    char dir[] = "/tmp/trk_control_fifo_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64], secret[64];
    snprintf(path, sizeof(path), "%s/objects.json", dir);
    snprintf(secret, sizeof(secret), "%s/secret", dir);
    CHECK(mkfifo(path, 0600) == 0);
    static struct trk_objects objs;
    struct sink s;
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    struct trk_control_cfg cfg = { .objects = &objs, .save = &tgt };
    sink_init(&s, &cfg);
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    alarm(20);
    char got[64];
    send_msg(c, "{\"type\":\"reload_objects\",\"id\":1}");
    CHECKF(!strcmp(outcome(&s, 1, got, sizeof(got)), "invalid_object"), "FIFO reload: %s", got);
    send_msg(c, "{\"type\":\"save_objects\",\"id\":2}");
    CHECKF(!strcmp(outcome(&s, 2, got, sizeof(got)), "io_error"), "FIFO save: %s", got);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode)); /* not replaced */

    /* A link to a file that is not objects JSON: refused, text not echoed. */
    unlink(path);
    FILE *f = fopen(secret, "w");
    fputs("supersecretpassword\n", f);
    fclose(f);
    CHECK(symlink(secret, path) == 0);
    send_msg(c, "{\"type\":\"reload_objects\",\"id\":3}");
    json_t *r = reply_to(&s, 3);
    const char *m = r ? json_string_value(json_object_get(r, "message")) : NULL;
    CHECKF(m && strstr(m, "symbolic link") && !strstr(m, "supersecret"), "link reload: %s",
           m ? m : "(none)");
    json_decref(r);
    /* The same text in a regular file (a hard link would look like this):
     * file:line:col, but no "near 'supersecretpassword'". */
    unlink(path);
    CHECK(rename(secret, path) == 0);
    send_msg(c, "{\"type\":\"reload_objects\",\"id\":4}");
    r = reply_to(&s, 4);
    m = r ? json_string_value(json_object_get(r, "message")) : NULL;
    CHECKF(m && strstr(m, "objects.json:1:") && strstr(m, "syntax error: '[' or '{' expected") &&
               !strstr(m, "supersecret"),
           "bad text reload: %s", m ? m : "(none)");
    json_decref(r);
    alarm(0);
    trk_control_destroy(&c);
    trk_objects_target_close(&tgt);
    sink_free(&s);
    unlink(path);
    unlink(secret);
    rmdir(dir);
}

/* One client keeps at most 4 samples pending (the 5th is "busy") while
 * another still gets its own in; a full-frame sample of a 1000x600 frame
 * reads an even grid of at most TRK_SAMPLE_PIXELS_MAX pixels and still
 * describes the whole rectangle (both halves' colours). */
static void sample_bounds(void)
{
    static struct trk_objects objs;
    struct sink s;
    struct trk_control_cfg cfg = { .objects = &objs };
    cfg.hello.width = 1000, cfg.hello.height = 600;
    cfg.hello.preview.width = 320;
    sink_init(&s, &cfg);
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    CHECK(!trk_control_samples_pending(c));
    char msg[160], got[64];
    for (int id = 1; id <= 5; id++) {
        snprintf(msg, sizeof(msg),
                 "{\"type\":\"sample\",\"id\":%d,\"x\":0,\"y\":0,\"w\":4096,\"h\":4096}", id);
        send_msg(c, msg);
    }
    CHECKF(!strcmp(outcome(&s, 5, got, sizeof(got)), "busy"), "5th pending sample: %s", got);
    const char *other = "{\"type\":\"sample\",\"id\":6,\"x\":500,\"y\":300}";
    trk_control_on_message(c, 8, other, strlen(other));
    /* Left half red-ish, right half blue-ish. */
    const int w = 1000, h = 600;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    CHECK(rgb != NULL);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *px = rgb + ((size_t)y * w + x) * 3;
            px[0] = x < w / 2 ? 200 : 20, px[1] = 60, px[2] = x < w / 2 ? 20 : 200;
        }
    uint8_t *buf = NULL;
    struct trk_image img;
    CHECK(trk_image_from_rgb(rgb, w, h, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, &buf, &img) == 0);
    long read = trk_control_answer_samples(c, &img, 9);
    CHECKF(read > 0 && read <= 4 * TRK_SAMPLE_PIXELS_MAX + 25 + 5 * TRK_SAMPLE_SHARE_PIXELS,
           "pixels read: %ld", read);
    for (int id = 1; id <= 4; id++) {
        json_t *r = reply_to(&s, id);
        json_t *rect = json_object_get(r, "rect");
        long n = (long)json_integer_value(json_object_get(r, "n"));
        json_t *mean = json_object_get(r, "rgb");
        CHECKF(r && !strcmp(json_string_value(json_object_get(r, "type")), "sample") &&
                   json_integer_value(json_array_get(rect, 2)) == w - 1 &&
                   json_integer_value(json_array_get(rect, 3)) == h - 1,
               "sample %d covers the frame", id);
        CHECKF(n > TRK_SAMPLE_PIXELS_MAX / 4 && n <= TRK_SAMPLE_PIXELS_MAX, "sample %d read %ld",
               id, n);
        int r0 = (int)json_integer_value(json_array_get(mean, 0));
        int b0 = (int)json_integer_value(json_array_get(mean, 2));
        CHECKF(r0 >= 105 && r0 <= 115 && b0 >= 105 && b0 <= 115, "sample %d mean %d,%d", id, r0,
               b0);
        json_t *box =
            json_object_get(json_object_get(json_object_get(r, "suggest_all"), "rgb"), "lo");
        CHECKF(json_integer_value(json_array_get(box, 0)) == 0, "sample %d saw both halves", id);
        json_decref(r);
    }
    json_t *r = reply_to(&s, 6);
    CHECKF(r && json_integer_value(json_object_get(r, "to_client")) == 8 &&
               json_integer_value(json_object_get(r, "n")) == 25,
           "the other client's sample was taken and answered");
    json_decref(r);
    /* Answered requests free their slots. */
    send_msg(c, "{\"type\":\"sample\",\"id\":7,\"x\":1,\"y\":1}");
    CHECK(trk_control_samples_pending(c));
    free(buf);
    free(rgb);
    trk_control_destroy(&c);
    sink_free(&s);
}

/* A frame of one colour (w x h RGB24) into *img; *buf to free. */
static void solid_frame(int w, int h, uint8_t r, uint8_t g, uint8_t b, uint8_t **buf,
                        struct trk_image *img)
{
    uint8_t *rgb = malloc((size_t)w * h * 3);
    CHECK(rgb != NULL);
    for (long i = 0; i < (long)w * h; i++)
        rgb[i * 3] = r, rgb[i * 3 + 1] = g, rgb[i * 3 + 2] = b;
    CHECK(trk_image_from_rgb(rgb, w, h, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, buf, img) == 0);
    free(rgb);
}

/* set_view calls: the last view given to clients 7 and 8. */
static int views_seen[9];
static void sink_view(void *ctx, uint64_t client, int view)
{
    (void)ctx;
    CHECKF(client == 7 || client == 8, "set_view for client %llu", (unsigned long long)client);
    if (client < 9) views_seen[client] = view;
}

/* A control module (64x48 frames) on the set of text, loaded into *objs,
 * replying into s. */
static struct trk_control *control_on(const char *text, struct trk_objects *objs, struct sink *s)
{
    CHECK(trk_objects_load_string(text, strlen(text), "t", objs, NULL) == 0);
    struct trk_control_cfg cfg = { .objects = objs };
    cfg.hello.width = 64, cfg.hello.height = 48;
    sink_init(s, &cfg);
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    return c;
}

/* Sends asks[i][0] with id i + 1, each in turn, and checks its outcome is
 * asks[i][1]. */
static void ask_all(struct trk_control *c, struct sink *s, const char *const (*asks)[2], size_t n)
{
    char got[64];
    for (size_t i = 0; i < n; i++) {
        send_msg(c, asks[i][0]);
        CHECKF(!strcmp(outcome(s, (int)i + 1, got, sizeof(got)), asks[i][1]), "%s: %s, not %s",
               asks[i][0], got, asks[i][1]);
    }
}

/* Edits keep what they do not name: update_object "changes" merges over the
 * daemon's object (an explicit colour and the tracking keys stay, a default
 * colour follows the box); set_objects with a calibration alone keeps the
 * objects and the camera section. */
static void edits_keep_the_rest(void)
{
    static const char file[] =
        "{\"objects\":[{\"name\":\"a\",\"space\":\"rgb\",\"lo\":[1,2,3],\"hi\":[40,50,60],"
        "\"min_mass\":9,\"blobs\":3,\"min_area\":4,\"connectivity\":4,\"track\":true,"
        "\"coast_frames\":7,\"color\":\"#123456\"},"
        "{\"name\":\"b\",\"space\":\"rgb\",\"lo\":[0,0,0],\"hi\":[100,100,100]}],"
        "\"camera\":{\"gain\":10},\"prefilter\":{\"gaussian\":1.5}}";
    static struct trk_objects objs, got;
    struct sink s;
    struct trk_control *c = control_on(file, &objs, &s);
    /* Each request (its id is its index + 1) and the outcome it gets. */
    static const char *const asks[][2] = {
        { "{\"type\":\"update_object\",\"id\":1,\"name\":\"a\",\"changes\":{\"blobs\":5}}", "ack" },
        { "{\"type\":\"update_object\",\"id\":2,\"name\":\"b\",\"changes\":{\"hi\":[200,100,100]}}",
          "ack" },
        /* Checked whole: tracking needs blobs. */
        { "{\"type\":\"update_object\",\"id\":3,\"name\":\"a\",\"changes\":{\"blobs\":0}}",
          "invalid_object" },
        { "{\"type\":\"update_object\",\"id\":4,\"name\":\"a\",\"changes\":[1]}", "bad_field" },
        { "{\"type\":\"set_objects\",\"id\":5,\"calibration\":{\"unit\":\"mm\",\"points\":"
          "[[0,0,0,0],[60,0,600,0],[60,40,600,400],[0,40,0,400]]}}",
          "ack" },
        { "{\"type\":\"set_objects\",\"id\":6}", "bad_field" },
    };
    ask_all(c, &s, asks, sizeof(asks) / sizeof(asks[0]));
    uint64_t v = 0;
    CHECK(trk_control_poll(c, &v, &got));
    const struct trk_object_def *a = &got.def[0], *b = &got.def[1];
    CHECKF(got.n == 2 && a->blobs == 5 && a->track && a->coast_frames == 7 && a->min_mass == 9 &&
               a->min_area == 4 && a->connectivity == 4 && a->lo[0] == 1 && a->hi[2] == 60,
           "a keeps its keys");
    CHECKF(got.color[0][0] == 0x12 && got.color[0][1] == 0x34 && got.color[0][2] == 0x56,
           "a keeps its colour");
    uint8_t want[3];
    trk_object_display_rgb(b, want);
    CHECKF(b->hi[0] == 200 && !memcmp(got.color[1], want, 3), "b's default colour follows its box");
    CHECKF(got.calib.on && got.n_camera == objs.n_camera && got.n_camera > 0 &&
               got.prefilter_sigma == 1.5,
           "calibration set, camera and pre-filter kept");
    trk_control_destroy(&c);
    sink_free(&s);
}

/* Patterns survive the page's edits: set_objects (objects reordered, one
 * added) keeps them over the new indices; removing or taking the blobs of
 * a colour a pattern uses is refused with the pattern's name; removing
 * another object moves the indices. */
static void edits_keep_patterns(void)
{
    static const char file[] =
        "{\"objects\":[{\"name\":\"c\",\"space\":\"rgb\",\"lo\":[0,0,200],\"hi\":[60,60,255],"
        "\"blobs\":4},{\"name\":\"p\",\"space\":\"rgb\",\"lo\":[200,0,200],\"hi\":[255,60,255],"
        "\"blobs\":8},{\"name\":\"g\",\"space\":\"rgb\",\"lo\":[0,200,0],\"hi\":[60,255,60],"
        "\"blobs\":8}],\"patterns\":[{\"name\":\"r\",\"kind\":\"dots\",\"center\":\"c\","
        "\"center_mm\":50,\"dots\":[[35,54],[35,-54]],\"ids\":[[\"p\",\"g\"],[\"g\",\"p\"]]}]}";
    static struct trk_objects objs, got;
    struct sink s;
    struct trk_control *c = control_on(file, &objs, &s);
    static const char *const asks[][2] = {
        { "{\"type\":\"set_objects\",\"id\":1,\"objects\":["
          "{\"name\":\"x\",\"space\":\"rgb\",\"lo\":[1,1,1],\"hi\":[2,2,2]},"
          "{\"name\":\"g\",\"space\":\"rgb\",\"lo\":[0,200,0],\"hi\":[60,255,60],\"blobs\":8},"
          "{\"name\":\"p\",\"space\":\"rgb\",\"lo\":[200,0,200],\"hi\":[255,60,255],\"blobs\":8},"
          "{\"name\":\"c\",\"space\":\"rgb\",\"lo\":[0,0,200],\"hi\":[60,60,255],\"blobs\":4}]}",
          "ack" },
        { "{\"type\":\"remove_object\",\"id\":2,\"name\":\"p\"}", "invalid_object" },
        { "{\"type\":\"update_object\",\"id\":3,\"name\":\"g\",\"changes\":{\"blobs\":0}}",
          "invalid_object" },
        { "{\"type\":\"set_objects\",\"id\":4,\"objects\":["
          "{\"name\":\"c\",\"space\":\"rgb\",\"lo\":[0,0,200],\"hi\":[60,60,255],\"blobs\":4}]}",
          "invalid_object" },
        { "{\"type\":\"remove_object\",\"id\":5,\"name\":\"x\"}", "ack" },
    };
    ask_all(c, &s, asks, sizeof(asks) / sizeof(asks[0]));
    json_t *r = reply_to(&s, 2);
    CHECKF(
        strstr(json_string_value(json_object_get(r, "message")), "pattern \"r\" uses object \"p\""),
        "%s", json_string_value(json_object_get(r, "message")));
    json_decref(r);
    uint64_t v = 0;
    CHECK(trk_control_poll(c, &v, &got));
    /* Now g, p, c: the pattern's colours follow them. */
    const struct trk_pattern *pt = &got.patterns[0];
    CHECKF(got.n == 3 && got.n_patterns == 1 && pt->centre == 2 && pt->id_colors[0][0] == 1 &&
               pt->id_colors[0][1] == 0 && pt->id_colors[1][0] == 0,
           "n %d, patterns %d, centre %u", got.n, got.n_patterns, pt->centre);
    CHECK(trk_objects_validate(&got, NULL, 0) == 0);
    trk_control_destroy(&c);
    sink_free(&s);
}

/* set_pattern: a centre + dots pattern's centre and dot colours (each use
 * in the ids table follows its slot), a colour code's colours; refused
 * with the file's reasons (unknown pattern, unknown object, an object
 * without blobs, ids made alike, the wrong count or kind of key) and the
 * set unchanged; get_objects and the objects file written by a save have
 * the new colours. */
static void set_pattern_edits(void)
{
    static const char file[] =
        "{\"objects\":[{\"name\":\"c\",\"space\":\"rgb\",\"lo\":[0,0,200],\"hi\":[60,60,255],"
        "\"blobs\":4},{\"name\":\"p\",\"space\":\"rgb\",\"lo\":[200,0,200],\"hi\":[255,60,255],"
        "\"blobs\":8},{\"name\":\"g\",\"space\":\"rgb\",\"lo\":[0,200,0],\"hi\":[60,255,60],"
        "\"blobs\":8},{\"name\":\"y\",\"space\":\"rgb\",\"lo\":[200,200,0],\"hi\":[255,255,60],"
        "\"blobs\":8},{\"name\":\"nb\",\"space\":\"rgb\",\"lo\":[1,1,1],\"hi\":[2,2,2]}],"
        "\"patterns\":[{\"name\":\"r\",\"kind\":\"dots\",\"center\":\"c\",\"center_mm\":50,"
        "\"dots\":[[35,54],[35,-54]],\"ids\":[[\"p\",\"g\"],[\"g\",\"p\"]]},"
        "{\"name\":\"k\",\"kind\":\"code\",\"colors\":[\"p\",\"g\"],\"id\":3}]}";
    char path[] = "/tmp/trk_control_pattern_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, file, strlen(file)) == (ssize_t)strlen(file));
    close(fd);
    static struct trk_objects objs, got, back;
    CHECK(trk_objects_load_file(path, &objs, NULL) == 0);
    struct trk_objects_target tgt;
    CHECK(trk_objects_target_open(path, &tgt, NULL, NULL, 0) == 0);
    struct sink s;
    struct trk_control_cfg cfg = { .objects = &objs, .save = &tgt };
    sink_init(&s, &cfg);
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    static const char *const asks[][2] = {
        { "{\"type\":\"set_pattern\",\"id\":1,\"name\":\"r\",\"center\":\"nb\","
          "\"dots\":[\"y\",\"g\"]}",
          "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":2,\"name\":\"zz\",\"dots\":[\"p\",\"g\"]}",
          "not_found" },
        { "{\"type\":\"set_pattern\",\"id\":3,\"name\":\"r\",\"dots\":[\"q\",\"g\"]}",
          "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":4,\"name\":\"r\",\"dots\":[\"nb\",\"g\"]}",
          "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":5,\"name\":\"r\",\"dots\":[\"g\",\"g\"]}",
          "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":6,\"name\":\"r\",\"dots\":[\"p\"]}", "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":7,\"name\":\"r\",\"colors\":[\"p\",\"g\"]}",
          "bad_field" },
        { "{\"type\":\"set_pattern\",\"id\":8,\"name\":\"k\",\"center\":\"p\"}", "invalid_object" },
        { "{\"type\":\"set_pattern\",\"id\":9,\"name\":\"k\"}", "bad_field" },
        { "{\"type\":\"set_pattern\",\"id\":10,\"name\":\"r\",\"dots\":[\"p\",7]}", "bad_field" },
        { "{\"type\":\"set_pattern\",\"id\":11,\"name\":\"r\",\"center\":\"y\","
          "\"dots\":[\"y\",\"c\"]}",
          "ack" },
        { "{\"type\":\"set_pattern\",\"id\":12,\"name\":\"k\",\"colors\":[\"g\",\"y\"]}", "ack" },
        { "{\"type\":\"save_objects\",\"id\":13}", "ack" },
    };
    ask_all(c, &s, asks, sizeof(asks) / sizeof(asks[0]));
    static const struct {
        int id;
        const char *says;
    } why[] = {
        { 1, "center: object \"nb\" has no \"blobs\"" },
        { 2, "no pattern named \"zz\"" },
        { 3, "dots[0]: \"q\" is not the name of an object" },
        { 4, "dots[0]: object \"nb\" has no \"blobs\"" },
        { 5, "ids 0 and 1 of pattern \"r\" would have the same colours" },
        { 6, "dots must have 2 object names" },
        { 8, "is a colour code: it has no centre" },
    };
    for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
        json_t *r = reply_to(&s, why[i].id);
        const char *m = json_string_value(json_object_get(r, "message"));
        CHECKF(m && strstr(m, why[i].says), "reply %d: %s", why[i].id, m ? m : "(none)");
        json_decref(r);
    }
    send_msg(c, "{\"type\":\"get_objects\",\"id\":14}");
    json_t *r = reply_to(&s, 14);
    json_t *pr = json_array_get(json_object_get(r, "patterns"), 0);
    json_t *pk = json_array_get(json_object_get(r, "patterns"), 1);
    CHECKF(pr && !strcmp(json_string_value(json_object_get(pr, "center")), "y") &&
               !strcmp(json_string_value(json_array_get(json_object_get(pr, "dots"), 0)), "y") &&
               !strcmp(json_string_value(json_array_get(json_object_get(pr, "dots"), 1)), "c") &&
               json_integer_value(json_object_get(pr, "ids")) == 2 && pk &&
               !strcmp(json_string_value(json_object_get(pk, "kind")), "code") &&
               !strcmp(json_string_value(json_array_get(json_object_get(pk, "colors"), 1)), "y") &&
               json_integer_value(json_object_get(pk, "id")) == 3,
           "get_objects patterns");
    json_decref(r);
    uint64_t v = 0;
    CHECK(trk_control_poll(c, &v, &got));
    CHECK(trk_objects_load_file(path, &back, NULL) == 0);
    const struct trk_objects *sets[] = { &got, &back };
    for (int i = 0; i < 2; i++) {
        const struct trk_pattern *a = &sets[i]->patterns[0], *b = &sets[i]->patterns[1];
        CHECKF(sets[i]->n_patterns == 2 && a->centre == 3 && a->id_colors[0][0] == 3 &&
                   a->id_colors[0][1] == 0 && a->id_colors[1][0] == 0 && a->id_colors[1][1] == 3 &&
                   b->code[0] == 2 && b->code[1] == 3,
               "%s: centre %u, id 0 %u %u, code %u %u", i ? "saved file" : "running set", a->centre,
               a->id_colors[0][0], a->id_colors[0][1], b->code[0], b->code[1]);
    }
    trk_control_destroy(&c);
    trk_objects_target_close(&tgt);
    sink_free(&s);
    unlink(path);
}

/* The mask view is each client's own, gone with it; samples naming a seq
 * read the kept (or held) frame of that seq. */
static void views_and_kept_frames(void)
{
    static struct trk_objects objs;
    CHECK(trk_objects_load_string(two_objects, strlen(two_objects), "t", &objs, NULL) == 0);
    struct sink s;
    struct trk_control_cfg cfg = { .objects = &objs };
    cfg.hello.width = 16, cfg.hello.height = 8;
    sink_init(&s, &cfg);
    cfg.reply.set_view = sink_view;
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    char got_s[64];
    const char *m8 =
        "{\"type\":\"preview\",\"id\":2,\"mask\":{\"space\":\"hsv\",\"lo\":[350,50,50],"
        "\"hi\":[10,255,255]}}";
    send_msg(c, "{\"type\":\"preview\",\"id\":1,\"mask\":\"b\"}");
    trk_control_on_message(c, 8, m8, strlen(m8));
    CHECKF(!strcmp(outcome(&s, 1, got_s, sizeof(got_s)), "ack") &&
               !strcmp(outcome(&s, 2, got_s, sizeof(got_s)), "ack"),
           "two mask views: %s", got_s);
    struct trk_control_view vw[1 + TRK_CONTROL_VIEWS];
    int pw;
    double pf;
    int n = trk_control_preview(c, &pw, &pf, vw, 1 + TRK_CONTROL_VIEWS);
    CHECKF(n == 3 && vw[0].view == 0 && !vw[0].mask && views_seen[7] > 0 && views_seen[8] > 0 &&
               views_seen[7] != views_seen[8],
           "plain + one view per client: %d", n);
    for (int i = 1; i < n; i++) {
        bool is7 = vw[i].view == views_seen[7];
        CHECKF(vw[i].mask && (is7 ? !strcmp(vw[i].def.name, "b") && vw[i].def.hi[0] == 4
                                  : vw[i].def.space == TRK_SPACE_HSV && vw[i].def.lo[0] == 350),
               "view %d shows its client's mask", vw[i].view);
    }
    /* Renamed, the view follows; closed, the client's view is gone. */
    send_msg(c, "{\"type\":\"rename_object\",\"id\":3,\"name\":\"b\",\"new_name\":\"c\"}");
    outcome(&s, 3, got_s, sizeof(got_s));
    trk_control_client_closed(c, 8);
    n = trk_control_preview(c, &pw, &pf, vw, 1 + TRK_CONTROL_VIEWS);
    CHECKF(n == 2 && vw[1].view == views_seen[7] && vw[1].mask && !strcmp(vw[1].def.name, "c"),
           "client 8's view gone, 7's follows the rename: %d", n);
    send_msg(c, "{\"type\":\"preview\",\"id\":4,\"mask\":null}");
    outcome(&s, 4, got_s, sizeof(got_s));
    CHECKF(trk_control_preview(c, &pw, &pf, vw, 1 + TRK_CONTROL_VIEWS) == 1 && views_seen[7] == 0,
           "mask off: the plain picture");

    /* Frames 10..13 kept, red then green ...; a sample names frame 10. */
    uint8_t *buf[6];
    struct trk_image img[6];
    for (int i = 0; i < 6; i++) {
        solid_frame(16, 8, (uint8_t)(40 * i), 200, 30, &buf[i], &img[i]);
        if (i < 4) trk_control_keep_frame(c, &img[i], 10 + (uint64_t)i);
    }
    send_msg(c, "{\"type\":\"sample\",\"id\":5,\"x\":2,\"y\":2,\"radius\":1,\"seq\":11}");
    send_msg(c, "{\"type\":\"sample\",\"id\":6,\"x\":2,\"y\":2,\"seq\":9}");
    trk_control_answer_samples(c, &img[5], 99);
    json_t *r = reply_to(&s, 5);
    CHECKF(r && json_integer_value(json_object_get(r, "seq")) == 11 &&
               json_integer_value(json_array_get(json_object_get(r, "rgb"), 0)) == 40,
           "the sample read frame 11, not the newest");
    json_t *fs = json_object_get(r, "frame_share");
    CHECKF(json_real_value(json_object_get(fs, "rgb")) == 1.0, "a uniform frame: share 1");
    json_decref(r);
    CHECKF(!strcmp(outcome(&s, 6, got_s, sizeof(got_s)), "not_found"), "frame 9: %s", got_s);
    /* Held, frame 11 outlives the ring; released, it goes. */
    send_msg(c, "{\"type\":\"preview\",\"id\":7,\"hold\":11}");
    r = reply_to(&s, 7);
    CHECKF(r && json_integer_value(json_object_get(r, "hold")) == 11, "hold acked");
    json_decref(r);
    for (int k = 0; k < 2 * TRK_CONTROL_KEPT_FRAMES; k++)
        trk_control_keep_frame(c, &img[4], 20 + (uint64_t)k);
    send_msg(c, "{\"type\":\"sample\",\"id\":8,\"x\":2,\"y\":2,\"seq\":11}");
    const char *other = "{\"type\":\"sample\",\"id\":9,\"x\":2,\"y\":2,\"seq\":11}";
    trk_control_on_message(c, 8, other, strlen(other));
    trk_control_answer_samples(c, &img[5], 99);
    r = reply_to(&s, 8);
    CHECKF(r && json_integer_value(json_array_get(json_object_get(r, "rgb"), 0)) == 40,
           "held frame 11 sampled");
    json_decref(r);
    CHECKF(!strcmp(outcome(&s, 9, got_s, sizeof(got_s)), "not_found"),
           "another client's held frame is not its own: %s", got_s);
    send_msg(c, "{\"type\":\"preview\",\"id\":10,\"hold\":5}");
    CHECKF(!strcmp(outcome(&s, 10, got_s, sizeof(got_s)), "not_found"), "hold 5: %s", got_s);
    trk_control_client_closed(c, 7);
    send_msg(c, "{\"type\":\"sample\",\"id\":11,\"x\":2,\"y\":2,\"seq\":11}");
    trk_control_answer_samples(c, &img[5], 99);
    CHECKF(!strcmp(outcome(&s, 11, got_s, sizeof(got_s)), "not_found"), "released: %s", got_s);
    for (int i = 0; i < 6; i++)
        free(buf[i]);
    trk_control_destroy(&c);
    sink_free(&s);
}

int main(void)
{
    mask_equals_mass();
    versions_and_reload();
    every_type_answered();
    camera_section();
    reload_refuses_unsafe();
    part_saves();
    sample_bounds();
    edits_keep_the_rest();
    edits_keep_patterns();
    set_pattern_edits();
    views_and_kept_frames();
    return check_exit("control");
}
