/* Prints what trackd finds, from its WebSocket: per frame, the objects found
 * and their positions, then each instance of a tracked object (id, position,
 * velocity) and each blob of an object that lists blobs, as
 * examples/ws_client.py does. A libwebsockets client (Debian:
 * libwebsockets-dev), JSON read with jansson (libjansson-dev).
 *
 *     trackd-ws-client [HOST [PORT [FRAMES]]]
 *
 * HOST:PORT defaults to 127.0.0.1:8080; FRAMES (default 0 = forever) stops
 * after that many frames. Messages: protocol/PROTOCOL.md. */
#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct client {
    char *msg; /* one text message, its fragments joined */
    size_t len, cap;
    int frames, seen;
    bool failed, done;
};

/* Instances of a tracked object (id, position, velocity), else its blobs
 * when it lists them: a tracked object's blobs are its instances. */
static void print_details(json_t *o)
{
    const char *name = json_string_value(json_object_get(o, "name"));
    json_t *instances = json_object_get(o, "instances"), *x;
    size_t k;
    json_array_foreach(instances, k, x)
    {
        json_int_t lost = json_integer_value(json_object_get(x, "lost"));
        printf("  %s #%" JSON_INTEGER_FORMAT " at (%.1f, %.1f) moving (%.2f, %.2f) px/frame", name,
               json_integer_value(json_object_get(x, "id")),
               json_number_value(json_object_get(x, "cx")),
               json_number_value(json_object_get(x, "cy")),
               json_number_value(json_object_get(x, "vx")),
               json_number_value(json_object_get(x, "vy")));
        if (lost) printf(", lost for %" JSON_INTEGER_FORMAT " frames", lost);
        printf("\n");
    }
    if (instances) return;
    json_array_foreach(json_object_get(o, "blobs"), k, x)
    {
        printf("  %s blob at (%.1f, %.1f), %" JSON_INTEGER_FORMAT " px\n", name,
               json_number_value(json_object_get(x, "cx")),
               json_number_value(json_object_get(x, "cy")),
               json_integer_value(json_object_get(x, "mass")));
    }
}

static void print_frame(struct client *c)
{
    json_t *msg = json_loadb(c->msg, c->len, 0, NULL);
    const char *type = json_string_value(json_object_get(msg, "type"));
    if (type && !strcmp(type, "frame")) { /* not hello, stats, status, ... */
        printf("frame %" JSON_INTEGER_FORMAT ":", json_integer_value(json_object_get(msg, "seq")));
        const char *sep = " ";
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(msg, "objects"), i, o)
        {
            if (!json_is_true(json_object_get(o, "found"))) continue;
            printf("%s%s (%.1f, %.1f)", sep, json_string_value(json_object_get(o, "name")),
                   json_number_value(json_object_get(o, "cx")),
                   json_number_value(json_object_get(o, "cy")));
            sep = ", ";
        }
        printf("\n");
        json_array_foreach(json_object_get(msg, "objects"), i, o) print_details(o);
        fflush(stdout);
        c->done = ++c->seen == c->frames;
    }
    json_decref(msg);
}

static int on_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct client *c = lws_context_user(lws_get_context(wsi));
    (void)user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        lws_callback_on_writable(wsi); /* to send the subscribe below */
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE: {
        /* Positions only: no preview JPEGs for this connection. */
        static const char sub[] = "{\"type\":\"subscribe\",\"preview\":false}";
        unsigned char buf[LWS_PRE + sizeof(sub)];
        memcpy(buf + LWS_PRE, sub, sizeof(sub) - 1);
        if (lws_write(wsi, buf + LWS_PRE, sizeof(sub) - 1, LWS_WRITE_TEXT) < 0) return -1;
        break;
    }
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (lws_frame_is_binary(wsi)) break; /* a preview sent before the subscribe */
        if (c->len + len > c->cap) {
            c->cap = (c->len + len) * 2;
            if (!(c->msg = realloc(c->msg, c->cap))) return -1;
        }
        memcpy(c->msg + c->len, in, len);
        c->len += len;
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi)) break;
        print_frame(c);
        c->len = 0;
        return c->done ? -1 : 0; /* -1 closes the connection */
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        fprintf(stderr, "cannot connect: %s\n", in ? (const char *)in : "unknown error");
        c->failed = c->done = true;
        break;
    case LWS_CALLBACK_CLIENT_CLOSED: c->done = true; break;
    default: break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *host = argc > 1 ? argv[1] : "127.0.0.1";
    int port = argc > 2 ? atoi(argv[2]) : 8080;
    struct client c = { .frames = argc > 3 ? atoi(argv[3]) : 0 };
    static const struct lws_protocols protocols[] = {
        { "trackd-example", on_event, 0, 0, 0, NULL, 0 },
        { NULL, NULL, 0, 0, 0, NULL, 0 },
    };
    struct lws_context_creation_info info = { .port = CONTEXT_PORT_NO_LISTEN,
                                              .protocols = protocols,
                                              .user = &c };
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context *ctx = lws_create_context(&info);
    if (!ctx) return 70;
    /* No subprotocol asked for: trackd serves such clients (PROTOCOL.md). */
    struct lws_client_connect_info ci = {
        .context = ctx, .address = host, .port = port, .path = "/ws", .host = host
    };
    if (!lws_client_connect_via_info(&ci)) c.failed = c.done = true;
    while (!c.done && lws_service(ctx, 0) >= 0)
        ;
    lws_context_destroy(ctx);
    free(c.msg);
    return c.failed ? 69 : 0;
}
