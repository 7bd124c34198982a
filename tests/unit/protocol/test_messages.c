/* Unit tests of the server -> client encoders (protocol/messages.c): every
 * message is parsed back with jansson and its fields compared with the input;
 * escaping, null fields, number formatting, the preview header, the control
 * replies, and a buffer whose allocation fails (each allocation in turn). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "messages.h"
#include "objects.h"

#include "../check.h"

/* Allocation failure injection: this test links with -Wl,--wrap=realloc
 * (CMakeLists.txt), so trk_buf's realloc calls land here (the names are the
 * linker's). fail_realloc_at = k makes the k-th call from now fail; 0 never. */
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int fail_realloc_at;

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_realloc_at > 0 && --fail_realloc_at == 0) return NULL;
    return __real_realloc(p, n);
}

/* The frame message of one frame's raw results, through the frame result
 * the pipeline fills (protocol/result.h): every derived value there. */
static struct trk_frame_result frame_result;
/* The shape of sums without second moments (fixtures written before them,
 * a lone pixel): all 0. */
#define SHAPE0 "\"orientation\":0.00,\"major\":0.00,\"minor\":0.00"
static int frame_msg(struct trk_buf *b, const struct trk_frame_meta *m,
                     const struct trk_object_def *defs, const struct trk_obj_result *res,
                     const struct trk_blob_list *blobs, int n,
                     const struct trk_instance_list *instances)
{
    if (trk_frame_result_fill(&frame_result, m, defs, n, res, blobs, instances, NULL))
        return TRK_ENOMEM;
    return trk_msg_frame(b, &frame_result);
}

/* Parses b's content; fails the test (and returns NULL) if invalid. */
static json_t *parse(const struct trk_buf *b, const char *what)
{
    json_error_t e;
    json_t *j = json_loadb(b->data, b->len, JSON_REJECT_DUPLICATES, &e);
    CHECKF(j != NULL, "%s: invalid JSON (%s) in: %.300s", what, e.text, b->data);
    CHECKF(b->data[b->len] == '\0', "%s: not NUL-terminated", what);
    return j;
}

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static double jnum(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static json_int_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* ------------------------------------------------------------------ buf */

static void test_buf(void)
{
    struct trk_buf b = { 0 };
    CHECKF(trk_buf_puts(&b, "abc") == 0 && b.len == 3 && !strcmp(b.data, "abc"), "puts");
    for (int i = 0; i < 10000; i++)
        CHECKF(trk_buf_append(&b, "0123456789", 10) == 0, "append %d", i);
    CHECKF(b.len == 100003 && b.cap > b.len, "len %zu cap %zu", b.len, b.cap);
    CHECKF(b.data[b.len] == '\0', "terminated");
    size_t cap = b.cap;
    trk_buf_reset(&b);
    CHECKF(b.len == 0 && b.cap == cap && b.data[0] == '\0', "reset keeps memory");
    CHECKF(trk_buf_u64(&b, 18446744073709551615ULL) == 0 && !strcmp(b.data, "18446744073709551615"),
           "u64 max: %s", b.data);
    trk_buf_reset(&b);
    trk_buf_i64(&b, INT64_MIN);
    CHECKF(!strcmp(b.data, "-9223372036854775808"), "i64 min: %s", b.data);
    trk_buf_reset(&b);
    trk_buf_i64(&b, 0);
    CHECKF(!strcmp(b.data, "0"), "i64 0: %s", b.data);
    trk_buf_free(&b);
    CHECKF(b.data == NULL && b.len == 0 && b.cap == 0, "free");
    trk_buf_free(&b); /* twice */
    struct trk_buf z = { 0 };
    trk_buf_reset(&z); /* reset of an empty buffer */
    CHECKF(trk_buf_append(&z, "", 0) == 0 && z.len == 0 && z.data && z.data[0] == '\0',
           "empty append");
    trk_buf_free(&z);
}

/* A failed allocation sticks: nothing appended after it, every later call
 * says TRK_ENOMEM, the message is marked failed until a reset. */
static void test_buf_alloc_failure(void)
{
    struct trk_buf b = { 0 };
    CHECK(trk_buf_puts(&b, "{\"a\":") == 0 && b.cap > 8);
    size_t len = b.len;
    fail_realloc_at = 1;
    char big[1000];
    memset(big, 'x', sizeof(big));
    CHECK(trk_buf_append(&b, big, sizeof(big)) == TRK_ENOMEM);
    CHECK(fail_realloc_at == 0); /* the realloc was tried, and failed */
    CHECKF(b.failed && b.len == len && !strcmp(b.data, "{\"a\":"), "after failure: %s", b.data);
    /* These fit in the memory the buffer has: without the sticky flag they
     * would go on and make {"a":1} out of a message that lost a part. */
    CHECK(trk_buf_puts(&b, "1}") == TRK_ENOMEM);
    CHECK(trk_buf_i64(&b, 5) == TRK_ENOMEM && trk_buf_u64(&b, 5) == TRK_ENOMEM);
    CHECK(trk_buf_fixed(&b, 1.5, 2) == TRK_ENOMEM);
    CHECK(trk_buf_json_str(&b, "s", 1) == TRK_ENOMEM && trk_buf_json_str(&b, NULL, 0) != 0);
    CHECK(trk_msg_ack(&b, "x", NULL, false) == TRK_ENOMEM);
    CHECKF(b.failed && b.len == len && !strcmp(b.data, "{\"a\":"), "no-ops: %s", b.data);
    trk_buf_reset(&b);
    CHECK(!b.failed && trk_buf_puts(&b, "ok") == 0 && !strcmp(b.data, "ok"));
    trk_buf_free(&b);

    /* Every allocation of a large message failing in turn: the encoder says
     * so and the buffer is failed, or it succeeded whole. */
    static struct trk_object_def defs[40];
    for (int i = 0; i < 40; i++) {
        snprintf(defs[i].name, sizeof(defs[i].name), "object number %d", i);
        defs[i].hi[0] = defs[i].hi[1] = defs[i].hi[2] = 200;
    }
    int failures = 0;
    for (int k = 1; k < 30; k++) {
        struct trk_buf m = { 0 };
        fail_realloc_at = k;
        int rc = trk_msg_objects_reply(&m, "7", defs, 40, NULL);
        bool failed_now = fail_realloc_at == 0;
        fail_realloc_at = 0;
        if (failed_now) {
            failures++;
            CHECKF(rc == TRK_ENOMEM && m.failed, "allocation %d failed: rc %d", k, rc);
        } else {
            json_t *j = parse(&m, "objects reply");
            CHECKF(rc == 0 && !m.failed && j &&
                       json_array_size(json_object_get(j, "objects")) == 40,
                   "allocation %d never failed: the whole message", k);
            json_decref(j);
        }
        trk_buf_free(&m);
    }
    CHECKF(failures >= 3, "the message needs several allocations (%d)", failures);
}

/* ------------------------------------------------------------- escaping */

/* Encodes s, parses it back, returns the decoded string (static buffer). */
static const char *roundtrip(const char *s, size_t n, size_t *out_len)
{
    static char out[4096];
    struct trk_buf b = { 0 };
    CHECKF(trk_buf_json_str(&b, s, n) == 0, "json_str");
    json_error_t e;
    json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY, &e);
    CHECKF(j && json_is_string(j), "not a valid JSON string (%s): %s", e.text, b.data);
    out[0] = '\0';
    *out_len = 0;
    if (j && json_is_string(j)) {
        *out_len = json_string_length(j);
        memcpy(out, json_string_value(j), *out_len + 1);
    }
    json_decref(j);
    trk_buf_free(&b);
    return out;
}

static void test_escaping(void)
{
    size_t n;
    const char *plain = "red ball";
    CHECKF(!strcmp(roundtrip(plain, SIZE_MAX, &n), plain), "plain");
    const char *tricky = "q\"b\\s/\n\r\t\b\f\x01\x1f end";
    CHECKF(!strcmp(roundtrip(tricky, SIZE_MAX, &n), tricky), "control characters and quotes");
    const char *utf8 = "gr\xc3\xbcn \xe2\x82\xac \xf0\x9f\x8e\xb1";
    CHECKF(!strcmp(roundtrip(utf8, SIZE_MAX, &n), utf8), "valid UTF-8 kept");
    /* Invalid UTF-8: lone continuation, truncated sequence, overlong,
     * surrogate, > U+10FFFF. Each bad byte becomes U+FFFD. */
    const char *bad[] = {
        "a\x80z", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *r = roundtrip(bad[i], SIZE_MAX, &n);
        CHECKF(strstr(r, "\xef\xbf\xbd") != NULL, "bad UTF-8 %zu not replaced: %s", i, r);
    }
    /* A name cut mid-character by its fixed size. */
    char name[TRK_NAME_MAX];
    memset(name, 'a', sizeof name);
    memcpy(name + TRK_NAME_MAX - 1, "\xc3", 1); /* no terminator, half a char */
    const char *r = roundtrip(name, sizeof name, &n);
    CHECKF(n == TRK_NAME_MAX - 1 + 3, "fixed-size name: %zu bytes", n);
    (void)r;
    /* Stops at NUL within n. */
    CHECKF(!strcmp(roundtrip("ab\0cd", 5, &n), "ab"), "stops at NUL");
    struct trk_buf b = { 0 };
    trk_buf_json_str(&b, NULL, 0);
    CHECKF(!strcmp(b.data, "null"), "NULL -> null: %s", b.data);
    trk_buf_free(&b);
}

/* --------------------------------------------------------------- numbers */

static void expect_fixed(double v, int d, const char *want)
{
    struct trk_buf b = { 0 };
    trk_buf_fixed(&b, v, d);
    CHECKF(b.data && !strcmp(b.data, want), "fixed(%.17g, %d) = %s, want %s", v, d,
           b.data ? b.data : "(null)", want);
    trk_buf_free(&b);
}

