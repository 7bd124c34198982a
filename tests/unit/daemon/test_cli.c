/* daemon/cli.c's option table against what users read: every option in
 * --help, in the built man page and in README.md's options table (same
 * synopsis), no README row for
 * an option that is gone, the documented defaults, and the table's bounds
 * and forms at work in the parser. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "cli.h"
#include "out/mqtt.h"
#include "log.h"

/* The whole of path, NUL-terminated (NULL when unreadable). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len + 4096 + 1 > cap && !(buf = realloc(buf, cap = 2 * cap + 4096 + 1))) break;
        n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
    } while (n > 0);
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

/* --help as written to a file (width 0) or to width columns. */
static char *usage_text(int width)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
    if (width)
        trk_cli_usage_width(f, width);
    else
        trk_cli_usage(f);
    fclose(f);
    return text;
}

/* True when syn is one of the table's synopses. */
static bool in_table(const char *syn, size_t len)
{
    char buf[128];
    for (size_t i = 0; trk_cli_option_synopsis(i, buf, sizeof(buf)); i++)
        if (strlen(buf) == len && !memcmp(buf, syn, len)) return true;
    return false;
}

static void test_docs(const char *readme_path)
{
    char *readme = slurp(readme_path);
    CHECKF(readme, "cannot read %s", readme_path);
    if (!readme) return;
    char *usage = usage_text(0);
    char syn[128], row[160], line[160];
    size_t i;
    for (i = 0; trk_cli_option_synopsis(i, syn, sizeof(syn)); i++) {
        /* The README row names the option exactly as --help does. */
        snprintf(row, sizeof(row), "\n| `%s` | ", syn);
        CHECKF(strstr(readme, row), "README.md has no options row starting with `%s`", syn);
        /* --help: the synopsis starts a line, long-only options indented to
         * line up with the long names of those with a short one; its help
         * after it or, for a long one, on the next line. */
        int n = snprintf(line, sizeof(line), "\n  %s%s ", syn[1] == '-' ? "    " : "", syn);
        bool found = strstr(usage, line);
        line[n - 1] = '\n';
        CHECKF(found || strstr(usage, line), "--help has no line for %s", syn);
    }
    CHECK(i > 20);
    /* And no README row for an option the table does not have. */
    for (const char *p = strstr(readme, "\n| `-"); p; p = strstr(p + 1, "\n| `-")) {
        const char *start = p + 4, *end = strchr(start, '`');
        CHECKF(end && in_table(start, (size_t)(end - start)), "README.md documents %.*s",
               end ? (int)(end - start) : 10, start);
    }
    free(usage);
    free(readme);
}

/* Each group of --help and the man page, in order, with one option that
 * belongs in it. */
static const struct {
    const char *title, *option;
} group_checks[] = {
    { "Input (where frames come from)", "-d, --device DEV" },
    { "Objects (what to track)", "-c, --objects FILE" },
    { "Tracking (how objects are searched for)", "--mode MODE" },
    { "Outputs (where results go)", "--mqtt URL" },
    { "Web page and WebSocket", "--listen ADDR:PORT" },
    { "Operations (logs, metrics, information)", "--stats-interval SECONDS" },
    { "Performance (backend, decoding, threads)", "--backend NAME" },
};
#define N_GROUP_CHECKS (sizeof(group_checks) / sizeof(group_checks[0]))

/* --help at a terminal's width: no line past it (down to 60 columns, where
 * every word fits), the groups in order, each option under its own. Without
 * a terminal: 80 columns. */
