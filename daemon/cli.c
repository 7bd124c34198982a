#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LOG_TAG "trackd"
#include "backend.h"
#include "source/hwdec.h"
#include "pipeline.h"
#include "log.h"
#include "out/mqtt.h"
#include "out/ssl.h"
#include "prefilter.h"
#include "tracker.h"
#include "trk_assert.h"
#include "source/source.h"
#include "source/v4l2.h"

#ifndef TRK_VERSION
#define TRK_VERSION "0.0.0"
#endif
#ifndef TRK_WEB_ROOT
#define TRK_WEB_ROOT "web"
#endif
#ifndef TRK_WEB_ROOT_REL
#define TRK_WEB_ROOT_REL "../share/trackd/web"
#endif

/* How an option's value reaches its field of struct trk_settings. Options
 * without a value (arg NULL) store .set in a T_BOOL or T_INT field. */
enum opt_type {
    T_TEXT,  /* const char *: the value itself; hi > 0: its length must be lo..hi */
    T_BOOL,  /* bool */
    T_INT,   /* int: a whole number in lo..hi */
    T_COUNT, /* uint64_t: a whole number >= lo */
    T_REAL,  /* double in lo..hi */
    T_NAME,  /* int: what parse_name returns for the value, which must be >= 0 */
    T_PARSE, /* parse() checks and stores the value, bounded by lo..hi */
    T_HELP,
    T_VERSION,
};

/* Where an option appears in --help and the man page: the groups in the
 * order a newcomer needs them, each titled by group_titles[] below.
 * G_NONE (an option whose entry forgot its .group) stops --help and the
 * man page at the assert, so every test that prints them catches it. */
enum opt_group {
    G_NONE,
    G_INPUT,
    G_OBJECTS,
    G_TRACKING,
    G_OUTPUTS,
    G_WEB,
    G_OPS,
    G_PERF,
    N_GROUPS
};

static const char *const group_titles[N_GROUPS] = {
    [G_INPUT] = "Input (where frames come from)",
    [G_OBJECTS] = "Objects (what to track)",
    [G_TRACKING] = "Tracking (how objects are searched for)",
    [G_OUTPUTS] = "Outputs (where results go)",
    [G_WEB] = "Web page and WebSocket",
    [G_OPS] = "Operations (logs, metrics, information)",
    [G_PERF] = "Performance (backend, decoding, threads)",
};

struct opt;
typedef bool parse_fn(const char *a, const struct opt *o, struct trk_settings *s);

struct opt {
    const char *name;
    char short_name; /* 0: none */
    const char *arg; /* the value's name in --help; NULL: takes no value */
    enum opt_type type;
    size_t off;           /* the field in struct trk_settings */
    const char *def;      /* the value before the command line, as value text (a number
                           * for value-less options); NULL: zero */
    const char *def_note; /* --help: follows "(default DEF" */
    double lo, hi;        /* bounds, as enum opt_type says */
    int set;              /* what a value-less option stores */
    int (*parse_name)(const char *);
    parse_fn *parse;
    const char *form; /* what a valid value looks like, for the error when one is not:
                       * the form and an example, so a typo can be fixed without
                       * reading --help; NULL: arg (any text) */
    enum opt_group group;
    const char *help;
};

static parse_fn parse_listen, parse_metrics_listen, parse_size, parse_control, parse_prefilter;
static parse_fn parse_name, parse_mqtt;
/* --predict: 0 off, 1 send (trk_settings.predict). */
static int predict_parse(const char *s)
{
    return !strcmp(s, "off") ? 0 : !strcmp(s, "send") ? 1 : -1;
}
static parse_fn parse_udp, parse_osc, parse_ssl, parse_ssl_field;
static parse_fn parse_seconds, parse_rewind_on;
static int parse_storage(const char *s);

/* The field f of struct trk_settings; the build fails unless it is of type T. */
#define FIELD(f, T)                                                                                \
    .off = offsetof(struct trk_settings, f) + 0 * _Generic(((struct trk_settings *)0)->f, T : 0)
#define TEXT(f)     .type = T_TEXT, FIELD(f, const char *)
#define FLAG(f, v)  .type = T_BOOL, .set = v, FIELD(f, bool)
#define INT(f)      .type = T_INT, FIELD(f, int)
#define REAL(f)     .type = T_REAL, FIELD(f, double)
#define NAME(f, fn) .type = T_NAME, .parse_name = fn, FIELD(f, int)
#define PARSE(fn)   .type = T_PARSE, .parse = fn
#define STR_(x)     #x
#define STR(x)      STR_(x)

/* The one table. In form and help, {lo} and {hi} stand for the bounds; an
 * option with a value and a def gets "(default DEF NOTE)" after its help. */
