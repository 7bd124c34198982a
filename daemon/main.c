/* trackd: wires the settings, objects, source, backend, WebSocket server and
 * pipeline together, and maps failures to exit codes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAG "trackd"
#include "backend.h"
#include "cli.h"
#include "control.h"
#include "log.h"
#include "messages.h"
#include "objects.h"
#include "pipeline.h"
#include "source.h"
#include "ws.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* SIGHUP: the handler only sets a flag; reload_main does the reload on a
 * normal thread (file I/O and locks are not async-signal-safe). */
static volatile sig_atomic_t reload_requested, reload_quit;

static void on_hup(int sig)
{
    (void)sig;
    reload_requested = 1;
}

static void *reload_main(void *arg)
{
    struct trk_control *control = arg;
    while (!reload_quit && !stop_requested) {
        if (reload_requested) {
            reload_requested = 0;
            char why[600];
            if (trk_control_reload(control, why, sizeof(why)))
                log_error("reload rejected, keeping the current objects: %s", why);
            else
                log_info("reloaded %s", why);
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* 127.0.0.0/8 and ::1 need no control token; anything else (including
 * "every interface") does. */
static bool is_loopback(const char *addr)
{
    return !strncmp(addr, "127.", 4) || !strcmp(addr, "::1") || !strcmp(addr, "localhost");
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

static void ws_log(int level, const char *line)
{
    /* libwebsockets' own lines, at our levels. */
    if (level <= TRK_LOG_WARN)
        trk_log_write(level <= 0 ? TRK_LOG_ERROR : TRK_LOG_WARN, "lws", 0, "%s", line);
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
        fprintf(stderr, "%s\n", line);
        return TRK_EX_CONFIG;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct trk_settings s;
    int rc = trk_cli_parse(argc, argv, &s, stdout, stderr);
    if (rc == TRK_CLI_EXIT_OK) return TRK_EX_OK;
    if (rc) return rc;
    trk_log_set_level(s.log_level);
    if (s.list_devices || s.list_formats || s.list_controls) {
        int lerr = s.list_devices ? trk_v4l2_list_devices(stdout) : 0;
        if (!lerr && s.list_formats) lerr = trk_v4l2_list_formats(s.device, stdout);
        if (!lerr && s.list_controls) lerr = trk_v4l2_list_controls(s.device, stdout);
        if (lerr) log_error_err(lerr, "cannot open %s", s.device);
        return lerr ? TRK_EX_NOINPUT : TRK_EX_OK;
    }

    static struct trk_objects objs; /* large: keep it off the stack */
    if (load_objects(&s, &objs)) return TRK_EX_CONFIG;

    struct trk_source src = { 0 };
    struct trk_backend *backend = NULL;
    struct trk_ws *ws = NULL;
    struct trk_control *control = NULL;
    /* save_objects target: --save-objects, else the --objects file, else
     * ./objects.json (so a page started without a file can still save). */
    const char *save_path = s.save_objects ? s.save_objects
                            : s.objects    ? s.objects
                                           : "objects.json";
    FILE *out = NULL;
    int exit_code = TRK_EX_OK, err;

    if (s.device) {
        struct trk_v4l2_cfg vc = { .device = s.device,
                                   .format = (enum trk_cam_format)s.cam_format,
                                   .width = s.size_set ? s.demo_width : 640,
                                   .height = s.size_set ? s.demo_height : 480,
                                   .fps = s.fps_set ? s.demo_fps : 0 };
        /* The objects file's camera settings first, so --control wins. */
        for (int i = 0; i < objs.n_camera; i++) {
            struct trk_cam_control *c = &vc.controls[vc.n_controls++];
            snprintf(c->name, sizeof(c->name), "%s", objs.camera[i].name);
            c->value = objs.camera[i].value;
        }
        memcpy(vc.controls + vc.n_controls, s.controls, sizeof(s.controls[0]) * s.n_controls);
        vc.n_controls += s.n_controls;
        err = trk_source_v4l2_create(&vc, &src);
        /* A camera that is not there yet is waited for like one that was
         * unplugged (the capture thread retries every second). */
        if (!err && (err = trk_source_open(&src))) {
            log_warn_err(err, "cannot open %s yet; waiting for it", s.device);
            trk_source_close(&src);
            err = 0;
        }
    } else if (s.input) {
        struct trk_file_cfg fc = { .path = s.input, .loop = s.loop };
        err = trk_source_file_create(&fc, &src);
        if (!err) err = trk_source_open(&src);
    } else {
        struct trk_demo_cfg dc = { .width = s.demo_width,
                                   .height = s.demo_height,
                                   .fps = s.demo_fps };
        err = trk_source_demo_create(&dc, &src);
        if (!err) err = trk_source_open(&src);
    }
    if (err) {
        log_error_err(err, "cannot open %s",
                      s.device  ? s.device
                      : s.input ? s.input
                                : "the demo scene");
        exit_code = TRK_EX_NOINPUT;
        goto end;
    }
    log_info("source: %s", src.desc);

    /* Backend: auto falls back to the CPU with one line when CUDA is not usable. */
    char why[256] = "";
    if (s.backend == TRK_BACKEND_AUTO && !trk_cuda_available(why, sizeof(why)))
        log_info("no usable GPU (%s): using the CPU backend", why);
    if (s.backend == TRK_BACKEND_CUDA && !trk_cuda_available(why, sizeof(why))) {
        log_error("--backend cuda: %s", why);
        exit_code = TRK_EX_UNAVAILABLE;
        goto end;
    }
    struct trk_backend_cfg bc = {
        .kind = s.backend,
        .max_width = src.width,
        .max_height = src.height,
        .threads = s.threads,
    };
    if ((err = trk_backend_create(&bc, &backend)) ||
        (err = trk_backend_set_objects(backend, objs.def, objs.n))) {
        log_error_err(err, "cannot start the tracking backend");
        exit_code = TRK_EX_UNAVAILABLE;
        goto end;
    }
    log_info("backend: %s, %d objects", trk_backend_name(backend), objs.n);

    if (s.output) {
        out = strcmp(s.output, "-") ? fopen(s.output, "w") : stdout;
        if (!out) {
            log_error_err(errno, "cannot write %s", s.output);
            exit_code = TRK_EX_NOINPUT;
            goto end;
        }
    }

    if (s.server) {
        trk_ws_set_log(ws_log);
        char colors[TRK_MAX_OBJECTS][8];
        const char *color_ptr[TRK_MAX_OBJECTS];
        for (int i = 0; i < objs.n; i++) {
            snprintf(colors[i], sizeof(colors[i]), "#%02x%02x%02x", objs.color[i][0],
                     objs.color[i][1], objs.color[i][2]);
            color_ptr[i] = colors[i];
        }
        struct trk_hello_info hi = {
            .version = TRK_VERSION,
            .backend = trk_backend_name(backend),
            .source = src.desc,
            .width = src.width,
            .height = src.height,
            .fps = src.fps,
            .preview = { .enabled = s.preview,
                         .width = s.preview_width,
                         .height = src.width > s.preview_width
                                       ? (int)((long)src.height * s.preview_width / src.width)
                                       : src.height,
                         .fps = s.preview_fps,
                         .quality = s.preview_quality },
            .defs = objs.def,
            .n_objects = objs.n,
            .colors = color_ptr,
        };
        if (hi.preview.width > src.width) hi.preview.width = src.width;
        /* The control module answers the page's edits; it sets the hello. */
        struct trk_control_cfg cc = { .objects = &objs, .save_path = save_path, .hello = hi };
        char token[40] = "";
        if (s.control_token)
            snprintf(token, sizeof(token), "%s", s.control_token);
        else if (!is_loopback(s.listen_addr) && make_token(token, sizeof(token)) == 0)
            log_info("control token (web clients need it to edit objects): %s", token);
        struct trk_ws_cfg wc = {
            .address = s.listen_addr,
            .port = s.listen_port,
            .web_root = s.web_root,
            .queue_len = 8,
            .on_message = trk_control_on_message,
            .control_types = trk_control_types,
            .control_token = token,
        };
        if ((err = trk_control_create(&cc, &control)) == 0) {
            wc.user = control;
            err = trk_ws_create(&wc, &ws);
        }
        if (err) {
            log_error_err(err, "cannot start the web server");
            exit_code = TRK_EX_UNAVAILABLE;
            goto end;
        }
        trk_control_set_ws(control, ws);
        if ((err = trk_ws_start(ws))) {
            log_error_err(err, "cannot serve on %s:%d", s.listen_addr, s.listen_port);
            exit_code = TRK_EX_UNAVAILABLE;
            goto end;
        }
        log_info("web UI on http://%s:%d/ (WebSocket /ws)", s.listen_addr, trk_ws_port(ws));
    }

    /* Without the server the control module still serves SIGHUP reloads. */
    if (!control) {
        struct trk_control_cfg cc = { .objects = &objs, .save_path = save_path };
        if ((err = trk_control_create(&cc, &control))) {
            log_error_err(err, "cannot start");
            exit_code = TRK_EX_SOFTWARE;
            goto end;
        }
    }

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction hup = { .sa_handler = on_hup };
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_t reload_thread;
    bool have_reload_thread = pthread_create(&reload_thread, NULL, reload_main, control) == 0;

    struct trk_pipeline_cfg pc = {
        .source = &src,
        .backend = backend,
        .objects = objs.def,
        .colors = (const uint8_t(*)[3])objs.color,
        .n_objects = objs.n,
        .output = out,
        .output_flush = out && !strcmp(s.output, "-"),
        .ws = ws,
        .fast = s.fast,
        .max_frames = s.frames,
        .preview = s.preview,
        .preview_width = s.preview_width,
        .preview_fps = s.preview_fps,
        .preview_quality = s.preview_quality,
        .progress = s.progress == 1 || (s.progress < 0 && s.fast && isatty(STDERR_FILENO)),
        .stats_interval = s.stats_interval,
        .control = control,
    };
    struct trk_pipeline_summary sum;
    if ((err = trk_pipeline_run(&pc, &stop_requested, &sum))) {
        log_error_err(err, "the pipeline failed");
        exit_code = TRK_EX_SOFTWARE;
    } else {
        log_info("done: %llu frames in %.2f s (%.1f fps), %llu dropped, %llu skipped",
                 (unsigned long long)sum.frames, sum.seconds, sum.fps,
                 (unsigned long long)sum.drops, (unsigned long long)sum.skipped);
        if (sum.source_error) exit_code = TRK_EX_NOINPUT;
    }
    reload_quit = 1;
    if (have_reload_thread) pthread_join(reload_thread, NULL);
end:
    if (out && out != stdout && fclose(out) != 0) {
        log_error_err(errno, "writing %s failed", s.output);
        exit_code = TRK_EX_SOFTWARE;
    }
    trk_ws_destroy(&ws);
    trk_control_destroy(&control);
    trk_backend_destroy(&backend);
    trk_source_destroy(&src);
    return exit_code;
}
