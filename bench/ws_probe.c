/* trackd-ws-probe: a C WebSocket client of a running trackd that stamps each
 * frame message when its last byte is read and prints, per frame, capture ->
 * client and its parts (ms):
 *
 *     total queue process handoff deliver
 *
 * total = read time - t_capture (both CLOCK_MONOTONIC: the client runs on
 * trackd's host); queue, process and handoff are the message's `latency`
 * fields; deliver = total - the three (hand-off to the client's read). It is
 * what tests/device/latency_probe.py's socket client measures, without a
 * Python interpreter's wake-ups and parsing in the span: many_cameras.py
 * --client c runs one per camera.
 *
 *     trackd-ws-probe PORT [FRAMES (600)] [WARMUP (60)] [SECONDS (60)]
 *
 * Exit 0 with FRAMES lines, 1 when it cannot connect, 2 when fewer frames
 * came before SECONDS passed or the server closed (what came is printed). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>

#include "ws_client.h"

#define CAP (8u << 20) /* the largest message taken */

/* A masked client frame (key 0: the payload goes as it is). */
static int send_frame(int fd, int op, const void *p, size_t n)
{
    unsigned char h[8] = { (unsigned char)(0x80 | op) };
    size_t hn = 2;
    if (n < 126) {
        h[1] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
        h[1] = 0x80 | 126;
        h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n;
        hn = 4;
    } else {
        return -1;
    }
    unsigned char key[4] = { 0 };
    if (trk_wsc_send_all(fd, h, hn) || trk_wsc_send_all(fd, key, 4)) return -1;
    return n ? trk_wsc_send_all(fd, p, n) : 0;
}

/* The number after key in msg; 0 with *ok cleared when there is none. */
static double field(const char *msg, const char *key, int *ok)
{
    const char *p = strstr(msg, key);
    if (!p) {
        *ok = 0;
        return 0;
    }
    char *end;
    double v = strtod(p + strlen(key), &end);
    if (end == p + strlen(key)) *ok = 0;
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: trackd-ws-probe PORT [FRAMES] [WARMUP] [SECONDS]\n");
        return 64;
    }
    const int port = atoi(argv[1]);
    const long frames = argc > 2 ? atol(argv[2]) : 600;
    const long warmup = argc > 3 ? atol(argv[3]) : 60;
    const double seconds = argc > 4 ? atof(argv[4]) : 60;
    int fd = trk_wsc_connect(port, "/ws", 0);
    if (fd < 0) {
        fprintf(stderr, "trackd-ws-probe: cannot connect to 127.0.0.1:%d\n", port);
        return 1;
    }
    static const char sub[] = "{\"type\":\"subscribe\",\"preview\":false}";
    if (send_frame(fd, 1, sub, sizeof sub - 1)) {
        fprintf(stderr, "trackd-ws-probe: cannot subscribe\n");
        return 1;
    }
    unsigned char *buf = malloc(CAP + 1);
    if (!buf) return 1;
    const double deadline = trk_wsc_mono() + seconds;
    long seen = 0, got = 0;
    while (got < frames && trk_wsc_mono() < deadline) {
        /* Waits at most until the deadline for a frame to begin (the file
         * ended, or the daemon stopped sending), then reads it whole. */
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        int left_ms = (int)((deadline - trk_wsc_mono()) * 1e3) + 1;
        int r = poll(&pf, 1, left_ms > 0 ? left_ms : 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        unsigned char head;
        size_t n;
        if (trk_wsc_read_frame(fd, &head, buf, CAP, &n)) break; /* closed or broken */
        const double t = trk_wsc_mono();
        const int op = head & 0x0F;
        if (op == 9) { /* ping: the pong carries its payload */
            if (n < 126) send_frame(fd, 10, buf, n);
            continue;
        }
        if (op == 8) break;
        if (op != 1) continue;
        buf[n] = 0;
        const char *msg = (const char *)buf;
        if (strncmp(msg, "{\"type\":\"frame\"", 15)) continue;
        if (++seen <= warmup) continue;
        int ok = 1;
        const double tc = field(msg, "\"t_capture\":", &ok);
        const double q = field(msg, "\"queue_ms\":", &ok);
        const double pr = field(msg, "\"process_ms\":", &ok);
        const double h = field(msg, "\"handoff_ms\":", &ok);
        if (!ok) continue;
        const double total = (t - tc) * 1e3;
        printf("%.4f %.4f %.4f %.4f %.4f\n", total, q, pr, h, total - q - pr - h);
        got++;
    }
    fflush(stdout);
    free(buf);
    return got >= frames ? 0 : 2;
}
