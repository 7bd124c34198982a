#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_TAG "trackd"
#include "backend.h"
#include "log.h"

#ifndef TRK_VERSION
#define TRK_VERSION "0.0.0"
#endif
#ifndef TRK_WEB_ROOT
#define TRK_WEB_ROOT "web"
#endif
#ifndef TRK_WEB_ROOT_REL
#define TRK_WEB_ROOT_REL "../share/trackd/web"
#endif

enum {
    OPT_FAST = 256,
    OPT_LOOP,
    OPT_FRAMES,
    OPT_LISTEN,
    OPT_NO_SERVER,
    OPT_WEB_ROOT,
    OPT_BACKEND,
    OPT_THREADS,
    OPT_SIZE,
    OPT_FPS,
    OPT_NO_PREVIEW,
    OPT_PREVIEW_WIDTH,
    OPT_PREVIEW_FPS,
    OPT_PREVIEW_QUALITY,
    OPT_STATS,
    OPT_LOG_LEVEL,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_FORMAT,
    OPT_CONTROL,
    OPT_LIST_DEVICES,
    OPT_LIST_FORMATS,
    OPT_LIST_CONTROLS,
    OPT_SAVE_OBJECTS,
    OPT_CONTROL_TOKEN,
};

/* The one table: getopt entry, argument name and help text. */
// clang-format off
static const struct opt {
    struct option o;
    char short_name;
    const char *arg, *help;
} opts[] = {
    {{"input", required_argument, 0, 'i'}, 'i', "FILE",
     "track a video file (anything FFmpeg reads); default: the built-in demo scene"},
    {{"objects", required_argument, 0, 'c'}, 'c', "FILE",
     "objects JSON (config/OBJECTS.md); default: the demo objects for the demo scene, none for files and cameras"},
    {{"output", required_argument, 0, 'o'}, 'o', "FILE",
     "write one NDJSON result line per frame to FILE ('-' = stdout)"},
    {{"fast", no_argument, 0, OPT_FAST}, 0, NULL,
     "process as fast as possible instead of at the source's frame rate"},
    {{"loop", no_argument, 0, OPT_LOOP}, 0, NULL, "restart the file at its end"},
    {{"frames", required_argument, 0, OPT_FRAMES}, 0, "N", "stop after N frames"},
    {{"listen", required_argument, 0, OPT_LISTEN}, 0, "ADDR:PORT",
     "web UI and WebSocket server address: IPv4, [IPv6] or host name (default 127.0.0.1:8080)"},
    {{"no-server", no_argument, 0, OPT_NO_SERVER}, 0, NULL, "do not start the web/WebSocket server"},
    {{"web-root", required_argument, 0, OPT_WEB_ROOT}, 0, "DIR",
     "folder served at / (default: share/trackd/web beside an installed trackd, else the web/ folder it was built from)"},
    {{"backend", required_argument, 0, OPT_BACKEND}, 0, "NAME",
     "auto|cpu|cpu-ref|cuda (default auto: CUDA when a GPU is usable, else cpu)"},
    {{"threads", required_argument, 0, OPT_THREADS}, 0, "N",
     "CPU backend worker threads (default 0 = one per core)"},
    {{"device", required_argument, 0, 'd'}, 'd', "DEV",
     "track a V4L2 camera (/dev/videoN or /dev/v4l/by-id/...); reopened when it comes back"},
    {{"format", required_argument, 0, OPT_FORMAT}, 0, "FMT",
     "camera pixel format: auto|yuyv|mjpeg|nv12|rgb24 (default auto)"},
    {{"control", required_argument, 0, OPT_CONTROL}, 0, "NAME=VALUE",
     "set a camera control (names as --list-controls prints them); repeatable"},
    {{"list-devices", no_argument, 0, OPT_LIST_DEVICES}, 0, NULL, "list V4L2 cameras and exit (none found: said on stderr, exit 0)"},
    {{"list-formats", no_argument, 0, OPT_LIST_FORMATS}, 0, NULL,
     "list the --device camera's formats and sizes and exit"},
    {{"list-controls", no_argument, 0, OPT_LIST_CONTROLS}, 0, NULL,
     "list the --device camera's controls and exit"},
    {{"size", required_argument, 0, OPT_SIZE}, 0, "WxH",
     "demo scene or camera size (default 1280x720 demo, 640x480 camera; files keep their own)"},
    {{"fps", required_argument, 0, OPT_FPS}, 0, "N",
     "demo scene or camera frame rate (default 30 demo, the camera's own; files keep their own)"},
    {{"no-preview", no_argument, 0, OPT_NO_PREVIEW}, 0, NULL,
     "send no preview JPEGs to web clients (results only)"},
    {{"preview-width", required_argument, 0, OPT_PREVIEW_WIDTH}, 0, "N",
     "largest preview width in pixels (default 640)"},
    {{"preview-fps", required_argument, 0, OPT_PREVIEW_FPS}, 0, "N",
     "most preview frames per second (default 15)"},
    {{"preview-quality", required_argument, 0, OPT_PREVIEW_QUALITY}, 0, "N",
     "preview JPEG quality 1..100 (default 70)"},
    {{"stats-interval", required_argument, 0, OPT_STATS}, 0, "SECONDS",
     "seconds between stats log lines (default 1; 0 = none; web clients get stats every second regardless)"},
    {{"log-level", required_argument, 0, OPT_LOG_LEVEL}, 0, "LEVEL",
     "error|warn|info|debug (default info)"},
    {{"progress", no_argument, 0, OPT_PROGRESS}, 0, NULL,
     "show progress on stderr (default: with --fast when stderr is a terminal)"},
    {{"no-progress", no_argument, 0, OPT_NO_PROGRESS}, 0, NULL, "never show progress"},
    {{"save-objects", required_argument, 0, OPT_SAVE_OBJECTS}, 0, "FILE",
     "where the web page's 'save' writes the objects (default: the --objects file, else ./objects.json)"},
    {{"control-token", required_argument, 0, OPT_CONTROL_TOKEN}, 0, "TOKEN",
     "token web clients need to edit objects (required on any address when given; generated and printed when listening beyond loopback)"},
    {{"help", no_argument, 0, 'h'}, 'h', NULL, "show this help and exit"},
    {{"version", no_argument, 0, 'V'}, 'V', NULL, "show the version and exit"},
};
// clang-format on
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

