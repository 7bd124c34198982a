/* The one logger (base/log_hook.h): lines reach the installed hook with the
 * level, tag and error text; the threshold filters before formatting; the
 * log_once flags log again after a reset; NULL restores the stderr default. */
#include <errno.h>
#include <string.h>

#define LOG_TAG "test"
#include "../check.h"
#include "backend.h"
#include "log_hook.h"

static int n_lines;
static enum trk_log_level last_level;
static char last_tag[32], last_line[2048];

static void capture(enum trk_log_level level, const char *tag, const char *line)
{
    n_lines++;
    last_level = level;
    snprintf(last_tag, sizeof(last_tag), "%s", tag);
    snprintf(last_line, sizeof(last_line), "%s", line);
}

/* Counts how often the formatter ran: filtered levels must not format. */
static int formatted;
static int count_format(void)
{
    return ++formatted;
}

int main(void)
{
    trk_log_set_hook(capture, TRK_LOG_INFO);

    log_info("frame %d", 7);
    CHECK(n_lines == 1 && last_level == TRK_LOG_INFO);
    CHECK(!strcmp(last_tag, "test") && !strcmp(last_line, "frame 7"));

    /* Error codes in all three spellings get the same text. */
    log_error_err(ENODEV, "open");
    CHECK(last_level == TRK_LOG_ERROR && !strcmp(last_line, "open: No such device"));
    log_warn_err(-ENODEV, "open");
    CHECK(last_level == TRK_LOG_WARN && !strcmp(last_line, "open: No such device"));
    log_error_err(TRK_ETOOBIG, "frame");
    CHECKF(!strncmp(last_line, "frame: ", 7) && !strcmp(last_line + 7, trk_strerror(TRK_ETOOBIG)),
           "%s", last_line);

    /* Above the threshold: not passed on, arguments not even evaluated. */
    int before = n_lines;
    log_debug("%d", count_format());
    CHECK(n_lines == before && formatted == 0);
    CHECK(!trk_log_enabled(TRK_LOG_DEBUG) && trk_log_enabled(TRK_LOG_INFO));
    trk_log_set_hook(capture, TRK_LOG_DEBUG);
    log_debug("%d", count_format());
    CHECK(n_lines == before + 1 && formatted == 1 && last_level == TRK_LOG_DEBUG);
    trk_log_set_hook(capture, TRK_LOG_ERROR);
    log_warn("quiet");
    trk_log_write(TRK_LOG_WARN, "cuda", 0, "quiet too"); /* direct calls filter too */
    CHECK(n_lines == before + 1);
    trk_log_set_hook(capture, TRK_LOG_INFO);

    /* Called directly (as the CUDA backend does) with its own tag. */
    trk_log_write(TRK_LOG_ERROR, "cuda", 0, "cudaMalloc failed at %s:%d", "x.cu", 3);
    CHECK(!strcmp(last_tag, "cuda") && !strcmp(last_line, "cudaMalloc failed at x.cu:3"));

    /* Over-long lines are cut, never overrun. */
    char big[3000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_error_err(ENODEV, "%s", big);
    CHECK(strlen(last_line) > 900 && strlen(last_line) < 1024);

    /* Once per episode: a second failure is silent until the flag resets. */
    _Atomic bool flag = false;
    before = n_lines;
    for (int i = 0; i < 3; i++)
        log_once(flag, TRK_LOG_ERROR, 0, "failed %d", i);
    CHECK(n_lines == before + 1 && !strcmp(last_line, "failed 0"));
    trk_log_once_reset(flag);
    log_once(flag, TRK_LOG_ERROR, 0, "failed again");
    CHECK(n_lines == before + 2 && !strcmp(last_line, "failed again"));

    CHECK(!strcmp(trk_log_level_name(TRK_LOG_WARN), "warn"));

    /* NULL: back to stderr, the hook no longer called. */
    trk_log_set_hook(NULL, TRK_LOG_INFO);
    before = n_lines;
    log_info("to stderr");
    CHECK(n_lines == before);
    return check_exit("log_hook");
}