// clang-format off
static const struct opt opts[] = {
    { "input", 'i', "FILE", TEXT(input),
      .group = G_INPUT, .help = "track a video file (anything FFmpeg reads); default: the built-in demo scene" },
    { "replay", 0, "DIR", TEXT(replay),
      .group = G_INPUT, .help = "play a bundle made with --record through the pipeline: the same frames, times and object sets (docs/RECORDING.md; --objects: that set instead, throughout); at the recorded pace, or --fast" },
    { "verify", 0, NULL, FLAG(verify, true),
      .group = G_INPUT, .help = "with --replay: compare every result with the bundle's results.ndjson (timing fields aside); exit 0 when identical, else print the first differing frame and field and exit 1" },
    { "paused", 0, NULL, FLAG(paused, true),
      .group = G_INPUT, .help = "with --replay: start paused at the first frame and pause at the end instead of ending, for the page's bundle view (timeline, step, re-run a range; docs/RECORDING.md); without it a replay still takes the page's transport but ends at its end" },
    { "objects", 'c', "FILE", TEXT(objects),
      .group = G_OBJECTS, .help = "objects JSON (config/OBJECTS.md); default: the demo objects for the demo scene, none for files and cameras" },
    { "output", 'o', "FILE", TEXT(output),
      .group = G_OUTPUTS, .help = "write one NDJSON result line per frame to FILE ('-' = stdout)" },
    { "record", 0, "DIR", TEXT(record),
      .group = G_OUTPUTS, .help = "record a bundle in DIR (new or empty): the frames as the source delivered them, their times, every object set with the frame it applied from, and the results (docs/RECORDING.md); a full disk stops the recording, never tracking" },
    { "record-max", 0, "MB", .type = T_COUNT, FIELD(record_max_mb, uint64_t), .lo = 1,
      .form = "MB, a whole number >= {lo}, e.g. 2000",
      .group = G_OUTPUTS, .help = "stop recording (tracking goes on) once the bundle would pass MB megabytes, or with --record-rotate start the next part; default: no limit" },
    { "record-max-time", 0, "DURATION", PARSE(parse_seconds), FIELD(record_max_s, double), .lo = 1, .hi = 604800,
      .form = "seconds {lo}..{hi}, with s, m, h or ms after it, e.g. 10m",
      .group = G_OUTPUTS, .help = "stop recording (tracking goes on) once the bundle holds DURATION of frames (by their capture times), or with --record-rotate start the next part; default: no limit" },
    { "record-rotate", 0, "N", .type = T_COUNT, FIELD(record_rotate, uint64_t), .lo = 0, .def = "0",
      .form = "N, a whole number >= {lo}, e.g. 5",
      .group = G_OUTPUTS, .help = "at --record-max or --record-max-time, close the part and go on in the next: DIR/part-0001, DIR/part-0002, ..., each a bundle of its own, keeping the newest N (older ones deleted); 0: stop at the limit" },
    { "record-storage", 0, "STORAGE", NAME(record_storage, parse_storage), .def = "raw",
      .form = "raw, ffv1 or copy",
      .group = G_OUTPUTS, .help = "how --record and --rewind saves store the frames: raw (frames.raw, the bytes as they came), ffv1 (lossless FFV1 in Matroska, frames-NNNN.mkv; bundle version 2) or copy (--record only: an MJPEG camera's JPEGs as the driver delivered them in frames.mjpeg, a file input by reference: its path, size, SHA-256 and each frame's number; bundle version 3; the replay decodes them as the live run did, in software); all replay bit-exact; docs/BENCHMARKS.md has their cost" },
    { "rewind", 0, "DURATION", PARSE(parse_seconds), FIELD(rewind_s, double), .lo = 0.1, .hi = 3600,
      .form = "seconds {lo}..{hi}, with s, m or ms after it, e.g. 30s",
      .group = G_OUTPUTS, .help = "keep the last DURATION of frames (as the source delivered them), their results and object sets in memory, and save them as a bundle (docs/RECORDING.md) on demand: the save_rewind message, the page's button, SIGUSR1, --rewind-on; default: off" },
    { "rewind-dir", 0, "DIR", TEXT(rewind_dir), .def = ".",
      .group = G_OUTPUTS, .help = "where --rewind saves: each save is a new bundle DIR/rewind-YYYYMMDD-HHMMSS-N (UTC)" },
    { "rewind-max-mem", 0, "MB", .type = T_COUNT, FIELD(rewind_max_mb, uint64_t), .lo = 1, .def = "2000",
      .form = "MB, a whole number >= {lo}, e.g. 4000",
      .group = G_OUTPUTS, .help = "the most memory the rewind buffer holds: the start is refused when --rewind at the source's size and rate would need more (docs/RECORDING.md has the rates), and older frames go first when a larger format would pass it" },
    { "rewind-gap", 0, "DURATION", PARSE(parse_seconds), FIELD(rewind_gap_s, double), .def = "10", .lo = 0, .hi = 86400,
      .form = "seconds {lo}..{hi}, with s, m or ms after it, e.g. 10s",
      .group = G_OUTPUTS, .help = "the least time between two rewind saves (seconds); a save asked for sooner is refused with the reason" },
    { "rewind-on", 0, "TRIGGER", PARSE(parse_rewind_on), .lo = 1, .hi = 1000000,
      .form = "lost:K (K {lo}..{hi} frames) or health, e.g. lost:30",
      .group = G_OUTPUTS, .help = "save the rewind buffer by itself: lost:K when an object that was found is not found, or an instance of a tracked one is lost, for more than K frames; health when /healthz turns bad; may be given twice" },
    { "fast", 0, NULL, FLAG(fast, true),
      .group = G_PERF, .help = "process as fast as possible instead of at the source's frame rate" },
    { "loop", 0, NULL, FLAG(loop, true), .group = G_INPUT, .help = "restart the file at its end" },
    { "hwdec", 0, "MODE", NAME(hwdec, trk_hwdec_parse), .def = "auto",
      .def_note = ": NVDEC with the cuda backend where it can, else software",
      .form = "auto, cuda or none",
      .group = G_PERF, .help = "auto|cuda|none: decode files, streams and MJPEG cameras on the GPU (NVDEC), frames staying in GPU memory for the cuda backend; cuda: fail (exit 69) when it cannot" },
    { "spin", 0, "MODE", NAME(spin, trk_spin_parse), .def = "auto",
      .def_note = ": on in a daemon that holds one of the machine's --spin-slots", .form = "auto, on or off",
      .group = G_PERF, .help = "auto|on|off: at real-time rates (not --fast) the processing and WebSocket threads poll, rather than sleep, just before each frame and its result are due, so neither waits for a thread wake-up (lower latency; ~5% of a core at 60 fps); off: always sleep" },
    { "spin-slots", 0, "N", INT(spin_slots), .lo = 0, .hi = 4096, .def = "0",
      .def_note = " = a quarter of the online CPUs",
      .group = G_PERF, .help = "how many trackd processes on this machine poll at once with --spin auto (one lock file each, trackd-spin.K in /dev/shm or $TRACKD_SPIN_DIR, held from start to exit): the first to start poll, the later ones sleep as with --spin off (and take a slot another daemon gives up, trying once a second), so many cameras on one host do not take each other's cores" },
    { "rt-priority", 0, "N", INT(rt_priority), .lo = 0, .hi = 99, .def = "0", .def_note = " = off",
      .form = "N ({lo}..{hi}; 0 = off), e.g. 10",
      .group = G_PERF, .help = "run the capture, processing and WebSocket threads at real-time priority N (SCHED_FIFO), ahead of ordinary threads; refused (no CAP_SYS_NICE or RLIMIT_RTPRIO): one warning, normal priority" },
    { "decode-only", 0, NULL, FLAG(decode_only, true),
      .group = G_PERF, .help = "only decode the --input (or camera) as fast as possible, no tracking: print frames, fps and CPU time per frame, then exit" },
    { "frames", 0, "N", .type = T_COUNT, FIELD(frames, uint64_t), .lo = 1,
      .form = "N, a whole number >= {lo}, e.g. 300", .group = G_INPUT, .help = "stop after N frames" },
    { "listen", 0, "ADDR:PORT", PARSE(parse_listen), .def = "127.0.0.1:8080", .lo = 0, .hi = 65535,
      .form = "ADDR:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080 (port {lo}..{hi})",
      .group = G_WEB, .help = "web UI and WebSocket server address: IPv4, [IPv6] or host name" },
    { "metrics-listen", 0, "ADDR:PORT", PARSE(parse_metrics_listen), .lo = 0, .hi = 65535,
      .form = "ADDR:PORT, e.g. 127.0.0.1:9464 or 0.0.0.0:9464 (port {lo}..{hi})",
      .group = G_OPS, .help = "also serve /metrics and /healthz (only) on this address, e.g. for a Prometheus on another network" },
    { "no-server", 0, NULL, FLAG(server, false), .def = "1",
      .group = G_WEB, .help = "do not start the web/WebSocket server" },
    { "max-clients", 0, "N", INT(max_clients), .lo = 1, .hi = 4096, .def = "64",
      .form = "N ({lo}..{hi}), e.g. 64",
      .group = G_WEB, .help = "most connections (web page and WebSocket) served at once; more get HTTP 503" },
    { "web-root", 0, "DIR", TEXT(web_root),
      .group = G_WEB, .help = "folder served at / (default: share/trackd/web beside an installed trackd, else the web/ folder it was built from)" },
    { "backend", 0, "NAME", NAME(backend, trk_backend_kind_parse), .def = "auto",
      .def_note = ": CUDA when a GPU is usable, else cpu", .form = "auto, cpu, cpu-ref or cuda",
      .group = G_PERF, .help = "auto|cpu|cpu-ref|cuda" },
    { "threads", 0, "N", INT(threads), .lo = 0, .hi = 256, .def = "0", .def_note = " = one per core",
      .form = "N ({lo}..{hi}; 0 = one per core)", .group = G_PERF, .help = "CPU backend worker threads" },
    { "prefilter", 0, "SIGMA", PARSE(parse_prefilter), .lo = 0, .hi = TRK_PREFILTER_MAX_SIGMA,
      .form = "SIGMA in pixels ({lo}..{hi}; 0 = off), e.g. 1.5",
      .group = G_TRACKING, .help = "blur frames with a Gaussian of SIGMA pixels before the colour test (denoising; overrides the objects file's \"prefilter\")" },
    { "mode", 0, "MODE", NAME(track_mode, trk_track_mode_parse), .def = "auto",
      .def_note = ": roi where the backend has a native regional form (cpu, cuda), else full (cpu-ref); with --replay, the recorded run's",
      .form = "auto, roi or full",
      .group = G_TRACKING, .help = "auto|roi|full: tracked objects (\"track\": true) searched in regions around their predicted positions, or every frame in the whole frame" },
    { "full-every", 0, "K", INT(full_every), .lo = 1, .hi = 1000000, .def = "15",
      .form = "K ({lo}..{hi}), e.g. 15",
      .group = G_TRACKING, .help = "roi mode: search the whole frame every K frames for new blobs (K = 1: every frame)" },
    { "device", 'd', "DEV", TEXT(device),
      .group = G_INPUT, .help = "track a V4L2 camera (/dev/videoN or /dev/v4l/by-id/...); a missing one is waited for, one that goes away reopened when it comes back; a path that is no camera (a file, a metadata node) exits 66 with the reason" },
    { "format", 0, "FMT", NAME(cam_format, trk_cam_format_parse), .def = "auto",
      .form = "auto, yuyv, mjpeg, nv12 or rgb24",
      .group = G_INPUT, .help = "camera pixel format: auto|yuyv|mjpeg|nv12|rgb24" },
    { "camera-io", 0, "IO", NAME(cam_io, trk_cam_io_parse), .def = "auto",
      .def_note = ": the backend reads raw frames in the driver's buffers (USERPTR), mmap + copy where the driver refuses",
      .form = "auto or mmap",
      .group = G_INPUT, .help = "auto|mmap: how camera frames leave the driver; mmap copies every frame (comparisons, drivers with broken USERPTR)" },
    { "control", 0, "NAME=VALUE", PARSE(parse_control), .hi = TRK_CAMERA_MAX_CONTROLS,
      .form = "NAME=VALUE with a whole-number VALUE, e.g. brightness=128 (at most {hi})",
      .group = G_INPUT, .help = "set a camera control (names as --list-controls prints them); repeatable; wins over the objects file and the page" },
    { "list-devices", 0, NULL, FLAG(list_devices, true),
      .group = G_INPUT, .help = "list V4L2 cameras and exit (none found: said on stderr, exit 0)" },
    { "list-formats", 0, NULL, FLAG(list_formats, true),
      .group = G_INPUT, .help = "list the --device camera's formats and sizes and exit" },
    { "list-controls", 0, NULL, FLAG(list_controls, true),
      .group = G_INPUT, .help = "list the --device camera's controls and exit" },
    { "size", 0, "WxH", PARSE(parse_size), .lo = 16, .hi = 16384,
      .form = "WxH, e.g. 1280x720 (each {lo}..{hi})",
      .group = G_INPUT, .help = "demo scene or camera size (default " STR(TRK_DEMO_WIDTH) "x" STR(TRK_DEMO_HEIGHT)
              " demo, " STR(TRK_V4L2_WIDTH) "x" STR(TRK_V4L2_HEIGHT) " camera; files keep their own)" },
    { "fps", 0, "N", REAL(fps), .lo = 0.1, .hi = 1000, .form = "N ({lo}..{hi}), e.g. 30 or 29.97",
      .group = G_INPUT, .help = "demo scene or camera frame rate (default " STR(TRK_DEMO_FPS)
              " demo, the camera's own; files keep their own)" },
    { "no-preview", 0, NULL, FLAG(preview, false), .def = "1",
      .group = G_WEB, .help = "send no preview JPEGs to web clients (results only)" },
    { "preview-width", 0, "N", INT(preview_width), .lo = 16, .hi = 4096, .def = "640",
      .form = "N pixels ({lo}..{hi}), e.g. 640", .group = G_WEB, .help = "largest preview width in pixels" },
    { "preview-fps", 0, "N", REAL(preview_fps), .lo = 0.1, .hi = 240, .def = "15",
      .form = "N ({lo}..{hi}), e.g. 15", .group = G_WEB, .help = "most preview frames per second" },
    { "preview-quality", 0, "N", INT(preview_quality), .lo = 1, .hi = 100, .def = "70",
      .form = "N ({lo}..{hi}), e.g. 70", .group = G_WEB, .help = "preview JPEG quality {lo}..{hi}" },
    { "snapshot-rate", 0, "N", REAL(snapshot_rate), .lo = 0, .hi = 1000, .def = "5",
      .def_note = "; 0 = no limit", .form = "N ({lo}..{hi}; 0 = no limit), e.g. 5",
      .group = G_WEB, .help = "most /snapshot.jpg requests a second from one client address; more get HTTP 429" },
    { "focus-every", 0, "N", INT(focus_every), .lo = 0, .hi = 1000000, .def = "30", .def_note = "; 0 = off",
      .form = "N ({lo}..{hi}; 0 = off), e.g. 30",
      .group = G_OPS, .help = "measure the focus (Canny sharpness, off the processing thread) on one processed frame in N, for /healthz, /metrics and the page; NVDEC frames (--hwdec) are measured on the GPU in place" },
    { "focus-warn", 0, "F", REAL(focus_warn), .lo = 0.01, .hi = 1, .def = "0.6",
      .form = "F, a fraction ({lo}..{hi}), e.g. 0.6",
      .group = G_OPS, .help = "focus is lost (a log warning, /healthz says so) when the sharpness falls below F times the baseline" },
    { "focus-baseline", 0, "S", REAL(focus_baseline), .lo = 0, .hi = 1443, .def = "0", .def_note = " = learnt from the first 5 samples",
      .form = "S, a sharpness ({lo}..{hi}; 0 = learn), e.g. 12.5",
      .group = G_OPS, .help = "the sharpness of the camera in focus (as /metrics' trackd_focus_sharpness shows it)" },
    { "stats-interval", 0, "SECONDS", REAL(stats_interval), .lo = 0, .hi = 3600, .def = "10",
      .def_note = ", 1 at --log-level debug; 0 = none; the web page gets stats every second regardless",
      .form = "SECONDS ({lo}..{hi}; 0 = none), e.g. 1 or 0.5",
      .group = G_OPS, .help = "seconds between the log's stats lines (fps, drops, latency, clients)" },
    { "log-level", 0, "LEVEL", NAME(log_level, trk_log_level_parse), .def = "info",
      .form = "error, warn, info or debug", .group = G_OPS, .help = "error|warn|info|debug" },
    /* progress: -1 auto, 0 off, 1 on */
    { "progress", 0, NULL, INT(progress), .set = 1, .def = "-1",
      .group = G_OPS, .help = "show progress on stderr (default: with --fast when stderr is a terminal)" },
    { "no-progress", 0, NULL, INT(progress), .set = 0, .group = G_OPS, .help = "never show progress" },
    { "save-objects", 0, "FILE", TEXT(save_objects),
      .group = G_OBJECTS, .help = "where the web page's 'save' writes the objects (default: the --objects file, else ./objects.json)" },
    { "control-token", 0, "TOKEN", TEXT(control_token), .lo = 1, .hi = 127,
      .form = "TOKEN, {lo}..{hi} characters",
      .group = G_WEB, .help = "token web clients need to edit objects (required on any address when given; generated and printed when listening beyond loopback)" },
    { "check-config", 0, "FILE", TEXT(check_config),
      .group = G_OBJECTS, .help = "validate the objects FILE by every rule applied at start and exit: prints 'FILE: ok, N objects' (exit 0) or the error as file:line:col (exit 78); opens no source or server" },
    { "name", 0, "NAME", PARSE(parse_name), .lo = 1, .hi = TRK_CAMERA_NAME_MAX,
      .form = "NAME, {lo}..{hi} of the characters A-Z a-z 0-9 . _ -, e.g. front-door",
      .group = G_OUTPUTS, .help = "the camera's name in messages, MQTT topics and datagrams (default: the camera's by-id name, the file's name, or demo)" },
    { "mqtt", 0, "URL", PARSE(parse_mqtt),
      .form = "URL: mqtt://[USER[:PASS]@]HOST[:PORT][/PREFIX] or mqtts://..., e.g. mqtt://localhost/lab",
      .group = G_OUTPUTS, .help = "publish results to an MQTT broker under PREFIX/NAME/ (default prefix trackd; port 1883, mqtts 8883)" },
    { "mqtt-ca", 0, "FILE", TEXT(mqtt_ca),
      .group = G_OUTPUTS, .help = "CA certificates (PEM) that the mqtts:// broker's certificate must chain to (default: the system's)" },
    { "mqtt-max-age", 0, "SECONDS", REAL(mqtt_max_age), .lo = TRK_MQTT_MAX_AGE_MIN, .hi = TRK_MQTT_MAX_AGE_MAX,
      .def = STR(TRK_MQTT_MAX_AGE_S), .form = "SECONDS ({lo}..{hi}), e.g. 1 or 0.25",
      .group = G_OUTPUTS, .help = "MQTT frames the broker has not acknowledged within SECONDS of their capture are dropped (counted), never sent late; at most " STR(TRK_MQTT_WINDOW) " frames await the broker's acknowledgement at once" },
    { "predict", 0, "WHEN", NAME(predict, predict_parse), .def = "off", .def_note = ": positions as measured",
      .form = "off or send",
      .group = G_OUTPUTS, .help = "send: every output's instance and marker positions moved on by their velocities from the frame's capture to when trackd hands that output the message, with \"predict_dt\" (s) in it (PROTOCOL.md, \"predict_dt\"); a WebSocket client can ask for it alone (subscribe)" },
    { "udp", 0, "HOST:PORT", PARSE(parse_udp), .lo = 1, .hi = 65535,
      .form = "HOST:PORT, e.g. 192.168.1.20:5005, 239.255.0.1:5005 or [ff02::1]:5005 (port {lo}..{hi})",
      .group = G_OUTPUTS, .help = "send one JSON datagram per frame to HOST:PORT, unicast or multicast (PROTOCOL.md, \"UDP datagrams\")" },
    { "udp-ttl", 0, "N", INT(udp_ttl), .lo = 1, .hi = 255, .def = "1", .def_note = ": this link only",
      .form = "N hops ({lo}..{hi}), e.g. 1", .group = G_OUTPUTS, .help = "multicast hops of --udp and --ssl datagrams" },
    { "udp-iface", 0, "IFACE", TEXT(udp_iface), .lo = 1, .hi = 15, .form = "IFACE, an interface name as ip link lists it, e.g. eth0",
      .group = G_OUTPUTS, .help = "network interface --udp and --ssl multicast goes out on (default: the route's)" },
    { "osc", 0, "HOST:PORT", PARSE(parse_osc), .lo = 1, .hi = 65535,
      .form = "HOST:PORT, e.g. 127.0.0.1:9000 or [::1]:9000 (port {lo}..{hi})",
      .group = G_OUTPUTS, .help = "send OSC messages /trackd/CAMERA/NAME cx cy mass per object and frame to HOST:PORT, IPv4, [IPv6] or host name; reserved characters in NAME as %XX (PROTOCOL.md, \"OSC\")" },
    { "ssl", 0, "[udp://]HOST:PORT", PARSE(parse_ssl), .lo = 1, .hi = 65535,
      .form = "[udp://]HOST:PORT, IPv4, [IPv6] or host name, port {lo}..{hi}, e.g. udp://" TRK_SSL_GROUP ":" STR(TRK_SSL_PORT) " (the league's vision group)",
      .group = G_OUTPUTS, .help = "send SSL-Vision packets (RoboCup Small Size League: detection frames with balls and robots in field mm, and geometry) to HOST:PORT, unicast or multicast; the objects need a calibration in mm, cm or m (README, \"SSL-Vision\")" },
    { "camera-id", 0, "N", INT(ssl_camera_id), .lo = 0, .hi = 255, .def = "0",
      .form = "N ({lo}..{hi}), e.g. 0", .group = G_OUTPUTS, .help = "the camera_id of --ssl detection frames" },
    { "ssl-ball", 0, "NAME", TEXT(ssl_ball), .lo = 1, .hi = TRK_NAME_MAX - 1, .form = "NAME, an object's name",
      .group = G_OUTPUTS, .help = "the object whose listed blobs (largest first; its centroid when it lists none) are --ssl's balls (default: the object named ball, if any)" },
    { "ssl-field", 0, "LxW", PARSE(parse_ssl_field), .lo = 1, .hi = 100000, .def = STR(TRK_SSL_FIELD_LENGTH) "x" STR(TRK_SSL_FIELD_WIDTH),
      .def_note = " mm, Division B", .form = "LxW millimetres ({lo}..{hi}), e.g. 12000x9000",
      .group = G_OUTPUTS, .help = "the field's length and width in --ssl geometry packets (goal " STR(TRK_SSL_GOAL_WIDTH) "x" STR(TRK_SSL_GOAL_DEPTH) ", boundary " STR(TRK_SSL_BOUNDARY_WIDTH) " mm)" },
    { "ssl-geometry-every", 0, "N", INT(ssl_geometry_every), .lo = 0, .hi = 1000000, .def = STR(TRK_SSL_GEOMETRY_EVERY),
      .form = "N frames ({lo}..{hi}), e.g. 120", .group = G_OUTPUTS, .help = "send a --ssl geometry packet on the first frame and every N frames (0 = never)" },
    { "help", 'h', NULL, .type = T_HELP, .group = G_OPS, .help = "show this help and exit" },
    { "version", 'V', NULL, .type = T_VERSION, .group = G_OPS, .help = "show the version and exit" },
};
// clang-format on
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

