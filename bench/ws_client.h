/* The pieces of a WebSocket client on a blocking loopback socket that the
 * delivery measurements share (ws_write.c, ws_handoff.c): a real client of
 * the server under test, reading every frame whole, nothing in between
 * (no library's event loop), as a C client in a control loop would.
 */
#ifndef TRK_BENCH_WS_CLIENT_H
#define TRK_BENCH_WS_CLIENT_H

#include <stddef.h>

/* CLOCK_MONOTONIC and this thread's CPU time, s. */
double trk_wsc_mono(void);
double trk_wsc_thread_cpu(void);

/* All of [p, p+n) to fd (blocking or not: EAGAIN is retried). 0 or -1. */
int trk_wsc_send_all(int fd, const void *p, size_t n);

/* Exactly n bytes from fd into p. 0, or -1 (error, or the peer closed). */
int trk_wsc_read_full(int fd, void *p, size_t n);

/* Connects to 127.0.0.1:port (TCP_NODELAY; rcvbuf > 0: that SO_RCVBUF,
 * so the server's writes are taken only in part) and upgrades at path; the
 * answer's head is read byte by byte, so no frame bytes are eaten. The
 * socket, or -1 when it cannot connect or the answer is not 101. */
int trk_wsc_connect(int port, const char *path, int rcvbuf);

/* One server frame (not masked, payload at most cap bytes) into buf: its
 * first header byte (FIN, opcode) in *head, its length in *len. 0, or -1
 * (error, closed, masked, larger than cap). */
int trk_wsc_read_frame(int fd, unsigned char *head, unsigned char *buf, size_t cap, size_t *len);

/* The q-quantile of v's n values, nearest rank (sorts v); 0 when n <= 0. */
double trk_wsc_pct(double *v, int n, double q);

#endif