/* What a valid value looks like, for the error message when one is not:
 * the form and an example, so a typo can be fixed without reading --help.
 * Options missing here take any text (file names). */
static const struct {
    int val;
    const char *form;
} forms[] = {
    { OPT_FRAMES, "N, a whole number >= 1, e.g. 300" },
    { OPT_LISTEN, "ADDR:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080 (port 0..65535)" },
    { OPT_BACKEND, "auto, cpu, cpu-ref or cuda" },
    { OPT_THREADS, "N (0..256; 0 = one per core)" },
    { OPT_SIZE, "WxH, e.g. 1280x720 (each 16..16384)" },
    { OPT_FPS, "N (0.1..1000), e.g. 30 or 29.97" },
    { OPT_FORMAT, "auto, yuyv, mjpeg, nv12 or rgb24" },
    { OPT_CONTROL, "NAME=VALUE with a whole-number VALUE, e.g. brightness=128 (at most 16)" },
    { OPT_PREVIEW_WIDTH, "N pixels (16..4096), e.g. 640" },
    { OPT_PREVIEW_FPS, "N (0.1..240), e.g. 15" },
    { OPT_PREVIEW_QUALITY, "N (1..100), e.g. 70" },
    { OPT_STATS, "SECONDS (0..3600; 0 = none), e.g. 1 or 0.5" },
    { OPT_LOG_LEVEL, "error, warn, info or debug" },
    { OPT_CONTROL_TOKEN, "TOKEN, 1..127 characters" },
};

static const struct opt *find_opt(int val)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (opts[i].o.val == val) return &opts[i];
    return NULL;
}

/* "--size WxH, e.g. 1280x720 (each 16..16384)": the option and its form. */
static void print_form(FILE *err, const struct opt *o)
{
    const char *form = o->arg;
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        if (forms[i].val == o->o.val) form = forms[i].form;
    fprintf(err, "expected --%s %s (see --help)\n", o->o.name, form);
}