/* Every option is listed under a group (see enum opt_group). */
static void check_groups(void)
{
    for (size_t i = 0; i < N_OPTS; i++)
        TRK_ASSERT(opts[i].group != G_NONE);
}

/* getopt's val for option i: its short name, else 256 + i. */
static int opt_val(size_t i)
{
    return opts[i].short_name ? opts[i].short_name : 256 + (int)i;
}

static const struct opt *find_opt(int val)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (opt_val(i) == val) return &opts[i];
    return NULL;
}

/* text with {lo} and {hi} replaced by o's bounds. */
static void put_text(FILE *f, const char *text, const struct opt *o)
{
    for (const char *p = text; *p; p++) {
        if (!strncmp(p, "{lo}", 4) || !strncmp(p, "{hi}", 4)) {
            fprintf(f, "%g", p[1] == 'l' ? o->lo : o->hi);
            p += 3;
        } else {
            fputc(*p, f);
        }
    }
}

/* "--size WxH, e.g. 1280x720 (each 16..16384)": the option and its form. */
static void print_form(FILE *err, const struct opt *o)
{
    fprintf(err, "expected --%s ", o->name);
    put_text(err, o->form ? o->form : o->arg, o);
    fprintf(err, " (see --help)\n");
}

bool trk_cli_option_synopsis(size_t i, char *buf, size_t len)
{
    if (i >= N_OPTS) return false;
    const struct opt *o = &opts[i];
    int n = o->short_name ? snprintf(buf, len, "-%c, --%s", o->short_name, o->name)
                          : snprintf(buf, len, "--%s", o->name);
    if (o->arg && n >= 0 && (size_t)n < len) snprintf(buf + n, len - n, " %s", o->arg);
    return true;
}

