/* Unit tests of the client -> server message parser (trk_msg_parse_client):
 * each case gives the input, the expected result code, kind, echoed id and
 * preview flag. Inputs are copied into exactly-sized heap buffers without a
 * terminator, so sanitizer builds catch any read past len. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "messages.h"

#include "../check.h"

struct tcase {
    const char *in;
    size_t len; /* 0 = strlen(in) */
    int rc;
    int kind;       /* when rc == OK */
    const char *id; /* expected id JSON text ("" = none) */
    int preview;    /* expected preview (subscribe) */
};

static int run(const char *data, size_t len, const char *const *types, struct trk_cmsg *out,
               char *why, size_t why_len)
{
    /* Exact-size copy, no terminator. */
    char *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, data, len);
    int rc = trk_msg_parse_client(copy, len, types, out, why, why_len);
    free(copy);
    return rc;
}

static void test_table(void)
{
    static const struct tcase cases[] = {
        /* server-handled */
        { "{\"type\":\"ping\"}", 0, TRK_MSG_OK, TRK_CMSG_PING, "", -1 },
        { "{\"type\":\"ping\",\"id\":1}", 0, TRK_MSG_OK, TRK_CMSG_PING, "1", -1 },
        { "{\"id\":\"x\",\"type\":\"ping\"}", 0, TRK_MSG_OK, TRK_CMSG_PING, "\"x\"", -1 },
        { " \n{ \"type\" : \"ping\" , \"id\" : -2.5 }\t", 0, TRK_MSG_OK, TRK_CMSG_PING, "-2.5",
          -1 },
        { "{\"type\":\"ping\",\"id\":\"q\\\"\\u00e9\"}", 0, TRK_MSG_OK, TRK_CMSG_PING,
          "\"q\\\"\xc3\xa9\"", -1 },
        { "{\"type\":\"ping\",\"id\":[1]}", 0, TRK_MSG_OK, TRK_CMSG_PING, "", -1 },
        { "{\"type\":\"ping\",\"id\":null}", 0, TRK_MSG_OK, TRK_CMSG_PING, "", -1 },
        { "{\"type\":\"subscribe\",\"preview\":false}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE, "", 0 },
        { "{\"type\":\"subscribe\",\"preview\":true,\"id\":9}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE,
          "9", 1 },
        { "{\"type\":\"subscribe\"}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE, "", -1 },
        { "{\"type\":\"sync\",\"id\":3,\"t0\":1763700000.123456}", 0, TRK_MSG_OK, TRK_CMSG_SYNC,
          "3", -1 },
        { "{\"type\":\"sync\"}", 0, TRK_MSG_OK, TRK_CMSG_SYNC, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":\"send\"}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE, "",
          -1 },
        { "{\"type\":\"subscribe\",\"predict\":0.05}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":false}", 0, TRK_MSG_OK, TRK_CMSG_SUBSCRIBE, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":true}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":\"now\"}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":-0.1}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        { "{\"type\":\"subscribe\",\"predict\":1.5}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        { "{\"type\":\"sync\",\"t0\":\"now\"}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        /* control messages (default list) */
        { "{\"type\":\"set_objects\",\"objects\":[]}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        { "{\"type\":\"add_object\",\"id\":5,\"object\":{}}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "5",
          -1 },
        { "{\"type\":\"update_object\"}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        { "{\"type\":\"remove_object\"}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        { "{\"type\":\"sample\",\"x\":1,\"y\":2}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        { "{\"type\":\"get_objects\"}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        { "{\"type\":\"save_objects\"}", 0, TRK_MSG_OK, TRK_CMSG_CONTROL, "", -1 },
        /* malformed */
        { "", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "not json", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "{\"type\":\"ping\"", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "{\"type\":\"ping\"} trailing", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "{\"type\":\"ping\",\"type\":\"ping\"}", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "{\"type\":\"pi\xff\"}", 0, TRK_MSG_BAD_JSON, 0, "", -1 },      /* bad UTF-8 */
        { "{\"type\":\"ping\"}\0junk", 20, TRK_MSG_BAD_JSON, 0, "", -1 }, /* NUL inside */
        { "{\"type\":\"pi\\u0000ng\"}", 0, TRK_MSG_BAD_JSON, 0, "", -1 }, /* escaped NUL */
        { "{\"id\":99999999999999999999999}", 0, TRK_MSG_BAD_JSON, 0, "", -1 },
        { "[]", 0, TRK_MSG_NOT_OBJECT, 0, "", -1 },
        { "\"ping\"", 0, TRK_MSG_NOT_OBJECT, 0, "", -1 },
        { "42", 0, TRK_MSG_NOT_OBJECT, 0, "", -1 },
        { "null", 0, TRK_MSG_NOT_OBJECT, 0, "", -1 },
        { "{}", 0, TRK_MSG_BAD_TYPE, 0, "", -1 },
        { "{\"type\":1,\"id\":3}", 0, TRK_MSG_BAD_TYPE, 0, "3", -1 },
        { "{\"type\":null}", 0, TRK_MSG_BAD_TYPE, 0, "", -1 },
        { "{\"type\":[\"ping\"]}", 0, TRK_MSG_BAD_TYPE, 0, "", -1 },
        { "{\"Type\":\"ping\"}", 0, TRK_MSG_BAD_TYPE, 0, "", -1 },
        { "{\"type\":\"PING\",\"id\":\"u\"}", 0, TRK_MSG_UNKNOWN_TYPE, 0, "\"u\"", -1 },
        { "{\"type\":\"\"}", 0, TRK_MSG_UNKNOWN_TYPE, 0, "", -1 },
        { "{\"type\":\"a_type_name_that_is_longer_than_the_field\"}", 0, TRK_MSG_UNKNOWN_TYPE, 0,
          "", -1 },
        { "{\"type\":\"hello\"}", 0, TRK_MSG_UNKNOWN_TYPE, 0, "", -1 },
        { "{\"type\":\"frame\"}", 0, TRK_MSG_UNKNOWN_TYPE, 0, "", -1 },
        { "{\"type\":\"subscribe\",\"preview\":1,\"id\":4}", 0, TRK_MSG_BAD_FIELD, 0, "4", -1 },
        { "{\"type\":\"subscribe\",\"preview\":\"true\"}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
        { "{\"type\":\"subscribe\",\"preview\":null}", 0, TRK_MSG_BAD_FIELD, 0, "", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tcase *t = &cases[i];
        size_t len = t->len ? t->len : strlen(t->in);
        struct trk_cmsg m;
        char why[160];
        int rc = run(t->in, len, NULL, &m, why, sizeof why);
        CHECKF(rc == t->rc, "case %zu (%.40s): rc %d (%s), want %d", i, t->in, rc, why, t->rc);
        if (rc != t->rc) continue;
        CHECKF(!strcmp(m.id, t->id), "case %zu (%.40s): id '%s', want '%s'", i, t->in, m.id, t->id);
        if (rc == TRK_MSG_OK) {
            CHECKF((int)m.kind == t->kind, "case %zu: kind %d want %d", i, m.kind, t->kind);
            CHECKF(m.preview == t->preview, "case %zu: preview %d want %d", i, m.preview,
                   t->preview);
            CHECKF(why[0] == '\0', "case %zu: message on success: %s", i, why);
        } else {
            CHECKF(why[0] != '\0', "case %zu: no explanation for an error", i);
            CHECKF(strcmp(trk_msg_err_code(rc), "error") != 0, "case %zu: code name", i);
        }
    }
}

/* A sync request's t0 comes back as the same number; the reply is JSON
 * with every time the server took. */
static void test_sync(void)
{
    const char *in = "{\"type\":\"sync\",\"id\":\"s\",\"t0\":1763700000.1234567}";
    struct trk_cmsg m;
    char why[160];
    CHECKF(run(in, strlen(in), NULL, &m, why, sizeof why) == TRK_MSG_OK, "sync parses: %s", why);
    struct trk_buf b = { 0 };
    struct trk_sync_times t = { 1763700000200.5, 12.25, 1763700000200.75, 12.5 };
    CHECKF(trk_msg_sync(&b, m.id, m.t0, &t) == 0, "sync reply encodes");
    json_t *j = json_loadb(b.data, b.len, 0, NULL);
    CHECKF(j && json_real_value(json_object_get(j, "t0")) == 1763700000.1234567,
           "t0 echoed exactly: %s", b.data);
    CHECKF(j && !strcmp(json_string_value(json_object_get(j, "id")), "s") &&
               json_number_value(json_object_get(j, "rx_wall_ms")) == 1763700000200.5 &&
               json_number_value(json_object_get(j, "tx_mono")) == 12.5 &&
               !strcmp(json_string_value(json_object_get(j, "capture_clock")), "mono"),
           "reply fields: %s", b.data);
    json_decref(j);
    trk_buf_free(&b);
}

static void test_sizes(void)
{
    /* Exactly the limit is accepted; one byte more is too large. */
    size_t cap = TRK_MSG_MAX_CLIENT + 1;
    char *big = malloc(cap);
    const char *head = "{\"type\":\"ping\",\"id\":1,\"pad\":\"";
    size_t hl = strlen(head);
    memcpy(big, head, hl);
    memset(big + hl, 'p', TRK_MSG_MAX_CLIENT - hl - 2);
    memcpy(big + TRK_MSG_MAX_CLIENT - 2, "\"}", 2);
    struct trk_cmsg m;
    int rc = trk_msg_parse_client(big, TRK_MSG_MAX_CLIENT, NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_OK && m.kind == TRK_CMSG_PING && !strcmp(m.id, "1"),
           "64 KiB message: rc %d", rc);
    big[TRK_MSG_MAX_CLIENT] = ' ';
    rc = trk_msg_parse_client(big, TRK_MSG_MAX_CLIENT + 1, NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_TOO_LARGE, "64 KiB + 1: rc %d", rc);
    free(big);

    /* Deep nesting is rejected by jansson's depth limit, not a crash. */
    size_t depth = 60000;
    char *deep = malloc(2 * depth + 32);
    size_t n = 0;
    n += (size_t)sprintf(deep, "{\"type\":\"ping\",\"x\":");
    for (size_t i = 0; i < depth && n < TRK_MSG_MAX_CLIENT / 2 - 8; i++)
        deep[n++] = '[';
    size_t opened = n - strlen("{\"type\":\"ping\",\"x\":");
    for (size_t i = 0; i < opened; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    rc = trk_msg_parse_client(deep, n, NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_BAD_JSON, "deep nesting: rc %d", rc);
    free(deep);

    /* Long string ids are not echoed (no amplification). */
    char idmsg[600];
    snprintf(idmsg, sizeof idmsg, "{\"type\":\"ping\",\"id\":\"%0*d\"}", TRK_MSG_ID_MAX + 1, 7);
    rc = trk_msg_parse_client(idmsg, strlen(idmsg), NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_OK && m.id[0] == '\0', "long id not echoed: '%s'", m.id);
    snprintf(idmsg, sizeof idmsg, "{\"type\":\"ping\",\"id\":\"%0*d\"}", TRK_MSG_ID_MAX, 7);
    rc = trk_msg_parse_client(idmsg, strlen(idmsg), NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_OK && strlen(m.id) == TRK_MSG_ID_MAX + 2, "max id echoed: '%s'", m.id);
    /* A max-length id of characters that all need escaping still fits. */
    char esc[1200];
    n = (size_t)sprintf(esc, "{\"type\":\"ping\",\"id\":\"");
    for (int i = 0; i < TRK_MSG_ID_MAX; i++)
        n += (size_t)sprintf(esc + n, "\\u0001");
    n += (size_t)sprintf(esc + n, "\"}");
    rc = trk_msg_parse_client(esc, n, NULL, &m, NULL, 0);
    CHECKF(rc == TRK_MSG_OK && strlen(m.id) > TRK_MSG_ID_MAX, "escaped id echoed (%zu)",
           strlen(m.id));
    json_t *j = json_loads(m.id, JSON_DECODE_ANY, NULL);
    CHECKF(j && json_string_length(j) == TRK_MSG_ID_MAX, "escaped id round trip");
    json_decref(j);
}

static void test_custom_types(void)
{
    static const char *const mine[] = { "teach", "set_objects", NULL };
    static const char *const none[] = { NULL };
    struct trk_cmsg m;
    const char *teach = "{\"type\":\"teach\"}", *add = "{\"type\":\"add_object\"}",
               *ping = "{\"type\":\"ping\"}";
    CHECKF(trk_msg_parse_client(teach, strlen(teach), mine, &m, NULL, 0) == TRK_MSG_OK &&
               m.kind == TRK_CMSG_CONTROL && !strcmp(m.type, "teach"),
           "custom type");
    CHECKF(trk_msg_parse_client(add, strlen(add), mine, &m, NULL, 0) == TRK_MSG_UNKNOWN_TYPE,
           "default type not in the custom list");
    CHECKF(trk_msg_parse_client(teach, strlen(teach), none, &m, NULL, 0) == TRK_MSG_UNKNOWN_TYPE,
           "empty list forwards nothing");
    CHECKF(trk_msg_parse_client(ping, strlen(ping), none, &m, NULL, 0) == TRK_MSG_OK &&
               m.kind == TRK_CMSG_PING,
           "ping is always the server's");
    /* Error explanations never overflow a tiny buffer. */
    char tiny[4];
    CHECKF(trk_msg_parse_client("x", 1, NULL, &m, tiny, sizeof tiny) == TRK_MSG_BAD_JSON &&
               strlen(tiny) == 3,
           "truncated explanation");
    /* Code strings. */
    CHECKF(!strcmp(trk_msg_err_code(TRK_MSG_BAD_JSON), "bad_json") &&
               !strcmp(trk_msg_err_code(TRK_MSG_NOT_OBJECT), "not_object") &&
               !strcmp(trk_msg_err_code(TRK_MSG_BAD_TYPE), "bad_type") &&
               !strcmp(trk_msg_err_code(TRK_MSG_UNKNOWN_TYPE), "unknown_type") &&
               !strcmp(trk_msg_err_code(TRK_MSG_TOO_LARGE), "too_large") &&
               !strcmp(trk_msg_err_code(TRK_MSG_BAD_FIELD), "bad_field") &&
               !strcmp(trk_msg_err_code(TRK_MSG_BINARY), "binary") &&
               !strcmp(trk_msg_err_code(TRK_MSG_UNSUPPORTED), "unsupported"),
           "code strings");
}

int main(void)
{
    test_table();
    test_sync();
    test_sizes();
    test_custom_types();
    if (check_failures) {
        fprintf(stderr, "%d failure(s)\n", check_failures);
        return 1;
    }
    printf("test_client_parse: all passed\n");
    return 0;
}