void trk_cli_usage(FILE *out)
{
    fprintf(out,
            "Usage: trackd [OPTION]...\n"
            "Real-time colour-object tracking: frames from a V4L2 camera, a video file or the\n"
            "built-in demo scene, results as NDJSON and over WebSocket to the web UI\n"
            "(http://127.0.0.1:8080/).\n\n"
            "Examples:\n"
            "  trackd                                          demo scene, web UI on :8080\n"
            "  trackd --list-devices                           the cameras on this machine\n"
            "  trackd --device /dev/video0 --objects objs.json track a camera\n"
            "  trackd --input clip.mp4 --objects objs.json     track a file at its frame rate\n"
            "  trackd -i clip.mp4 -c objs.json -o out.ndjson --fast --no-server\n\n"
            "Options:\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char left[64];
        int n = opts[i].short_name
                    ? snprintf(left, sizeof(left), "-%c, --%s", opts[i].short_name, opts[i].o.name)
                    : snprintf(left, sizeof(left), "    --%s", opts[i].o.name);
        if (opts[i].arg) snprintf(left + n, sizeof(left) - n, " %s", opts[i].arg);
        fprintf(out, "  %-28s %s\n", left, opts[i].help);
    }
    fprintf(out, "\nExit status: 0 done, 64 usage error, 66 input cannot be opened,\n"
                 "69 backend or server unavailable, 70 internal error, 78 configuration error.\n");
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

/* HOST:PORT, HOST a name or an IPv4 address, or [IPV6]:PORT (the brackets
 * keep the address's colons apart from the port's). */
static bool parse_listen(const char *s, struct trk_settings *st)
{
    const char *colon = strrchr(s, ':');
    const char *host = s, *host_end = colon;
    long port;
    if (*s == '[') {
        host = s + 1;
        host_end = strchr(host, ']');
        if (!host_end || host_end[1] != ':') return false;
        colon = host_end + 1;
    } else if (colon && memchr(s, ':', (size_t)(colon - s))) {
        return false; /* an IPv6 address without brackets */
    }
    if (!colon || host_end == host || (size_t)(host_end - host) >= sizeof(st->listen_addr) ||
        !parse_long(colon + 1, 0, 65535, &port))
        return false;
    memcpy(st->listen_addr, host, (size_t)(host_end - host));
    st->listen_addr[host_end - host] = 0;
    st->listen_port = (int)port;
    return true;
}

int trk_cli_parse(int argc, char **argv, struct trk_settings *s, FILE *out, FILE *err)
{
    struct option longopts[N_OPTS + 1];
    char shortopts[64] = ":";
    size_t ns = 1;
    for (size_t i = 0; i < N_OPTS; i++) {
        longopts[i] = opts[i].o;
        if (opts[i].short_name) {
            shortopts[ns++] = opts[i].short_name;
            if (opts[i].arg) shortopts[ns++] = ':';
        }
    }
    memset(&longopts[N_OPTS], 0, sizeof(longopts[0]));
    shortopts[ns] = 0;

    memset(s, 0, sizeof(*s));
    strcpy(s->listen_addr, "127.0.0.1");
    s->listen_port = 8080;
    s->server = true;
    s->web_root = NULL; /* found at start: trk_cli_find_web_root */
    s->backend = TRK_BACKEND_AUTO;
    s->demo_width = 1280;
    s->demo_height = 720;
    s->demo_fps = 30;
    s->preview = true;
    s->preview_width = 640;
    s->preview_fps = 15;
    s->preview_quality = 70;
    s->stats_interval = 1;
    s->log_level = TRK_LOG_INFO;
    s->progress = -1;

    optind = 1;
    opterr = 0;
    int c, idx;
    long lv;
    while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
        const char *a = optarg;
        bool ok = true;
        switch (c) {
        case 'i': s->input = a; break;
        case 'c': s->objects = a; break;
        case 'o': s->output = a; break;
        case OPT_FAST: s->fast = true; break;
        case OPT_LOOP: s->loop = true; break;
        case OPT_FRAMES:
            ok = parse_long(a, 1, LONG_MAX, &lv);
            s->frames = (uint64_t)lv;
            break;
        case OPT_LISTEN: ok = parse_listen(a, s); break;
        case OPT_NO_SERVER: s->server = false; break;
        case OPT_WEB_ROOT: s->web_root = a; break;
        case OPT_BACKEND: ok = (s->backend = trk_backend_kind_parse(a)) >= 0; break;
        case OPT_THREADS:
            ok = parse_long(a, 0, 256, &lv);
            s->threads = (int)lv;
            break;
        case OPT_SIZE: {
            int end = 0; /* nothing may follow: "1280x720p" is a typo, not 1280x720 */
            ok = sscanf(a, "%dx%d%n", &s->demo_width, &s->demo_height, &end) == 2 && !a[end] &&
                 s->demo_width >= 16 && s->demo_height >= 16 && s->demo_width <= 16384 &&
                 s->demo_height <= 16384;
            s->size_set = true;
            break;
        }
        case OPT_FPS:
            ok = parse_double(a, 0.1, 1000, &s->demo_fps);
            s->fps_set = true;
            break;
        case 'd': s->device = a; break;
        case OPT_FORMAT: ok = (s->cam_format = trk_cam_format_parse(a)) >= 0; break;
        case OPT_CONTROL:
            ok = s->n_controls < TRK_CAM_MAX_CONTROLS &&
                 trk_cam_control_parse(a, &s->controls[s->n_controls]);
            if (ok) s->n_controls++;
            break;
        case OPT_LIST_DEVICES: s->list_devices = true; break;
        case OPT_LIST_FORMATS: s->list_formats = true; break;
        case OPT_LIST_CONTROLS: s->list_controls = true; break;
        case OPT_NO_PREVIEW: s->preview = false; break;
        case OPT_PREVIEW_WIDTH:
            ok = parse_long(a, 16, 4096, &lv);
            s->preview_width = (int)lv;
            break;
        case OPT_PREVIEW_FPS: ok = parse_double(a, 0.1, 240, &s->preview_fps); break;
        case OPT_PREVIEW_QUALITY:
            ok = parse_long(a, 1, 100, &lv);
            s->preview_quality = (int)lv;
            break;
        case OPT_STATS: ok = parse_double(a, 0, 3600, &s->stats_interval); break;
        case OPT_LOG_LEVEL: ok = (s->log_level = trk_log_level_parse(a)) >= 0; break;
        case OPT_PROGRESS: s->progress = 1; break;
        case OPT_NO_PROGRESS: s->progress = 0; break;
        case OPT_SAVE_OBJECTS: s->save_objects = a; break;
        case OPT_CONTROL_TOKEN:
            ok = *a && strlen(a) < 128;
            s->control_token = a;
            break;
        case 'h': trk_cli_usage(out); return TRK_CLI_EXIT_OK;
        case 'V': fprintf(out, "trackd %s\n", TRK_VERSION); return TRK_CLI_EXIT_OK;
        case ':':
            fprintf(err, "trackd: option %s needs a value: ", argv[optind - 1]);
            if (find_opt(optopt))
                print_form(err, find_opt(optopt));
            else
                fprintf(err, "see --help\n");
            return TRK_EX_USAGE;
        default:
            fprintf(err, "trackd: unknown option %s (see --help)\n", argv[optind - 1]);
            return TRK_EX_USAGE;
        }
        if (!ok) {
            const struct opt *o = find_opt(c);
            fprintf(err, "trackd: invalid value '%s' for --%s: ", a, o->o.name);
            print_form(err, o);
            return TRK_EX_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(err, "trackd: unexpected argument '%s' (see --help)\n", argv[optind]);
        return TRK_EX_USAGE;
    }
    if (s->loop && !s->input) {
        fprintf(err, "trackd: --loop needs --input\n");
        return TRK_EX_USAGE;
    }
    if (s->device && s->input) {
        fprintf(err, "trackd: give --input or --device, not both\n");
        return TRK_EX_USAGE;
    }
    if ((s->list_formats || s->list_controls) && !s->device) {
        fprintf(err, "trackd: --list-formats and --list-controls need --device\n");
        return TRK_EX_USAGE;
    }
    return TRK_CLI_RUN;
}

void trk_cli_warn(const struct trk_settings *s)
{
    /* Legal combinations that would silently do nothing. */
    if (s->input && s->size_set)
        log_warn("--size is ignored with --input: a file keeps its own size");
    if (s->input && s->fps_set)
        log_warn("--fps is ignored with --input: a file plays at its own rate (--fast: as fast "
                 "as it can)");
    if (!s->device && (s->cam_format || s->n_controls))
        log_warn("--format and --control are ignored without --device: they set up cameras");
    if (!s->server && !s->output)
        log_warn("--no-server without --output: the results go nowhere (add --output FILE, "
                 "or --output - for stdout)");
}

static bool has_index(const char *dir)
{
    char path[PATH_MAX];
    return snprintf(path, sizeof(path), "%s/index.html", dir) < (int)sizeof(path) &&
           access(path, R_OK) == 0;
}

int trk_cli_find_web_root(struct trk_settings *s, char *buf, size_t len)
{
    if (s->web_root) {
        if (has_index(s->web_root)) return 0;
        log_error("--web-root %s: no readable index.html there (the web UI's folder is "
                  "share/trackd/web where trackd is installed, web/ in its source tree)",
                  s->web_root);
        return TRK_EX_NOINPUT;
    }
    /* An installed binary: PREFIX/bin/trackd serves PREFIX/share/trackd/web,
     * wherever PREFIX was moved to. Then the source tree for a binary in its
     * build tree. */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        if (snprintf(buf, len, "%s/%s", exe, TRK_WEB_ROOT_REL) < (int)len && has_index(buf)) {
            s->web_root = buf;
            return 0;
        }
    }
    if (has_index(TRK_WEB_ROOT)) {
        s->web_root = TRK_WEB_ROOT;
        return 0;
    }
    log_warn("no web UI files found (looked in %s/%s and %s): the page will answer 404, the "
             "WebSocket /ws still works; give --web-root DIR",
             n > 0 ? exe : "<trackd's folder>", TRK_WEB_ROOT_REL, TRK_WEB_ROOT);
    return 0;
}