static void test_help_layout(void)
{
    static const int widths[] = { 0, 60, 72, 80, 100 };
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
        int width = widths[w] ? widths[w] : 80;
        char *usage = usage_text(widths[w]);
        if (!usage) return;
        int longest = 0, lines = 0;
        for (const char *p = usage; *p; lines++) {
            int n = (int)strcspn(p, "\n");
            if (n > longest) longest = n;
            p += n + (p[n] == '\n');
        }
        CHECKF(longest <= width, "--help at %d columns has a line of %d", width, longest);
        CHECKF(lines > 60, "--help at %d columns: %d lines", width, lines);
        const char *g = strstr(usage, "\nOptions:\n");
        CHECK(g);
        for (size_t k = 0; g && k < N_GROUP_CHECKS; k++) {
            char head[96], opt[96];
            snprintf(head, sizeof(head), "\n%s:\n", group_checks[k].title);
            const char *at = strstr(g, head), *next = at ? strstr(at + 1, ":\n\n") : NULL;
            CHECKF(at, "--help at %d columns: no %s after the last group", width, head);
            if (!at) break;
            snprintf(opt, sizeof(opt), "\n  %s%s", group_checks[k].option[1] == '-' ? "    " : "",
                     group_checks[k].option);
            const char *o = strstr(at, opt);
            CHECKF(o && (!next || o < next), "--help: %s is not under %s", group_checks[k].option,
                   group_checks[k].title);
            g = at;
        }
        free(usage);
    }
    /* A command too long for the line goes on after a backslash. */
    char *narrow = usage_text(60);
    CHECK(narrow && strstr(narrow, " --fast \\\n    --no-server\n"));
    free(narrow);
}

/* The built man page (roff) as plain text: font changes dropped, escaped
 * hyphens and "\&" made plain, so an option reads as in --help. */
static char *man_plain(const char *man_path)
{
    char *roff = slurp(man_path);
    CHECKF(roff, "cannot read %s", man_path);
    if (!roff) return NULL;
    char *out = malloc(strlen(roff) + 1), *o = out;
    CHECK(out);
    for (const char *p = roff; out && *p;) {
        if (!strncmp(p, "\\f", 2) && p[2]) {
            p += 3;
        } else if (!strncmp(p, "\\-", 2)) {
            *o++ = '-';
            p += 2;
        } else if (!strncmp(p, "\\&", 2)) {
            p += 2;
        } else {
            *o++ = *p++;
        }
    }
    if (out) *o = 0;
    free(roff);
    return out;
}

/* Every option has its own tagged paragraph (.TP, then the synopsis as
 * --help writes it, alone on its line), with its help text after it. */
static void test_man(const char *man_path)
{
    char *man = man_plain(man_path);
    if (!man) return;
    char syn[128], tag[160];
    size_t i;
    for (i = 0; trk_cli_option_synopsis(i, syn, sizeof(syn)); i++) {
        snprintf(tag, sizeof(tag), "\n.TP\n%s\n", syn);
        CHECKF(strstr(man, tag), "%s has no .TP paragraph for %s", man_path, syn);
    }
    CHECK(i > 20);
    CHECK(strstr(man, "\n.SH OPTIONS\n") && strstr(man, "\n.SH EXIT STATUS\n"));
    /* The groups of --help, in its order, and each option in its own. */
    const char *g = strstr(man, "\n.SH OPTIONS\n");
    for (size_t k = 0; g && k < N_GROUP_CHECKS; k++) {
        char ss[96];
        snprintf(ss, sizeof(ss), "\n.SS \"%s\"\n", group_checks[k].title);
        const char *at = strstr(g, ss), *next = at ? strstr(at + 1, "\n.SS ") : NULL;
        CHECKF(at, "%s has no section %s after the last", man_path, ss);
        if (!at) break;
        snprintf(tag, sizeof(tag), "\n.TP\n%s", group_checks[k].option);
        const char *o = strstr(at, tag);
        CHECKF(o && (!next || o < next), "%s: %s is not under %s", man_path, group_checks[k].option,
               group_checks[k].title);
        g = at;
    }
    /* The documents it names are installed there (packaging/deb). */
    CHECK(strstr(man, "/usr/share/doc/trackd/OBJECTS.md") &&
          strstr(man, "/usr/share/doc/trackd/PROTOCOL.md"));
    CHECK(strstr(man, "\n.TH TRACKD 1 \"\" \"trackd " TRK_VERSION "\""));
    free(man);
}

