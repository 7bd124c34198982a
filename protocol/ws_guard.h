/* Frame-header watch on WebSocket client sockets (internal to protocol/).
 *
 * RFC 6455 5.1: a server must close the connection when a client sends an
 * unmasked frame. libwebsockets 4.1 (Debian 12) does not check the mask bit
 * and tells its user nothing about it (upstream added the check after every
 * 4.x release). It reads every byte of a connection with recv(), so
 * ws_guard.c provides recv(): it forwards to recvfrom() and, for the sockets
 * registered here, follows the byte stream (HTTP request heads, then frame
 * headers) to see an unmasked frame before lws hands its payload to the
 * server's callback. Other sockets of the process pay one array look-up.
 *
 * The guards live in a static table indexed by fd (nothing is freed, so a
 * late recv() on a reused fd number can never touch freed memory); fds at
 * or beyond TRK_WS_GUARD_FDS are not followed. Register, mark and remove on
 * the server's service thread, which is also the thread that calls recv()
 * on these sockets (inside lws_service).
 */
#ifndef TRK_PROTOCOL_WS_GUARD_H
#define TRK_PROTOCOL_WS_GUARD_H

#include <stdbool.h>

struct lws;

#define TRK_WS_GUARD_FDS 16384

/* Starts following fd, a connection just accepted (an HTTP request comes
 * first). false when fd is beyond the table: it goes unchecked. */
bool trk_ws_guard_add(int fd);

/* The connection on fd became a WebSocket (wsi): frames start right after the
 * last HTTP request head received; bytes already read past it count. From
 * now on an unmasked frame also asks lws for a WRITEABLE callback on wsi, so
 * the server can close even when lws consumed the frame itself (ping). */
void trk_ws_guard_upgraded(int fd, struct lws *wsi);

/* Whether an unmasked frame was read on fd since it became a WebSocket. */
bool trk_ws_guard_unmasked(int fd);

/* Stops following fd; safe for an fd that was never added. */
void trk_ws_guard_remove(int fd);

#endif
