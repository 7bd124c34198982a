/* Fuzz target for the fusion core (fuse/fuse.c): what any MQTT client that
 * may publish under the cameras' prefix can send to trackd-fuse.
 *
 * The input is messages, one per line: the first byte says the topic
 * ('f' frame, 's' status, 'c' config, anything else: skipped), the second
 * the camera (its name: that byte as a one-character string, so up to 256
 * cameras, over TRK_FUSE_MAX_CAMERAS), the rest is the payload. The monotonic
 * clock advances 7 ms a line, so epochs come due now and then; the wall
 * clock is 1e12 ms plus the same.
 *
 * Invariants (TRK_ASSERT: abort on violation, which the fuzzer reports):
 *   - every call returns one of its documented codes;
 *   - every world message built is a JSON object of type "frame" whose seq
 *     is one more than the last, with objects and markers arrays whose ids
 *     are >= 1 and unique within the message.
 *
 * Built with replay_main.c (tests/fuzz/protocol) for plain ctest, which
 * replays the corpus, and with clang -fsanitize=fuzzer (TRK_LIBFUZZER=ON).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuse.h"
#include "log_hook.h"
#include "trk_assert.h"
#include "trk_error.h"

static void quiet(enum trk_log_level level, const char *tag, const char *line)
{
    (void)level, (void)tag, (void)line;
}

static void check_ids(const json_t *list)
{
    TRK_ASSERT(json_is_array(list));
    size_t i, j;
    const json_t *o, *p;
    json_array_foreach(list, i, o)
    {
        json_int_t id = json_integer_value(json_object_get(o, "id"));
        TRK_ASSERT(id >= 1);
        json_array_foreach(list, j, p)
            TRK_ASSERT(j == i || json_integer_value(json_object_get(p, "id")) != id);
    }
}

static void emit(struct trk_fuse *f, struct trk_buf *b, uint64_t *seq)
{
    int rc = trk_fuse_emit(f, 1.7e12, b);
    TRK_ASSERT(rc == 0 || rc == 1 || rc == TRK_ENOMEM);
    if (rc != 1) return;
    json_error_t e;
    json_t *j = json_loadb(b->data, b->len, 0, &e);
    TRK_ASSERT(json_is_object(j));
    TRK_ASSERT(!strcmp(json_string_value(json_object_get(j, "type")), "frame"));
    TRK_ASSERT((uint64_t)json_integer_value(json_object_get(j, "seq")) == ++*seq);
    check_ids(json_object_get(j, "objects"));
    check_ids(json_object_get(j, "markers"));
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trk_log_set_hook(quiet, TRK_LOG_ERROR);
    struct trk_fuse_cfg cfg = { .gate = 50, .stale_ms = 500, .keep_ms = 1000, .name = "world" };
    struct trk_fuse *f = trk_fuse_create(&cfg);
    if (!f) return 0;
    struct trk_buf b = { 0 };
    uint64_t seq = 0;
    double now = 0;
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        now += 7;
        if (e - p >= 2) {
            char cam[2] = { p[1] ? p[1] : '0', 0 };
            const char *pl = p + 2;
            size_t n = (size_t)(e - pl);
            int rc = 0;
            if (p[0] == 'f')
                rc = trk_fuse_frame(f, cam, pl, n, now, 1e12 + now);
            else if (p[0] == 's')
                rc = trk_fuse_status(f, cam, pl, n);
            else if (p[0] == 'c')
                rc = trk_fuse_config(f, cam, pl, n);
            TRK_ASSERT(rc == 0 || (rc == 1 && p[0] == 'f') || rc == TRK_EINVAL ||
                       rc == TRK_ENOMEM || rc == -ENOSPC);
            double due = trk_fuse_due(f);
            if (rc == 1 || (due >= 0 && now >= due)) emit(f, &b, &seq);
        }
        p = e + 1;
    }
    emit(f, &b, &seq);
    trk_buf_free(&b);
    trk_fuse_destroy(&f);
    return 0;
}