/* What --help and the man page say besides the options. */
static const char intro[] =
    "Real-time colour-object tracking: frames from a V4L2 camera, a video file or the\n"
    "built-in demo scene, results as NDJSON and over WebSocket to the web UI\n"
    "(http://127.0.0.1:8080/).\n";

static const struct {
    const char *cmd, *what;
} examples[] = {
    { "trackd", "demo scene, web UI on :8080" },
    { "trackd --list-devices", "the cameras on this machine" },
    { "trackd --device /dev/video0 --objects objs.json", "track a camera" },
    { "trackd --input clip.mp4 --objects objs.json", "track a file at its frame rate" },
    { "trackd -i clip.mp4 -c objs.json -o out.ndjson --fast --no-server", "" },
    { "trackd --check-config objs.json", "validate an objects file" },
};

static const struct {
    int code;
    const char *what;
} exit_codes[] = {
    { TRK_EX_OK, "done" },
    { TRK_EX_DIFFERS, "--verify found a difference" },
    { TRK_EX_USAGE, "usage error" },
    { TRK_EX_DATAERR, "--replay bundle damaged" },
    { TRK_EX_NOINPUT, "input cannot be used" },
    { TRK_EX_UNAVAILABLE, "backend or server unavailable" },
    { TRK_EX_SOFTWARE, "internal error" },
    { TRK_EX_IOERR, "results lost writing --output" },
    { TRK_EX_CONFIG, "configuration error" },
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* text with {lo} and {hi} expanded (put_text) and, for help, " (default
 * DEF NOTE)" after it when o has a value and a default: what --help and the
 * man page say of o. Allocated; NULL when out of memory. */