static void test_fixed(void)
{
    expect_fixed(0, 2, "0.00");
    expect_fixed(1, 2, "1.00");
    expect_fixed(641.5234, 2, "641.52");
    expect_fixed(641.5274, 2, "641.53");
    expect_fixed(-1.5, 2, "-1.50");
    expect_fixed(-0.001, 2, "0.00"); /* no negative zero */
    expect_fixed(0.567, 3, "0.567");
    expect_fixed(123.456, 3, "123.456");
    expect_fixed(1763700000123.456, 3, "1763700000123.456");
    expect_fixed(12.5, 0, "13");
    expect_fixed(1e20, 2, "100000000000000000000.00"); /* printf fallback */
    expect_fixed(NAN, 2, "null");
    expect_fixed(INFINITY, 3, "null");
    expect_fixed(-INFINITY, 3, "null");
    /* Against printf on pseudo-random values away from rounding ties. */
    uint64_t s = 99;
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 1e6;
        int d = (int)(s % 4);
        double scaled = fabs(v) * pow(10, d);
        if (fabs(scaled - floor(scaled) - 0.5) < 1e-4) continue;
        char want[64];
        snprintf(want, sizeof want, "%.*f", d, v);
        if (!strcmp(want, "-0") || !strncmp(want, "-0.0", 4)) {
            char *p = want + 1;
            bool zero = true;
            for (; *p; p++)
                if (*p >= '1' && *p <= '9') zero = false;
            if (zero) memmove(want, want + 1, strlen(want));
        }
        struct trk_buf b = { 0 };
        trk_buf_fixed(&b, v, d);
        if (strcmp(b.data, want)) {
            CHECKF(0, "fixed(%.17g, %d) = %s, printf %s", v, d, b.data, want);
            trk_buf_free(&b);
            break;
        }
        trk_buf_free(&b);
    }
}

/* The number formats' first form (llround, then one digit per step, then a
 * scan for the zero test), kept as their definition: the appenders write
 * digits two at a time in place and must give the same bytes. */
static void fixed_def(char *out, double v, int decimals)
{
    static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
    double s = fabs(v) * scale[decimals];
    if (!isfinite(v) || s >= 9e15) {
        snprintf(out, 64, isfinite(v) ? "%.*f" : "null", decimals, v);
        return;
    }
    uint64_t q = (uint64_t)llround(s);
    char tmp[32], *end = tmp + sizeof tmp, *p = end;
    for (int i = 0; i < decimals; i++, q /= 10)
        *--p = (char)('0' + q % 10);
    if (decimals) *--p = '.';
    do
        *--p = (char)('0' + q % 10);
    while (q /= 10);
    bool zero = true;
    for (const char *c = p; c < end; c++)
        zero = zero && (*c < '1' || *c > '9');
    if (v < 0 && !zero) *--p = '-';
    memcpy(out, p, (size_t)(end - p));
    out[end - p] = '\0';
}

static bool same_fixed(double v, int d)
{
    char want[64];
    fixed_def(want, v, d);
    struct trk_buf b = { 0 };
    trk_buf_puts(&b, "x"); /* appended after other bytes, as in a message */
    trk_buf_fixed(&b, v, d);
    const bool ok = b.data && !strcmp(b.data + 1, want);
    CHECKF(ok, "fixed(%.17g, %d) = %s, definition %s", v, d, b.data ? b.data + 1 : "(null)", want);
    trk_buf_free(&b);
    return ok;
}

static void test_fixed_definition(void)
{
    /* Exact ties, the values either side of them, every decimals. */
    for (int d = 0; d <= 6; d++)
        for (int k = -2005; k <= 2005; k++) {
            const double t = (k + 0.5) / pow(10, d);
            if (!same_fixed(t, d) || !same_fixed(nextafter(t, 0), d) ||
                !same_fixed(nextafter(t, 1e300), d) || !same_fixed(-nextafter(t, 0), d))
                return;
        }
    /* Pseudo-random magnitudes from 1e-9 to past the integer form's limit. */
    uint64_t s = 7;
    for (int i = 0; i < 200000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const double m = (double)(s >> 11) / 9007199254740992.0;
        const double v = (s & 1 ? -1 : 1) * m * pow(10, (double)((s >> 3) % 26) - 9);
        if (!same_fixed(v, (int)((s >> 8) % 7))) return;
    }
    const double edge[] = { 0.0,
                            -0.0,
                            0.5,
                            0.49999999999999994,
                            9e15,
                            8.999999999999998e15,
                            4503599627370495.5,
                            4503599627370496.0,
                            99.995,
                            999999.9999995 };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int d = 0; d <= 6; d++)
            if (!same_fixed(edge[i], d) || !same_fixed(-edge[i], d)) return;
}

/* trk_buf_u64 (is_signed false) or trk_buf_i64 of v against printf. */
static void expect_int(bool is_signed, uint64_t v)
{
    char want[32];
    struct trk_buf b = { 0 };
    trk_buf_puts(&b, "x"); /* appended after other bytes, as in a message */
    if (is_signed) {
        trk_buf_i64(&b, (int64_t)v);
        snprintf(want, sizeof want, "%" PRId64, (int64_t)v);
    } else {
        trk_buf_u64(&b, v);
        snprintf(want, sizeof want, "%" PRIu64, v);
    }
    CHECKF(b.data && !strcmp(b.data + 1, want), "%s %s: %s", is_signed ? "i64" : "u64", want,
           b.data ? b.data + 1 : "(null)");
    trk_buf_free(&b);
}

static void test_integers(void)
{
    /* Every digit count, either side of each power of ten, both signs. */
    uint64_t u = 1;
    for (int i = 0; i < 20; i++, u *= 10)
        for (uint64_t v = u - 1; v != u + 2; v++) {
            expect_int(false, v);
            expect_int(true, (uint64_t) - (int64_t)(v >> 1));
            expect_int(true, v >> 1);
        }
    expect_int(true, (uint64_t)INT64_MIN);
    expect_int(true, (uint64_t)INT64_MAX);
    expect_int(true, (uint64_t)-1);
    expect_int(false, UINT64_MAX);
}

/* ----------------------------------------------------------------- frame */

static void test_frame(void)
{
    struct trk_object_def defs[4];
    memset(defs, 0, sizeof defs);
    snprintf(defs[0].name, sizeof defs[0].name, "red");
    snprintf(defs[1].name, sizeof defs[1].name, "a \"quoted\" \\ name\n");
    snprintf(defs[2].name, sizeof defs[2].name, "empty");
    snprintf(defs[3].name, sizeof defs[3].name, "small");
    defs[0].min_mass = 1;
    defs[1].min_mass = 0; /* treated as 1 */
    defs[2].min_mass = 1;
    defs[3].min_mass = 30;
    struct trk_obj_result res[4] = {
        { .mass = 2713,
          .sum_x = 2713ULL * 641 + 1411,
          .sum_y = 2713ULL * 360 + 217,
          .x0 = 612,
          .y0 = 331,
          .x1 = 671,
          .y1 = 389 },
        { .mass = 1, .sum_x = 0, .sum_y = 719, .x0 = 0, .y0 = 719, .x1 = 0, .y1 = 719 },
        { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 },
        { .mass = 29, .sum_x = 29 * 10, .sum_y = 29 * 20, .x0 = 8, .y0 = 18, .x1 = 12, .y1 = 22 },
    };
    struct trk_frame_meta m = {
        .seq = 17,
        .pts = 0.5667,
        .width = 1280,
        .height = 720,
        .t_capture = 123.4564,
        .wall_ms = 1763700000123.456,
        .queue_ms = 0.1234,
        .upload_ms = 0.0005,
        .kernel_ms = 0.041,
        .process_ms = 1.9999,
        .backend_ms = 1.4996,
        .handoff_ms = 0.0123,
        .backend = "cuda",
    };
    struct trk_buf b = { 0 };
    CHECKF(frame_msg(&b, &m, defs, res, NULL, 4, NULL) == 0, "frame");
    json_t *j = parse(&b, "frame");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "frame"), "type");
        CHECKF(jint(j, "seq") == 17, "seq");
        CHECKF(fabs(jnum(j, "pts") - 0.567) < 1e-9, "pts %.6f (3 decimals)", jnum(j, "pts"));
        CHECKF(jint(j, "width") == 1280 && jint(j, "height") == 720, "size");
        /* Microseconds: the latency probe subtracts it from its own clock. */
        CHECKF(fabs(jnum(j, "t_capture") - 123.4564) < 1e-9, "t_capture %.7f (6 decimals)",
               jnum(j, "t_capture"));
        CHECKF(fabs(jnum(j, "wall_ms") - 1763700000123.456) < 1e-3, "wall_ms");
        CHECKF(!strcmp(jstr(j, "backend"), "cuda"), "backend");
        json_t *lat = json_object_get(j, "latency");
        CHECKF(fabs(jnum(lat, "queue_ms") - 0.123) < 1e-9, "queue_ms");
        CHECKF(fabs(jnum(lat, "upload_ms") - 0.001) < 1e-9, "upload_ms rounds half up");
        CHECKF(fabs(jnum(lat, "kernel_ms") - 0.041) < 1e-9, "kernel_ms");
        CHECKF(fabs(jnum(lat, "process_ms") - 2.0) < 1e-9, "process_ms");
        CHECKF(fabs(jnum(lat, "backend_ms") - 1.5) < 1e-9, "backend_ms");
        CHECKF(fabs(jnum(lat, "handoff_ms") - 0.012) < 1e-9, "handoff_ms");
        json_t *objs = json_object_get(j, "objects");
        CHECKF(json_array_size(objs) == 4, "4 objects");
        json_t *o0 = json_array_get(objs, 0);
        CHECKF(jint(o0, "id") == 0 && !strcmp(jstr(o0, "name"), "red"), "o0 id/name");
        CHECKF(json_is_true(json_object_get(o0, "found")), "o0 found");
        CHECKF(jint(o0, "mass") == 2713, "o0 mass");
        double cx = (double)res[0].sum_x / 2713, cy = (double)res[0].sum_y / 2713;
        CHECKF(fabs(jnum(o0, "cx") - round(cx * 100) / 100) < 1e-9, "o0 cx %.4f vs %.4f",
               jnum(o0, "cx"), cx);
        CHECKF(fabs(jnum(o0, "cy") - round(cy * 100) / 100) < 1e-9, "o0 cy");
        json_t *bb = json_object_get(o0, "bbox");
        CHECKF(json_array_size(bb) == 4 && json_integer_value(json_array_get(bb, 0)) == 612 &&
                   json_integer_value(json_array_get(bb, 1)) == 331 &&
                   json_integer_value(json_array_get(bb, 2)) == 671 &&
                   json_integer_value(json_array_get(bb, 3)) == 389,
               "o0 bbox");
        json_t *o1 = json_array_get(objs, 1);
        CHECKF(!strcmp(jstr(o1, "name"), defs[1].name), "escaped name round trip: %s",
               jstr(o1, "name"));
        CHECKF(json_is_true(json_object_get(o1, "found")), "min_mass 0 behaves as 1");
        CHECKF(jnum(o1, "cx") == 0 && jnum(o1, "cy") == 719, "o1 centroid on the border");
        json_t *o2 = json_array_get(objs, 2);
        CHECKF(json_is_false(json_object_get(o2, "found")) && jint(o2, "mass") == 0, "o2");
        CHECKF(json_is_null(json_object_get(o2, "cx")) && json_is_null(json_object_get(o2, "cy")) &&
                   json_is_null(json_object_get(o2, "bbox")),
               "mass 0 -> null cx, cy, bbox");
        json_t *o3 = json_array_get(objs, 3);
        CHECKF(json_is_false(json_object_get(o3, "found")) && jint(o3, "mass") == 29,
               "below min_mass: not found, still reported");
        CHECKF(jnum(o3, "cx") == 10 && jnum(o3, "cy") == 20, "o3 centroid");
    }
    json_decref(j);

    /* Appends: a second frame after a newline gives NDJSON. */
    size_t first = b.len;
    trk_buf_puts(&b, "\n");
    m.seq = 18;
    m.backend = NULL;
    m.pts = NAN;
    m.handoff_ms = -1;
    CHECKF(frame_msg(&b, &m, defs, res, NULL, 0, NULL) == 0, "frame 2");
    struct trk_buf line2 = { 0 };
    trk_buf_append(&line2, b.data + first + 1, b.len - first - 1);
    j = parse(&line2, "second frame");
    if (j) {
        CHECKF(jint(j, "seq") == 18, "seq 2");
        CHECKF(json_array_size(json_object_get(j, "objects")) == 0, "no objects");
        CHECKF(json_object_get(j, "backend") == NULL, "backend omitted when NULL");
        CHECKF(json_is_null(json_object_get(j, "pts")), "NaN pts -> null");
        CHECKF(json_object_get(json_object_get(j, "latency"), "handoff_ms") == NULL,
               "handoff_ms omitted when < 0");
    }
    json_decref(j);
    trk_buf_free(&line2);
    trk_buf_free(&b);

    /* Many objects and a big seq. */
    static struct trk_object_def many[TRK_MAX_OBJECTS];
    static struct trk_obj_result mres[TRK_MAX_OBJECTS];
    for (int i = 0; i < TRK_MAX_OBJECTS; i++) {
        memset(many[i].name, 'x', sizeof many[i].name); /* not terminated */
        many[i].min_mass = 1;
        mres[i] = (struct trk_obj_result){ .mass = (uint64_t)i,
                                           .sum_x = (uint64_t)i * i,
                                           .sum_y = (uint64_t)i,
                                           .x0 = 0,
                                           .y0 = 0,
                                           .x1 = 2 * i,
                                           .y1 = 1 };
    }
    m.seq = INT64_MAX;
    CHECKF(frame_msg(&b, &m, many, mres, NULL, TRK_MAX_OBJECTS, NULL) == 0, "256 objects");
    json_error_t e;
    j = json_loadb(b.data, b.len, 0, &e);
    CHECKF(j != NULL, "256 objects parse: %s", e.text);
    if (j) {
        json_t *objs = json_object_get(j, "objects");
        CHECKF(json_array_size(objs) == TRK_MAX_OBJECTS, "256 objects");
        CHECKF(strlen(jstr(json_array_get(objs, 5), "name")) == TRK_NAME_MAX,
               "unterminated name capped at TRK_NAME_MAX");
        CHECKF(jnum(json_array_get(objs, 7), "cx") == 7, "cx = i");
        CHECKF(jint(j, "seq") == INT64_MAX, "big seq");
    }
    json_decref(j);
    trk_buf_reset(&b);
    /* The camera's name: right after the type when given, absent without. */
    CHECKF(frame_msg(&b, &m, many, mres, NULL, 1, NULL) == 0 && !strstr(b.data, "\"camera\""),
           "no camera without one");
    trk_buf_reset(&b);
    m.camera = "hall-2";
    const char *pre = "{\"type\":\"frame\",\"camera\":\"hall-2\",\"seq\":";
    CHECKF(frame_msg(&b, &m, many, mres, NULL, 1, NULL) == 0 && !strncmp(b.data, pre, strlen(pre)),
           "camera after type: %.60s", b.data);
    m.camera = NULL;
    trk_buf_reset(&b);
    /* UINT64_MAX is beyond jansson's int64: check the text instead. */
    m.seq = UINT64_MAX;
    CHECKF(frame_msg(&b, &m, many, mres, NULL, 1, NULL) == 0 &&
               strstr(b.data, "\"seq\":18446744073709551615,") != NULL,
           "u64 seq");
    trk_buf_free(&b);
}

