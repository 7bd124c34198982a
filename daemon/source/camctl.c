/* Camera controls for clients: a worker thread that queries and sets the
 * camera's exposure, gain and white-balance controls on its own fd. */
#include "camctl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/videodev2.h>

#define LOG_TAG "camctl"
#include "log.h"
#include "messages.h"
#include "v4l2.h"
#include "workq.h"

/* Requests waiting for the worker; more get "busy". */
#define MAX_JOBS 8
/* Menu items reported per control (V4L2_CID_EXPOSURE_AUTO has 4). */
#define MAX_MENU 8

/* The controls clients see, in the order they are reported: each group's
 * automatic mode, then its manual values. Others (vivid's fault injection,
 * a camera's firmware switches) are not clients' to set. */
static const struct known {
    uint32_t id;
    const char *group;
    bool is_auto;
} known[] = {
    { V4L2_CID_EXPOSURE_AUTO, "exposure", true },
    { V4L2_CID_EXPOSURE_ABSOLUTE, "exposure", false },
    { V4L2_CID_EXPOSURE, "exposure", false },
    { V4L2_CID_AUTOGAIN, "gain", true },
    { V4L2_CID_GAIN, "gain", false },
    { V4L2_CID_AUTO_WHITE_BALANCE, "white_balance", true },
    { V4L2_CID_WHITE_BALANCE_TEMPERATURE, "white_balance", false },
};
#define N_KNOWN (int)(sizeof known / sizeof known[0])

/* One control as queried, with the storage its trk_cam_ctrl_info points
 * into. */
struct ctrl {
    uint32_t id;
    char name[64], label[32];
    char menu_name[MAX_MENU][32];
    const char *menu_ptr[MAX_MENU];
    int64_t menu_value[MAX_MENU];
    struct trk_cam_ctrl_info info;
};

/* Every known control the camera has. */
struct query {
    int n;
    struct ctrl c[N_KNOWN];
    struct trk_cam_ctrl_info info[N_KNOWN];
};

enum job_kind { JOB_GET, JOB_SET, JOB_APPLY };

struct job {
    enum job_kind kind;
    uint64_t client;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    char name[64];
    long value;
};

struct trk_camctl {
    char *device; /* NULL: no controls */
    char *reason;
    struct trk_reply out; /* set before the first request, then read-only */
    struct trk_workq *q;  /* runs the jobs: the service thread never waits */
    pthread_mutex_t lock; /* guards everything below */
    struct trk_camera_control section[TRK_CAMERA_MAX_CONTROLS];
    int n_section;
    struct trk_camera_control cli[TRK_CAMERA_MAX_CONTROLS];
    int n_cli;
};

/* ------------------------------------------------------------- replies */

static void send_msg(struct trk_camctl *c, uint64_t client, bool all, struct trk_buf *b, int rc)
{
    if (rc || b->failed)
        log_warn("out of memory building a camera message: not sent");
    else if (all && c->out.broadcast)
        c->out.broadcast(c->out.ctx, b);
    else if (!all && c->out.send)
        c->out.send(c->out.ctx, client, b);
    trk_buf_free(b);
}

__attribute__((format(printf, 5, 6))) static void
reply_error(struct trk_camctl *c, uint64_t client, const char *id, int code, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct trk_buf b = { 0 };
    send_msg(c, client, false, &b, trk_msg_error(&b, trk_msg_err_code(code), text, id));
}

/* --------------------------------------------------------------- query */

static bool is_fixed(const struct trk_camctl *c, const char *name)
{
    for (int i = 0; i < c->n_cli; i++)
        if (!strcmp(c->cli[i].name, name)) return true;
    return false;
}

/* The values that switch an automatic mode on and off: 1 / 0, or for the
 * auto_exposure menu manual and aperture priority (what UVC webcams offer),
 * else fully automatic, else any other item. */
