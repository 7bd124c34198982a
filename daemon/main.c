/* trackd: wires the settings, objects, source, backend, control module,
 * WebSocket server and pipeline together, and maps failures to exit codes
 * (exit.h). Each step below logs its own failure and returns the exit code;
 * cleanup() undoes whatever was done. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAG "trackd"
#include "backend.h"
#include "source/camctl.h"
#include "cli.h"
#include "control/control.h"
#include "ops/endpoints.h"
#include "ops/focus.h"
#include "exit.h"
#include "source/hwdec.h"
#include "log.h"
#include "messages.h"
#include "ops/notify.h"
#include "objects.h"
#include "out/outputs.h"
#include "pipeline.h"
#include "spin.h"
#include "tracker.h"
#include "out/record.h"
#include "out/rewind.h"
#include "source/bundles.h"
#include "source/replay.h"
#include "source/source.h"
#include "source/v4l2.h"
#include "ws.h"

/* What main() sets up, torn down in reverse by cleanup(). */
struct app {
    struct trk_settings s;
    char web_root[4096];     /* s.web_root may point here */
    struct trk_objects objs; /* as loaded; the control module keeps the live set */
    struct trk_source src;
    bool source_absent; /* a camera that was not there at start */
    struct trk_backend *backend;
    int track_mode;                     /* --mode, auto resolved for the backend (open_backend) */
    struct trk_backend_cfg backend_cfg; /* the pipeline makes a larger one alike */
    struct trk_hwdec_cfg hwdec;         /* --hwdec as decided at start (plan_hwdec) */
    struct trk_objects_target save;     /* valid when have_save */
    bool have_save;
    struct trk_control *control;
    struct trk_camctl *camctl;   /* camera controls for clients (none: files, demo) */
    struct trk_ws *ws;           /* NULL with --no-server */
    struct trk_endpoints ep;     /* /metrics, /healthz, /snapshot.jpg */
    struct trk_focus *focus;     /* --focus-every's check, NULL when 0 */
    struct trk_ws *metrics_ws;   /* --metrics-listen, else NULL */
    struct trk_outputs *outputs; /* --output, the server, --mqtt, --udp, --osc */
    struct trk_replay *replay;   /* --replay: src's, NULL otherwise */
    bool transport;              /* the replay takes the page's transport */
    struct trk_record *record;   /* --record: the door's, NULL otherwise */
    /* --rewind: the door's, NULL otherwise; set once the outputs open,
     * read by the server's thread (save_rewind) and SIGUSR1's. */
    _Atomic(struct trk_rewind *) rewind;
    int argc; /* the command line, for --record's manifest */
    char **argv;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* The control module's replies, broadcasts and hello go out through the
 * server (ctx); the server hands it control messages through *user, the
 * control module created after the server and before trk_ws_start. */
static void ws_reply(void *ctx, uint64_t client, const struct trk_buf *msg)
{
    trk_ws_send_to(ctx, client, msg->data, msg->len);
}

static void ws_config(void *ctx, const struct trk_buf *msg)
{
    trk_ws_broadcast(ctx, TRK_WS_CONFIG, msg->data, msg->len);
}

/* The camera module's "camera" broadcasts: a kind of their own, so that one
 * never replaces an "objects" message a client has not been sent yet. */
static void ws_replay(void *ctx, const char *json, size_t len)
{
    trk_ws_broadcast(ctx, TRK_WS_REPLAY, json, len);
}

static void ws_camera(void *ctx, const struct trk_buf *msg)
{
    trk_ws_broadcast(ctx, TRK_WS_CAMERA, msg->data, msg->len);
}

static void ws_hello(void *ctx, const struct trk_buf *msg)
{
    trk_ws_set_hello(ctx, msg->data);
}

_Static_assert(TRK_CONTROL_VIEWS < TRK_WS_VIEWS, "a view per masked client, and view 0");

static void ws_view(void *ctx, uint64_t client, int view)
{
    trk_ws_set_view(ctx, client, view);
}

static void on_control_message(void *user, uint64_t client, const char *json, size_t len)
{
    trk_control_on_message(*(struct trk_control **)user, client, json, len);
}

static void on_client_closed(void *user, uint64_t client)
{
    trk_control_client_closed(*(struct trk_control **)user, client);
}

/* SIGHUP: the handler only sets a flag; reload_main does the reload on a
 * normal thread (file I/O and locks are not async-signal-safe). */
static volatile sig_atomic_t reload_requested, reload_quit;
/* SIGUSR1: save the rewind buffer, on reload_main's thread as well. */
static volatile sig_atomic_t rewind_requested;

static void on_hup(int sig)
{
    (void)sig;
    reload_requested = 1;
}

/* systemd hears of each reload (RELOADING=1, then READY=1 whatever the
 * outcome: a rejected file leaves trackd running on the old objects) and,
 * from here as soon as a stop signal is seen, of the stop. */
static void on_usr1(int sig)
{
    (void)sig;
    rewind_requested = 1;
}

/* SIGUSR1 (trigger "signal") and save_rewind ("request"). */
static int save_rewind_for(struct app *a, const char *trigger, char *dir, size_t dir_len, char *why,
                           size_t why_len)
{
    struct trk_rewind *rw = atomic_load(&a->rewind);
    if (!rw) {
        snprintf(why, why_len, "--rewind is off");
        return TRK_ENODEV;
    }
    return trk_rewind_save(rw, trigger, dir, dir_len, why, why_len);
}

/* The control module's list_bundles (its file worker): ctx is the app. */
static int list_bundles(void *ctx, struct trk_buf *out)
{
    const struct app *a = ctx;
    const struct trk_bundles_cfg bc = { .record = a->s.record,
                                        .rewind_dir = a->s.rewind_s > 0 ? a->s.rewind_dir : NULL };
    return trk_bundles_list(&bc, out);
}

/* The control module's save_rewind: ctx is the app. */
static int save_rewind(void *ctx, char *dir, size_t dir_len, char *why, size_t why_len)
{
    return save_rewind_for(ctx, "request", dir, dir_len, why, why_len);
}

static void *reload_main(void *arg)
{
    struct app *a = arg;
    struct trk_control *control = a->control;
    while (!reload_quit && !stop_requested) {
        if (rewind_requested) {
            rewind_requested = 0;
            char dir[4200], why[700];
            if (save_rewind_for(a, "signal", dir, sizeof(dir), why, sizeof(why)))
                log_warn("SIGUSR1: the rewind buffer is not saved: %s", why);
            else
                log_info("SIGUSR1: saving the rewind buffer to %s", dir);
        }
        if (reload_requested) {
            reload_requested = 0;
            char why[600], status[700];
            trk_notify_reloading();
            if (trk_control_reload(control, why, sizeof(why))) {
                log_error("reload rejected, keeping the current objects: %s", why);
                snprintf(status, sizeof(status), "reload rejected: %s", why);
            } else {
                log_info("reloaded %s", why);
                snprintf(status, sizeof(status), "reloaded %s", why);
            }
            trk_notify_ready(status);
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (stop_requested) trk_notify_stopping("stopping (signal)");
    return NULL;
}

/* The page's address for the log: a wildcard address becomes this host's
 * name (the one others reach it by), IPv6 literals get brackets, and the
 * token rides along so a click opens a page that may edit. */
static void page_url(const char *addr, int port, const char *token, char *out, size_t len)
{
    char host[256];
    if ((!strcmp(addr, "0.0.0.0") || !strcmp(addr, "::")) && !gethostname(host, sizeof(host)))
        host[sizeof(host) - 1] = 0;
    else
        snprintf(host, sizeof(host), "%s", addr);
    int n = snprintf(out, len, strchr(host, ':') ? "http://[%s]:%d/" : "http://%s:%d/", host, port);
    if (*token && n > 0 && (size_t)n < len) n += snprintf(out + n, len - n, "?token=");
    for (; *token && n > 0 && (size_t)n + 4 < len; token++) {
        unsigned char c = (unsigned char)*token;
        bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     strchr("-._~", c);
        n += snprintf(out + n, len - n, plain ? "%c" : "%%%02X", c);
    }
}

/* A random 32-hex-digit token. */
static int make_token(char *out, size_t len)
{
    unsigned char r[16];
    if (len < 33 || getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) return -1;
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    return 0;
}

/* --list-devices / --list-formats / --list-controls. */
static int list_cameras(const struct trk_settings *s)
{
    int err = s->list_devices ? trk_v4l2_list_devices(stdout) : 0;
    /* Not an error (exit 0): "none" is the answer, said on stderr so stdout
     * stays a clean list for scripts. */
    if (s->list_devices && err == 0)
        log_warn("no camera found: no V4L2 capture device under /dev (is it plugged in? "
                 "see dmesg)");
    if (err > 0) err = 0;
    if (!err && s->list_formats) err = trk_v4l2_list_formats(s->device, stdout);
    if (!err && s->list_controls) err = trk_v4l2_list_controls(s->device, stdout);
    if (err) log_error_err(err, "cannot open %s", s->device);
    return err ? TRK_EX_NOINPUT : TRK_EX_OK;
}

static int load_objects(const struct trk_settings *s, struct trk_objects *objs)
{
    struct trk_config_error cerr;
    int err;
    if (s->objects)
        err = trk_objects_load_file(s->objects, objs, &cerr);
    else if (!s->input && !s->device) {
        const char *demo = trk_objects_demo_json();
        err = trk_objects_load_string(demo, strlen(demo), "<demo objects>", objs, &cerr);
    } else {
        memset(objs, 0, sizeof(*objs));
        log_warn("no --objects given: tracking nothing (see config/OBJECTS.md)");
        return 0;
    }
    if (err) {
        char line[600];
        trk_config_error_format(&cerr, line, sizeof(line));
        /* The journal files it as an error like every logged one. */
        if (trk_log_stderr_is_journal())
            log_error("%s", line);
        else
            fprintf(stderr, "%s\n", line);
        return TRK_EX_CONFIG;
    }
    if (objs->calib.on)
        log_info("calibration: %d points, world unit \"%s\"%s, fit rms %g %s; wx, wy with %d "
                 "decimals",
                 objs->calib.n, objs->calib.unit, objs->calib.lens ? ", lens undistorted" : "",
                 objs->calib.rms, objs->calib.unit, objs->calib.decimals);
    return 0;
}

/* --check-config: the loader's every rule, and nothing opened but the file,
 * so it can run beside a live trackd (a unit's ExecStartPre, an edit checked
 * before SIGHUP). The verdict goes to stdout, an error to stderr as at start. */
static int check_config(const char *path, struct trk_objects *objs)
{
    struct trk_config_error cerr;
    if (trk_objects_load_file(path, objs, &cerr)) {
        char line[600];
        trk_config_error_format(&cerr, line, sizeof(line));
        fprintf(stderr, "%s\n", line);
        return TRK_EX_CONFIG;
    }
    printf("%s: ok, %d object%s\n", path, objs->n, objs->n == 1 ? "" : "s");
    return fflush(stdout) ? TRK_EX_IOERR : TRK_EX_OK;
}

/* The camera, with the objects file's camera settings first so --control
 * wins. A camera that is not there yet is waited for like one that was
 * unplugged (the capture thread retries every second). */
static int open_camera(struct app *a)
{
    const struct trk_settings *s = &a->s;
    struct trk_v4l2_cfg vc = { .device = s->device,
                               .format = (enum trk_cam_format)s->cam_format,
                               .width = s->width ? s->width : TRK_V4L2_WIDTH,
                               .height = s->width ? s->height : TRK_V4L2_HEIGHT,
                               .fps = s->fps,
                               .io = (enum trk_cam_io)s->cam_io };
    memcpy(vc.controls, a->objs.camera, sizeof(vc.controls[0]) * a->objs.n_camera);
    memcpy(vc.controls + a->objs.n_camera, s->controls, sizeof(s->controls[0]) * s->n_controls);
    vc.n_controls = a->objs.n_camera + s->n_controls;
    vc.hwdec = &a->hwdec;
    vc.camctl = a->camctl;
    int err = trk_source_v4l2_create(&vc, &a->src);
    if (err || !(err = trk_source_open(&a->src))) return err;
    if (err == TRK_SOURCE_EHWDEC) return err; /* --hwdec cuda: said why */
    if (err == TRK_SOURCE_ENOTCAMERA || err == -EACCES || err == -EPERM) {
        /* There, but nothing that waiting would change. */
        if (err == TRK_SOURCE_ENOTCAMERA)
            log_error("cannot use %s as a camera: %s", s->device, a->src.error);
        else
            log_error_err(err, "cannot open %s (is this user in the video group?)", s->device);
        return TRK_SOURCE_ENOTCAMERA;
    }
    if (err == -ENOENT)
        log_warn("%s does not exist (no camera there; see --list-devices): waiting for it to be "
                 "plugged in, retrying every second%s",
                 s->device, isatty(STDERR_FILENO) ? " (Ctrl-C stops)" : "");
    else
        log_warn_err(err, "cannot open %s yet: waiting for it, retrying every second", s->device);
    trk_source_close(&a->src);
    a->source_absent = true; /* said once here; the pipeline adds no "lost" */
    return 0;
}

static int open_source(struct app *a)
{
    const struct trk_settings *s = &a->s;
    /* Clients' camera controls, for the camera's open too (the section as
     * they set it, then --control); files and the demo have none. */
    struct trk_camctl_cfg cam = { .device = s->device,
                                  .reason = s->input ? "a video file has no camera controls"
                                                     : "the demo scene has no camera controls",
                                  .section = a->objs.camera,
                                  .n_section = a->objs.n_camera,
                                  .cli = s->controls,
                                  .n_cli = s->n_controls };
    int err = trk_camctl_create(&cam, &a->camctl);
    if (err) {
        log_error_err(err, "cannot start");
        return TRK_EX_SOFTWARE;
    }
    if (s->replay) {
        char why[1024];
        err = trk_replay_open(s->replay, &a->src, &a->replay, why, sizeof(why));
        if (err == TRK_REPLAY_ENOBUNDLE || err == TRK_REPLAY_EDAMAGED) {
            log_error("--replay: %s", why);
            return err == TRK_REPLAY_ENOBUNDLE ? TRK_EX_NOINPUT : TRK_EX_DATAERR;
        }
        /* The bundle's first set from the start (hello, backend), unless
         * --objects asks for another; the recorded changes follow it. */
        if (!err && !s->objects) {
            a->objs = *trk_replay_first_set(a->replay);
            trk_objects_bind_classes(&a->objs);
        }
    } else if (s->device) {
        err = open_camera(a);
    } else if (s->input) {
        struct trk_file_cfg fc = { .path = s->input, .loop = s->loop, .hwdec = &a->hwdec };
        if (!(err = trk_source_file_create(&fc, &a->src))) err = trk_source_open(&a->src);
    } else {
        struct trk_demo_cfg dc = { .width = s->width ? s->width : TRK_DEMO_WIDTH,
                                   .height = s->width ? s->height : TRK_DEMO_HEIGHT,
                                   .fps = s->fps ? s->fps : TRK_DEMO_FPS };
        if (!(err = trk_source_demo_create(&dc, &a->src))) err = trk_source_open(&a->src);
    }
    if (err == TRK_SOURCE_ENOTVIDEO || err == TRK_SOURCE_ENOTCAMERA)
        return TRK_EX_NOINPUT; /* the source or open_camera said why */
    if (err == TRK_SOURCE_EHWDEC) return TRK_EX_UNAVAILABLE; /* --hwdec cuda: said why */
    if (err) {
        log_error_err(err, "cannot open %s",
                      s->device  ? s->device
                      : s->input ? s->input
                                 : "the demo scene");
        return TRK_EX_NOINPUT;
    }
    log_info("source: %s, camera name %s", a->src.desc, s->camera_name);
    return 0;
}

/* --hwdec, decided before the source opens: NVDEC frames can stay on the
 * GPU only for the CUDA backend (--backend cuda, or auto with a usable
 * GPU); otherwise the sources decode in software and say why in their one
 * line. --hwdec cuda that cannot be honoured ends the start here (69). */
static int plan_hwdec(struct app *a)
{
    const struct trk_settings *s = &a->s;
    struct trk_hwdec_cfg *h = &a->hwdec;
    char why[256] = "";
    *h = (struct trk_hwdec_cfg){ .mode = (enum trk_hwdec)s->hwdec, .cuda_device = 0 };
    if (h->mode == TRK_HWDEC_NONE) {
        snprintf(h->why_not, sizeof(h->why_not), "--hwdec none");
    } else if (s->record && s->record_storage == TRK_STORAGE_COPY) {
        /* The replay decodes the copied bytes in software: so must the run. */
        if (h->mode == TRK_HWDEC_CUDA && (s->input || s->device)) {
            log_error("--record-storage copy needs software decoding (the replay decodes the "
                      "stored bytes in software, and the GPU's decoder may differ): drop "
                      "--hwdec cuda or record raw or ffv1");
            return TRK_EX_USAGE;
        }
        snprintf(h->why_not, sizeof(h->why_not),
                 "--record-storage copy (the replay decodes in software)");
    } else if (s->backend == TRK_BACKEND_CPU || s->backend == TRK_BACKEND_CPU_REF) {
        snprintf(h->why_not, sizeof(h->why_not),
                 "the %s backend reads host memory (NVDEC frames are for --backend cuda)",
                 s->backend == TRK_BACKEND_CPU ? "cpu" : "cpu-ref");
    } else if (trk_cuda_check(why, sizeof(why)) != TRK_CUDA_USABLE) {
        /* Tracking, open_backend's line says why; --decode-only, this. */
        h->no_gpu_said = !s->decode_only;
        snprintf(h->why_not, sizeof(h->why_not), "no usable GPU%s%s", h->no_gpu_said ? "" : ", ",
                 h->no_gpu_said ? "" : why);
    } else {
        h->device_frames = true;
    }
    if (h->mode == TRK_HWDEC_CUDA && !h->device_frames && (s->input || s->device)) {
        log_error("--hwdec cuda: cannot decode on the GPU: %s%s%s; use --hwdec auto (software "
                  "where it cannot) or none",
                  h->why_not, *why ? ", " : "", why);
        return TRK_EX_UNAVAILABLE;
    }
    return 0;
}

static double seconds_of(struct timeval tv)
{
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* --decode-only: the source's frames read as fast as they come, nothing
 * else done with them (NVDEC frames stay on the GPU, as when tracking), to
 * time the decoder alone against a tracking run on the same file. Prints
 * one line on stdout: frames, seconds, fps and the process's CPU time per
 * frame (getrusage: every thread, the decoder's included). */
static int decode_only(struct app *a)
{
    struct trk_frame f = { 0 };
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    const double t0 = trk_now();
    uint64_t n = 0;
    int err = 0;
    while (!stop_requested && (!a->s.frames || n < a->s.frames) &&
           !(err = trk_source_read(&a->src, &f)))
        n++;
    const double t = trk_now() - t0;
    getrusage(RUSAGE_SELF, &r1);
    trk_frame_free_data(&f);
    if (err && err != TRK_SOURCE_EOF) {
        if (err != TRK_SOURCE_EDECODE) log_error_err(err, "reading the source failed");
        return TRK_EX_NOINPUT;
    }
    const double cpu = seconds_of(r1.ru_utime) + seconds_of(r1.ru_stime) - seconds_of(r0.ru_utime) -
                       seconds_of(r0.ru_stime);
    printf("decode-only: %llu frames in %.3f s, %.1f fps, %.3f ms CPU per frame\n",
           (unsigned long long)n, t, t > 0 ? (double)n / t : 0.0, n ? cpu * 1e3 / (double)n : 0.0);
    return fflush(stdout) ? TRK_EX_IOERR : TRK_EX_OK;
}

/* auto falls back to the CPU with one line when CUDA is not usable; a
 * machine without NVIDIA hardware is normal, not a problem. */
static int open_backend(struct app *a)
{
    const struct trk_settings *s = &a->s;
    char why[256] = "";
    enum trk_cuda_status cs = TRK_CUDA_USABLE;
    if (s->backend == TRK_BACKEND_AUTO || s->backend == TRK_BACKEND_CUDA)
        cs = trk_cuda_check(why, sizeof(why));
    if (s->backend == TRK_BACKEND_AUTO && cs == TRK_CUDA_ABSENT) {
        log_info("no NVIDIA driver/GPU found: using the CPU backend");
        log_debug("CUDA: %s", why);
    } else if (s->backend == TRK_BACKEND_AUTO && cs == TRK_CUDA_NOT_BUILT) {
        log_info("%s: using the CPU backend", why);
    } else if (s->backend == TRK_BACKEND_AUTO && cs != TRK_CUDA_USABLE) {
        log_warn("the GPU cannot be used, using the CPU backend: %s", why);
    }
    if (s->backend == TRK_BACKEND_CUDA && cs != TRK_CUDA_USABLE) {
        log_error("--backend cuda: %s", why);
        return TRK_EX_UNAVAILABLE;
    }
    a->backend_cfg = (struct trk_backend_cfg){
        .kind = s->backend,
        .max_width = a->src.width,
        .max_height = a->src.height,
        .threads = s->threads,
    };
    int err;
    /* --prefilter wins over the file (the pipeline applies the same rule to
     * every object set after this one: edits, reloads). */
    const double sigma = s->prefilter_set ? s->prefilter : a->objs.prefilter_sigma;
    if ((err = trk_backend_create(&a->backend_cfg, &a->backend)) ||
        (err = trk_backend_set_prefilter(a->backend, sigma))) {
        log_error_err(err, "cannot start the tracking backend");
        return TRK_EX_UNAVAILABLE;
    }
    if ((err = trk_backend_set_objects(a->backend, a->objs.def, a->objs.n))) {
        /* A backend without blob lists refuses blobs > 0 (TRK_ENODEV). The
         * file is valid, the backend cannot serve it: 69, as for a missing
         * GPU, not 78, which would say the file is wrong. */
        int k = -1;
        for (int i = 0; err == TRK_ENODEV && k < 0 && i < a->objs.n; i++)
            if (a->objs.def[i].blobs) k = i;
        if (k >= 0)
            log_error("backend %s does not list blobs (object \"%s\" has \"blobs\": %u): "
                      "use --backend cpu-ref, or set \"blobs\" to 0",
                      trk_backend_name(a->backend), a->objs.def[k].name, a->objs.def[k].blobs);
        else
            log_error_err(err, "cannot start the tracking backend");
        return TRK_EX_UNAVAILABLE;
    }
    log_info("backend: %s, %d objects", trk_backend_name(a->backend), a->objs.n);
    /* --mode auto: regions only where they cost what they cover (a native
     * regional form: cpu, cuda); cpu-ref's is the generic one (a pass per
     * region), so there tracked objects are searched full frame. */
    a->track_mode = s->track_mode;
    /* A replay tracks as the recorded run did ("pass" is in its results). */
    const int recorded = a->replay ? trk_replay_track_mode(a->replay) : -1;
    if (a->track_mode == TRK_TRACK_AUTO && recorded >= 0) {
        a->track_mode = recorded;
        log_debug("--mode auto: %s, as the bundle was tracked",
                  recorded == TRK_TRACK_FULL ? "full" : "roi");
    }
    if (a->track_mode == TRK_TRACK_AUTO) {
        const bool native = trk_backend_regions_native(a->backend);
        a->track_mode = native ? TRK_TRACK_ROI : TRK_TRACK_FULL;
        log_debug("--mode auto: %s (%s)", native ? "roi" : "full",
                  native ? "native regional form" : "no native regional form on this backend");
    }
    if (sigma > 0)
        log_info("pre-filter: Gaussian, sigma %g pixels%s", sigma,
                 s->prefilter_set ? " (--prefilter)" : "");
    return 0;
}

/* The save/reload target, resolved once here (config/objects.h rules):
 * --save-objects, else the --objects file, else objects.json in the working
 * directory at start (so a page started without a file can still save; the
 * log says where). */
static int open_save_target(struct app *a)
{
    const struct trk_settings *s = &a->s;
    const bool given = s->save_objects || s->objects;
    const char *path = s->save_objects ? s->save_objects : s->objects ? s->objects : "objects.json";
    char why[600];
    int stale;
    if (trk_objects_target_open(path, &a->save, &stale, why, sizeof(why))) {
        if (!given) { /* not asked for: trackd runs on, without saving */
            log_warn("cannot save objects in the working directory (%s): the page cannot save "
                     "or reload objects; give --save-objects FILE",
                     why);
            return 0;
        }
        log_error("%s %s: %s", s->save_objects ? "--save-objects" : "--objects", path, why);
        return TRK_EX_CONFIG;
    }
    a->have_save = true;
    log_info("objects saved from the page go to %s%s", a->save.path,
             given ? "" : " (no --objects or --save-objects: the working directory)");
    if (stale)
        log_warn("removed %d temporary file(s) left beside %s by an interrupted save", stale,
                 a->save.path);
    if (trk_objects_target_check(&a->save, why, sizeof(why)))
        log_warn("%s: saving objects from the page will be refused", why);
    return 0;
}

/* The hello template; the control module adds the object set it holds. */
static struct trk_hello_info hello_info(const struct app *a, bool control_auth)
{
    const struct trk_settings *s = &a->s;
    const struct trk_source *src = &a->src;
    int unused, ph;
    trk_msg_preview_size(src->width, src->height, s->preview_width, &unused, &ph);
    return (struct trk_hello_info){
        .version = TRK_VERSION,
        .backend = trk_backend_name(a->backend),
        .source = src->desc,
        .width = src->width,
        .height = src->height,
        .fps = src->fps,
        .preview = { .enabled = s->preview,
                     /* The width asked for: the control module fits it
                      * to the frame size of the moment (it may change). */
                     .width = s->preview_width,
                     .height = ph,
                     .fps = s->preview_fps,
                     .quality = s->preview_quality },
        /* Tells the page to ask for the token before it offers edits. */
        .control_auth = control_auth,
        .camera = s->camera_name,
    };
}

/* --control-token, else none on loopback (127.0.0.0/8 and ::1, also by
 * name), else a random one. */
static int pick_token(const struct trk_settings *s, char *token, size_t len)
{
    if (s->control_token)
        snprintf(token, len, "%s", s->control_token);
    else if (!trk_ws_is_loopback(s->listen_addr) && make_token(token, len)) {
        log_error("cannot generate a control token; give one with --control-token");
        return TRK_EX_UNAVAILABLE;
    }
    return 0;
}

/* The web server, then the control module (the one place it is created:
 * it answers the page's edits through the server and, with --no-server
 * too, SIGHUP reloads), then the server starts taking clients. */
static int start_server(struct app *a)
{
    const struct trk_settings *s = &a->s;
    char token[130] = "";
    const char *file_types[] = { trk_msg_control_types[TRK_CTL_SAVE_OBJECTS],
                                 trk_msg_control_types[TRK_CTL_RELOAD_OBJECTS],
                                 trk_msg_control_types[TRK_CTL_SAVE_REWIND],
                                 trk_msg_control_types[TRK_CTL_KEEP_RANGE],
                                 trk_msg_control_types[TRK_CTL_LIST_BUNDLES],
                                 trk_msg_control_types[TRK_CTL_CLEAR_CLASS],
                                 NULL };
    int rc, err;
    if (s->server && (rc = pick_token(s, token, sizeof(token)))) return rc;
    struct trk_ws_cfg wc = {
        .address = s->listen_addr,
        .port = s->listen_port,
        .web_root = s->web_root,
        .queue_len = 8,
        .on_message = on_control_message,
        .on_close = on_client_closed,
        .user = &a->control,
        .control_types = trk_msg_control_types,
        .control_token = token,
        .max_clients = s->max_clients,
        /* Without a token, only trackd's own user may make it write or read
         * its files (PROTOCOL.md section 5: other local users could
         * otherwise reach them through a loopback listener). */
        .owner_types = file_types,
        .rt_priority = s->rt_priority,
        .predict = true, /* daemon/out/websocket.c sends them */
        .http_paths = trk_endpoint_paths,
        .http_private_paths = trk_endpoint_private_paths,
        .http_handler = trk_endpoints_http,
        .http_user = &a->ep,
    };
    struct trk_control_cfg cc = {
        .objects = &a->objs,
        .save = a->have_save ? &a->save : NULL,
        .hello = hello_info(a, token[0] != '\0'),
        .camera = a->camctl,
        .save_rewind = save_rewind,
        .save_rewind_ctx = a,
        .replay = a->replay ? trk_replay_control : NULL,
        .replay_ctx = a->replay,
        /* A live daemon offers its recording and rewind saves. */
        .list_bundles = !a->replay && (s->record || s->rewind_s > 0) ? list_bundles : NULL,
        .list_bundles_ctx = a,
        .focus = a->focus,
    };
    err = s->server ? trk_ws_create(&wc, &a->ws) : 0;
    if (a->ws)
        cc.reply = (struct trk_reply){ .ctx = a->ws,
                                       .send = ws_reply,
                                       .broadcast = ws_config,
                                       .set_hello = ws_hello,
                                       .set_view = ws_view };
    if (a->ws)
        trk_camctl_set_reply(
            a->camctl,
            &(struct trk_reply){ .ctx = a->ws, .send = ws_reply, .broadcast = ws_camera });
    if (err || (err = trk_control_create(&cc, &a->control))) {
        log_error_err(err, s->server ? "cannot start the web server" : "cannot start");
        return s->server ? TRK_EX_UNAVAILABLE : TRK_EX_SOFTWARE;
    }
    if (!s->server) return 0;
    if (trk_ws_start(a->ws)) {
        log_error("%s", trk_ws_error(a->ws));
        return TRK_EX_UNAVAILABLE;
    }
    /* Room for the longest host name and a 127-character token with every
     * character escaped (%XX). */
    char url[1024];
    page_url(s->listen_addr, trk_ws_port(a->ws), token, url, sizeof(url));
    log_info("web UI on %s (WebSocket /ws%s)", url,
             *token ? "; editing objects needs the token" : "");
    return 0;
}

/* Start-up is done: the source is open and the server listens, so systemd
 * may start what comes after trackd. A camera that is not there yet does
 * not hold that back (trackd serves the page and waits for it; the status
 * says so), or an unplugged camera would fail the unit's start. */
static void ready(const struct app *a)
{
    char status[300];
    double wd = trk_notify_watchdog_period();
    if (a->source_absent)
        snprintf(status, sizeof(status), "waiting for %s (retrying every second)", a->src.desc);
    else
        snprintf(status, sizeof(status), "started: %s", a->src.desc);
    if (wd > 0) log_info("systemd watchdog on: a healthy pipeline pets it every %.1f s", wd);
    trk_notify_ready(status);
}

/* What the HTTP endpoints answer from: the metrics (also behind
 * --metrics-listen and with --no-server) and the newest frame. */
static int open_ops(struct app *a)
{
    if (trk_metrics_create(&a->ep.metrics) ||
        trk_snapshot_create(a->s.preview_quality, a->s.snapshot_rate, &a->ep.snapshot)) {
        log_error("out of memory");
        return TRK_EX_SOFTWARE;
    }
    trk_metrics_set_snapshot(a->ep.metrics, a->ep.snapshot);
    if (a->s.focus_every > 0) {
        /* The same Canny as the backend's kind: the definition on cpu-ref,
         * the GPU's on cuda, the CPU twin otherwise; the GPU's whenever
         * frames come from NVDEC, so that they are measured in place, on
         * the device they were decoded on (no copy to the host). */
        const char *k = trk_backend_name(a->backend);
        const bool nvdec = a->hwdec.device_frames;
        struct trk_focus_cfg fc = { .every = a->s.focus_every,
                                    .warn = a->s.focus_warn,
                                    .baseline = a->s.focus_baseline,
                                    .runner = nvdec || !strcmp(k, "cuda") ? TRK_FOCUS_CUDA
                                              : !strcmp(k, "cpu-ref")     ? TRK_FOCUS_REF
                                                                          : TRK_FOCUS_CPU,
                                    .cuda_device =
                                        nvdec ? a->hwdec.cuda_device : a->backend_cfg.cuda_device };
        if (trk_focus_create(&fc, &a->focus)) {
            log_error("out of memory");
            return TRK_EX_SOFTWARE;
        }
        trk_metrics_set_focus(a->ep.metrics, a->focus);
    }
    trk_metrics_set_info(a->ep.metrics, TRK_VERSION, trk_backend_name(a->backend), a->src.desc,
                         a->s.fast ? 0 : a->src.fps);
    /* The source's state from the first request on: the capture thread says
     * the same (ok, or lost for a camera that was not there at start), but
     * only once it runs, and the servers answer before that. */
    if (a->source_absent)
        trk_metrics_source_state(a->ep.metrics, "lost", "not connected yet");
    else
        trk_metrics_source_state(a->ep.metrics, "ok", a->src.desc);
    return 0;
}

/* --metrics-listen: /metrics and /healthz only (no page, no WebSocket, no
 * frames), so it may face a monitoring network without the token. */
static int start_metrics_server(struct app *a)
{
    const struct trk_settings *s = &a->s;
    if (!s->metrics_listen) return 0;
    struct trk_ws_cfg wc = {
        .address = s->metrics_addr,
        .port = s->metrics_port,
        .max_clients = s->max_clients,
        .http_paths = trk_endpoint_metrics_paths,
        .http_handler = trk_endpoints_http,
        .http_user = &a->ep,
        .no_websocket = true,
    };
    int err = trk_ws_create(&wc, &a->metrics_ws);
    if (err) {
        log_error_err(err, "cannot start the metrics server");
        return TRK_EX_UNAVAILABLE;
    }
    if (trk_ws_start(a->metrics_ws)) {
        log_error("--metrics-listen: %s", trk_ws_error(a->metrics_ws));
        return TRK_EX_UNAVAILABLE;
    }
    log_info("metrics on http://%s%s%s:%d/metrics (and /healthz)",
             strchr(s->metrics_addr, ':') ? "[" : "", s->metrics_addr,
             strchr(s->metrics_addr, ':') ? "]" : "", trk_ws_port(a->metrics_ws));
    return 0;
}

static bool rewind_healthy(void *ctx, char *why, size_t len)
{
    return trk_metrics_healthy(ctx, why, len);
}

/* --rewind: refused (64) when the buffer would pass --rewind-max-mem at the
 * source's size and rate, at the bytes a pixel its kind usually delivers
 * (a camera's YUYV 2, a file's I420 1.5, the demo's and others' RGB 3;
 * 30 fps when the rate is unknown). */
static int open_rewind(struct app *a, const struct trk_record_cfg *bundle)
{
    const struct trk_settings *s = &a->s;
    const char *kind = a->src.ops->kind;
    const double bpp = !strcmp(kind, "camera") ? 2 : !strcmp(kind, "file") ? 1.5 : 3;
    const double fps = a->src.fps > 0 ? a->src.fps : 30;
    const double need =
        trk_rewind_bytes_per_second(a->src.width, a->src.height, fps, bpp) * s->rewind_s;
    const uint64_t max = s->rewind_max_mb * 1000000;
    if (need > (double)max) {
        log_error("--rewind %.1f s at %dx%d %.0f fps needs about %.0f MB (%.1f bytes a pixel); "
                  "--rewind-max-mem is %llu MB: give a shorter --rewind or a larger "
                  "--rewind-max-mem",
                  s->rewind_s, a->src.width, a->src.height, fps, need / 1e6, bpp,
                  (unsigned long long)s->rewind_max_mb);
        return TRK_EX_USAGE;
    }
    struct trk_rewind_cfg cfg = {
        .seconds = s->rewind_s,
        .max_bytes = max,
        .dir = s->rewind_dir,
        .min_gap = s->rewind_gap_s,
        .lost_frames = s->rewind_lost,
        .healthy = s->rewind_on_health ? rewind_healthy : NULL,
        .healthy_ctx = a->ep.metrics,
        .bundle = *bundle,
    };
    /* The buffer holds frames as trk_record_pack packs them: raw. */
    cfg.bundle.copy = cfg.bundle.input_ref = false;
    struct trk_rewind *rw;
    if (trk_rewind_add(&cfg, a->outputs, &rw)) return TRK_EX_SOFTWARE;
    atomic_store(&a->rewind, rw);
    return 0;
}

/* Every output (daemon/out/outputs.h), once the servers are up: the
 * WebSocket output needs its server. --udp and --osc are resolved here, so
 * a bad address fails the start (69) instead of losing every frame later;
 * --mqtt connects in the background. */
static int open_outputs(struct app *a)
{
    if (trk_outputs_create(&a->outputs)) return TRK_EX_SOFTWARE;
    struct trk_output_env env = {
        .s = &a->s, .ws = a->ws, .metrics = a->ep.metrics, .objects = &a->objs
    };
    int rc = trk_outputs_open(a->outputs, &env);
    if (rc) return rc;
    const struct trk_settings *s = &a->s;
    if (s->verify && trk_replay_verify_add(a->replay, a->outputs)) return TRK_EX_NOINPUT;
    /* copy: an MJPEG camera's JPEGs as they came, a file by reference (its
     * absolute path, so the bundle replays from anywhere); the demo and
     * replays have no compressed bytes: raw. */
    const bool copy =
        s->record && s->record_storage == TRK_STORAGE_COPY && !s->replay && (s->input || s->device);
    if (s->record && s->record_storage == TRK_STORAGE_COPY && !copy)
        log_info("--record-storage copy: the %s has no compressed frames to copy; they are "
                 "stored raw",
                 s->replay ? "replay" : "demo scene");
    char *input_abs = copy && s->input ? realpath(s->input, NULL) : NULL;
    a->src.keep_packets = copy && s->device;
    if (a->replay && a->ws && !s->verify) {
        /* The page's transport: pause, step, seek, re-run a range. */
        struct trk_replay_transport_cfg tc = { .paused = s->paused,
                                               .broadcast = ws_replay,
                                               .ctx = a->ws };
        int err = trk_replay_transport_add(a->replay, &tc, a->outputs);
        if (err) {
            log_error_err(err, "--replay: cannot start the page's transport");
            return TRK_EX_SOFTWARE;
        }
        a->transport = true;
    }
    struct trk_record_cfg rc_cfg = {
        .dir = s->record,
        .max_bytes = s->record_max_mb * 1000000,
        .max_seconds = s->record_max_s,
        .rotate = (unsigned)s->record_rotate,
        .ffv1 = s->record_storage == TRK_STORAGE_FFV1,
        .copy = copy,
        .input_ref = copy && s->input,
        .input_loop = s->loop,
        .wait_when_full = !a->src.live,
        .argc = a->argc,
        .argv = a->argv,
        .version = TRK_VERSION,
        .source_kind = a->src.ops->kind,
        .source_desc = a->src.desc,
        .input = s->replay           ? s->replay
                 : copy && input_abs ? input_abs
                 : s->input          ? s->input
                                     : s->device,
        .hash_input = s->input != NULL,
        .width = a->src.width,
        .height = a->src.height,
        .fps = a->src.fps,
        .track_mode = a->track_mode == TRK_TRACK_ROI ? "roi" : "full",
    };
    if (s->record) rc = trk_record_add(&rc_cfg, a->outputs, &a->record);
    if (!rc && s->rewind_s > 0) rc = open_rewind(a, &rc_cfg);
    free(input_abs);
    return rc;
}

static void install_signals(void)
{
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction hup = { .sa_handler = on_hup };
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, NULL);
    struct sigaction usr1 = { .sa_handler = on_usr1 };
    sigemptyset(&usr1.sa_mask);
    sigaction(SIGUSR1, &usr1, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static struct trk_pipeline_cfg pipeline_cfg(struct app *a)
{
    const struct trk_settings *s = &a->s;
    const void *state = NULL;
    const size_t state_len = a->replay && !s->objects ? trk_replay_state(a->replay, &state) : 0;
    return (struct trk_pipeline_cfg){
        .source = &a->src,
        .source_absent = a->source_absent,
        .backend = a->backend,
        .backend_cfg = &a->backend_cfg,
        .outputs = a->outputs,
        .ws = a->ws,
        .fast = s->fast,
        .max_frames = s->frames,
        .preview = s->preview,
        .preview_width = s->preview_width,
        .preview_fps = s->preview_fps,
        .preview_quality = s->preview_quality,
        .progress = s->progress == 1 || (s->progress < 0 && s->fast && isatty(STDERR_FILENO)),
        .stats_interval = s->stats_interval,
        .control = a->control,
        .notify = trk_notify_enabled(),
        .watchdog_period = trk_notify_watchdog_period(),
        .metrics = a->ep.metrics,
        .snapshot = a->ep.snapshot,
        .focus = a->focus,
        .prefilter_set = s->prefilter_set,
        .prefilter = s->prefilter,
        .camera = s->camera_name,
        .track_mode = a->track_mode,
        .full_every = s->full_every,
        /* --fast never polls (pipeline.h): no slot taken for it. */
        .spin = !s->fast && trk_spin_decide(s->spin, s->spin_slots),
        .rt_priority = s->rt_priority,
        .record = a->record,
        .rewind = atomic_load(&a->rewind),
        /* --objects with --replay: that set throughout (a what-if run). */
        .frame_due = a->replay && !s->objects ? trk_replay_frame_due : NULL,
        .frame_due_ctx = a->replay,
        /* Likewise: a rewind save's state is the recorded set's. */
        .state = state,
        .state_len = state_len,
        .replay_state = a->transport ? trk_replay_state_hook : NULL,
        .replay_keep = a->transport ? trk_replay_keep_hook : NULL,
        .replay_show = a->transport ? trk_replay_show_hook : NULL,
        .replay_ctx = a->replay,
    };
}

/* Runs the pipeline to its end (SIGHUP reloads on their own thread
 * meanwhile); clients then see a clean close with the reason, not a dropped
 * connection (2 s at most, whatever they do). Returns the exit code. */
static int run(struct app *a)
{
    pthread_t reload_thread;
    bool have_reload_thread = pthread_create(&reload_thread, NULL, reload_main, a) == 0;
    if (a->replay) trk_replay_set_control(a->replay, a->control);
    struct trk_pipeline_cfg pc = pipeline_cfg(a);
    struct trk_pipeline_summary sum = { 0 };
    int exit_code = TRK_EX_OK, err;
    err = trk_pipeline_run(&pc, &stop_requested, &sum);
    trk_notify_stopping(stop_requested ? "stopping (signal)"
                        : err          ? "stopping: the pipeline failed"
                        : sum.eof      ? "stopping: end of input"
                                       : "stopping");
    if (err) {
        log_error_err(err, "the pipeline failed");
        exit_code = TRK_EX_SOFTWARE;
    } else {
        log_info("done: %llu frames in %.2f s (%.1f fps), %llu dropped, %llu skipped",
                 (unsigned long long)sum.frames, sum.seconds, sum.fps,
                 (unsigned long long)sum.drops, (unsigned long long)sum.skipped);
        if (sum.source_error) exit_code = TRK_EX_NOINPUT;
        /* A replay whose stored frames turned out damaged (said where). */
        if (sum.source_error && a->replay && trk_replay_damaged(a->replay))
            exit_code = TRK_EX_DATAERR;
    }
    if (sum.resizes)
        log_info("the frame size changed %llu times (followed between frames)",
                 (unsigned long long)sum.resizes);
    trk_ws_shutdown(a->ws,
                    stop_requested     ? 1001
                    : sum.source_error ? 1011
                                       : 1000,
                    stop_requested     ? "trackd stopped"
                    : sum.source_error ? "the source failed"
                    : sum.eof          ? "end of input"
                                       : "frame limit reached",
                    2.0);
    reload_quit = 1;
    if (have_reload_thread) pthread_join(reload_thread, NULL);
    return exit_code;
}

static int cleanup(struct app *a, int exit_code)
{
    /* The control module may still be replying from its file worker: the
     * server stops taking messages first and goes after the module. */
    trk_ws_stop(a->ws);
    /* Its encoder answers through a->ws: stopped before the server goes. */
    trk_snapshot_stop(a->ep.snapshot);
    trk_ws_destroy(&a->metrics_ws);
    /* The pipeline has ended: the last lines, datagrams and MQTT frames
     * and "offline" go out; --output's account (lost lines: exit 74). */
    if (trk_outputs_destroy(&a->outputs) && exit_code == TRK_EX_OK) exit_code = TRK_EX_IOERR;
    /* --verify said the first difference when the door closed it. */
    if (a->s.verify && a->replay && exit_code == TRK_EX_OK && !trk_replay_verified(a->replay))
        exit_code = TRK_EX_DIFFERS;
    trk_control_destroy(&a->control);
    trk_camctl_destroy(&a->camctl);
    if (a->have_save) trk_objects_target_close(&a->save);
    trk_ws_destroy(&a->ws);
    /* After both servers: their handler reads these. */
    trk_snapshot_destroy(&a->ep.snapshot);
    trk_metrics_destroy(&a->ep.metrics);
    trk_focus_destroy(&a->focus);
    /* The source first: its decoder's buffers are the backend's host
     * memory (pinned on CUDA), freed through the backend. */
    trk_source_destroy(&a->src);
    trk_backend_destroy(&a->backend);
    return exit_code;
}

/* Blocks of 64 KiB and more (large frame messages, JPEG previews, the MQTT
 * queue's frames) are mapped on their own and returned to the system when
 * freed. glibc's default threshold (128 KiB) rises to the largest block ever
 * freed, after which such blocks come from the heap of whichever thread
 * allocates them and, freed by another thread, stay in the process: a daemon
 * that runs for months with large sets then keeps the high-water mark of
 * every queue at once (attack_huge_set saw 8-40 MB of growth between runs;
 * with the fixed threshold 9-15 MB and flat). Small messages are unaffected. */
#define TRK_MMAP_THRESHOLD (64 << 10)

int main(int argc, char **argv)
{
    static struct app app; /* the objects are large: keep them off the stack */
    mallopt(M_MMAP_THRESHOLD, TRK_MMAP_THRESHOLD);
    struct trk_settings *s = &app.s;
    app.argc = argc;
    app.argv = argv;
    int rc = trk_cli_parse(argc, argv, s, stdout, stderr);
    if (rc == TRK_CLI_EXIT_OK) return TRK_EX_OK;
    if (rc) return rc;
    trk_log_set_level(s->log_level);
    if (s->check_config) return check_config(s->check_config, &app.objs);
    if (s->list_devices || s->list_formats || s->list_controls) return list_cameras(s);
    trk_cli_warn(s);
    if (s->server && (rc = trk_cli_find_web_root(s, app.web_root, sizeof(app.web_root)))) return rc;
    if ((rc = load_objects(s, &app.objs))) return rc;
    if ((rc = plan_hwdec(&app))) return rc;
    if (s->decode_only) {
        install_signals();
        if (!(rc = open_source(&app))) rc = decode_only(&app);
        return cleanup(&app, rc);
    }
    if (!(rc = open_source(&app)) && !(rc = open_backend(&app)) && !(rc = open_save_target(&app)) &&
        !(rc = open_ops(&app)) && !(rc = start_server(&app)) &&
        !(rc = start_metrics_server(&app)) && !(rc = open_outputs(&app))) {
        install_signals();
        ready(&app);
        rc = run(&app);
    }
    return cleanup(&app, rc);
}
