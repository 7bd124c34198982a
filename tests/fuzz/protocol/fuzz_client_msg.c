/* Fuzz target for the client -> server message parser (protocol/messages.c),
 * the untrusted input every WebSocket client can send.
 *
 * Invariants checked (abort on violation, which the fuzzer reports):
 *   - trk_msg_parse_client never reads past len, never crashes, returns a
 *     known code, and on success reports a kind that matches the type.
 *   - The echoed id and every error reply built from it are valid JSON, and
 *     the id is never longer than its bound.
 *   - trk_buf_json_str of the raw bytes is always a valid JSON string (the
 *     escaper is what makes arbitrary names and messages safe to send).
 *
 * Built two ways: with clang -fsanitize=fuzzer (TRK_FUZZ_LIBFUZZER=ON) for
 * fuzzing, and with replay_main.c for plain ctest, which replays the corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "messages.h"

#define ASSERT(c)                                                                                  \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void check_valid_json(const struct trk_buf *b, int flags)
{
    json_error_t e;
    json_t *j = json_loadb(b->data, b->len, flags, &e);
    if (!j) fprintf(stderr, "invalid JSON produced: %s: %.200s\n", e.text, b->data);
    ASSERT(j != NULL);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size copy: no terminator to lean on. */
    char *in = malloc(size ? size : 1);
    if (!in) return 0;
    if (size) memcpy(in, data, size);

    struct trk_cmsg m;
    char why[160];
    int rc = trk_msg_parse_client(in, size, NULL, &m, why, sizeof why);
    ASSERT(rc <= 0 && rc >= TRK_MSG_ERR_MIN);
    /* Both strings end inside their buffers (strlen on an unterminated one
     * would read past them), and an error always says why: bad input gets a
     * clear error, success none. */
    ASSERT(memchr(m.id, '\0', sizeof m.id) != NULL);
    ASSERT(memchr(why, '\0', sizeof why) != NULL);
    ASSERT(rc == TRK_MSG_OK ? why[0] == '\0' : why[0] != '\0');
    /* The echoed id is JSON text of a number or of a string within the
     * TRK_MSG_ID_MAX bound; anything else is not echoed at all. */
    if (m.id[0]) {
        json_t *id = json_loads(m.id, JSON_DECODE_ANY, NULL);
        ASSERT(id != NULL);
        ASSERT(json_is_number(id) || json_is_string(id));
        ASSERT(!json_is_string(id) || json_string_length(id) <= TRK_MSG_ID_MAX);
        json_decref(id);
    }
    if (rc == TRK_MSG_OK) {
        ASSERT(m.preview >= -1 && m.preview <= 1);
        if (m.kind == TRK_CMSG_PING)
            ASSERT(!strcmp(m.type, "ping"));
        else if (m.kind == TRK_CMSG_SUBSCRIBE)
            ASSERT(!strcmp(m.type, "subscribe"));
        else if (m.kind == TRK_CMSG_SYNC)
            ASSERT(!strcmp(m.type, "sync"));
        else
            ASSERT(m.kind == TRK_CMSG_CONTROL && m.type[0]);
    }
    struct trk_buf b = { 0 };
    if (rc == TRK_MSG_OK && m.kind == TRK_CMSG_PING)
        ASSERT(trk_msg_pong(&b, m.id, 1.0) == 0);
    else if (rc == TRK_MSG_OK && m.kind == TRK_CMSG_SYNC)
        ASSERT(trk_msg_sync(&b, m.id, m.t0, &(struct trk_sync_times){ 1, 2, 3, 4 }) == 0);
    else
        ASSERT(trk_msg_error(&b, trk_msg_err_code(rc), why, m.id) == 0);
    check_valid_json(&b, 0);

    /* The daemon-side id extraction agrees with the parser's. */
    char id[sizeof m.id];
    trk_msg_request_id(in, size, id, sizeof id);
    if (rc == TRK_MSG_OK) ASSERT(!strcmp(id, m.id));

    /* Any bytes escape into a valid JSON string. */
    trk_buf_reset(&b);
    ASSERT(trk_buf_json_str(&b, in, size) == 0);
    check_valid_json(&b, JSON_DECODE_ANY);
    trk_buf_free(&b);
    free(in);
    return 0;
}