static int parse(struct trk_settings *s, char *err, size_t err_len, ...)
{
    char *argv[40] = { "trackd" };
    int argc = 1;
    va_list ap;
    va_start(ap, err_len);
    for (char *a; (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    FILE *ef = fmemopen(err, err_len, "w");
    int rc = trk_cli_parse(argc, argv, s, stdout, ef);
    fclose(ef);
    return rc;
}

/* What README.md and --help promise without options. */
static void test_defaults(void)
{
    struct trk_settings s;
    char err[256] = "";
    CHECK(parse(&s, err, sizeof(err), NULL) == TRK_CLI_RUN);
    CHECK(!strcmp(s.listen_addr, "127.0.0.1") && s.listen_port == 8080);
    CHECK(s.server && s.preview && !s.fast && !s.loop);
    CHECK(s.backend == TRK_BACKEND_AUTO && s.threads == 0 && s.cam_format == 0);
    CHECK(s.preview_width == 640 && s.preview_fps == 15 && s.preview_quality == 70);
    CHECK(s.stats_interval == 10 && s.log_level == TRK_LOG_INFO && s.progress == -1);
    /* Stats every second at debug level, unless --stats-interval says,
     * whichever comes first. */
    CHECK(parse(&s, err, sizeof(err), "--log-level", "debug", NULL) == TRK_CLI_RUN &&
          s.stats_interval == 1);
    CHECK(parse(&s, err, sizeof(err), "--log-level", "debug", "--stats-interval", "5", NULL) ==
              TRK_CLI_RUN &&
          s.stats_interval == 5);
    CHECK(parse(&s, err, sizeof(err), "--stats-interval", "0", "--log-level", "debug", NULL) ==
              TRK_CLI_RUN &&
          s.stats_interval == 0);
    CHECK(parse(&s, err, sizeof(err), "--stats-interval", "2.5", NULL) == TRK_CLI_RUN &&
          s.stats_interval == 2.5);
    /* No --size / --fps: each source's own default applies (main.c). */
    CHECK(s.width == 0 && s.height == 0 && s.fps == 0 && s.frames == 0);
    CHECK(!s.input && !s.objects && !s.output && !s.device && !s.web_root && !s.control_token);
}

static void test_values(void)
{
    struct trk_settings s;
    char err[256] = "";
    CHECK(parse(&s, err, sizeof(err), "--size", "320x240", "--fps", "12.5", "--progress",
                "--no-progress", "--no-server", "--listen", "[::1]:0", "--frames", "7",
                NULL) == TRK_CLI_RUN);
    CHECK(s.width == 320 && s.height == 240 && s.fps == 12.5 && s.progress == 0 && !s.server);
    CHECK(!strcmp(s.listen_addr, "::1") && s.listen_port == 0 && s.frames == 7);

    /* Bounds come from the table: inclusive at both ends. */
    CHECK(parse(&s, err, sizeof(err), "--preview-quality", "100", "--threads", "256", NULL) ==
              TRK_CLI_RUN &&
          s.preview_quality == 100 && s.threads == 256);
    CHECK(parse(&s, err, sizeof(err), "--preview-quality", "0", NULL) == TRK_EX_USAGE);
    CHECKF(!strcmp(err, "trackd: invalid value '0' for --preview-quality: expected "
                        "--preview-quality N (1..100), e.g. 70 (see --help)\n"),
           "%s", err);

    /* --control: at most 16, the 17th is refused with the count. */
    char *argv[40] = { "trackd" };
    int argc = 1;
    for (int i = 0; i < 17; i++) {
        argv[argc++] = "--control";
        argv[argc++] = "brightness=1";
    }
    FILE *ef = fmemopen(err, sizeof(err), "w");
    CHECK(trk_cli_parse(argc - 2, argv, &s, stdout, ef) == TRK_CLI_RUN && s.n_controls == 16);
    CHECK(trk_cli_parse(argc, argv, &s, stdout, ef) == TRK_EX_USAGE);
    fclose(ef);
    CHECKF(strstr(err, "(at most 16)"), "%s", err);
}

/* --name and the names derived without it: always set, always within the
 * characters every output carries as they are. */
static void test_camera_names(void)
{
    struct trk_settings s;
    char err[512];
    CHECK(parse(&s, err, sizeof(err), NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "demo");
    CHECK(parse(&s, err, sizeof(err), "--name", "front-door_2.a", NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "front-door_2.a");
    CHECK(parse(&s, err, sizeof(err), "-i", "/media/clips/Hall Way #3.final.mp4", NULL) ==
          TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "Hall_Way__3.final");
    CHECK(parse(&s, err, sizeof(err), "-i", "clip", NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "clip");
    CHECK(parse(&s, err, sizeof(err), "-i", ".hidden", NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, ".hidden");
    CHECK(parse(&s, err, sizeof(err), "-d", "/dev/v4l/by-id/usb-Cam_X_12-video-index0", NULL) ==
          TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "usb-Cam_X_12");
    CHECK(parse(&s, err, sizeof(err), "-d", "/dev/video-none-here", NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "video-none-here");
    CHECK(parse(&s, err, sizeof(err), "-i", "/x/\xc3\xa9t\xc3\xa9.mkv", NULL) == TRK_CLI_RUN);
    CHECK_STR(s.camera_name, "__t__");
    static char longname[200];
    memset(longname, 'n', sizeof(longname) - 1);
    CHECK(parse(&s, err, sizeof(err), "-i", longname, NULL) == TRK_CLI_RUN);
    CHECK(strlen(s.camera_name) == TRK_CAMERA_NAME_MAX);
    CHECK(parse(&s, err, sizeof(err), "--name", "a b", NULL) == TRK_EX_USAGE);
    CHECK(strstr(err, "A-Z a-z 0-9 . _ -"));
    CHECK(parse(&s, err, sizeof(err), "--name", "a/b", NULL) == TRK_EX_USAGE);
    CHECK(parse(&s, err, sizeof(err), "--name", "", NULL) == TRK_EX_USAGE);
}

/* --mqtt URLs: what each part becomes, and what is refused. */
static void test_mqtt_url(void)
{
    struct trk_mqtt_url u;
    char why[160];
    CHECK(trk_mqtt_url_parse("mqtt://broker", &u, why, sizeof(why)));
    CHECK(!u.tls && u.port == 1883 && !u.user[0] && !u.has_pass);
    CHECK_STR(u.host, "broker");
    CHECK_STR(u.prefix, "trackd");
    CHECK(trk_mqtt_url_parse("mqtts://us%40r:p%3Aw@[::1]:1234/site/hall", &u, why, sizeof(why)));
    CHECK(u.tls && u.port == 1234 && u.has_pass);
    CHECK_STR(u.host, "::1");
    CHECK_STR(u.user, "us@r");
    CHECK_STR(u.pass, "p:w");
    CHECK_STR(u.prefix, "site/hall");
    CHECK(trk_mqtt_url_parse("mqtts://h/", &u, why, sizeof(why)) && u.port == 8883);
    CHECK_STR(u.prefix, "trackd");
    CHECK(trk_mqtt_url_parse("mqtt://u:@h", &u, why, sizeof(why)) && u.has_pass && !u.pass[0]);
    const char *bad[] = { "tcp://h",        "mqtt://",       "mqtt://:1883",   "mqtt://h:",
                          "mqtt://h:65536", "mqtt://h:1x",   "mqtt://[::1",    "mqtt://[::1]x",
                          "mqtt://h/a/#",   "mqtt://h/+",    "mqtt://h//a",    "mqtt://h/a/",
                          "mqtt://@h",      "mqtt://u:%4@h", "mqtt://u%00:p@h" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECKF(!trk_mqtt_url_parse(bad[i], &u, why, sizeof(why)) && why[0], "%s", bad[i]);
    char t[64];
    CHECK(trk_mqtt_topic_level("a/b+c#d%e f\x01", t, sizeof(t)) == 22);
    CHECK_STR(t, "a%2Fb%2Bc%23d%25e f%01");
    CHECK(trk_mqtt_topic_level("\xc3\xa9", t, sizeof(t)) == 2);         /* UTF-8 stays */
    CHECK(trk_mqtt_topic_level("///", t, 5) == 3 && !strcmp(t, "%2F")); /* cut, never mid-escape */
}

/* --record-max-time and --record-rotate: durations as --rewind's (h too),
 * bad values and a rotation without a limit refused with exit 64. */
static void test_record_limits(void)
{
    struct trk_settings s;
    char err[512] = "";
    CHECK(parse(&s, err, sizeof(err), "--record", "d", NULL) == TRK_CLI_RUN &&
          s.record_max_s == 0 && s.record_rotate == 0);
    CHECK(parse(&s, err, sizeof(err), "--record", "d", "--record-max-time", "10m",
                "--record-rotate", "2", NULL) == TRK_CLI_RUN &&
          s.record_max_s == 600 && s.record_rotate == 2);
    CHECK(parse(&s, err, sizeof(err), "--record", "d", "--record-max-time", "1h", NULL) ==
              TRK_CLI_RUN &&
          s.record_max_s == 3600);
    CHECK(parse(&s, err, sizeof(err), "--record", "d", "--record-max", "5", "--record-rotate", "0",
                NULL) == TRK_CLI_RUN &&
          s.record_rotate == 0 && s.record_max_mb == 5);
    static const char *const bad_time[] = { "0", "-5s", "10x", "", "soon", "0.5s" };
    for (size_t i = 0; i < sizeof(bad_time) / sizeof(*bad_time); i++) {
        CHECKF(parse(&s, err, sizeof(err), "--record", "d", "--record-max-time", bad_time[i],
                     NULL) == TRK_EX_USAGE,
               "--record-max-time %s", bad_time[i]);
        CHECKF(strstr(err, "invalid value") && strstr(err, "for --record-max-time: expected"), "%s",
               err);
    }
    static const char *const bad_rotate[] = { "-1", "two", "", "1.5" };
    for (size_t i = 0; i < sizeof(bad_rotate) / sizeof(*bad_rotate); i++) {
        CHECKF(parse(&s, err, sizeof(err), "--record", "d", "--record-max", "5", "--record-rotate",
                     bad_rotate[i], NULL) == TRK_EX_USAGE,
               "--record-rotate %s", bad_rotate[i]);
        CHECKF(strstr(err, "invalid value") &&
                   strstr(err, "for --record-rotate: expected --record-rotate N, a whole"),
               "%s", err);
    }
    CHECK(parse(&s, err, sizeof(err), "--record", "d", "--record-rotate", "2", NULL) ==
          TRK_EX_USAGE);
    CHECKF(strstr(err, "--record-rotate needs --record-max or --record-max-time"), "%s", err);
    CHECK(parse(&s, err, sizeof(err), "--record-max-time", "10s", NULL) == TRK_EX_USAGE);
    CHECKF(strstr(err, "need --record"), "%s", err);
    CHECK(parse(&s, err, sizeof(err), "--input", "x.mkv", "--record", "d", "--record-storage",
                "copy", "--record-max", "5", "--record-rotate", "2", NULL) == TRK_EX_USAGE);
    CHECKF(strstr(err, "--record-rotate needs --record-storage raw or ffv1"), "%s", err);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_cli README.md trackd.1\n");
        return 64;
    }
    test_docs(argv[1]);
    test_help_layout();
    test_man(argv[2]);
    test_defaults();
    test_values();
    test_record_limits();
    test_camera_names();
    test_mqtt_url();
    return check_exit("daemon_cli");
}
