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

static char *usage_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
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
    char *usage = usage_text();
    char syn[128], row[160], line[160];
    size_t i;
    for (i = 0; trk_cli_option_synopsis(i, syn, sizeof(syn)); i++) {
        /* The README row names the option exactly as --help does. */
        snprintf(row, sizeof(row), "\n| `%s` | ", syn);
        CHECKF(strstr(readme, row), "README.md has no options row starting with `%s`", syn);
        /* --help: the synopsis starts a line, long-only options indented to
         * line up with the long names of those with a short one. */
        snprintf(line, sizeof(line), "\n  %s%s ", syn[1] == '-' ? "    " : "", syn);
        CHECKF(strstr(usage, line), "--help has no line for %s", syn);
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
    CHECK(s.stats_interval == 1 && s.log_level == TRK_LOG_INFO && s.progress == -1);
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

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_cli README.md trackd.1\n");
        return 64;
    }
    test_docs(argv[1]);
    test_man(argv[2]);
    test_defaults();
    test_values();
    return check_exit("daemon_cli");
}
