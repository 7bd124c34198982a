/* What a WebSocket client sends (see ws_int.h): its messages reassembled
 * from fragments and bounded in size, parsed (messages.h), and answered:
 * ping, sync and subscribe here, auth against the control token, control messages
 * handed to the daemon's on_message once the client may send them. Errors go
 * back to the client as error messages.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "trk_clock.h"
#include "trk_error.h"
#include "messages.h"
#include "ws_int.h"

static void client_error(struct trk_ws *ws, struct client *c, int err, const char *text,
                         const char *id_json)
{
    struct trk_buf b = { 0 };
    if (trk_msg_error(&b, trk_msg_err_code(err), text, id_json) == 0)
        trk_ws_client_reply_buf(ws, c, &b);
    trk_buf_free(&b);
}

/* Service thread: {"type":"auth","token":"..."}. */
static void client_auth(struct trk_ws *ws, struct client *c, const char *data, size_t len,
                        const char *id)
{
    json_t *msg = json_loadb(data, len, 0, NULL);
    json_t *tok = json_object_get(msg, "token");
    if (ws->token && !json_is_string(tok)) {
        client_error(ws, c, TRK_MSG_BAD_FIELD, "\"token\" must be a string", id);
    } else if (ws->token &&
               !trk_ws_token_equal(json_string_value(tok), json_string_length(tok), ws->token)) {
        client_error(ws, c, TRK_MSG_UNAUTHORIZED, "wrong control token", id);
    } else {
        c->authed = true;
        struct trk_buf b = { 0 };
        if (trk_msg_ack_bool(&b, "auth", id, "ok", true) == 0) trk_ws_client_reply_buf(ws, c, &b);
        trk_buf_free(&b);
    }
    json_decref(msg);
}

/* Service thread: one complete text message from client c. */
static void client_message(struct trk_ws *ws, struct client *c, char *data, size_t len)
{
    /* A sync request's receive time: before parsing, as near the socket
     * read as this thread gets. */
    struct trk_sync_times st = { .rx_mono = trk_now(), .rx_wall_ms = trk_wall_ms() };
    struct trk_cmsg cm;
    char why[160];
    int rc = trk_msg_parse_client(data, len, (const char *const *)ws->control_types, &cm, why,
                                  sizeof why);
    if (rc != TRK_MSG_OK) {
        client_error(ws, c, rc, why, cm.id);
        return;
    }
    struct trk_buf b = { 0 };
    switch (cm.kind) {
    case TRK_CMSG_PING:
        if (trk_msg_pong(&b, cm.id, trk_wall_ms()) == 0) trk_ws_client_reply_buf(ws, c, &b);
        break;
    case TRK_CMSG_SYNC:
        trk_msg_sync_stamp_tx(&st);
        if (trk_msg_sync(&b, cm.id, cm.t0, &st) == 0) trk_ws_client_reply_buf(ws, c, &b);
        break;
    case TRK_CMSG_SUBSCRIBE:
        if (cm.predict == 1 && !ws->predict_ok) {
            client_error(ws, c, TRK_MSG_UNSUPPORTED, "this server sends no predicted positions",
                         cm.id);
            break;
        }
        if (cm.predict >= 0 && trk_ws_predict_join(ws, c, cm.predict == 1, cm.predict_ahead)) {
            client_error(ws, c, TRK_MSG_BUSY,
                         "at most 4 different predict times at once: ask for one in use, or "
                         "\"send\"",
                         cm.id);
            break;
        }
        if (cm.preview >= 0) {
            c->preview_on = cm.preview;
            if (!c->preview_on) msg_unref(&c->slot[TRK_WS_PREVIEW]); /* not a drop: unwanted */
        }
        if (trk_msg_ack_subscribe(&b, cm.id, c->preview_on,
                                  cm.predict >= 0 ? c->predict_slot >= 0 : -1,
                                  cm.predict_ahead) == 0)
            trk_ws_client_reply_buf(ws, c, &b);
        break;
    case TRK_CMSG_CONTROL:
        if (!strcmp(cm.type, "auth")) {
            client_auth(ws, c, data, len, cm.id);
            break;
        }
        if (!c->authed) {
            client_error(ws, c, TRK_MSG_UNAUTHORIZED,
                         "control messages need the control token (auth first)", cm.id);
            break;
        }
        if (!ws->token && in_list(ws->owner_types, cm.type) && !trk_ws_peer_is_owner(c)) {
            char why[200];
            snprintf(why, sizeof why,
                     "\"%s\" acts with the server's rights: only its own user (uid %u) may "
                     "send it here, or anyone with a control token (--control-token)",
                     cm.type, (unsigned)geteuid());
            client_error(ws, c, TRK_MSG_UNAUTHORIZED, why, cm.id);
            break;
        }
        if (ws->on_message)
            ws->on_message(ws->user, c->id, data, len);
        else
            client_error(ws, c, TRK_MSG_UNSUPPORTED, "this server handles no control messages",
                         cm.id);
        break;
    }
    trk_buf_free(&b);
}

/* Service thread: a chunk of received data. lws delivers a message in one or
 * more chunks (fragments, or pieces of a frame larger than RX_CHUNK).
 * Returns false when the message is too large to read on: the caller closes
 * the connection (1009). */
bool trk_ws_client_receive(struct trk_ws *ws, struct client *c, const void *in, size_t len)
{
    if (!c->rx_active) {
        c->rx_active = true;
        c->rx_len = 0;
        c->rx_total = 0;
        c->rx_over = false;
        c->rx_binary = lws_frame_is_binary(c->wsi);
    }
    /* The frame's declared length counts at once: a client announcing 16 MB
     * is closed before it sends them. */
    c->rx_total += len;
    if (c->rx_total > TRK_WS_MSG_CLOSE_MAX ||
        lws_remaining_packet_payload(c->wsi) > TRK_WS_MSG_CLOSE_MAX - c->rx_total)
        return false;
    if (!c->rx_binary && !c->rx_over) {
        if (c->rx_len + len > TRK_MSG_MAX_CLIENT) {
            c->rx_over = true; /* keep discarding until the message ends */
        } else {
            if (!c->rx) {
                c->rx = malloc(TRK_MSG_MAX_CLIENT + 1);
                if (!c->rx) {
                    c->rx_over = true;
                    goto check_end;
                }
            }
            memcpy(c->rx + c->rx_len, in, len);
            c->rx_len += len;
        }
    }
check_end:
    if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi)) return true;
    c->rx_active = false;
    if (c->rx_binary) {
        client_error(ws, c, TRK_MSG_BINARY, "binary messages are not accepted; send JSON text",
                     NULL);
    } else if (c->rx_over) {
        client_error(ws, c, TRK_MSG_TOO_LARGE, "message larger than 65536 bytes", NULL);
    } else {
        c->rx[c->rx_len] = '\0';
        client_message(ws, c, c->rx, c->rx_len);
    }
    /* Rare and small: give the buffer back rather than hold 64 KiB per
     * idle client. */
    free(c->rx);
    c->rx = NULL;
    return true;
}