static void auto_values(struct ctrl *k)
{
    struct trk_cam_ctrl_info *i = &k->info;
    i->auto_value = 1, i->manual_value = 0;
    if (k->id != V4L2_CID_EXPOSURE_AUTO) return;
    i->manual_value = V4L2_EXPOSURE_MANUAL;
    i->auto_value = -1;
    static const int64_t prefer[] = { V4L2_EXPOSURE_APERTURE_PRIORITY, V4L2_EXPOSURE_AUTO };
    for (int p = 0; p < 2 && i->auto_value < 0; p++)
        for (int m = 0; m < i->n_menu; m++)
            if (k->menu_value[m] == prefer[p]) i->auto_value = prefer[p];
    for (int m = 0; m < i->n_menu && i->auto_value < 0; m++)
        if (k->menu_value[m] != V4L2_EXPOSURE_MANUAL) i->auto_value = k->menu_value[m];
}

/* Fills k from the driver's description q and the current value. */
static void describe(int fd, const struct v4l2_query_ext_ctrl *q, const struct known *w,
                     struct ctrl *k)
{
    memset(k, 0, sizeof(*k));
    k->id = q->id;
    snprintf(k->label, sizeof(k->label), "%s", q->name);
    trk_v4l2_ctrl_name(q->name, k->name, sizeof(k->name));
    struct trk_cam_ctrl_info *i = &k->info;
    i->name = k->name;
    i->label = k->label;
    i->group = w->group;
    i->is_auto = w->is_auto;
    i->kind = q->type == V4L2_CTRL_TYPE_BOOLEAN ? "bool"
              : q->type == V4L2_CTRL_TYPE_MENU  ? "menu"
                                                : "int";
    i->min = q->minimum, i->max = q->maximum, i->step = q->step ? (int64_t)q->step : 1;
    i->def = q->default_value;
    i->inactive = q->flags & V4L2_CTRL_FLAG_INACTIVE;
    struct v4l2_control v = { .id = q->id };
    i->value = trk_v4l2_ioctl(fd, VIDIOC_G_CTRL, &v) == 0 ? v.value : q->default_value;
    if (q->type == V4L2_CTRL_TYPE_MENU)
        /* A menu's items are few; a gap-ridden range is not walked far. */
        for (int64_t m = q->minimum; m <= q->maximum && m < q->minimum + 64 && i->n_menu < MAX_MENU;
             m++) {
            struct v4l2_querymenu qm = { .id = q->id, .index = (uint32_t)m };
            if (trk_v4l2_ioctl(fd, VIDIOC_QUERYMENU, &qm)) continue; /* a gap in the menu */
            snprintf(k->menu_name[i->n_menu], sizeof(k->menu_name[0]), "%s", qm.name);
            k->menu_ptr[i->n_menu] = k->menu_name[i->n_menu];
            k->menu_value[i->n_menu++] = m;
        }
    i->menu_names = k->menu_ptr;
    i->menu_values = k->menu_value;
    if (w->is_auto) auto_values(k);
}

/* The known controls the camera on fd has, in known[]'s order. */
static void query(struct trk_camctl *c, int fd, struct query *out)
{
    struct ctrl found[N_KNOWN];
    bool have[N_KNOWN] = { false };
    struct v4l2_query_ext_ctrl q = { .id = V4L2_CTRL_FLAG_NEXT_CTRL };
    while (trk_v4l2_ioctl(fd, VIDIOC_QUERY_EXT_CTRL, &q) == 0) {
        for (int w = 0; w < N_KNOWN; w++)
            if (q.id == known[w].id && !(q.flags & V4L2_CTRL_FLAG_DISABLED) &&
                (q.type == V4L2_CTRL_TYPE_INTEGER || q.type == V4L2_CTRL_TYPE_BOOLEAN ||
                 q.type == V4L2_CTRL_TYPE_MENU)) {
                describe(fd, &q, &known[w], &found[w]);
                have[w] = true;
            }
        q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
    }
    out->n = 0;
    for (int w = 0; w < N_KNOWN; w++) {
        if (!have[w]) continue;
        struct ctrl *k = &out->c[out->n];
        *k = found[w];
        /* The pointers into the copy. */
        k->info.name = k->name, k->info.label = k->label;
        for (int m = 0; m < k->info.n_menu; m++)
            k->menu_ptr[m] = k->menu_name[m];
        k->info.menu_names = k->menu_ptr, k->info.menu_values = k->menu_value;
        pthread_mutex_lock(&c->lock);
        k->info.fixed = is_fixed(c, k->name);
        pthread_mutex_unlock(&c->lock);
        out->info[out->n++] = k->info;
    }
}

