/* Fuzz target for the objects loader: any bytes in, never a crash, and the
 * loader's promises hold:
 *   - accepted input: the set validates, and to_json -> load gives back an
 *     identical struct;
 *   - rejected input: a negative code and an error whose line/col lie inside
 *     the text and whose message is one line of valid UTF-8;
 *   - the position index, on any text jansson accepts, is complete (one entry
 *     per JSON value) and every position names the byte it indexes.
 * Built as a libFuzzer target with clang -DTRK_LIBFUZZER=ON; otherwise
 * replay_main.c runs the corpus (and deterministic mutations of it) in ctest.
 * Failures abort() so both harnesses report them. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "posindex.h"

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__, #c);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static size_t count_values(const json_t *v)
{
    size_t n = 1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            n += count_values(json_array_get(v, i));
    } else if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m) n += count_values(m);
    }
    return n;
}

static int valid_message(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!*p) return 0;
    while (*p) {
        if (*p < 0x20 || *p == 0x7F) return 0;
        int k = *p < 0x80             ? 1
                : (*p & 0xE0) == 0xC0 ? 2
                : (*p & 0xF0) == 0xE0 ? 3
                : (*p & 0xF8) == 0xF0 ? 4
                                      : 0;
        if (!k) return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80) return 0;
        p += k;
    }
    return 1;
}

static void check_error(const char *text, size_t len, const struct trk_config_error *e)
{
    FUZZ_ASSERT(valid_message(e->msg));
    FUZZ_ASSERT(e->line >= 1 && e->col >= 1);
    /* The line exists and the column is at most one past its end. */
    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i < len && line < e->line; i++)
        if (text[i] == '\n') {
            line++;
            start = i + 1;
        }
    FUZZ_ASSERT(line == e->line);
    size_t end = start;
    while (end < len && text[end] != '\n')
        end++;
    FUZZ_ASSERT((size_t)e->col <= end - start + 1);
    char buf[600];
    int n = trk_config_error_format(e, buf, sizeof buf);
    FUZZ_ASSERT(n > 0 && (size_t)n < sizeof buf && (size_t)n == strlen(buf));
}

static void check_index(const char *text, size_t len)
{
    size_t bom = (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    json_error_t je;
    /* As the loader: text with a NUL byte is not JSON (jansson would drop
     * some), so only the no-crash property is checked for it. */
    json_t *root = memchr(text, 0, len)
                       ? NULL
                       : json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &je);
    struct trk_posindex *ix = NULL;
    int rc = trk_posindex_build(text, len, &ix);
    FUZZ_ASSERT(rc >= 0 && ix);
    if (!root) {
        trk_posindex_destroy(&ix);
        return;
    }
    FUZZ_ASSERT(rc == 0);
    FUZZ_ASSERT((size_t)trk_posindex_count(ix) == count_values(root));
    /* Line and column of every byte, to check the index against. */
    int *lines = malloc((len + 1) * sizeof *lines), *cols = malloc((len + 1) * sizeof *cols);
    FUZZ_ASSERT(lines && cols);
    int l = 1, c = 1;
    for (size_t i = 0; i <= len; i++) {
        lines[i] = l;
        cols[i] = c;
        if (i < len && text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    for (int i = 0; i < trk_posindex_count(ix); i++) {
        struct trk_posindex_entry e;
        FUZZ_ASSERT(trk_posindex_get(ix, i, &e) == 0);
        FUZZ_ASSERT(e.off < len && strchr("{[\"-0123456789tfn", text[e.off]) && text[e.off]);
        FUZZ_ASSERT(lines[e.off] == e.line && cols[e.off] == e.col);
        if (e.has_key) {
            FUZZ_ASSERT(e.depth > 0 && e.key_off < e.off && text[e.key_off] == '"');
            FUZZ_ASSERT(lines[e.key_off] == e.key_line && cols[e.key_off] == e.key_col);
        }
    }
    free(lines);
    free(cols);
    trk_posindex_destroy(&ix);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct trk_objects *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    FUZZ_ASSERT(a && b);
    struct trk_config_error err;
    int rc = trk_objects_load_string(text, size, "fuzz", a, &err);
    if (rc == 0) {
        FUZZ_ASSERT(trk_objects_validate(a, NULL, 0) == 0);
        char *j = trk_objects_to_json(a);
        FUZZ_ASSERT(j);
        memset(b, 0x77, sizeof *b);
        FUZZ_ASSERT(trk_objects_load_string(j, strlen(j), "again", b, &err) == 0);
        /* Class objects point at their own set's tables: equal sets differ
         * only there. */
        for (int i = 0; i < a->n; i++) {
            FUZZ_ASSERT(!a->def[i].cls == !b->def[i].cls);
            a->def[i].cls = b->def[i].cls = NULL;
        }
        FUZZ_ASSERT(memcmp(a, b, sizeof *a) == 0);
        free(j);
    } else {
        FUZZ_ASSERT(rc == TRK_EINVAL);
        check_error(text, size, &err);
    }
    /* The index is quadratic-free but the per-byte tables are not small. */
    if (size <= 256 * 1024) check_index(text, size);
    free(a);
    free(b);
    return 0;
}