/* Blob lists in the frame: after each blobs-on object's aggregate fields,
 * at most K blobs in the order given, [] when none; no key with blobs off;
 * the aggregate fields the same as without lists. */
static void test_frame_blobs(void)
{
    struct trk_object_def defs[4];
    memset(defs, 0, sizeof defs);
    const char *names[4] = { "off", "two", "none", "cut" };
    for (int i = 0; i < 4; i++) {
        snprintf(defs[i].name, sizeof defs[i].name, "%s", names[i]);
        defs[i].min_mass = 1;
    }
    defs[1].blobs = 4;
    defs[2].blobs = 1;
    defs[3].blobs = 2;
    const struct trk_blob two[2] = {
        { .mass = 3,
          .sum_x = 3 * 10 + 1,
          .sum_y = 3 * 20,
          .x0 = 9,
          .y0 = 20,
          .x1 = 11,
          .y1 = 20,
          .perimeter = 8,
          .first = 20 * 640 + 9 },
        { .mass = 1,
          .sum_x = 0,
          .sum_y = 479,
          .x0 = 0,
          .y0 = 479,
          .x1 = 0,
          .y1 = 479,
          .perimeter = 4,
          .first = 479 * 640 },
    };
    const struct trk_blob three[3] = {
        { .mass = 9,
          .sum_x = 9 * 100,
          .sum_y = 9 * 100,
          .x0 = 99,
          .y0 = 99,
          .x1 = 101,
          .y1 = 101,
          .perimeter = 12,
          .first = 99 * 640 + 99 },
        { .mass = 9,
          .sum_x = 9 * 200,
          .sum_y = 9 * 100,
          .x0 = 199,
          .y0 = 99,
          .x1 = 201,
          .y1 = 101,
          .perimeter = 12,
          .first = 99 * 640 + 199 },
        { .mass = 2,
          .sum_x = 1,
          .sum_y = 0,
          .x0 = 0,
          .y0 = 0,
          .x1 = 1,
          .y1 = 0,
          .perimeter = 6,
          .first = 0 },
    };
    const struct trk_obj_result res[4] = {
        { .mass = 5, .sum_x = 5 * 7, .sum_y = 5 * 8, .x0 = 6, .y0 = 7, .x1 = 8, .y1 = 9 },
        { .mass = 4, .sum_x = 31, .sum_y = 539, .x0 = 0, .y0 = 20, .x1 = 11, .y1 = 479 },
        { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 },
        { .mass = 20, .sum_x = 2701, .sum_y = 1800, .x0 = 0, .y0 = 0, .x1 = 201, .y1 = 101 },
    };
    /* A list for the blobs-off object too: it must not show. */
    const struct trk_blob_list lists[4] = { { two, 2 }, { two, 2 }, { NULL, 0 }, { three, 3 } };
    struct trk_frame_meta m = { .seq = 1, .width = 640, .height = 480 };
    struct trk_buf b = { 0 }, plain = { 0 };
    CHECKF(frame_msg(&b, &m, defs, res, lists, 4, NULL) == 0, "frame with blobs");
    /* The exact text: the encoder is deterministic, NDJSON diffs rely on it. */
    CHECKF(strstr(b.data, "{\"id\":1,\"name\":\"two\",\"found\":true,\"mass\":4,\"cx\":7.75,"
                          "\"cy\":134.75,\"bbox\":[0,20,11,479]," SHAPE0 ",\"blobs\":["
                          "{\"mass\":3,\"cx\":10.33,\"cy\":20.00,\"bbox\":[9,20,11,20],"
                          "\"perimeter\":8," SHAPE0 "},"
                          "{\"mass\":1,\"cx\":0.00,\"cy\":479.00,\"bbox\":[0,479,0,479],"
                          "\"perimeter\":4," SHAPE0 "}]}") != NULL,
           "object two: %s", b.data);
    CHECKF(strstr(b.data, "\"name\":\"none\",\"found\":false,\"mass\":0,\"cx\":null,"
                          "\"cy\":null,\"bbox\":null," SHAPE0 ",\"blobs\":[]}") != NULL,
           "empty list: %s", b.data);
    json_t *j = parse(&b, "frame with blobs");
    json_t *objs = json_object_get(j, "objects");
    CHECKF(json_object_get(json_array_get(objs, 0), "blobs") == NULL, "blobs off: no key");
    json_t *cut = json_object_get(json_array_get(objs, 3), "blobs");
    CHECKF(json_array_size(cut) == 2, "cut to K = 2: %zu", json_array_size(cut));
    json_t *c1 = json_array_get(cut, 1);
    CHECKF(jint(c1, "mass") == 9 && jnum(c1, "cx") == 200 && jint(c1, "perimeter") == 12 &&
               json_integer_value(json_array_get(json_object_get(c1, "bbox"), 0)) == 199,
           "second blob of the cut list");
    json_decref(j);

    /* Without lists every blobs-on object gets [], and the rest of the
     * message is the same text as with them. */
    CHECKF(frame_msg(&plain, &m, defs, res, NULL, 4, NULL) == 0, "frame without lists");
    CHECKF(strstr(plain.data, "\"bbox\":[0,20,11,479]," SHAPE0 ",\"blobs\":[]}") != NULL, "%s",
           plain.data);
    struct trk_object_def off[4];
    memcpy(off, defs, sizeof off);
    for (int i = 0; i < 4; i++)
        off[i].blobs = 0;
    trk_buf_reset(&b);
    trk_buf_reset(&plain);
    CHECK(frame_msg(&b, &m, off, res, lists, 4, NULL) == 0);
    CHECK(frame_msg(&plain, &m, off, res, NULL, 4, NULL) == 0);
    CHECKF(!strcmp(b.data, plain.data) && !strstr(b.data, "blobs"),
           "blobs off everywhere: the message as before: %s", b.data);

    /* Every allocation failing in turn with 64 blobs: failed, or whole. */
    static struct trk_blob many[TRK_MAX_BLOBS];
    for (int k = 0; k < TRK_MAX_BLOBS; k++)
        many[k] = (struct trk_blob){ .mass = UINT32_MAX,
                                     .sum_x = UINT32_MAX * 12345ULL,
                                     .sum_y = UINT32_MAX * 999ULL,
                                     .x0 = 16000,
                                     .y0 = 16000,
                                     .x1 = 16383,
                                     .y1 = 16383,
                                     .perimeter = 1ULL << 40 };
    const struct trk_blob_list big[4] = {
        { 0 }, { many, TRK_MAX_BLOBS }, { 0 }, { many, TRK_MAX_BLOBS }
    };
    defs[1].blobs = defs[3].blobs = TRK_MAX_BLOBS;
    int failures = 0;
    CHECK(trk_frame_result_fill(&frame_result, &m, defs, 4, res, big, NULL, NULL) == 0);
    for (int k = 1; k < 12; k++) {
        struct trk_buf f = { 0 };
        fail_realloc_at = k;
        int rc = trk_msg_frame(&f, &frame_result);
        bool failed_now = fail_realloc_at == 0;
        fail_realloc_at = 0;
        if (failed_now) {
            failures++;
            CHECKF(rc == TRK_ENOMEM && f.failed, "allocation %d failed: rc %d", k, rc);
        } else {
            j = parse(&f, "64 blobs");
            objs = json_object_get(j, "objects");
            CHECKF(rc == 0 && json_array_size(json_object_get(json_array_get(objs, 3), "blobs")) ==
                                  TRK_MAX_BLOBS,
                   "allocation %d never failed: the whole message", k);
            json_decref(j);
        }
        trk_buf_free(&f);
    }
    CHECKF(failures >= 1, "the message needs an allocation (%d)", failures);
    trk_buf_free(&b);
    trk_buf_free(&plain);
}

