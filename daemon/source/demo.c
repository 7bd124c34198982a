/* The built-in demo scene: seven coloured balls moving over a textured gray
 * background. Each frame is a pure function of its sequence number, so runs
 * are reproducible and tests can predict where every ball is. The colours
 * match config's built-in demo objects. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

#define N_BALLS 7

/* Order and colours match trk_objects_demo_json() in config/. */
static const uint8_t ball_rgb[N_BALLS][3] = {
    { 230, 40, 40 },  /* red     */
    { 40, 200, 60 },  /* green   */
    { 40, 80, 230 },  /* blue    */
    { 240, 220, 40 }, /* yellow  */
    { 220, 50, 220 }, /* magenta */
    { 40, 210, 220 }, /* cyan    */
    { 250, 140, 30 }, /* orange  */
};

struct demo {
    struct trk_demo_cfg cfg;
    uint8_t *background; /* RGB24, width * 3 pitch */
    uint64_t n;          /* frames produced */
};

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Ball i's centre at time t (seconds): Lissajous paths with distinct
 * frequencies and phases, inside a margin of one radius. */
void trk_demo_ball_position(int i, double t, int width, int height, double *x, double *y)
{
    double r = 0.045 * (width < height ? width : height);
    double fx = 0.11 + 0.037 * i, fy = 0.17 + 0.023 * i;
    double ax = width / 2.0 - r - 2, ay = height / 2.0 - r - 2;
    *x = width / 2.0 + ax * sin(2 * M_PI * fx * t + 0.9 * i);
    *y = height / 2.0 + ay * sin(2 * M_PI * fy * t + 1.7 * i + 0.5);
}

int trk_demo_ball_radius(int width, int height)
{
    return (int)(0.045 * (width < height ? width : height));
}

static int demo_open(void *self, struct trk_source *info)
{
    struct demo *d = self;
    int w = d->cfg.width, h = d->cfg.height;
    if (!d->background) {
        d->background = malloc((size_t)w * h * 3);
        if (!d->background) return TRK_ENOMEM;
        /* Gray tiles of two shades plus per-pixel noise: texture without
         * colour, so no demo object matches the background. */
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int tile = ((x / 64) + (y / 64)) & 1;
                int v = (tile ? 118 : 92) + (int)(hash32((uint32_t)(y * w + x)) % 25) - 12;
                uint8_t *p = d->background + ((size_t)y * w + x) * 3;
                p[0] = p[1] = p[2] = (uint8_t)v;
            }
    }
    d->n = 0;
    snprintf(info->desc, sizeof(info->desc), "demo scene %dx%d %.2f fps, %d balls", w, h,
             d->cfg.fps, N_BALLS);
    info->width = w;
    info->height = h;
    info->fps = d->cfg.fps;
    return 0;
}

static int demo_read(void *self, struct trk_frame *f)
{
    struct demo *d = self;
    int w = d->cfg.width, h = d->cfg.height;
    int err = trk_frame_layout(f, TRK_FMT_RGB24, w, h, 1);
    if (err) return err;
    f->img.matrix = TRK_MATRIX_BT601;
    f->img.full_range = true;
    f->pts = (double)d->n / d->cfg.fps;
    uint8_t *dst = (uint8_t *)f->img.plane[0];
    memcpy(dst, d->background, (size_t)w * h * 3);
    int r = trk_demo_ball_radius(w, h);
    for (int i = 0; i < N_BALLS; i++) {
        double cx, cy;
        trk_demo_ball_position(i, f->pts, w, h, &cx, &cy);
        int x0 = (int)floor(cx - r), x1 = (int)ceil(cx + r);
        int y0 = (int)floor(cy - r), y1 = (int)ceil(cy + r);
        for (int y = y0 < 0 ? 0 : y0; y <= y1 && y < h; y++)
            for (int x = x0 < 0 ? 0 : x0; x <= x1 && x < w; x++) {
                double dx = x - cx, dy = y - cy;
                if (dx * dx + dy * dy > (double)r * r) continue;
                /* +-4 sensor-like noise, different every frame. */
                uint32_t hv = hash32((uint32_t)(y * w + x) ^ (uint32_t)(d->n * 2654435761u));
                uint8_t *p = dst + ((size_t)y * w + x) * 3;
                for (int c = 0; c < 3; c++) {
                    int v = ball_rgb[i][c] + (int)((hv >> (8 * c)) % 9) - 4;
                    p[c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            }
    }
    d->n++;
    return 0;
}

static void demo_close(void *self)
{
    (void)self;
}

static void demo_destroy(void *self)
{
    struct demo *d = self;
    free(d->background);
    free(d);
}

static const struct trk_source_ops demo_ops = {
    .kind = "demo",
    .open = demo_open,
    .read = demo_read,
    .close = demo_close,
    .destroy = demo_destroy,
};

int trk_source_demo_create(const struct trk_demo_cfg *cfg, struct trk_source *out)
{
    if (cfg->width < 16 || cfg->height < 16 || cfg->fps <= 0) return TRK_EINVAL;
    struct demo *d = calloc(1, sizeof(*d));
    if (!d) return TRK_ENOMEM;
    d->cfg = *cfg;
    memset(out, 0, sizeof(*out));
    out->ops = &demo_ops;
    out->self = d;
    return 0;
}

void trk_source_destroy(struct trk_source *s)
{
    if (!s || !s->ops) return;
    s->ops->close(s->self);
    s->ops->destroy(s->self);
    s->ops = NULL;
    s->self = NULL;
}
