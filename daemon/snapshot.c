#include "snapshot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preview.h"

/* Three slots: the newest frame, an older one a request is still encoding,
 * and the one the processing thread fills next. */
#define SLOTS 3
/* The widest snapshot: the largest frame --size accepts (full size). */
#define SNAPSHOT_MAX_WIDTH 16384

struct slot {
    struct trk_image img;
    uint64_t seq;
    int n;
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    uint8_t colors[TRK_MAX_OBJECTS][3];
    struct trk_obj_result res[TRK_MAX_OBJECTS];
    trk_snapshot_release_fn release;
    void *ctx, *holder;                            /* holder NULL: the slot lends no frame */
    const struct trk_image *(*host)(void *holder); /* see trk_snapshot_frame */
};

struct trk_snapshot {
    int quality;
    struct slot slots[SLOTS];
    pthread_mutex_t lock; /* guards cur and reading */
    pthread_cond_t done;  /* reading went back to NULL */
    struct slot *cur;     /* the newest frame, NULL = none */
    struct slot *reading; /* the slot a request encodes, NULL = none */

    pthread_mutex_t req_lock; /* one request at a time; guards enc */
    struct trk_preview *enc;
};

int trk_snapshot_create(int quality, struct trk_snapshot **out)
{
    struct trk_snapshot *s = calloc(1, sizeof *s);
    *out = s;
    if (!s) return TRK_ENOMEM;
    s->quality = quality < 1 ? 1 : quality > 100 ? 100 : quality;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_mutex_init(&s->req_lock, NULL);
    return 0;
}

void trk_snapshot_destroy(struct trk_snapshot **ps)
{
    if (!ps || !*ps) return;
    struct trk_snapshot *s = *ps;
    trk_snapshot_clear(s);
    trk_preview_destroy(&s->enc);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->done);
    pthread_mutex_destroy(&s->req_lock);
    free(s);
    *ps = NULL;
}

/* A frame on its way back to its owner: taken from its slot under the lock
 * (once the lock is let go the slot may be filled again), given back after. */
struct lent {
    trk_snapshot_release_fn release;
    void *ctx, *holder;
};

static struct lent take(struct slot *sl)
{
    struct lent l = { 0 };
    if (sl) {
        l = (struct lent){ sl->release, sl->ctx, sl->holder };
        sl->holder = NULL;
    }
    return l;
}

static void give_back(struct lent l)
{
    if (l.holder) l.release(l.ctx, l.holder);
}

void trk_snapshot_publish(struct trk_snapshot *s, const struct trk_snapshot_frame *f)
{
    if (!s || !f || !f->img) return;
    pthread_mutex_lock(&s->lock);
    struct slot *sl = NULL;
    for (int i = 0; i < SLOTS && !sl; i++)
        if (&s->slots[i] != s->cur && &s->slots[i] != s->reading) sl = &s->slots[i];
    pthread_mutex_unlock(&s->lock);
    /* Only this thread fills slots, and no reader sees this one: filled
     * without the lock. (Three slots, at most two in use: one is free.) */
    int n = f->n < 0 ? 0 : f->n > TRK_MAX_OBJECTS ? TRK_MAX_OBJECTS : f->n;
    sl->img = *f->img;
    sl->seq = f->seq;
    sl->n = n;
    if (n) {
        memcpy(sl->defs, f->defs, (size_t)n * sizeof sl->defs[0]);
        memcpy(sl->colors, f->colors, (size_t)n * sizeof sl->colors[0]);
        memcpy(sl->res, f->res, (size_t)n * sizeof sl->res[0]);
    }
    sl->release = f->release;
    sl->ctx = f->ctx;
    sl->holder = f->holder;
    sl->host = f->host;
    pthread_mutex_lock(&s->lock);
    struct slot *old = s->cur;
    s->cur = sl;
    /* A request still encoding the old one gives it back when done. */
    struct lent l = take(old == s->reading ? NULL : old);
    pthread_mutex_unlock(&s->lock);
    give_back(l);
}

void trk_snapshot_clear(struct trk_snapshot *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    while (s->reading)
        pthread_cond_wait(&s->done, &s->lock);
    struct lent l = take(s->cur);
    s->cur = NULL;
    pthread_mutex_unlock(&s->lock);
    give_back(l);
}

/* Sets pixel (x, y) of the RGB24 image when it is inside. The image is the
 * encoder's own buffer (trk_preview_rgb), which may be written. */
static void dot(const struct trk_image *rgb, int x, int y, const uint8_t c[3])
{
    if (x < 0 || y < 0 || x >= rgb->width || y >= rgb->height) return;
    memcpy((uint8_t *)rgb->plane[0] + (size_t)y * rgb->pitch[0] + (size_t)x * 3, c, 3);
}

/* Each found object's bounding box (2 pixels wide, inside the box) and a
 * cross at its centroid (its top-left pixel there), scaled from frame to image coordinates. */