/* Tracked objects' "instances" (seen and lost) and the frame's tracker
 * keys; untracked objects and frames without the tracker's share keep the
 * message as before. */
static void test_frame_instances(void)
{
    struct trk_object_def defs[2] = { { .name = "ball", .blobs = 2, .track = true },
                                      { .name = "plain" } };
    const struct trk_blob blob = { .mass = 4,
                                   .sum_x = 4 * 10 + 2,
                                   .sum_y = 4 * 20,
                                   .x0 = 10,
                                   .y0 = 19,
                                   .x1 = 11,
                                   .y1 = 21,
                                   .perimeter = 10 };
    const struct trk_instance inst[2] = {
        { .id = 7, .blob = blob, .cx = 10.5, .cy = 20, .vx = 1.25, .vy = -0.5, .age = 3 },
        { .id = 9, .cx = 40.004, .cy = 50, .vx = -2, .age = 12, .lost = 2 },
    };
    const struct trk_instance_list lists[2] = { { inst, 2 }, { inst, 2 } };
    const struct trk_obj_result res[2] = {
        { .mass = 4, .sum_x = 42, .sum_y = 80, .x0 = 10, .y0 = 19, .x1 = 11, .y1 = 21 },
        { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 },
    };
    const struct trk_blob_list blobs[2] = { { &blob, 1 }, { NULL, 0 } };
    struct trk_frame_meta m = {
        .seq = 1, .width = 64, .height = 48, .pass = "roi", .rounds = 2, .upload_bytes = 1234
    };
    struct trk_buf b = { 0 }, plain = { 0 };
    CHECK(frame_msg(&b, &m, defs, res, blobs, 2, lists) == 0);
    CHECKF(strstr(b.data, "\"height\":48,\"t_capture\":0.000000,\"wall_ms\":0.000,\"pass\":\"roi\","
                          "\"rounds\":2,\"upload_bytes\":1234,\"latency\"") != NULL,
           "%s", b.data);
    CHECKF(strstr(b.data, "\"perimeter\":10," SHAPE0 "}],\"instances\":["
                          "{\"id\":7,\"mass\":4,\"cx\":10.50,\"cy\":20.00,\"bbox\":[10,19,11,21],"
                          "\"perimeter\":10," SHAPE0 ",\"vx\":1.250,\"vy\":-0.500,\"vtheta\":null,"
                          "\"age\":3,\"lost\":0,"
                          "\"via\":\"full\"},"
                          "{\"id\":9,\"mass\":0,\"cx\":40.00,\"cy\":50.00,\"bbox\":null,"
                          "\"perimeter\":null," SHAPE0 ",\"vx\":-2.000,\"vy\":0.000,"
                          "\"vtheta\":null,\"age\":12,\"lost\":2,"
                          "\"via\":null}]}") != NULL,
           "%s", b.data);
    json_t *j = parse(&b, "frame with instances");
    json_t *plain_obj = json_array_get(json_object_get(j, "objects"), 1);
    CHECK(json_object_get(plain_obj, "instances") == NULL);
    json_decref(j);
    /* Without the tracker's share: no keys at all. */
    m.pass = NULL;
    CHECK(frame_msg(&plain, &m, defs, res, blobs, 2, NULL) == 0);
    CHECKF(!strstr(plain.data, "instances") && !strstr(plain.data, "pass"), "%s", plain.data);
    trk_buf_free(&b);
    trk_buf_free(&plain);
}

/* Markers: the exact text (world keys with a calibration, null without a
 * world point), none and no key for a set without patterns (the message is
 * as before), and a frame part of units (objects then markers). */
static void test_frame_markers(void)
{
    struct trk_object_def defs[1] = { { .name = "blue", .blobs = 1 } };
    const struct trk_obj_result res[1] = { { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 } };
    const struct trk_blob_list blobs[1] = { { NULL, 0 } };
    const struct trk_frame_meta m = { .seq = 3, .width = 64, .height = 48 };
    struct trk_frame_result r = { 0 };
    struct trk_buf b = { 0 }, before = { 0 };
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, blobs, NULL, NULL) == 0);
    CHECK(trk_msg_frame(&before, &r) == 0);
    CHECK(!strstr(before.data, "markers"));
    const struct trk_pattern pats[2] = { { .name = "blue" }, { .name = "t\"ag" } };
    const struct trk_marker mk[2] = { { .pattern = 0,
                                        .id = 5,
                                        .cx = 30.004,
                                        .cy = 40,
                                        .heading = 359.996,
                                        .confidence = 0.9876,
                                        .track_id = 3 },
                                      { .pattern = 1,
                                        .id = 12,
                                        .cx = 1,
                                        .cy = 2,
                                        .heading = 90,
                                        .confidence = 1,
                                        .track_id = 4,
                                        .lost = 2 } };
    /* Patterns but no markers this frame: an empty list. */
    CHECK(trk_frame_result_set_markers(&r, pats, 2, NULL, 0, NULL) == 0);
    CHECK(trk_msg_frame(&b, &r) == 0);
    char want[1024];
    snprintf(want, sizeof want, "%.*s,\"markers\":[]}", (int)before.len - 1, before.data);
    CHECKF(!strcmp(b.data, want), "%s", b.data);
    trk_buf_reset(&b);
    CHECK(trk_frame_result_set_markers(&r, pats, 2, mk, 2, NULL) == 0);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(strstr(b.data, ",\"markers\":[{\"pattern\":\"blue\",\"id\":5,\"cx\":30.00,"
                          "\"cy\":40.00,\"heading\":0.00,\"confidence\":0.988,\"track_id\":3,"
                          "\"lost\":0},{\"pattern\":\"t\\\"ag\",\"id\":12,\"cx\":1.00,"
                          "\"cy\":2.00,\"heading\":90.00,\"confidence\":1.000,\"track_id\":4,"
                          "\"lost\":2}]}") != NULL,
           "%s", b.data);
    json_decref(parse(&b, "frame with markers"));
    /* A part of units 1..2: no objects, both markers; unit 0: the object,
     * an empty marker list. */
    trk_buf_reset(&b);
    CHECK(trk_msg_frame_part(&b, &r, "cam", 2, 2, 1, 2) == 0);
    json_t *j = parse(&b, "marker part");
    CHECK(json_array_size(json_object_get(j, "objects")) == 0 &&
          json_array_size(json_object_get(j, "markers")) == 2);
    json_decref(j);
    trk_buf_reset(&b);
    CHECK(trk_msg_frame_part(&b, &r, "cam", 1, 2, 0, 1) == 0);
    j = parse(&b, "object part");
    CHECK(json_array_size(json_object_get(j, "objects")) == 1 &&
          json_array_size(json_object_get(j, "markers")) == 0);
    json_decref(j);
    /* With a calibration: world keys, null for a marker without a point. */
    struct trk_calib calib = {
        .on = true,
        .n = 4,
        .unit = "mm",
        .pt = { { 0, 0, 0, 0 }, { 10, 0, 10, 0 }, { 10, 10, 10, 10 }, { 0, 10, 0, 10 } }
    };
    CHECK(trk_calib_solve(&calib, NULL) == 0);
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, blobs, NULL, &calib) == 0);
    CHECK(trk_frame_result_set_markers(&r, pats, 2, mk, 2, &calib) == 0);
    r.markers[1].world = false;
    trk_buf_reset(&b);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(strstr(b.data, "\"lost\":0,\"wx\":30.00") &&
               strstr(b.data, "\"wheading\":0.00,\"wvx\":null,\"wvy\":null}") &&
               strstr(b.data, "\"lost\":2,\"wx\":null,\"wy\":null,\"wheading\":null,\"wvx\":null,"
                              "\"wvy\":null}"),
           "%s", b.data);
    CHECK(trk_msg_frame_marker(&b, &r, 2) == TRK_EINVAL);
    trk_frame_result_free(&r);
    trk_buf_free(&b);
    trk_buf_free(&before);
}

/* Shapes: a blob's and object's from their second moments, an instance's
 * from the tracker with its angular velocity per second once the rate is
 * known (null before), world orientations with a calibration (this one is
 * the identity with y kept down: screen 30 degrees is world -30, 150 as an
 * axis), 179.996 written 0.00. */
