/* See ws_client.h. */
#define _GNU_SOURCE
#include "ws_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double trk_wsc_mono(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

double trk_wsc_thread_cpu(void)
{
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

int trk_wsc_send_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int trk_wsc_read_full(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    while (n) {
        ssize_t k = recv(fd, b, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int trk_wsc_connect(int port, const char *path, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     path, port);
    char head[2048] = "";
    size_t got = 0;
    int ok = n > 0 && (size_t)n < sizeof req && !connect(fd, (struct sockaddr *)&sa, sizeof sa) &&
             trk_wsc_send_all(fd, req, (size_t)n) == 0;
    while (ok && got < sizeof head - 1 && !strstr(head, "\r\n\r\n")) {
        ssize_t k = recv(fd, head + got, 1, 0);
        ok = k == 1;
        got += (size_t)ok;
        head[got] = '\0';
    }
    if (ok && strncmp(head, "HTTP/1.1 101", 12) == 0) return fd;
    close(fd);
    return -1;
}

int trk_wsc_read_frame(int fd, unsigned char *head, unsigned char *buf, size_t cap, size_t *len)
{
    unsigned char h[10];
    if (trk_wsc_read_full(fd, h, 2)) return -1;
    size_t n = h[1] & 0x7f;
    if (n == 126) {
        if (trk_wsc_read_full(fd, h + 2, 2)) return -1;
        n = (size_t)h[2] << 8 | h[3];
    } else if (n == 127) {
        if (trk_wsc_read_full(fd, h + 2, 8)) return -1;
        n = 0;
        for (int k = 0; k < 8; k++)
            n = n << 8 | h[2 + k];
    }
    *head = h[0];
    *len = n;
    if ((h[1] & 0x80) || n > cap) return -1;
    return trk_wsc_read_full(fd, buf, n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double trk_wsc_pct(double *v, int n, double q)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
}
