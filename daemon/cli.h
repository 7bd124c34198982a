/* Command line: every option (name, short name, value form, default, bounds,
 * help) in one table (cli.c); the parser, its error messages and --help are
 * generated from it, and a test holds README.md's options table to it. */
#ifndef TRK_DAEMON_CLI_H
#define TRK_DAEMON_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "exit.h"

/* Longest --name (bytes): a topic level, an OSC address part. */
#define TRK_CAMERA_NAME_MAX 64
#include "objects.h" /* struct trk_camera_control */

/* --record-storage (docs/RECORDING.md). */
enum trk_storage { TRK_STORAGE_RAW = 0, TRK_STORAGE_FFV1, TRK_STORAGE_COPY };

struct trk_settings {
    const char *input;   /* file path; NULL = built-in demo scene */
    const char *objects; /* objects JSON; NULL = demo objects (demo) or none */
    const char *output;  /* NDJSON path, "-" = stdout, NULL = none */
    bool fast, loop;
    int hwdec;        /* --hwdec: enum trk_hwdec (daemon/source/hwdec.h) */
    bool decode_only; /* --decode-only: time the decoder alone, no tracking */
    int spin;         /* --spin: enum trk_spin (pipeline.h) */
    int spin_slots;   /* --spin-slots: 0 = online CPUs / 4 (daemon/spin.h) */
    int rt_priority;  /* --rt-priority: SCHED_FIFO priority, 0 = off */
    uint64_t frames;  /* 0 = all */
    char listen_addr[64];
    int listen_port;
    bool server;
    int max_clients; /* connections at once, HTTP and WebSocket */
    /* --metrics-listen: a second server with /metrics and /healthz only */
    bool metrics_listen;
    char metrics_addr[64];
    int metrics_port;
    /* --web-root; NULL = found at start by trk_cli_find_web_root */
    const char *web_root;
    int backend; /* enum trk_backend_kind */
    int threads; /* 0 = cores */
    /* --prefilter: the pre-filter's sigma, overriding the objects file's
     * "prefilter" when prefilter_set (gpu/prefilter.h; 0 = off). */
    double prefilter;
    bool prefilter_set;
    /* --mode (enum trk_track_mode) and --full-every (daemon/tracker.h). */
    int track_mode;
    int full_every;
    /* --size / --fps; 0 = not given: the demo scene's TRK_DEMO_* (source.h),
     * a camera's TRK_V4L2_* size (v4l2.h) at its own rate */
    int width, height;
    double fps;
    const char *device; /* V4L2 camera; NULL = none */
    int cam_format;     /* enum trk_cam_format */
    int cam_io;         /* enum trk_cam_io */
    struct trk_camera_control controls[TRK_CAMERA_MAX_CONTROLS];
    int n_controls;
    bool list_devices, list_formats, list_controls;
    bool preview;
    int preview_width;
    double preview_fps;
    int preview_quality;
    double snapshot_rate;      /* /snapshot.jpg requests a second per client address; 0 = any */
    int focus_every;           /* the focus check measures 1 frame in N; 0 = off */
    double focus_warn;         /* focus lost below this fraction of the baseline */
    double focus_baseline;     /* > 0: the baseline sharpness; 0 = learnt */
    double stats_interval;     /* --stats-interval; not given: 10, 1 at --log-level debug */
    int log_level;             /* enum trk_log_level */
    int progress;              /* -1 auto (stderr is a terminal), 0 off, 1 on */
    const char *save_objects;  /* save target; NULL = objects, else ./objects.json */
    const char *control_token; /* NULL = none on loopback, generated elsewhere */
    const char *check_config;  /* --check-config: validate this objects file, exit */
    /* --name, else derived (trk_cli_parse): the camera's name in hello and
     * frame messages, MQTT topics and datagrams; always set after a
     * successful parse, 1..TRK_CAMERA_NAME_MAX of [A-Za-z0-9._-]. */
    char camera_name[TRK_CAMERA_NAME_MAX + 1];
    const char *mqtt;    /* --mqtt URL (daemon/out/mqtt.h), NULL = none */
    const char *mqtt_ca; /* --mqtt-ca FILE, NULL = the system's CAs */
    double mqtt_max_age; /* --mqtt-max-age SECONDS (trk_mqtt_cfg.max_age) */
    int predict;         /* --predict: 1 send (positions moved to each hand-over), 0 off */
    /* --udp HOST:PORT (daemon/out/udp.h), --udp-ttl, --udp-iface (NULL: the
     * route's); --osc HOST:PORT (daemon/out/osc.h) */
    bool udp, osc;
    char udp_host[256], osc_host[256];
    int udp_port, udp_ttl, osc_port;
    const char *udp_iface;
    /* --record DIR (daemon/out/record.h), --record-max MB (0 = no limit);
     * --replay DIR (daemon/source/replay.c), --verify and --paused (the
     * replay starts paused and pauses at its end). */
    const char *record;
    uint64_t record_max_mb;
    /* --record-max-time SECONDS (0 = no limit), --record-rotate N (0 = stop
     * at a limit, else parts kept). */
    double record_max_s;
    uint64_t record_rotate;
    const char *replay;
    bool verify;
    bool paused;
    /* --rewind SECONDS (0 = off; daemon/out/rewind.h), --rewind-dir,
     * --rewind-max-mem MB, --rewind-gap SECONDS, --rewind-on lost:K
     * (rewind_lost K, 0 = no) and health. */
    int record_storage; /* --record-storage: enum trk_storage */
    double rewind_s, rewind_gap_s;
    const char *rewind_dir;
    uint64_t rewind_max_mb;
    int rewind_lost;
    bool rewind_on_health;
    /* --ssl [udp://]HOST:PORT (daemon/out/ssl.h) with --camera-id,
     * --ssl-ball (NULL: the object named "ball", if any), --ssl-field
     * (mm) and --ssl-geometry-every (frames; 0 = never) */
    bool ssl;
    char ssl_host[256];
    int ssl_port, ssl_camera_id, ssl_field_length, ssl_field_width, ssl_geometry_every;
    const char *ssl_ball;
};