static void test_frame_shape(void)
{
    struct trk_object_def defs[1] = { { .name = "bar", .blobs = 1, .track = true } };
    /* Pixels (10..14, 20): mean 12, deviation sqrt(2) along x, 0 across. */
    const struct trk_blob bar = { .mass = 5,
                                  .sum_x = 60,
                                  .sum_y = 100,
                                  .sum_xx = 100 + 121 + 144 + 169 + 196,
                                  .sum_yy = 5 * 400,
                                  .sum_xy = 20 * 60,
                                  .x0 = 10,
                                  .y0 = 20,
                                  .x1 = 14,
                                  .y1 = 20,
                                  .perimeter = 12 };
    const struct trk_obj_result res[1] = { { .mass = bar.mass,
                                             .sum_x = bar.sum_x,
                                             .sum_y = bar.sum_y,
                                             .sum_xx = bar.sum_xx,
                                             .sum_yy = bar.sum_yy,
                                             .sum_xy = bar.sum_xy,
                                             .x0 = 10,
                                             .y0 = 20,
                                             .x1 = 14,
                                             .y1 = 20 } };
    const struct trk_blob_list blobs[1] = { { &bar, 1 } };
    const struct trk_instance inst[2] = {
        { .id = 1,
          .blob = bar,
          .cx = 12,
          .cy = 20,
          .orientation = 30,
          .major = 1.5,
          .minor = 0.25,
          .vth = -1.5,
          .age = 2 },
        { .id = 2,
          .cx = 40,
          .cy = 30,
          .orientation = 179.996,
          .major = 2,
          .minor = 1,
          .age = 5,
          .lost = 1 },
    };
    const struct trk_instance_list il[1] = { { inst, 2 } };
    const struct trk_frame_meta m = { .seq = 1, .width = 64, .height = 48 };
    struct trk_frame_result r = { 0 };
    struct trk_buf b = { 0 };
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, blobs, il, NULL) == 0);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(strstr(b.data, "\"bbox\":[10,20,14,20],\"orientation\":0.00,\"major\":1.41,"
                          "\"minor\":0.00,\"blobs\":[") &&
               strstr(b.data, "\"perimeter\":12,\"orientation\":0.00,\"major\":1.41,"
                              "\"minor\":0.00}],") &&
               strstr(b.data, "\"perimeter\":12,\"orientation\":30.00,\"major\":1.50,"
                              "\"minor\":0.25,\"vx\":0.000,\"vy\":0.000,\"vtheta\":null,") &&
               strstr(b.data, "\"orientation\":0.00,\"major\":2.00,\"minor\":1.00,"),
           "%s", b.data);
    trk_frame_result_set_rate(&r, NULL, 30);
    trk_buf_reset(&b);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(strstr(b.data, "\"vtheta\":-45.00,") && strstr(b.data, "\"vtheta\":0.00,"), "%s",
           b.data);
    struct trk_calib calib = {
        .on = true,
        .n = 4,
        .unit = "mm",
        .pt = { { 0, 0, 0, 0 }, { 10, 0, 10, 0 }, { 10, 10, 10, 10 }, { 0, 10, 0, 10 } }
    };
    CHECK(trk_calib_solve(&calib, NULL) == 0);
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, blobs, il, &calib) == 0);
    trk_buf_reset(&b);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(strstr(b.data, "\"minor\":0.00,\"wheading\":0.00,\"blobs\":[") &&
               strstr(b.data, "\"minor\":0.00,\"wheading\":0.00}],") &&
               strstr(b.data, "\"wvx\":null,\"wvy\":null,\"wheading\":150.00,\"age\":2"),
           "%s", b.data);
    json_decref(parse(&b, "frame with shapes"));
    trk_frame_result_free(&r);
    trk_buf_free(&b);
}

/* --predict: a copy moved on by predict_dt s (result.h): instances' and
 * markers' pixel positions by their per-frame velocities at r->fps, world
 * points by their world velocities; "predict_dt" in the frame message and
 * the per-object message; the measured result itself unchanged. */
static void test_frame_predict(void)
{
    struct trk_object_def defs[1] = { { .name = "ball", .track = true } };
    const struct trk_instance inst[1] = {
        { .id = 7, .cx = 10, .cy = 20, .vx = 2, .vy = -1, .age = 3, .lost = 1 },
    };
    const struct trk_instance_list lists[1] = { { inst, 1 } };
    const struct trk_obj_result res[1] = { { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 } };
    const struct trk_frame_meta m = { .seq = 4, .width = 64, .height = 48, .t_capture = 100 };
    struct trk_calib calib = {
        .on = true,
        .n = 4,
        .unit = "mm",
        .pt = { { 0, 0, 0, 0 }, { 10, 0, 100, 0 }, { 10, 10, 100, 100 }, { 0, 10, 0, 100 } }
    };
    CHECK(trk_calib_solve(&calib, NULL) == 0);
    struct trk_frame_result r = { 0 }, p;
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, NULL, lists, &calib) == 0);
    trk_frame_result_set_rate(&r, &calib, 50);
    const struct trk_pattern pats[1] = { { .name = "bot" } };
    const struct trk_marker mk[1] = {
        { .pattern = 0, .id = 1, .cx = 5, .cy = 5, .vx = -1, .vy = 3, .track_id = 2 }
    };
    CHECK(trk_frame_result_set_markers(&r, pats, 1, mk, 1, &calib) == 0);
    trk_frame_result_predict(&p, &r, 100.1); /* 0.1 s = 5 frames at 50 fps */
    struct trk_buf b = { 0 };
    CHECK(trk_msg_frame(&b, &p) == 0);
    /* Instance: 10 + 2 x 5, 20 - 1 x 5; world x10: 200, 150, velocity
     * 20 x 50 = 1000 / s, -500 / s. Marker: 5 - 5, 5 + 15; world 0, 200. */
    CHECKF(strstr(b.data, "\"wall_ms\":0.000,\"predict_dt\":0.100000,") &&
               strstr(b.data, "\"cx\":20.00,\"cy\":15.00,") &&
               strstr(b.data, "\"wx\":200.0,\"wy\":150.0,\"wvx\":1000.0,\"wvy\":-500.0") &&
               strstr(b.data, "\"pattern\":\"bot\",\"id\":1,\"cx\":0.00,\"cy\":20.00,") &&
               strstr(b.data, "\"wx\":0.0,\"wy\":200.0,") &&
               strstr(b.data, "\"wvx\":-500.0,\"wvy\":1500.0}]"),
           "%s", b.data);
    json_decref(parse(&b, "predicted frame"));
    trk_buf_reset(&b);
    CHECK(trk_msg_object_result(&b, &p, "cam", 0) == 0);
    CHECKF(strstr(b.data, "\"predict_dt\":0.100000") && strstr(b.data, "\"cx\":20.00"), "%s",
           b.data);
    /* The measured result is as it was; a capture after now: 0. */
    trk_buf_reset(&b);
    CHECK(trk_msg_frame(&b, &r) == 0);
    CHECKF(!strstr(b.data, "predict_dt") && strstr(b.data, "\"cx\":10.00,\"cy\":20.00,"), "%s",
           b.data);
    trk_frame_result_predict(&p, &r, 99);
    CHECK(p.predict && p.predict_dt == 0);
    trk_frame_result_free(&r);
    trk_buf_free(&b);
}

/* ----------------------------------------------------------------- hello */

static void test_hello(void)
{
    struct trk_object_def defs[3];
    memset(defs, 0, sizeof defs);
    snprintf(defs[0].name, sizeof defs[0].name, "red");
    defs[0].space = TRK_SPACE_HSV;
    defs[0].lo[0] = 346, defs[0].lo[1] = 110, defs[0].lo[2] = 70;
    defs[0].hi[0] = 14, defs[0].hi[1] = 255, defs[0].hi[2] = 255;
    snprintf(defs[1].name, sizeof defs[1].name, "ball");
    defs[1].space = TRK_SPACE_RGB;
    defs[1].lo[0] = 180, defs[1].lo[1] = 0, defs[1].lo[2] = 0;
    defs[1].hi[0] = 255, defs[1].hi[1] = 80, defs[1].hi[2] = 80;
    defs[1].min_mass = 30;
    defs[1].blobs = 4;
    defs[1].min_area = 20;
    defs[1].connectivity = 4;
    snprintf(defs[2].name, sizeof defs[2].name, "gray");
    defs[2].space = TRK_SPACE_YCBCR;
    defs[2].lo[0] = 100, defs[2].lo[1] = 120, defs[2].lo[2] = 120;
    defs[2].hi[0] = 156, defs[2].hi[1] = 136, defs[2].hi[2] = 136;
    const char *colors[3] = { NULL, "#00ff00", NULL };
    struct trk_hello_info h = {
        .version = "0.1.0",
        .backend = "cpu",
        .source = "demo: \"scene\"",
        .width = 640,
        .height = 480,
        .fps = 30,
        .preview = { .enabled = true, .width = 320, .height = 240, .fps = 10, .quality = 70 },
        .defs = defs,
        .n_objects = 3,
        .colors = colors,
        .camera = "hall-2",
    };
    struct trk_buf b = { 0 };
    CHECKF(trk_msg_hello(&b, &h) == 0, "hello");
    json_t *j = parse(&b, "hello");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "hello"), "type");
        CHECKF(jint(j, "version") == TRK_PROTOCOL_VERSION, "version");
        CHECKF(!strcmp(jstr(j, "server"), "trackd 0.1.0"), "server %s", jstr(j, "server"));
        CHECKF(!strcmp(jstr(j, "backend"), "cpu"), "backend");
        CHECKF(!strcmp(jstr(j, "source"), "demo: \"scene\""), "source");
        CHECKF(!strcmp(jstr(j, "camera"), "hall-2"), "camera");
        CHECKF(jint(j, "width") == 640 && jint(j, "height") == 480, "size");
        CHECKF(jnum(j, "fps") == 30, "fps");
        json_t *p = json_object_get(j, "preview");
        CHECKF(json_is_true(json_object_get(p, "enabled")) && jint(p, "width") == 320 &&
                   jint(p, "height") == 240 && jnum(p, "fps") == 10 && jint(p, "quality") == 70 &&
                   !strcmp(jstr(p, "format"), "jpeg"),
               "preview");
        json_t *objs = json_object_get(j, "objects");
        CHECKF(json_array_size(objs) == 3, "objects");
        json_t *o0 = json_array_get(objs, 0), *o1 = json_array_get(objs, 1),
               *o2 = json_array_get(objs, 2);
        CHECKF(jint(o0, "id") == 0 && !strcmp(jstr(o0, "space"), "hsv"), "o0");
        json_t *lo = json_object_get(o0, "lo"), *hi = json_object_get(o0, "hi");
        CHECKF(json_integer_value(json_array_get(lo, 0)) == 346 &&
                   json_integer_value(json_array_get(hi, 0)) == 14 &&
                   json_integer_value(json_array_get(lo, 2)) == 70,
               "lo/hi");
        CHECKF(jint(o0, "min_mass") == 1, "default min_mass 1");
        CHECKF(jint(o1, "min_mass") == 30, "min_mass 30");
        CHECKF(jint(o1, "blobs") == 4 && jint(o1, "min_area") == 20 &&
                   jint(o1, "connectivity") == 4,
               "blob keys");
        CHECKF(jint(o0, "blobs") == 0 && jint(o0, "min_area") == 1 && jint(o0, "connectivity") == 8,
               "blob keys 0, 0, 0 as the backend reads them: 0, 1, 8");
        CHECKF(!strcmp(jstr(o1, "color"), "#00ff00"), "given colour");
        /* Derived colours: red hue (wrapping through 0) -> red dominates. */
        const char *c0 = jstr(o0, "color");
        unsigned r, g, bl;
        CHECKF(c0 && sscanf(c0, "#%02x%02x%02x", &r, &g, &bl) == 3 && r > 100 && g == bl && g < r,
               "derived red: %s", c0 ? c0 : "(null)");
        CHECKF(!strcmp(jstr(o2, "color"), "#808080"), "ycbcr mid-gray: %s", jstr(o2, "color"));
        CHECKF(!strcmp(jstr(o2, "space"), "ycbcr"), "space ycbcr");
    }
    json_decref(j);
    trk_buf_reset(&b);

    char col[8];
    trk_msg_object_color(&defs[1], col);
    CHECKF(!strcmp(col, "#da2828"), "rgb box centre: %s", col);
    /* The same default colour as the objects file (gpu/color.h's one rule):
     * hue 10..21 centres on 16, not 15. */
    const struct trk_object_def orange = {
        .name = "o", .space = TRK_SPACE_HSV, .lo = { 10, 200, 100 }, .hi = { 21, 255, 255 }
    };
    trk_msg_object_color(&orange, col);
    CHECKF(!strcmp(col, "#b23d13"), "hsv 10..21: %s", col);

    CHECKF(trk_msg_objects(&b, defs, 2, NULL) == 0, "objects");
    j = parse(&b, "objects");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "objects"), "type objects");
        CHECKF(json_array_size(json_object_get(j, "objects")) == 2, "2 objects");
    }
    json_decref(j);
    trk_buf_free(&b);

    /* Empty hello: no objects, NULL strings. */
    struct trk_hello_info e = { 0 };
    CHECKF(trk_msg_hello(&b, &e) == 0, "empty hello");
    j = parse(&b, "empty hello");
    if (j) {
        CHECKF(json_is_null(json_object_get(j, "backend")), "null backend");
        CHECKF(json_array_size(json_object_get(j, "objects")) == 0, "no objects");
        CHECKF(json_is_false(json_object_get(j, "control_auth")), "no token: control_auth false");
    }
    json_decref(j);
    trk_buf_free(&b);

    /* A server that wants the control token says so. */
    e.control_auth = true;
    CHECKF(trk_msg_hello(&b, &e) == 0, "hello with control_auth");
    j = parse(&b, "hello with control_auth");
    if (j) CHECKF(json_is_true(json_object_get(j, "control_auth")), "control_auth true");
    json_decref(j);
    trk_buf_free(&b);
}