static void draw_overlay(const struct trk_image *rgb, const struct slot *sl)
{
    const double fx = (double)rgb->width / sl->img.width, fy = (double)rgb->height / sl->img.height;
    for (int i = 0; i < sl->n; i++) {
        const struct trk_obj_result *r = &sl->res[i];
        uint64_t min = sl->defs[i].min_mass ? sl->defs[i].min_mass : 1;
        if (r->mass < min || r->x0 < 0) continue;
        const uint8_t *c = sl->colors[i];
        static const uint8_t fallback[3] = { 0, 255, 0 };
        if (!c[0] && !c[1] && !c[2]) c = fallback; /* black would not show */
        int x0 = (int)(r->x0 * fx), y0 = (int)(r->y0 * fy);
        int x1 = (int)((r->x1 + 1) * fx) - 1, y1 = (int)((r->y1 + 1) * fy) - 1;
        for (int t = 0; t < 2; t++) {
            for (int x = x0; x <= x1; x++) {
                dot(rgb, x, y0 + t, c);
                dot(rgb, x, y1 - t, c);
            }
            for (int y = y0; y <= y1; y++) {
                dot(rgb, x0 + t, y, c);
                dot(rgb, x1 - t, y, c);
            }
        }
        int cx = (int)((double)r->sum_x / (double)r->mass * fx);
        int cy = (int)((double)r->sum_y / (double)r->mass * fy);
        /* 2 pixels thick: 4:2:0 JPEG smears a 1-pixel line into its
         * neighbours' colour. */
        for (int d = -6; d <= 7; d++)
            for (int t = 0; t < 2; t++) {
                dot(rgb, cx + d, cy + t, c);
                dot(rgb, cx + t, cy + d, c);
            }
    }
}

static enum trk_snapshot_status encode(struct trk_snapshot *s, struct slot *sl, bool overlay,
                                       const char *mask, struct trk_buf *out, char *why,
                                       size_t why_len)
{
    const struct trk_object_def *mdef = NULL;
    for (int i = 0; mask && i < sl->n && !mdef; i++)
        if (!strcmp(sl->defs[i].name, mask)) mdef = &sl->defs[i];
    if (mask && !mdef) {
        /* The names to pick from, as many as fit, so a typo is fixed at once. */
        size_t n = (size_t)snprintf(why, why_len, "no object named \"%.64s\"; %s", mask,
                                    sl->n ? "the objects are" : "there are no objects");
        for (int i = 0; i < sl->n && n < why_len; i++) {
            const char *name = sl->defs[i].name;
            bool fits = n + strlen(name) + 8 < why_len ||
                        (i + 1 == sl->n && n + strlen(name) + 3 < why_len);
            n += (size_t)snprintf(why + n, why_len - n, fits ? "%s %s" : "%s ...", i ? "," : ":",
                                  name);
            if (!fits) break;
        }
        return TRK_SNAPSHOT_NO_OBJECT;
    }
    if (!s->enc && trk_preview_create(SNAPSHOT_MAX_WIDTH, s->quality, &s->enc)) {
        snprintf(why, why_len, "cannot start the JPEG encoder");
        return TRK_SNAPSHOT_FAILED;
    }
    struct trk_image rgb;
    const uint8_t *jpeg;
    size_t size;
    const struct trk_image *img = sl->host ? sl->host(sl->holder) : &sl->img;
    if (!img || trk_preview_rgb(s->enc, img, mdef, NULL, &rgb)) {
        snprintf(why, why_len, "cannot convert the frame");
        return TRK_SNAPSHOT_FAILED;
    }
    if (overlay) draw_overlay(&rgb, sl);
    if (trk_preview_compress(s->enc, &rgb, &jpeg, &size) || trk_buf_append(out, jpeg, size)) {
        snprintf(why, why_len, "cannot encode the frame");
        return TRK_SNAPSHOT_FAILED;
    }
    return TRK_SNAPSHOT_OK;
}

enum trk_snapshot_status trk_snapshot_jpeg(struct trk_snapshot *s, bool overlay, const char *mask,
                                           struct trk_buf *out, char *why, size_t why_len)
{
    if (!s) {
        snprintf(why, why_len, "no snapshots here");
        return TRK_SNAPSHOT_NO_FRAME;
    }
    pthread_mutex_lock(&s->req_lock);
    pthread_mutex_lock(&s->lock);
    struct slot *sl = s->reading = s->cur;
    pthread_mutex_unlock(&s->lock);
    enum trk_snapshot_status st = TRK_SNAPSHOT_NO_FRAME;
    if (sl)
        st = encode(s, sl, overlay, mask, out, why, why_len);
    else
        snprintf(why, why_len, "no frame processed yet");
    pthread_mutex_lock(&s->lock);
    s->reading = NULL;
    struct lent l = take(sl == s->cur ? NULL : sl); /* the newest stays */
    pthread_cond_broadcast(&s->done);
    pthread_mutex_unlock(&s->lock);
    give_back(l);
    pthread_mutex_unlock(&s->req_lock);
    return st;
}