static char *expand(const char *text, const struct opt *o, bool with_default)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    put_text(m, text, o);
    if (with_default && o->arg && o->def)
        fprintf(m, " (default %s%s)", o->def, o->def_note ? o->def_note : "");
    if (fclose(m)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* text's words from column col on, wrapped before column width, each
 * further line indented to indent; a word longer than a line gets one of its
 * own. Returns the column after the last word. */
static int put_wrapped(FILE *out, const char *text, int col, int indent, int width)
{
    bool first = true;
    for (const char *p = text ? text : "";;) {
        p += strspn(p, " \n");
        int n = (int)strcspn(p, " \n");
        if (!n) return col;
        if (col + n + !first > width && col > indent)
            col = fprintf(out, "\n%*s", indent, "") - 1;
        else if (!first)
            col += fprintf(out, " ");
        col += fprintf(out, "%.*s", n, p);
        p += n;
        first = false;
    }
}

/* The columns --help fills: a terminal's width (80 when out is not a
 * terminal, as when piped to a pager or a file), kept to 40..100 so that
 * lines stay readable on a wide screen. */
static int help_width(FILE *out)
{
    struct winsize ws;
    int fd = fileno(out), w = 80;
    if (fd >= 0 && isatty(fd) && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0) w = ws.ws_col;
    return w < 40 ? 40 : w > 100 ? 100 : w;
}

void trk_cli_usage(FILE *out)
{
    trk_cli_usage_width(out, help_width(out));
}

void trk_cli_usage_width(FILE *out, int width)
{
    /* Help text in a column of its own where that leaves room for it, else
     * under its option. */
    const int help_col = width >= 72 ? 30 : 6, ex_col = 50;
    fprintf(out, "Usage: trackd [OPTION]...\n");
    put_wrapped(out, intro, 0, 0, width);
    fprintf(out, "\n\nExamples:\n");
    for (size_t i = 0; i < N_OF(examples); i++) {
        /* A command too long for the line goes on with a shell's "\\". */
        int col = fprintf(out, " ");
        for (const char *p = examples[i].cmd; *p;) {
            int n = (int)strcspn(p, " ");
            if (col + 1 + n + 2 > width && col > 8) col = fprintf(out, " \\\n   ") - 3;
            col += fprintf(out, " %.*s", n, p);
            p += n + (p[n] == ' ');
        }
        if (*examples[i].what && col < ex_col && ex_col + (int)strlen(examples[i].what) <= width)
            col += fprintf(out, "%*s", ex_col - col, "");
        else if (*examples[i].what)
            col = fprintf(out, "\n%*s", 6, "") - 1;
        put_wrapped(out, examples[i].what, col, col, width);
        fputc('\n', out);
    }
    fprintf(out, "\nOptions:\n");
    check_groups();
    for (int g = G_INPUT; g < N_GROUPS; g++) {
        fprintf(out, "\n%s:\n", group_titles[g]);
        for (size_t i = 0; i < N_OPTS; i++) {
            const struct opt *o = &opts[i];
            if (o->group != (enum opt_group)g) continue;
            char syn[64];
            trk_cli_option_synopsis(i, syn, sizeof(syn));
            /* Long-only options line up with the long names. */
            int col = fprintf(out, "  %s%s", o->short_name ? "" : "    ", syn);
            if (col + 1 <= help_col)
                col += fprintf(out, "%*s", help_col - col, "");
            else
                col = fprintf(out, "\n%*s", help_col, "") - 1;
            char *help = expand(o->help, o, true);
            put_wrapped(out, help, col, help_col, width);
            free(help);
            fputc('\n', out);
        }
    }
    /* The statuses as one paragraph. */
    char statuses[400] = "Exit status:";
    for (size_t i = 0, n = strlen(statuses); i < N_OF(exit_codes) && n < sizeof(statuses); i++)
        n += (size_t)snprintf(statuses + n, sizeof(statuses) - n, " %d %s%s", exit_codes[i].code,
                              exit_codes[i].what, i + 1 < N_OF(exit_codes) ? "," : ".");
    fputc('\n', out);
    put_wrapped(out, statuses, 0, 0, width);
    fputc('\n', out);
}

/* text for roff: {lo}/{hi} expanded as put_text does, backslashes and
 * hyphens escaped (a bare '-' may be typeset as a hyphen that a copied
 * option name does not survive), a leading '.' or '\'' kept literal. */
static void put_roff(FILE *f, const char *text, const struct opt *o)
{
    char *buf = expand(text, o, false);
    for (size_t i = 0; buf && buf[i]; i++) {
        if (i == 0 && (buf[i] == '.' || buf[i] == '\'')) fputs("\\&", f);
        if (buf[i] == '-')
            fputs("\\-", f);
        else if (buf[i] == '\\')
            fputs("\\e", f);
        else
            fputc(buf[i], f);
    }
    free(buf);
}

/* A paragraph of plain lines (intro): each line starts a roff text line. */
static void put_roff_lines(FILE *f, const char *text)
{
    char line[256];
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        put_roff(f, line, NULL);
        fputc('\n', f);
        p += n + (nl != NULL);
    }
}