/* hello.limits says what the daemon accepts: the documented values, and the
 * loader's own verdicts agree with them at each edge (a limit that drifted
 * from the validator would let the page offer values the daemon refuses). */

/* One valid object in s with every channel at its full range. */
static void full_range(struct trk_objects *o, int i, enum trk_space s)
{
    memset(&o->def[i], 0, sizeof o->def[i]);
    snprintf(o->def[i].name, sizeof o->def[i].name, "o%d", i);
    o->def[i].space = s;
    for (int c = 0; c < 3; c++)
        o->def[i].hi[c] = (uint16_t)trk_objects_channel_max(s, c);
    o->def[i].min_mass = 1;
    o->def[i].min_area = 1;
    o->def[i].connectivity = 8;
}

static bool valid(const struct trk_objects *o)
{
    return trk_objects_validate(o, NULL, 0) == 0;
}

static void check_space_limits(json_t *spaces, struct trk_objects *o, const char *name,
                               const char *channels, int hue_max)
{
    json_t *sp = json_object_get(spaces, name);
    json_t *ch = json_object_get(sp, "channels"), *max = json_object_get(sp, "max"),
           *wraps = json_object_get(sp, "wraps");
    CHECKF(json_array_size(ch) == 3 && json_array_size(max) == 3 && json_array_size(wraps) == 3,
           "%s: three channels", name);
    char got[16] = "";
    for (int c = 0; c < 3; c++) {
        const char *n = json_string_value(json_array_get(ch, c));
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", c ? "," : "", n ? n : "?");
    }
    CHECKF(!strcmp(got, channels), "%s channels %s, expected %s", name, got, channels);
    enum trk_space s = (enum trk_space)trk_objects_space_parse(name);
    for (int c = 0; c < 3; c++) {
        json_int_t m = json_integer_value(json_array_get(max, c));
        bool w = json_is_true(json_array_get(wraps, c));
        CHECKF(m == (c == 0 && hue_max ? hue_max : 255), "%s max[%d] = %lld", name, c,
               (long long)m);
        CHECKF(w == (c == 0 && hue_max), "%s wraps[%d] = %d", name, c, w);
        /* The edges as the loader sees them. */
        o->n = 1;
        full_range(o, 0, s);
        o->def[0].hi[c] = (uint16_t)m;
        CHECKF(valid(o), "%s: 0..%lld on channel %d is valid", name, (long long)m, c);
        o->def[0].hi[c] = (uint16_t)(m + 1);
        CHECKF(!valid(o), "%s: hi[%d] = %lld is refused", name, c, (long long)m + 1);
        o->def[0].lo[c] = (uint16_t)m;
        o->def[0].hi[c] = 0;
        CHECKF(valid(o) == w, "%s: lo > hi on channel %d %s", name, c,
               w ? "is a range through 0" : "is refused");
    }
}

static void test_hello_limits(void)
{
    static struct trk_objects o;
    struct trk_hello_info h = { 0 };
    struct trk_buf b = { 0 };
    CHECKF(trk_msg_hello(&b, &h) == 0, "hello");
    json_t *j = parse(&b, "hello");
    json_t *lim = json_object_get(j, "limits");
    CHECKF(json_is_object(lim), "hello.limits");
    json_t *spaces = json_object_get(lim, "spaces");
    CHECKF(json_object_size(spaces) == 5, "five spaces");
    check_space_limits(spaces, &o, "rgb", "R,G,B", 0);
    check_space_limits(spaces, &o, "hsv", "H,S,V", 359);
    check_space_limits(spaces, &o, "ycbcr", "Y,Cb,Cr", 0);
    check_space_limits(spaces, &o, "lab", "L,a,b", 0);
    check_space_limits(spaces, &o, "rg", "r,g,I", 0);

    json_int_t max_objects = jint(lim, "max_objects"), name_max = jint(lim, "name_max_bytes");
    CHECKF(max_objects == 256 && name_max == 63, "max_objects %lld, name_max_bytes %lld",
           (long long)max_objects, (long long)name_max);
    o.n = 1;
    full_range(&o, 0, TRK_SPACE_RGB);
    memset(o.def[0].name, 'n', (size_t)name_max);
    o.def[0].name[name_max] = '\0';
    CHECKF(valid(&o), "a name of name_max_bytes bytes is valid");
    if (name_max + 1 < (json_int_t)sizeof o.def[0].name) {
        o.def[0].name[name_max] = 'n';
        CHECKF(!valid(&o), "a name one byte longer is refused");
    }
    /* The blob keys at their edges. */
    json_int_t max_blobs = jint(lim, "max_blobs"), max_area = jint(lim, "max_min_area");
    json_t *conn = json_object_get(lim, "connectivity");
    CHECKF(max_blobs == 64 && max_area == 268435456, "max_blobs %lld, max_min_area %lld",
           (long long)max_blobs, (long long)max_area);
    CHECKF(json_array_size(conn) == 2 && json_integer_value(json_array_get(conn, 0)) == 4 &&
               json_integer_value(json_array_get(conn, 1)) == 8,
           "connectivity [4, 8]");
    full_range(&o, 0, TRK_SPACE_RGB);
    o.def[0].blobs = (uint16_t)max_blobs;
    o.def[0].min_area = (uint32_t)max_area;
    CHECKF(valid(&o), "max_blobs and max_min_area are valid");
    o.def[0].blobs++;
    CHECKF(!valid(&o), "one more blob is refused");
    o.def[0].blobs--;
    o.def[0].min_area++;
    CHECKF(!valid(&o), "a larger min_area is refused");
    o.def[0].min_area = 1;
    for (int c = 0; c <= 9; c++) {
        o.def[0].connectivity = (uint8_t)c;
        CHECKF(valid(&o) == (c == 4 || c == 8), "connectivity %d", c);
    }
    full_range(&o, 0, TRK_SPACE_RGB);
    if (max_objects > 0 && max_objects <= TRK_MAX_OBJECTS) {
        o.n = (int)max_objects;
        for (int i = 0; i < o.n; i++)
            full_range(&o, i, TRK_SPACE_RGB);
        CHECKF(valid(&o), "max_objects objects are valid");
        o.n = (int)max_objects + 1;
        CHECKF(!valid(&o), "one more object is refused");
    }
    json_decref(j);
    trk_buf_free(&b);
}

/* ------------------------------------------------- stats, status, errors */