enum { TRK_CLI_RUN = 0, TRK_CLI_EXIT_OK = 1 };

/* The default camera name (no --name) into out (len > TRK_CAMERA_NAME_MAX):
 * "demo" for the demo scene; for --device, the camera's /dev/v4l/by-id
 * name (the one given, or the link there that points at the device given)
 * without its "-video-index0" ending, else the device's file name; for
 * --input, the file's name without folder and extension. Every byte
 * outside [A-Za-z0-9._-] becomes '_', cut to TRK_CAMERA_NAME_MAX; an empty
 * result is "camera". */
void trk_cli_default_camera_name(const struct trk_settings *s, char *out, size_t len);

/* Fills s from argv. Returns TRK_CLI_RUN, TRK_CLI_EXIT_OK (after --help or
 * --version were printed to out), or TRK_EX_USAGE after printing a message
 * to err. */
int trk_cli_parse(int argc, char **argv, struct trk_settings *s, FILE *out, FILE *err);
/* --help: the intro, examples, the options by group and the exit statuses,
 * wrapped to out's terminal width (80 when out is not a terminal, 40..100
 * at most) or, for trk_cli_usage_width, to width columns. */
void trk_cli_usage(FILE *out);
void trk_cli_usage_width(FILE *out, int width);

/* The man page trackd.1 (roff, man macros) from the same table, intro,
 * examples and exit statuses as --help; the build writes it with
 * trk_docgen (daemon/docgen.c). */
void trk_cli_man(FILE *out);

/* Option i of the table as --help and README.md's options table write it
 * ("-i, --input FILE", "--fast") into buf; false past the last option. */
bool trk_cli_option_synopsis(size_t i, char *buf, size_t len);

/* Logs a warning for each option that the others make pointless (--size
 * with --input, --no-server without --output, ...). */
void trk_cli_warn(const struct trk_settings *s);

/* Sets s->web_root, pointing into buf when found, when --web-root was not
 * given: ../share/trackd/web from the running binary's folder (an installed
 * trackd, also after its prefix was moved), else the source tree's web/ (a
 * binary in its build tree); neither: a warning and NULL (the server then
 * serves no files). A given --web-root without index.html is an error:
 * logged, returns TRK_EX_NOINPUT. Otherwise 0. */
int trk_cli_find_web_root(struct trk_settings *s, char *buf, size_t len);

#endif