void trk_cli_man(FILE *out)
{
    fprintf(out,
            ".\\\" Generated from daemon/cli.c by trk_docgen: edit the option table there.\n"
            ".TH TRACKD 1 \"\" \"trackd %s\" \"User Commands\"\n"
            ".SH NAME\n"
            "trackd \\- real\\-time colour\\-object tracking daemon\n"
            ".SH SYNOPSIS\n"
            ".B trackd\n"
            "[\\fIOPTION\\fR]...\n"
            ".SH DESCRIPTION\n",
            TRK_VERSION);
    put_roff_lines(out, intro);
    fprintf(out, ".PP\n"
                 "The objects file is described in\n"
                 ".IR /usr/share/doc/trackd/OBJECTS.md ,\n"
                 "the messages (WebSocket, NDJSON, MQTT, UDP, OSC) and HTTP endpoints in\n"
                 ".IR /usr/share/doc/trackd/PROTOCOL.md .\n"
                 ".SH OPTIONS\n");
    check_groups();
    for (int g = G_INPUT; g < N_GROUPS; g++) {
        fprintf(out, ".SS \"%s\"\n", group_titles[g]);
        for (size_t i = 0; i < N_OPTS; i++) {
            const struct opt *o = &opts[i];
            if (o->group != (enum opt_group)g) continue;
            fprintf(out, ".TP\n");
            if (o->short_name) fprintf(out, "\\fB\\-%c\\fR, ", o->short_name);
            fprintf(out, "\\fB");
            put_roff(out, "--", NULL);
            put_roff(out, o->name, NULL);
            fprintf(out, "\\fR");
            if (o->arg) {
                fprintf(out, " \\fI");
                put_roff(out, o->arg, NULL);
                fprintf(out, "\\fR");
            }
            fputc('\n', out);
            char *help = expand(o->help, o, true);
            put_roff(out, help, o);
            free(help);
            fputc('\n', out);
        }
    }
    fprintf(out, ".SH EXAMPLES\n");
    for (size_t i = 0; i < N_OF(examples); i++) {
        /* Not .TP: a short command ("trackd") would share its line. */
        fprintf(out, ".PP\n\\fB");
        put_roff(out, examples[i].cmd, NULL);
        fprintf(out, "\\fR\n.RS\n");
        put_roff(out,
                 *examples[i].what ? examples[i].what
                                   : "a file as fast as it decodes, "
                                     "results to out.ndjson, no server",
                 NULL);
        fprintf(out, "\n.RE\n");
    }
    fprintf(out, ".SH EXIT STATUS\n");
    for (size_t i = 0; i < N_OF(exit_codes); i++) {
        fprintf(out, ".TP\n.B %d\n", exit_codes[i].code);
        put_roff(out, exit_codes[i].what, NULL);
        fputc('\n', out);
    }
    fprintf(out, ".SH FILES\n"
                 ".TP\n.I /etc/trackd/\n"
                 "objects files of the systemd units (the Debian package's example: objects.json)\n"
                 ".TP\n.I /usr/share/trackd/web/\n"
                 "the web UI, found as ../share/trackd/web from the trackd binary "
                 "(\\fB\\-\\-web\\-root\\fR\n"
                 "overrides it)\n"
                 ".TP\n.I /usr/share/doc/trackd/\n"
                 "OBJECTS.md (the objects file), PROTOCOL.md (what trackd sends and accepts)\n"
                 ".TP\n.I /usr/share/doc/trackd/examples/\n"
                 "example objects files\n");
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
 * keep the address's colons apart from the port's); the port in lo..hi. */
/* ADDR:PORT into addr (len bytes) and *port_out; IPv6 in brackets. */
static bool split_listen(const char *a, const struct opt *o, char *addr, size_t len, int *port_out)
{
    const char *colon = strrchr(a, ':');
    const char *host = a, *host_end = colon;
    long port;
    if (*a == '[') {
        host = a + 1;
        host_end = strchr(host, ']');
        if (!host_end || host_end[1] != ':') return false;
        colon = host_end + 1;
    } else if (colon && memchr(a, ':', (size_t)(colon - a))) {
        return false; /* an IPv6 address without brackets */
    }
    if (!colon || host_end == host || (size_t)(host_end - host) >= len ||
        !parse_long(colon + 1, (long)o->lo, (long)o->hi, &port))
        return false;
    memcpy(addr, host, (size_t)(host_end - host));
    addr[host_end - host] = 0;
    *port_out = (int)port;
    return true;
}

static bool parse_listen(const char *a, const struct opt *o, struct trk_settings *st)
{
    return split_listen(a, o, st->listen_addr, sizeof(st->listen_addr), &st->listen_port);
}

static bool parse_metrics_listen(const char *a, const struct opt *o, struct trk_settings *st)
{
    st->metrics_listen =
        split_listen(a, o, st->metrics_addr, sizeof(st->metrics_addr), &st->metrics_port);
    return st->metrics_listen;
}

static bool parse_udp(const char *a, const struct opt *o, struct trk_settings *st)
{
    return (st->udp = split_listen(a, o, st->udp_host, sizeof(st->udp_host), &st->udp_port));
}