static void test_small_messages(void)
{
    struct trk_buf b = { 0 };
    struct trk_stats_info s = {
        .uptime_s = 12.3456,
        .fps = 29.97,
        .frames = 370,
        .drops = 2,
        .skipped = 4,
        .clients = 3,
        .rss_kb = -1,
        .queue_ms = 0.2,
        .upload_ms = -1,
        .kernel_ms = 0.05,
        .process_ms = 1.25,
        .send_ms = -1,
        .total_ms = 3,
        .ws_sent = 1000,
        .ws_dropped = 5,
        .ws_bytes = 123456,
        .write_p50_ms = 0.0414,
        .write_p99_ms = 0.25,
        .write_max_ms = -1,
    };
    CHECKF(trk_msg_stats(&b, &s) == 0, "stats");
    json_t *j = parse(&b, "stats");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "stats"), "type");
        CHECKF(jnum(j, "fps") == 29.97 && jint(j, "frames") == 370 && jint(j, "drops") == 2 &&
                   jint(j, "skipped") == 4 && jint(j, "clients") == 3,
               "counters");
        CHECKF(json_is_null(json_object_get(j, "rss_kb")), "unknown rss -> null");
        json_t *l = json_object_get(j, "latency_median");
        CHECKF(jnum(l, "queue_ms") == 0.2 && json_is_null(json_object_get(l, "upload_ms")) &&
                   jnum(l, "process_ms") == 1.25 && json_is_null(json_object_get(l, "send_ms")) &&
                   jnum(l, "total_ms") == 3,
               "latency medians");
        json_t *w = json_object_get(j, "ws");
        CHECKF(jint(w, "messages_sent") == 1000 && jint(w, "messages_dropped") == 5 &&
                   jint(w, "bytes_sent") == 123456,
               "ws counters");
        json_t *wr = json_object_get(w, "write_ms");
        CHECKF(jnum(wr, "p50") == 0.041 && jnum(wr, "p99") == 0.25 &&
                   json_is_null(json_object_get(wr, "max")),
               "ws write delays (max < 0 -> null)");
        CHECKF(!json_object_get(j, "mqtt"), "no mqtt without has_mqtt");
        CHECKF(!json_object_get(j, "mode") && !json_object_get(j, "upload_bytes"), "no mode");
    }
    json_decref(j);
    trk_buf_reset(&b);
    s.has_mqtt = true;
    s.mqtt_connected = true;
    s.mqtt_published = 900;
    s.mqtt_dropped = 12;
    s.mqtt_connects = 2;
    CHECKF(trk_msg_stats(&b, &s) == 0, "stats with mqtt");
    j = parse(&b, "stats with mqtt");
    json_t *mq = json_object_get(j, "mqtt");
    CHECKF(json_is_true(json_object_get(mq, "connected")) && jint(mq, "published") == 900 &&
               jint(mq, "dropped") == 12 && jint(mq, "connects") == 2,
           "mqtt counters");
    json_decref(j);
    trk_buf_reset(&b);
    s.mode = "roi";
    s.upload_bytes = 1234.4;
    s.pinned_frames = 369;
    s.grown_frames = 7;
    s.whole_frames = 2;
    CHECKF(trk_msg_stats(&b, &s) == 0 &&
               strstr(b.data, "},\"mode\":\"roi\",\"upload_bytes\":1234,\"pinned_frames\":369,"
                              "\"reruns\":{\"grown\":7,\"whole\":2}}"),
           "mode: %s", b.data);
    trk_buf_reset(&b);
    s.upload_bytes = -1;
    CHECKF(trk_msg_stats(&b, &s) == 0 &&
               strstr(b.data, "\"upload_bytes\":null,\"pinned_frames\":369,"),
           "%s", b.data);
    trk_buf_reset(&b);

    CHECKF(trk_msg_status(&b, "lost", "camera /dev/video0: \"No such device\"") == 0, "status");
    j = parse(&b, "status");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "status") && !strcmp(jstr(j, "source"), "lost"), "lost");
        CHECKF(!strcmp(jstr(j, "message"), "camera /dev/video0: \"No such device\""), "message");
    }
    json_decref(j);
    trk_buf_reset(&b);
    trk_msg_status(&b, "eof", NULL);
    j = parse(&b, "status eof");
    CHECKF(j && json_is_null(json_object_get(j, "message")), "null message");
    json_decref(j);
    trk_buf_reset(&b);

    CHECKF(trk_msg_error(&b, "bad_json", "invalid JSON: \"x\"", "\"req-1\"") == 0, "error");
    j = parse(&b, "error");
    if (j) {
        CHECKF(!strcmp(jstr(j, "type"), "error") && !strcmp(jstr(j, "code"), "bad_json"), "code");
        CHECKF(!strcmp(jstr(j, "message"), "invalid JSON: \"x\""), "message");
        CHECKF(!strcmp(jstr(j, "id"), "req-1"), "id echoed");
    }
    json_decref(j);
    trk_buf_reset(&b);
    trk_msg_error(&b, "too_large", "big", "");
    j = parse(&b, "error without id");
    CHECKF(j && json_object_get(j, "id") == NULL, "no id");
    json_decref(j);
    trk_buf_reset(&b);

    CHECKF(trk_msg_pong(&b, "42", 1000.5) == 0, "pong");
    j = parse(&b, "pong");
    CHECKF(j && !strcmp(jstr(j, "type"), "pong") && jint(j, "id") == 42 &&
               jnum(j, "wall_ms") == 1000.5,
           "pong fields");
    json_decref(j);
    trk_buf_reset(&b);

    CHECKF(trk_msg_ack(&b, "add_object", "7", true) == 0 &&
               trk_buf_puts(&b, ",\"object_id\":3}") == 0,
           "ack open");
    j = parse(&b, "ack");
    CHECKF(j && !strcmp(jstr(j, "request"), "add_object") && jint(j, "id") == 7 &&
               jint(j, "object_id") == 3,
           "ack fields");
    json_decref(j);
    trk_buf_reset(&b);
    trk_msg_ack(&b, "remove_object", NULL, false);
    j = parse(&b, "ack closed");
    CHECKF(j && json_object_get(j, "id") == NULL, "ack closed");
    json_decref(j);

    /* The server's own acks (auth, subscribe), byte for byte as clients
     * have always read them. */
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_bool(&b, "auth", "7", "ok", true) == 0 &&
          !strcmp(b.data, "{\"type\":\"ack\",\"request\":\"auth\",\"id\":7,\"ok\":true}"));
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_bool(&b, "subscribe", NULL, "preview", false) == 0 &&
          !strcmp(b.data, "{\"type\":\"ack\",\"request\":\"subscribe\",\"preview\":false}"));
    trk_buf_free(&b);
}

/* --------------------------------------------------------------- preview */

/* The replies to the daemon's control messages. */
static void test_control_replies(void)
{
    struct trk_buf b = { 0 };
    struct trk_object_def d = { .name = "red",
                                .space = TRK_SPACE_HSV,
                                .lo = { 350, 100, 50 },
                                .hi = { 10, 255, 255 },
                                .min_mass = 4 };
    const char *colors[] = { "#ff0000" };
    CHECK(trk_msg_objects_reply(&b, "\"q\"", &d, 1, colors) == 0);
    json_t *j = parse(&b, "objects reply");
    if (j) {
        json_t *o = json_array_get(json_object_get(j, "objects"), 0);
        CHECKF(!strcmp(jstr(j, "type"), "objects") && !strcmp(jstr(j, "id"), "q") &&
                   !strcmp(jstr(o, "name"), "red") && !strcmp(jstr(o, "color"), "#ff0000") &&
                   jint(o, "min_mass") == 4,
               "%s", b.data);
    }
    json_decref(j);
    trk_buf_reset(&b);
    CHECK(trk_msg_objects_reply(&b, NULL, &d, 0, NULL) == 0);
    CHECKF(!strcmp(b.data, "{\"type\":\"objects\",\"objects\":[]}"), "%s", b.data);

    trk_buf_reset(&b);
    CHECK(trk_msg_ack_int(&b, "add_object", "12", "object_id", 3) == 0);
    CHECKF(!strcmp(b.data, "{\"type\":\"ack\",\"request\":\"add_object\",\"id\":12,"
                           "\"object_id\":3}"),
           "%s", b.data);
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_saved(&b, "", "/tmp/a \"b\".json", 2, NULL, false) == 0);
    j = parse(&b, "save ack");
    CHECKF(j && !strcmp(jstr(j, "request"), "save_objects") && !json_object_get(j, "id") &&
               !strcmp(jstr(j, "path"), "/tmp/a \"b\".json") && jint(j, "count") == 2 &&
               !json_object_get(j, "part") && !json_object_get(j, "whole"),
           "%s", b.data);
    json_decref(j);
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_saved(&b, "4", "/tmp/o.json", 3, "calibration", true) == 0);
    j = parse(&b, "part save ack");
    CHECKF(j && !strcmp(jstr(j, "part"), "calibration") &&
               json_is_true(json_object_get(j, "whole")) && jint(j, "count") == 3,
           "%s", b.data);
    json_decref(j);
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_preview(&b, "1", 320, 7.5, NULL) == 0);
    j = parse(&b, "preview ack");
    CHECKF(j && !strcmp(jstr(j, "request"), "preview") && jint(j, "width") == 320 &&
               jnum(j, "fps") == 7.5 && json_is_null(json_object_get(j, "mask")),
           "%s", b.data);
    json_decref(j);
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_preview(&b, "1", 320, 7.5, "blue") == 0);
    j = parse(&b, "preview ack with a mask");
    CHECKF(j && !strcmp(jstr(j, "mask"), "blue") && !json_object_get(j, "hold"), "%s", b.data);
    json_decref(j);
    /* A client's own view: a range as its mask, the frame it holds. */
    const struct trk_object_def box = { .space = TRK_SPACE_HSV,
                                        .lo = { 350, 50, 60 },
                                        .hi = { 10, 255, 250 } };
    struct trk_msg_view view = { .box = &box, .hold = 1234 };
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_preview_view(&b, "1", 320, 7.5, &view) == 0);
    j = parse(&b, "preview ack with a range and a hold");
    json_t *mk = json_object_get(j, "mask");
    CHECKF(j && !strcmp(jstr(mk, "space"), "hsv") &&
               json_integer_value(json_array_get(json_object_get(mk, "lo"), 0)) == 350 &&
               json_integer_value(json_array_get(json_object_get(mk, "hi"), 2)) == 250 &&
               jint(j, "hold") == 1234,
           "%s", b.data);
    json_decref(j);
    view = (struct trk_msg_view){ .name = NULL, .hold = -1 };
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_preview_view(&b, "1", 320, 7.5, &view) == 0);
    j = parse(&b, "preview ack without a view");
    CHECKF(j && json_is_null(json_object_get(j, "mask")) &&
               json_is_null(json_object_get(j, "hold")),
           "%s", b.data);
    json_decref(j);

    struct trk_sample_info s = {
        .id_json = "\"s1\"",
        .x = 5,
        .y = 6,
        .radius = 2,
        .rect = { 3, 4, 7, 8 },
        .seq = 99,
        .n = 25,
        .mean = { { 200, 30, 28 },
                  { 1, 219, 200 },
                  { 81, 99, 219 },
                  { 110, 196, 176 },
                  { 197, 29, 86 } },
        .lo = { { 175, 5, 3 },
                { 351, 180, 150 },
                { 56, 74, 194 },
                { 0, 184, 164 },
                { 185, 17, 10 } },
        .hi = { { 225, 55, 53 },
                { 11, 255, 250 },
                { 106, 124, 244 },
                { 255, 208, 188 },
                { 209, 41, 255 } },
    };
    trk_buf_reset(&b);
    CHECK(trk_msg_sample(&b, &s) == 0);
    j = parse(&b, "sample");
    if (j) {
        json_t *sug = json_object_get(j, "suggest");
        json_t *all = json_object_get(j, "suggest_all");
        json_t *yc = json_object_get(all, "ycbcr");
        CHECKF(!strcmp(jstr(j, "type"), "sample") && !strcmp(jstr(j, "id"), "s1") &&
                   jint(j, "x") == 5 && jint(j, "y") == 6 && jint(j, "radius") == 2 &&
                   jint(j, "seq") == 99 && jint(j, "n") == 25,
               "%s", b.data);
        CHECKF(json_integer_value(json_array_get(json_object_get(j, "rect"), 2)) == 7 &&
                   json_integer_value(json_array_get(json_object_get(j, "rgb"), 0)) == 200 &&
                   json_integer_value(json_array_get(json_object_get(j, "hsv"), 1)) == 219 &&
                   json_integer_value(json_array_get(json_object_get(j, "ycbcr"), 2)) == 219,
               "rect and means: %s", b.data);
        CHECKF(!strcmp(jstr(sug, "space"), "hsv") &&
                   json_integer_value(json_array_get(json_object_get(sug, "lo"), 0)) == 351 &&
                   json_integer_value(json_array_get(json_object_get(sug, "hi"), 0)) == 11,
               "suggest: %s", b.data);
        CHECKF(json_object_size(all) == 5 && !strcmp(jstr(yc, "space"), "ycbcr") &&
                   json_integer_value(json_array_get(json_object_get(yc, "hi"), 2)) == 244,
               "suggest_all: %s", b.data);
        json_t *lab = json_object_get(all, "lab"), *rg = json_object_get(all, "rg");
        CHECKF(!strcmp(jstr(lab, "space"), "lab") && !strcmp(jstr(rg, "space"), "rg") &&
                   json_integer_value(json_array_get(json_object_get(lab, "lo"), 1)) == 184 &&
                   json_integer_value(json_array_get(json_object_get(rg, "lo"), 2)) == 10 &&
                   json_integer_value(json_array_get(json_object_get(j, "lab"), 0)) == 110 &&
                   json_integer_value(json_array_get(json_object_get(j, "rg"), 2)) == 86,
               "lab and rg: %s", b.data);
    }
    json_decref(j);
    s.radius = -1; /* a rectangle request */
    s.id_json = NULL;
    trk_buf_reset(&b);
    CHECK(trk_msg_sample(&b, &s) == 0);
    j = parse(&b, "rectangle sample");
    CHECKF(j && !json_object_get(j, "radius") && !json_object_get(j, "id") &&
               !json_object_get(j, "frame_share"),
           "%s", b.data);
    json_decref(j);
    s.has_share = true;
    s.share[TRK_SPACE_RGB] = 0.25, s.share[TRK_SPACE_HSV] = 0.0125, s.share[TRK_SPACE_YCBCR] = 1;
    trk_buf_reset(&b);
    CHECK(trk_msg_sample(&b, &s) == 0);
    j = parse(&b, "sample with frame_share");
    json_t *fs = json_object_get(j, "frame_share");
    CHECKF(j && jnum(fs, "rgb") == 0.25 && jnum(fs, "hsv") == 0.013 && jnum(fs, "ycbcr") == 1.0,
           "%s", b.data);
    json_decref(j);
    trk_buf_free(&b);

    /* The daemon's error codes have their documented strings. */
    static const struct {
        int err;
        const char *code;
    } codes[] = {
        { TRK_MSG_INVALID_OBJECT, "invalid_object" },
        { TRK_MSG_DUPLICATE_NAME, "duplicate_name" },
        { TRK_MSG_TOO_MANY_OBJECTS, "too_many_objects" },
        { TRK_MSG_NOT_FOUND, "not_found" },
        { TRK_MSG_OUT_OF_RANGE, "out_of_range" },
        { TRK_MSG_BUSY, "busy" },
        { TRK_MSG_NO_FILE, "no_file" },
        { TRK_MSG_IO_ERROR, "io_error" },
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        CHECKF(!strcmp(trk_msg_err_code(codes[i].err), codes[i].code), "%s",
               trk_msg_err_code(codes[i].err));
}

