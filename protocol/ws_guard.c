/* See ws_guard.h: why trackd wraps recv(), and what it follows. */
#include "ws_guard.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <libwebsockets.h>

/* Where the frame parser is in the current frame (RFC 6455 5.2). */
enum fstate { F_OPCODE, F_LEN, F_EXTLEN, F_MASK, F_PAYLOAD };

struct guard {
    atomic_bool active; /* read by recv() on any thread */
    bool ws;            /* upgraded: a frame seen unmasked now counts */
    bool unmasked;      /* since the last request head (speculative until ws) */
    bool masked;        /* the frame being read */
    unsigned char crlf; /* how much of "\r\n\r\n" was just seen (HTTP heads) */
    unsigned char state;
    unsigned char left; /* bytes of the extended length or mask still to come */
    uint64_t len;       /* payload length being read, then payload left */
    struct lws *wsi;
};

static struct guard table[TRK_WS_GUARD_FDS];

static struct guard *slot(int fd)
{
    if (fd < 0 || fd >= TRK_WS_GUARD_FDS) return NULL;
    struct guard *g = &table[fd];
    return atomic_load_explicit(&g->active, memory_order_acquire) ? g : NULL;
}

static void reset_frames(struct guard *g)
{
    g->unmasked = false;
    g->state = F_OPCODE;
    g->left = 0;
    g->len = 0;
}

/* The payload length is read: the mask key, if any, comes next. */
static void length_known(struct guard *g)
{
    if (g->masked) {
        g->left = 4;
        g->state = F_MASK;
    } else {
        g->state = g->len ? F_PAYLOAD : F_OPCODE;
    }
}

/* Follows n received bytes. Before the upgrade every request head ends the
 * frames parsed so far: whatever follows the last one is parsed as frames
 * "speculatively", so a first frame sent in the same packet as the upgrade
 * request (a protocol violation itself) is still seen. A client whose frame
 * payload contains "\r\n\r\n" before the upgrade only confuses the check of
 * its own connection. */
static void feed(struct guard *g, const unsigned char *p, size_t n)
{
    static const char head_end[] = "\r\n\r\n";
    bool was = g->unmasked;
    for (size_t i = 0; i < n && !(g->ws && g->unmasked); i++) {
        unsigned char b = p[i];
        if (!g->ws) {
            g->crlf = b == (unsigned char)head_end[g->crlf] ? g->crlf + 1 : b == '\r';
            if (g->crlf == 4) {
                g->crlf = 0;
                reset_frames(g);
                continue;
            }
        }
        switch (g->state) {
        case F_OPCODE: g->state = F_LEN; break;
        case F_LEN:
            g->masked = b & 0x80;
            if (!g->masked) g->unmasked = true;
            g->len = b & 0x7f;
            if (g->len >= 126) {
                g->left = g->len == 126 ? 2 : 8;
                g->len = 0;
                g->state = F_EXTLEN;
            } else {
                length_known(g);
            }
            break;
        case F_EXTLEN:
            g->len = g->len << 8 | b;
            if (--g->left == 0) length_known(g);
            break;
        case F_MASK:
            if (--g->left == 0) g->state = g->len ? F_PAYLOAD : F_OPCODE;
            break;
        case F_PAYLOAD: {
            /* Skip the payload in one step: only headers matter. In HTTP mode
             * the bytes still go through the head matcher above, one by one. */
            size_t take = g->ws ? (size_t)(g->len < n - i ? g->len : n - i) : 1;
            g->len -= take;
            i += take - 1;
            if (!g->len) g->state = F_OPCODE;
            break;
        }
        }
    }
    if (g->ws && g->unmasked && !was && g->wsi) lws_callback_on_writable(g->wsi);
}

bool trk_ws_guard_add(int fd)
{
    if (fd < 0 || fd >= TRK_WS_GUARD_FDS) return false;
    struct guard *g = &table[fd];
    atomic_store_explicit(&g->active, false, memory_order_release);
    g->ws = false;
    g->crlf = 0;
    g->wsi = NULL;
    reset_frames(g);
    atomic_store_explicit(&g->active, true, memory_order_release);
    return true;
}

void trk_ws_guard_upgraded(int fd, struct lws *wsi)
{
    struct guard *g = slot(fd);
    if (!g) return;
    g->ws = true;
    g->wsi = wsi;
}

bool trk_ws_guard_unmasked(int fd)
{
    struct guard *g = slot(fd);
    return g && g->ws && g->unmasked;
}

void trk_ws_guard_remove(int fd)
{
    if (fd < 0 || fd >= TRK_WS_GUARD_FDS) return;
    struct guard *g = &table[fd];
    atomic_store_explicit(&g->active, false, memory_order_release);
    g->wsi = NULL;
}

/* Replaces the C library's recv() for the whole process (libwebsockets.so
 * resolves it here): the same call as recvfrom() without an address, then
 * the bytes are followed when fd is a guarded connection. */
ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t n = recvfrom(fd, buf, len, flags, NULL, NULL);
    if (n > 0 && !(flags & MSG_PEEK)) {
        struct guard *g = slot(fd);
        if (g) feed(g, buf, (size_t)n);
    }
    return n;
}