static bool parse_osc(const char *a, const struct opt *o, struct trk_settings *st)
{
    return (st->osc = split_listen(a, o, st->osc_host, sizeof(st->osc_host), &st->osc_port));
}

/* --ssl: HOST:PORT as --udp, "udp://" before it allowed. */
static bool parse_ssl(const char *a, const struct opt *o, struct trk_settings *st)
{
    if (!strncmp(a, "udp://", 6)) a += 6;
    return (st->ssl = split_listen(a, o, st->ssl_host, sizeof(st->ssl_host), &st->ssl_port));
}

/* WxH into *w, *h, each side in lo..hi. */
static bool parse_wxh(const char *a, const struct opt *o, int *w_out, int *h_out)
{
    int w, h, end = 0; /* nothing may follow: "1280x720p" is a typo, not 1280x720 */
    if (sscanf(a, "%dx%d%n", &w, &h, &end) != 2 || a[end] || w < o->lo || h < o->lo || w > o->hi ||
        h > o->hi)
        return false;
    *w_out = w;
    *h_out = h;
    return true;
}

static bool parse_size(const char *a, const struct opt *o, struct trk_settings *s)
{
    return parse_wxh(a, o, &s->width, &s->height);
}

/* A duration: seconds, with "s", "m" (minutes) or "ms" after it, in lo..hi
 * seconds, into the option's double field. */
static bool parse_seconds(const char *a, const struct opt *o, struct trk_settings *s)
{
    char *end;
    errno = 0;
    double v = strtod(a, &end);
    if (errno || end == a) return false;
    if (!strcmp(end, "m"))
        v *= 60;
    else if (!strcmp(end, "h"))
        v *= 3600;
    else if (!strcmp(end, "ms"))
        v /= 1000;
    else if (*end && strcmp(end, "s"))
        return false;
    if (!(v >= o->lo && v <= o->hi)) return false;
    *(double *)((char *)s + o->off) = v;
    return true;
}

/* --record-storage: enum trk_storage. */
static int parse_storage(const char *s)
{
    return !strcmp(s, "raw")    ? TRK_STORAGE_RAW
           : !strcmp(s, "ffv1") ? TRK_STORAGE_FFV1
           : !strcmp(s, "copy") ? TRK_STORAGE_COPY
                                : -1;
}

/* --rewind-on lost:K | health */
static bool parse_rewind_on(const char *a, const struct opt *o, struct trk_settings *s)
{
    long k;
    if (!strcmp(a, "health")) return (s->rewind_on_health = true);
    if (strncmp(a, "lost:", 5) || !parse_long(a + 5, (long)o->lo, (long)o->hi, &k)) return false;
    s->rewind_lost = (int)k;
    return true;
}

static bool parse_ssl_field(const char *a, const struct opt *o, struct trk_settings *s)
{
    return parse_wxh(a, o, &s->ssl_field_length, &s->ssl_field_width);
}

/* NAME=VALUE, appended; at most hi of them. */
static bool parse_control(const char *a, const struct opt *o, struct trk_settings *s)
{
    _Static_assert(sizeof(s->controls) / sizeof(s->controls[0]) >= TRK_CAMERA_MAX_CONTROLS,
                   "--control's bound fits the array");
    if (s->n_controls >= o->hi || !trk_cam_control_parse(a, &s->controls[s->n_controls]))
        return false;
    s->n_controls++;
    return true;
}

/* SIGMA in lo..hi; remembered as given, so that it overrides the file. */
static bool parse_prefilter(const char *a, const struct opt *o, struct trk_settings *s)
{
    if (!parse_double(a, o->lo, o->hi, &s->prefilter)) return false;
    s->prefilter_set = true;
    return true;
}

/* --name: the characters every output can carry as they are (an MQTT
 * topic level, an OSC address part, a systemd instance name). */
static bool parse_name(const char *a, const struct opt *o, struct trk_settings *s)
{
    size_t n = strlen(a);
    if (n < o->lo || n > o->hi ||
        strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-") != n)
        return false;
    memcpy(s->camera_name, a, n + 1);
    return true;
}

/* --mqtt: checked here so a typo is a usage error, not a runtime one. */
static bool parse_mqtt(const char *a, const struct opt *o, struct trk_settings *s)
{
    (void)o;
    struct trk_mqtt_url u;
    char why[160];
    if (!trk_mqtt_url_parse(a, &u, why, sizeof(why))) {
        fprintf(stderr, "trackd: --mqtt %s: %s\n", a, why);
        return false;
    }
    s->mqtt = a;
    return true;
}

/* Stores value a of option o (NULL for a value-less option: its .set).
 * False when a is not a valid value. */
static bool store(const struct opt *o, const char *a, struct trk_settings *s)
{
    void *f = (char *)s + o->off;
    long lv = 0;
    if (!o->arg) {
        lv = a ? strtol(a, NULL, 10) : o->set; /* a: a default */
        if (o->type == T_BOOL)
            *(bool *)f = lv != 0;
        else
            *(int *)f = (int)lv;
        return true;
    }
    switch (o->type) {
    case T_TEXT:
        if (o->hi > 0 && (strlen(a) < o->lo || strlen(a) > o->hi)) return false;
        *(const char **)f = a;
        return true;
    case T_INT:
        if (!parse_long(a, (long)o->lo, (long)o->hi, &lv)) return false;
        *(int *)f = (int)lv;
        return true;
    case T_COUNT:
        if (!parse_long(a, (long)o->lo, LONG_MAX, &lv)) return false;
        *(uint64_t *)f = (uint64_t)lv;
        return true;
    case T_REAL: return parse_double(a, o->lo, o->hi, (double *)f);
    case T_NAME: return (*(int *)f = o->parse_name(a)) >= 0;
    case T_PARSE: return o->parse(a, o, s);
    default: return false;
    }
}

/* Every field its table default; zero where there is none. */
static void set_defaults(struct trk_settings *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < N_OPTS; i++) {
        if (opts[i].def && !store(&opts[i], opts[i].def, s)) {
            /* A broken table, not a user error. */
            fprintf(stderr, "%s:%d: the default '%s' of --%s does not parse\n", __FILE__, __LINE__,
                    opts[i].def, opts[i].name);
            abort();
        }
    }
}

/* getopt_long's tables from ours. */
static void getopt_tables(struct option *longopts, char *shortopts)
{
    size_t ns = 0;
    shortopts[ns++] = ':'; /* a missing value is ':', not '?' */
    for (size_t i = 0; i < N_OPTS; i++) {
        longopts[i] = (struct option){ opts[i].name, opts[i].arg ? required_argument : no_argument,
                                       NULL, opt_val(i) };
        if (opts[i].short_name) {
            shortopts[ns++] = opts[i].short_name;
            if (opts[i].arg) shortopts[ns++] = ':';
        }
    }
    memset(&longopts[N_OPTS], 0, sizeof(longopts[0]));
    shortopts[ns] = 0;
}