/* One list of control types: every name maps to its enum value and back,
 * and the parser's default list forwards each of them. */
static void test_control_types(void)
{
    int n = 0;
    for (int t = 0; t < TRK_CTL_COUNT; t++, n++) {
        const char *name = trk_msg_control_types[t];
        CHECKF(name && trk_msg_control_type(name) == t, "type %d", t);
        if (!name) continue;
        char msg[80];
        snprintf(msg, sizeof(msg), "{\"type\":\"%s\"}", name);
        struct trk_cmsg cm;
        CHECKF(trk_msg_parse_client(msg, strlen(msg), NULL, &cm, NULL, 0) == TRK_MSG_OK &&
                   cm.kind == TRK_CMSG_CONTROL,
               "%s is forwarded by default", name);
    }
    CHECK(trk_msg_control_types[TRK_CTL_COUNT] == NULL && n == TRK_CTL_COUNT);
    CHECK(trk_msg_control_type("rename_object") == TRK_CTL_RENAME_OBJECT);
    CHECK(trk_msg_control_type("ping") == -1 && trk_msg_control_type(NULL) == -1);
}

/* The "camera" message and the set_camera ack: valid JSON with every
 * field, the menu of a menu control, none without a camera; the driver's
 * label escaped. */
static void test_camera(void)
{
    static const int64_t mv[] = { 1, 3 };
    static const char *const mn[] = { "Manual Mode", "Aperture \"Priority\" Mode" };
    const struct trk_cam_ctrl_info k[2] = {
        { .name = "auto_exposure",
          .label = "Auto Exposure",
          .group = "exposure",
          .is_auto = true,
          .kind = "menu",
          .min = 0,
          .max = 3,
          .step = 1,
          .def = 3,
          .value = 1,
          .auto_value = 3,
          .manual_value = 1,
          .n_menu = 2,
          .menu_values = mv,
          .menu_names = mn },
        { .name = "exposure_time_absolute",
          .label = "Exposure Time, Absolute",
          .group = "exposure",
          .kind = "int",
          .min = 3,
          .max = 2047,
          .step = 1,
          .def = 250,
          .value = 250,
          .inactive = true,
          .fixed = true },
    };
    struct trk_camera_info ci = { .device = "/dev/video0", .n = 2, .ctrls = k };
    struct trk_buf b = { 0 };
    CHECK(trk_msg_camera(&b, "7", &ci) == 0);
    json_t *j = json_loadb(b.data, b.len, 0, NULL);
    json_t *c = json_object_get(j, "controls");
    CHECKF(j && json_integer_value(json_object_get(j, "id")) == 7 &&
               json_is_true(json_object_get(j, "available")) &&
               json_is_null(json_object_get(j, "reason")) && json_array_size(c) == 2,
           "%s", b.data);
    json_t *a = json_array_get(c, 0), *e = json_array_get(c, 1);
    CHECK(json_integer_value(json_object_get(a, "auto_value")) == 3 &&
          json_is_true(json_object_get(a, "auto")) &&
          !strcmp(json_string_value(
                      json_object_get(json_array_get(json_object_get(a, "menu"), 1), "name")),
                  mn[1]));
    CHECK(!json_object_get(e, "auto_value") && !json_object_get(e, "menu") &&
          json_is_true(json_object_get(e, "inactive")) &&
          json_is_true(json_object_get(e, "fixed")) &&
          json_integer_value(json_object_get(e, "max")) == 2047);
    json_decref(j);
    trk_buf_reset(&b);
    struct trk_camera_info none = { .reason = "the demo scene has no camera controls" };
    CHECK(trk_msg_camera(&b, NULL, &none) == 0);
    CHECK_STR(b.data, "{\"type\":\"camera\",\"available\":false,\"device\":null,"
                      "\"reason\":\"the demo scene has no camera controls\",\"controls\":[]}");
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_camera(&b, "\"x\"", "gain", 50) == 0);
    CHECK_STR(b.data, "{\"type\":\"ack\",\"request\":\"set_camera\",\"id\":\"x\",\"name\":\"gain\","
                      "\"value\":50}");
    /* save_rewind's ack: the folder, escaped (a quote in a path stays JSON). */
    trk_buf_reset(&b);
    CHECK(trk_msg_ack_str(&b, "save_rewind", "7", "dir", "/r/a\"b") == 0);
    CHECK_STR(b.data,
              "{\"type\":\"ack\",\"request\":\"save_rewind\",\"id\":7,\"dir\":\"/r/a\\\"b\"}");
    trk_buf_free(&b);
}

static void test_preview_header(void)
{
    uint8_t h[TRK_PREVIEW_HDR];
    trk_msg_preview_header(h, 0x0102030405060708ULL, 320, 180, 1920, 1080);
    static const uint8_t want[TRK_PREVIEW_HDR] = {
        'T',  'R',  'K',  'P',  0x08, 0x07, 0x06, 0x05, 0x04, 0x03,
        0x02, 0x01, 0x40, 0x01, 0xB4, 0x00, 0x80, 0x07, 0x38, 0x04,
    };
    CHECKF(memcmp(h, want, sizeof want) == 0, "preview header bytes");
    trk_msg_preview_header(h, 1, 70000, -5, 65535, 0);
    CHECKF(h[12] == 0xFF && h[13] == 0xFF && h[14] == 0 && h[15] == 0 && h[16] == 0xFF &&
               h[17] == 0xFF,
           "clamped sizes");
}

/* ------------------------------------------------------------ request id */

static void test_request_id(void)
{
    char id[64];
    const char *m = "{\"type\":\"sample\",\"id\":\"a\\\"b\",\"x\":1}";
    size_t n = trk_msg_request_id(m, strlen(m), id, sizeof id);
    CHECKF(n == strlen(id) && !strcmp(id, "\"a\\\"b\""), "string id: %s", id);
    m = "{\"id\":12}";
    trk_msg_request_id(m, strlen(m), id, sizeof id);
    CHECKF(!strcmp(id, "12"), "number id: %s", id);
    m = "{\"id\":{\"a\":1}}";
    CHECKF(trk_msg_request_id(m, strlen(m), id, sizeof id) == 0 && id[0] == '\0',
           "object id not echoed");
    m = "not json";
    CHECKF(trk_msg_request_id(m, strlen(m), id, sizeof id) == 0 && id[0] == '\0', "bad json");
    m = "{\"id\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"}";
    CHECKF(trk_msg_request_id(m, strlen(m), id, sizeof id) == 0 && id[0] == '\0',
           "id longer than the output buffer is dropped, not truncated");
}

int main(void)
{
    test_buf();
    test_buf_alloc_failure();
    test_escaping();
    test_fixed();
    test_fixed_definition();
    test_integers();
    test_frame();
    test_frame_blobs();
    test_frame_instances();
    test_frame_markers();
    test_frame_shape();
    test_frame_predict();
    test_hello();
    test_hello_limits();
    test_small_messages();
    test_control_replies();
    test_control_types();
    test_camera();
    test_preview_header();
    test_request_id();
    if (check_failures) {
        fprintf(stderr, "%d failure(s)\n", check_failures);
        return 1;
    }
    printf("test_messages: all passed\n");
    return 0;
}