/* Opens the camera for its controls: the fd, or -errno. */
static int open_camera(struct trk_camctl *c)
{
    int fd = open(c->device, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The "camera" message of what fd's camera has now, to client (all:
 * broadcast) with id. */
static void send_state(struct trk_camctl *c, int fd, uint64_t client, const char *id, bool all)
{
    struct query *q = malloc(sizeof(*q));
    struct trk_buf b = { 0 };
    if (!q) {
        if (!all) reply_error(c, client, id, TRK_MSG_IO_ERROR, "out of memory");
        return;
    }
    query(c, fd, q);
    struct trk_camera_info ci = { .device = c->device, .n = q->n, .ctrls = q->info };
    send_msg(c, client, all, &b, trk_msg_camera(&b, all ? NULL : id, &ci));
    free(q);
}

/* ---------------------------------------------------------------- worker */

static const struct ctrl *find(const struct query *q, const char *name)
{
    for (int i = 0; i < q->n; i++)
        if (!strcmp(q->c[i].name, name)) return &q->c[i];
    return NULL;
}

/* Whether v is a value k takes; else the reply says why. */
static bool in_range(struct trk_camctl *c, const struct job *j, const struct ctrl *k, long v)
{
    const struct trk_cam_ctrl_info *i = &k->info;
    if (i->n_menu > 0) {
        char items[256] = "";
        for (int m = 0; m < i->n_menu; m++) {
            if (i->menu_values[m] == v) return true;
            size_t len = strlen(items);
            snprintf(items + len, sizeof(items) - len, "%s%lld (%s)", m ? ", " : "",
                     (long long)i->menu_values[m], i->menu_names[m]);
        }
        reply_error(c, j->client, j->id, TRK_MSG_OUT_OF_RANGE, "%s = %ld is not one of %s", j->name,
                    v, items);
        return false;
    }
    if (v < i->min || v > i->max || (v - i->min) % i->step) {
        reply_error(c, j->client, j->id, TRK_MSG_OUT_OF_RANGE,
                    "%s = %ld is out of range %lld..%lld (step %lld)", j->name, v,
                    (long long)i->min, (long long)i->max, (long long)i->step);
        return false;
    }
    return true;
}

/* The section after k was set to v on a camera whose controls are q: v
 * itself, and the group's automatic mode as the driver has it now (it may
 * have switched it off for a manual value); an automatic mode that went on
 * drops the group's manual values, which would switch it off again at the
 * next open. */
static void remember(struct trk_camctl *c, const struct query *q, const struct ctrl *k, long v)
{
    pthread_mutex_lock(&c->lock);
    trk_camera_controls_set(c->section, &c->n_section, k->name, v);
    for (int i = 0; i < q->n; i++) {
        const struct trk_cam_ctrl_info *o = &q->c[i].info;
        if (&q->c[i] == k || strcmp(o->group, k->info.group)) continue;
        if (k->info.is_auto && v != k->info.manual_value && !o->is_auto)
            trk_camera_controls_remove(c->section, &c->n_section, o->name);
        else if (!k->info.is_auto && o->is_auto)
            trk_camera_controls_set(c->section, &c->n_section, o->name, (long)o->value);
    }
    pthread_mutex_unlock(&c->lock);
}

static void run_set(struct trk_camctl *c, int fd, const struct job *j)
{
    struct query *q = malloc(sizeof(*q));
    if (!q) {
        reply_error(c, j->client, j->id, TRK_MSG_IO_ERROR, "out of memory");
        return;
    }
    query(c, fd, q);
    const struct ctrl *k = find(q, j->name);
    if (!k) {
        char names[512] = "";
        for (int i = 0; i < q->n; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", q->c[i].name);
        }
        reply_error(c, j->client, j->id, TRK_MSG_NOT_FOUND,
                    "%s has no control \"%.63s\" among its exposure, gain and white balance "
                    "controls (%s)",
                    c->device, j->name, q->n ? names : "it has none");
        free(q);
        return;
    }
    if (!in_range(c, j, k, j->value)) {
        free(q);
        return;
    }
    struct v4l2_control v = { .id = k->id, .value = (int32_t)j->value };
    int err = trk_v4l2_ioctl(fd, VIDIOC_S_CTRL, &v);
    if (err) {
        log_warn_err(err, "%s: cannot set %s=%ld for client %llu", c->device, j->name, j->value,
                     (unsigned long long)j->client);
        reply_error(c, j->client, j->id, TRK_MSG_IO_ERROR, "%s refused %s = %ld: %s", c->device,
                    j->name, j->value, strerror(-err));
        free(q);
        return;
    }
    /* What the driver took (it may round), and its group as it is now. */
    struct v4l2_control got = { .id = k->id };
    long value = trk_v4l2_ioctl(fd, VIDIOC_G_CTRL, &got) == 0 ? got.value : j->value;
    log_info("%s: control %s=%ld (client %llu)", c->device, j->name, value,
             (unsigned long long)j->client);
    query(c, fd, q);
    k = find(q, j->name);
    if (k) remember(c, q, k, value);
    free(q);
    struct trk_buf b = { 0 };
    send_msg(c, j->client, false, &b, trk_msg_ack_camera(&b, j->id, j->name, value));
}

/* trk_workq_fn: on the worker. */
static void run_job(void *ctx, void *job)
{
    struct trk_camctl *c = ctx;
    const struct job *j = job;
    int fd = open_camera(c);
    if (fd < 0) {
        if (j->kind == JOB_APPLY)
            log_warn_err(fd,
                         "cannot open %s to set the reloaded camera section now: it is set "
                         "when the camera opens again",
                         c->device);
        else
            reply_error(c, j->client, j->id, TRK_MSG_IO_ERROR, "cannot open %s: %s", c->device,
                        strerror(-fd));
        return;
    }
    if (j->kind == JOB_GET) {
        send_state(c, fd, j->client, j->id, false);
    } else {
        if (j->kind == JOB_SET) {
            run_set(c, fd, j);
        } else {
            struct trk_camera_control list[2 * TRK_CAMERA_MAX_CONTROLS];
            int n = trk_camctl_controls(c, list, 2 * TRK_CAMERA_MAX_CONTROLS);
            trk_v4l2_set_controls(fd, c->device, list, n);
        }
        send_state(c, fd, 0, NULL, true);
    }
    close(fd);
}

/* -------------------------------------------------------------- requests */

void trk_camctl_request(struct trk_camctl *c, uint64_t client, const char *id, bool set,
                        const struct json_t *msg)
{
    struct job j = { .kind = set ? JOB_SET : JOB_GET, .client = client };
    snprintf(j.id, sizeof(j.id), "%s", id);
    if (set) {
        const json_t *name = json_object_get(msg, "name");
        const json_t *value = json_object_get(msg, "value");
        if (!json_is_string(name) || !json_string_length(name) ||
            json_string_length(name) >= sizeof(j.name) ||
            strlen(json_string_value(name)) != json_string_length(name)) {
            reply_error(c, client, id, TRK_MSG_BAD_FIELD,
                        "\"name\" must be a control name of 1..63 bytes (as get_camera lists)");
            return;
        }
        if (!json_is_integer(value) && !json_is_boolean(value)) {
            reply_error(c, client, id, TRK_MSG_BAD_FIELD,
                        "\"value\" must be an integer or true/false");
            return;
        }
        json_int_t v = json_is_integer(value) ? json_integer_value(value) : json_is_true(value);
        if (v < INT32_MIN || v > INT32_MAX) {
            reply_error(c, client, id, TRK_MSG_OUT_OF_RANGE,
                        "\"value\" = %lld is out of range for a camera control", (long long)v);
            return;
        }
        snprintf(j.name, sizeof(j.name), "%s", json_string_value(name));
        j.value = (long)v;
    }
    if (!c->device) {
        if (!set) {
            struct trk_camera_info ci = { .reason = c->reason };
            struct trk_buf b = { 0 };
            send_msg(c, client, false, &b, trk_msg_camera(&b, id, &ci));
        } else {
            reply_error(c, client, id, TRK_MSG_NO_CAMERA, "%s", c->reason);
        }
        return;
    }
    pthread_mutex_lock(&c->lock);
    bool fixed = set && is_fixed(c, j.name);
    pthread_mutex_unlock(&c->lock);
    bool queued = !fixed && trk_workq_push(c->q, &j);
    if (fixed)
        reply_error(c, client, id, TRK_MSG_FIXED,
                    "%s is set by --control on trackd's command line, which wins: change it "
                    "there",
                    j.name);
    else if (!queued)
        reply_error(c, client, id, TRK_MSG_BUSY, "too many camera requests pending; try again");
}

/* ------------------------------------------------------------- the lists */

int trk_camctl_controls(struct trk_camctl *c, struct trk_camera_control *out, int max)
{
    pthread_mutex_lock(&c->lock);
    int n = 0;
    for (int i = 0; i < c->n_section && n < max; i++)
        out[n++] = c->section[i];
    for (int i = 0; i < c->n_cli && n < max; i++)
        out[n++] = c->cli[i];
    pthread_mutex_unlock(&c->lock);
    return n;
}

void trk_camctl_section(struct trk_camctl *c, struct trk_camera_control *out, int *n)
{
    pthread_mutex_lock(&c->lock);
    memcpy(out, c->section, sizeof(c->section[0]) * c->n_section);
    *n = c->n_section;
    pthread_mutex_unlock(&c->lock);
}

void trk_camctl_load(struct trk_camctl *c, const struct trk_camera_control *section, int n)
{
    struct job j = { .kind = JOB_APPLY };
    pthread_mutex_lock(&c->lock);
    c->n_section = n < TRK_CAMERA_MAX_CONTROLS ? n : TRK_CAMERA_MAX_CONTROLS;
    memcpy(c->section, section, sizeof(c->section[0]) * c->n_section);
    pthread_mutex_unlock(&c->lock);
    bool queued = !c->device || trk_workq_push(c->q, &j);
    if (!queued)
        log_warn("camera requests are queued up: the reloaded camera section is set when the "
                 "camera opens again");
}

/* ------------------------------------------------------------ lifecycle */

void trk_camctl_set_reply(struct trk_camctl *c, const struct trk_reply *r)
{
    c->out = *r;
}

int trk_camctl_create(const struct trk_camctl_cfg *cfg, struct trk_camctl **out)
{
    *out = NULL;
    if (!cfg || cfg->n_section > TRK_CAMERA_MAX_CONTROLS || cfg->n_cli > TRK_CAMERA_MAX_CONTROLS)
        return TRK_EINVAL;
    struct trk_camctl *c = calloc(1, sizeof(*c));
    if (!c) return TRK_ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    c->device = cfg->device ? strdup(cfg->device) : NULL;
    c->reason = strdup(cfg->reason ? cfg->reason : "the source has no camera controls");
    c->n_section = cfg->n_section;
    if (c->n_section) memcpy(c->section, cfg->section, sizeof(c->section[0]) * c->n_section);
    c->n_cli = cfg->n_cli;
    if (c->n_cli) memcpy(c->cli, cfg->cli, sizeof(c->cli[0]) * c->n_cli);
    if (!c->reason || (cfg->device && !c->device) ||
        trk_workq_create(sizeof(struct job), MAX_JOBS, run_job, c, &c->q)) {
        trk_camctl_destroy(&c);
        return TRK_ENOMEM;
    }
    *out = c;
    return 0;
}

void trk_camctl_destroy(struct trk_camctl **pc)
{
    if (!pc || !*pc) return;
    struct trk_camctl *c = *pc;
    *pc = NULL;
    trk_workq_destroy(&c->q);
    pthread_mutex_destroy(&c->lock);
    free(c->device);
    free(c->reason);
    free(c);
}