/* Options that cannot go together, and what is left over. */
static int check_rest(int argc, char **argv, const struct trk_settings *s, FILE *err)
{
    const char *why = NULL;
    if (optind < argc) {
        fprintf(err, "trackd: unexpected argument '%s' (see --help)\n", argv[optind]);
        return TRK_EX_USAGE;
    }
    if (s->loop && !s->input)
        why = "--loop needs --input";
    else if (s->device && s->input)
        why = "give --input or --device, not both";
    else if (s->replay && (s->input || s->device))
        why = "--replay plays its own frames: give it without --input or --device";
    else if (s->verify && !s->replay)
        why = "--verify needs --replay";
    else if (s->paused && (!s->replay || s->verify || !s->server))
        why = !s->replay ? "--paused needs --replay"
                         : "--paused waits for the page: it needs the server, without --verify";
    else if ((s->record_max_mb || s->record_max_s > 0 || s->record_rotate) && !s->record)
        why = "--record-max, --record-max-time and --record-rotate need --record";
    else if (s->record_rotate && !s->record_max_mb && !(s->record_max_s > 0))
        why = "--record-rotate needs --record-max or --record-max-time";
    else if (s->record_rotate && s->record_storage == TRK_STORAGE_COPY)
        why = "--record-rotate needs --record-storage raw or ffv1 (a part of copy storage "
              "would need the whole input's hash again)";
    else if (s->rewind_s == 0 && (s->rewind_lost || s->rewind_on_health))
        why = "--rewind-on needs --rewind";
    else if ((s->list_formats || s->list_controls) && !s->device)
        why = "--list-formats and --list-controls need --device";
    else if (s->mqtt_ca && (!s->mqtt || strncmp(s->mqtt, "mqtts://", 8)))
        why = "--mqtt-ca needs an mqtts:// --mqtt URL";
    if (!why) return TRK_CLI_RUN;
    fprintf(err, "trackd: %s\n", why);
    return TRK_EX_USAGE;
}

int trk_cli_parse(int argc, char **argv, struct trk_settings *s, FILE *out, FILE *err)
{
    struct option longopts[N_OPTS + 1];
    char shortopts[2 * N_OPTS + 2];
    getopt_tables(longopts, shortopts);
    set_defaults(s);
    optind = 1;
    opterr = 0;
    int c, idx;
    bool stats_given = false;
    while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
        const struct opt *o = find_opt(c);
        stats_given |= o && o->off == offsetof(struct trk_settings, stats_interval);
        if (c == ':') {
            fprintf(err, "trackd: option %s needs a value: ", argv[optind - 1]);
            if (find_opt(optopt))
                print_form(err, find_opt(optopt));
            else
                fprintf(err, "see --help\n");
            return TRK_EX_USAGE;
        }
        if (!o) {
            fprintf(err, "trackd: unknown option %s (see --help)\n", argv[optind - 1]);
            return TRK_EX_USAGE;
        }
        if (o->type == T_HELP) {
            trk_cli_usage(out);
            return TRK_CLI_EXIT_OK;
        }
        if (o->type == T_VERSION) {
            fprintf(out, "trackd %s\n", TRK_VERSION);
            return TRK_CLI_EXIT_OK;
        }
        if (!store(o, o->arg ? optarg : NULL, s)) {
            fprintf(err, "trackd: invalid value '%s' for --%s: ", optarg, o->name);
            print_form(err, o);
            return TRK_EX_USAGE;
        }
    }
    /* Debugging wants the stats every second; a service's log, a line
     * every 10 s (--stats-interval says otherwise either way). */
    if (!stats_given && s->log_level == TRK_LOG_DEBUG) s->stats_interval = 1;
    int rc = check_rest(argc, argv, s, err);
    if (rc == TRK_CLI_RUN && !s->camera_name[0])
        trk_cli_default_camera_name(s, s->camera_name, sizeof(s->camera_name));
    return rc;
}

/* The file name of path without its folder and (strip_ext) extension. */
static void base_name(const char *path, bool strip_ext, char *out, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    const char *dot = strip_ext ? strrchr(b, '.') : NULL;
    if (dot && dot > b) n = (size_t)(dot - b);
    snprintf(out, len, "%.*s", (int)n, b);
}

void trk_cli_default_camera_name(const struct trk_settings *s, char *out, size_t len)
{
    char raw[PATH_MAX] = "demo";
    if (s->device) {
        base_name(s->device, false, raw, sizeof(raw));
        /* /dev/video0 given: the by-id link that points at it, a name that
         * stays with the camera whichever port or order it comes up in. */
        char real[PATH_MAX], link[PATH_MAX + 64], lreal[PATH_MAX];
        DIR *d = strstr(s->device, "/by-id/") ? NULL : opendir("/dev/v4l/by-id");
        if (d && realpath(s->device, real)) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                snprintf(link, sizeof(link), "/dev/v4l/by-id/%s", e->d_name);
                if (realpath(link, lreal) && !strcmp(lreal, real) &&
                    strstr(e->d_name, "-video-index0")) {
                    snprintf(raw, sizeof(raw), "%s", e->d_name);
                    break;
                }
            }
        }
        if (d) closedir(d);
        char *tail = strstr(raw, "-video-index0");
        if (tail && !tail[13]) *tail = 0;
    } else if (s->input) {
        base_name(s->input, true, raw, sizeof(raw));
    }
    size_t o = 0;
    for (const char *p = raw; *p && o + 1 < len && o < TRK_CAMERA_NAME_MAX; p++)
        out[o++] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p)
                       ? *p
                       : '_';
    out[o] = 0;
    if (!o) snprintf(out, len, "camera");
}

void trk_cli_warn(const struct trk_settings *s)
{
    /* Legal combinations that would silently do nothing. */
    if (s->input && s->width) log_warn("--size is ignored with --input: a file keeps its own size");
    if (s->input && s->fps)
        log_warn("--fps is ignored with --input: a file plays at its own rate (--fast: as fast "
                 "as it can)");
    if (!s->device && (s->cam_format || s->n_controls || s->cam_io))
        log_warn("--format, --camera-io and --control are ignored without --device: they set up "
                 "cameras");
    if (!s->input && !s->device && s->hwdec != TRK_HWDEC_AUTO)
        log_warn("--hwdec is ignored for the demo scene: it draws its frames, nothing is decoded");
    if (!s->udp && !s->ssl && (s->udp_iface || s->udp_ttl > 1))
        log_warn("--udp-ttl and --udp-iface are ignored without --udp or --ssl");
    if (!s->ssl &&
        (s->ssl_ball || s->ssl_camera_id || s->ssl_field_length != TRK_SSL_FIELD_LENGTH ||
         s->ssl_field_width != TRK_SSL_FIELD_WIDTH ||
         s->ssl_geometry_every != TRK_SSL_GEOMETRY_EVERY))
        log_warn("--camera-id, --ssl-ball, --ssl-field and --ssl-geometry-every are ignored "
                 "without --ssl");
    if (!s->mqtt && s->mqtt_max_age != TRK_MQTT_MAX_AGE_S)
        log_warn("--mqtt-max-age is ignored without --mqtt");
    if (!s->server && !s->output && !s->udp && !s->osc && !s->ssl && !s->mqtt && !s->verify &&
        !s->record)
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
