#include "preview.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "control.h" /* struct trk_control_view */
#include "canny.h"
#include "color.h"
#include "messages.h"
#include "result.h"
#include "seam.h"
#include "ops/focus.h" /* the Canny setting */

struct trk_preview {
    int max_width, quality;
    tjhandle tj;
    uint8_t *rgb;
    size_t rgb_cap;
    unsigned char *jpeg;
    unsigned long jpeg_cap;
    /* The edges view's Canny runner (made at its first use, grown with the
     * pictures) and edge map. */
    struct trk_canny *canny;
    struct trk_canny_params cp;
    int canny_w, canny_h;
    uint8_t *edges;
    size_t edges_cap;
    /* Carving: the protected pixels and where each went (per source
     * pixel), the carved picture, and the carver's scratch (sized for
     * scratch_w x scratch_h, grown with the pictures). */
    uint8_t *prot, *carved;
    int32_t *dst_of;
    size_t prot_cap, dst_cap, carved_cap;
    struct trk_seam_scratch *scratch;
    int scratch_w, scratch_h;
};

int trk_preview_create(int max_width, int quality, struct trk_preview **out)
{
    struct trk_preview *p = calloc(1, sizeof(*p));
    if (!p) return TRK_ENOMEM;
    p->max_width = max_width > 16 ? max_width : 16;
    p->quality = quality;
    p->tj = tjInitCompress();
    if (!p->tj) {
        free(p);
        return TRK_ENOMEM;
    }
    *out = p;
    return 0;
}

void trk_preview_destroy(struct trk_preview **pp)
{
    if (!pp || !*pp) return;
    struct trk_preview *p = *pp;
    tjDestroy(p->tj);
    tjFree(p->jpeg);
    trk_canny_destroy(&p->canny);
    free(p->edges);
    free(p->prot);
    free(p->carved);
    free(p->dst_of);
    trk_seam_scratch_destroy(&p->scratch);
    free(p->rgb);
    free(p);
    *pp = NULL;
}

/* The encoder's RGB24 buffer as a w x h picture. */
static struct trk_image own_rgb(const struct trk_preview *p, int w, int h)
{
    return (struct trk_image){ .plane = { p->rgb },
                               .pitch = { (size_t)w * 3 },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_RGB24,
                               .matrix = TRK_MATRIX_BT601,
                               .full_range = true };
}

int trk_preview_rgb(struct trk_preview *p, const struct trk_image *img,
                    const struct trk_object_def *mask, const struct trk_image *mask_img,
                    struct trk_image *rgb)
{
    const struct trk_image *test = mask_img ? mask_img : img;
    int w, h;
    trk_msg_preview_size(img->width, img->height, p->max_width, &w, &h);
    if (w < 1) return TRK_EINVAL;
    size_t need = (size_t)w * h * 3;
    if (need > p->rgb_cap) {
        uint8_t *n = realloc(p->rgb, need);
        if (!n) return TRK_ENOMEM;
        p->rgb = n;
        p->rgb_cap = need;
    }
    /* Nearest sample at each preview pixel's centre. */
    for (int y = 0; y < h; y++) {
        int sy = (int)(((long)y * 2 + 1) * img->height / (2L * h));
        for (int x = 0; x < w; x++) {
            int sx = (int)(((long)x * 2 + 1) * img->width / (2L * w));
            uint8_t *px = p->rgb + ((size_t)y * w + x) * 3;
            if (mask && trk_pixel_matches(test, sx, sy, mask)) {
                px[0] = px[1] = px[2] = 255;
            } else {
                trk_image_pixel_rgb(img, sx, sy, px);
                if (mask) px[0] /= 4, px[1] /= 4, px[2] /= 4;
            }
        }
    }
    *rgb = own_rgb(p, w, h);
    return 0;
}

int trk_preview_compress(struct trk_preview *p, const struct trk_image *rgb, const uint8_t **jpeg,
                         size_t *size)
{
    int w = rgb->width, h = rgb->height;
    /* Worst-case buffer once per size, so the encoder never reallocates. */
    unsigned long worst = tjBufSize(w, h, TJSAMP_420);
    if (worst > p->jpeg_cap) {
        tjFree(p->jpeg);
        p->jpeg = tjAlloc((int)worst);
        p->jpeg_cap = p->jpeg ? worst : 0;
        if (!p->jpeg) return TRK_ENOMEM;
    }
    unsigned long jsize = p->jpeg_cap;
    if (tjCompress2(p->tj, rgb->plane[0], w, (int)rgb->pitch[0], h, TJPF_RGB, &p->jpeg, &jsize,
                    TJSAMP_420, p->quality, TJFLAG_FASTDCT | TJFLAG_NOREALLOC) != 0)
        return TRK_EBACKEND;
    *jpeg = p->jpeg;
    *size = jsize;
    return 0;
}

int trk_preview_encode(struct trk_preview *p, const struct trk_image *img, const uint8_t **jpeg,
                       size_t *size, int *out_w, int *out_h)
{
    struct trk_image rgb;
    int err = trk_preview_rgb(p, img, NULL, NULL, &rgb);
    if (!err) err = trk_preview_compress(p, &rgb, jpeg, size);
    if (err) return err;
    *out_w = rgb.width;
    *out_h = rgb.height;
    return 0;
}

/* The runner and edge map for w x h pictures; 0 or its error. */
static int edges_ready(struct trk_preview *p, int w, int h)
{
    size_t need = (size_t)w * (size_t)h;
    if (need > p->edges_cap) {
        uint8_t *e = realloc(p->edges, need);
        if (!e) return TRK_ENOMEM;
        p->edges = e;
        p->edges_cap = need;
    }
    if (p->canny && w <= p->canny_w && h <= p->canny_h) return 0;
    trk_canny_destroy(&p->canny);
    struct trk_canny_cfg cc = { .sigma = TRK_FOCUS_SIGMA,
                                .low = TRK_FOCUS_LOW,
                                .high = TRK_FOCUS_HIGH };
    struct trk_canny_opts o = {
        .kind = TRK_CANNY_CPU, .max_width = w, .max_height = h, .threads = 1
    };
    int err = trk_canny_params_init(&p->cp, &cc);
    if (!err) err = trk_canny_create(&o, &p->canny);
    if (!err) p->canny_w = w, p->canny_h = h;
    return err;
}

int trk_preview_edges(struct trk_preview *p, const struct trk_image *rgb,
                      const struct trk_image *src)
{
    if (!src) src = rgb;
    if (src->width != rgb->width || src->height != rgb->height) return TRK_EINVAL;
    int w = rgb->width, h = rgb->height;
    int err = edges_ready(p, w, h);
    if (!err) err = trk_canny_run(p->canny, &p->cp, src, p->edges, (size_t)w, NULL, NULL);
    if (err) return err;
    for (int y = 0; y < h; y++) {
        uint8_t *row = (uint8_t *)rgb->plane[0] + (size_t)y * rgb->pitch[0];
        const uint8_t *e = p->edges + (size_t)y * w;
        for (int x = 0; x < 3 * w; x++)
            row[x] = e[x / 3] ? 255 : row[x] / 2;
    }
    return 0;
}

int trk_preview_objects(const struct trk_result_object *obj, int n, int frame_w, int frame_h, int w,
                        int h, struct trk_preview_obj *out)
{
    int k = 0;
    const double fx = (double)w / frame_w, fy = (double)h / frame_h;
    for (int i = 0; i < n && k < TRK_MAX_OBJECTS; i++) {
        const struct trk_obj_result *r = &obj[i].r;
        if (!obj[i].found || r->x0 < 0) continue;
        /* The picture pixel whose sample covers each box corner. */
        out[k] = (struct trk_preview_obj){
            .id = i,
            .box = { (int)(r->x0 * fx), (int)(r->y0 * fy), (int)(r->x1 * fx), (int)(r->y1 * fy) },
            .cx = (obj[i].c.cx + 0.5) * fx - 0.5,
            .cy = (obj[i].c.cy + 0.5) * fy - 0.5,
        };
        k++;
    }
    return k;
}

void trk_preview_fit(int w, int h, int fit_w, int fit_h, int *tw, int *th)
{
    /* Integer arithmetic: the same size on every machine. */
    long long wh = (long long)h * fit_w / fit_h;
    if (wh <= w) {
        *tw = wh < 1 ? 1 : (int)wh;
        *th = h;
    } else {
        long long hw = (long long)w * fit_h / fit_w;
        *tw = w;
        *th = hw < 1 ? 1 : hw > h ? h : (int)hw;
    }
}

/* Grows *buf to need bytes; false when out of memory. */
static bool grow(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return true;
    void *n = realloc(*buf, need);
    if (!n) return false;
    *buf = n;
    *cap = need;
    return true;
}

/* Where object o of a w-wide source went (map: the carve's). */
static void map_object(const struct trk_seam_map *map, struct trk_preview_obj *o)
{
    int out[4];
    double kcx = 0, kcy = 0;
    long area = (long)(o->box[2] - o->box[0] + 1) * (o->box[3] - o->box[1] + 1);
    long kept = trk_seam_map_region(map, NULL, 0, o->box, out, &kcx, &kcy);
    if (kept <= 0) {
        o->id = -1;
        return;
    }
    if (kept == area) {
        /* Whole: moved rigidly, the centroid with it. */
        o->cx += out[0] - o->box[0];
        o->cy += out[1] - o->box[1];
    } else {
        int x = (int)(o->cx + 0.5), y = (int)(o->cy + 0.5);
        int32_t d = x >= 0 && y >= 0 && x < map->src_w && y < map->src_h
                        ? map->dst_of[(size_t)y * map->src_w + x]
                        : -1;
        o->cx = d >= 0 ? d % map->dst_w : kcx;
        o->cy = d >= 0 ? d / map->dst_w : kcy;
    }
    memcpy(o->box, out, sizeof out);
}

int trk_preview_carve(struct trk_preview *p, struct trk_image *rgb, int tw, int th,
                      struct trk_preview_obj *objs, int n, struct trk_seam_info *info)
{
    const int w = rgb->width, h = rgb->height;
    if (tw < 1 || th < 1 || tw > w || th > h || rgb->fmt != TRK_FMT_RGB24) return TRK_EINVAL;
    const size_t px = (size_t)w * h;
    if (!grow((void **)&p->prot, &p->prot_cap, px) ||
        !grow((void **)&p->dst_of, &p->dst_cap, px * sizeof *p->dst_of) ||
        !grow((void **)&p->carved, &p->carved_cap, (size_t)tw * th * 3))
        return TRK_ENOMEM;
    if (!p->scratch || w > p->scratch_w || h > p->scratch_h) {
        trk_seam_scratch_destroy(&p->scratch);
        if (trk_seam_scratch_create(&p->scratch, w, h)) return TRK_ENOMEM;
        p->scratch_w = w, p->scratch_h = h;
    }
    memset(p->prot, 0, px);
    for (int i = 0; i < n; i++) {
        int *b = objs[i].box;
        b[0] = b[0] < 0 ? 0 : b[0], b[1] = b[1] < 0 ? 0 : b[1];
        b[2] = b[2] >= w ? w - 1 : b[2], b[3] = b[3] >= h ? h - 1 : b[3];
        for (int y = b[1]; y <= b[3]; y++)
            if (b[0] <= b[2]) memset(p->prot + (size_t)y * w + b[0], 1, (size_t)(b[2] - b[0] + 1));
    }
    struct trk_seam_map map = {
        .src_w = w, .src_h = h, .dst_w = tw, .dst_h = th, .dst_of = p->dst_of
    };
    struct trk_seam_job job = { .src = rgb,
                                .prot = p->prot,
                                .prot_pitch = (size_t)w,
                                .dst_w = tw,
                                .dst_h = th,
                                .dst = p->carved,
                                .dst_pitch = (size_t)tw * 3,
                                .map = &map,
                                .scratch = p->scratch };
    int err = trk_seam_carve_fast(&job, info);
    if (err) return err;
    for (int i = 0; i < n; i++)
        if (objs[i].box[0] <= objs[i].box[2] && objs[i].box[1] <= objs[i].box[3])
            map_object(&map, &objs[i]);
        else
            objs[i].id = -1;
    rgb->plane[0] = p->carved;
    rgb->pitch[0] = (size_t)tw * 3;
    rgb->width = tw;
    rgb->height = th;
    return 0;
}

/* The carved view's JSON: the picture before carving and each object as the
 * carved picture shows it. */
static int carve_json(struct trk_buf *b, int src_w, int src_h, const struct trk_preview_obj *o,
                      int n)
{
    char t[160];
    snprintf(t, sizeof t, "{\"carved_from\":[%d,%d],\"objects\":[", src_w, src_h);
    trk_buf_puts(b, t);
    for (int i = 0, k = 0; i < n; i++) {
        if (o[i].id < 0) continue;
        snprintf(t, sizeof t, "%s{\"id\":%d,\"bbox\":[%d,%d,%d,%d],\"cx\":%.2f,\"cy\":%.2f}",
                 k++ ? "," : "", o[i].id, o[i].box[0], o[i].box[1], o[i].box[2], o[i].box[3],
                 o[i].cx, o[i].cy);
        trk_buf_puts(b, t);
    }
    trk_buf_puts(b, "]}");
    return b->failed ? TRK_ENOMEM : 0;
}

int trk_preview_carve_width(int w, int h, int tw, int th)
{
    double work = (double)(w - tw + h - th) * w * h;
    if (work <= TRK_PREVIEW_CARVE_WORK) return w;
    int cw = (int)(w * cbrt(TRK_PREVIEW_CARVE_WORK / work));
    return cw < 16 ? 16 : cw;
}

int trk_preview_message(struct trk_preview *p, const struct trk_image *host,
                        const struct trk_image *test, const struct trk_control_view *v,
                        uint64_t seq, const struct trk_result_object *obj, int n, uint8_t **msg,
                        size_t *cap, size_t *len)
{
    struct trk_image rgb;
    /* A carved view over the work bound is made from a smaller picture
     * (the page scales it to the screen anyway). */
    const int max_width = p->max_width;
    if (v->carve) {
        int pw, ph, tw, th;
        trk_msg_preview_size(host->width, host->height, p->max_width, &pw, &ph);
        trk_preview_fit(pw, ph, v->fit_w, v->fit_h, &tw, &th);
        p->max_width = trk_preview_carve_width(pw, ph, tw, th);
    }
    int err = trk_preview_rgb(p, host, v->mask ? &v->def : NULL, test, &rgb);
    p->max_width = max_width;
    if (!err && v->edges) err = trk_preview_edges(p, &rgb, NULL);
    struct trk_buf js = { 0 };
    if (!err && v->carve) {
        struct trk_preview_obj o[TRK_MAX_OBJECTS];
        int no = trk_preview_objects(obj, n, host->width, host->height, rgb.width, rgb.height, o);
        int tw, th, sw = rgb.width, sh = rgb.height;
        trk_preview_fit(rgb.width, rgb.height, v->fit_w, v->fit_h, &tw, &th);
        err = trk_preview_carve(p, &rgb, tw, th, o, no, NULL);
        if (!err) err = carve_json(&js, sw, sh, o, no);
    }
    const uint8_t *jpeg;
    size_t size;
    if (!err) err = trk_preview_compress(p, &rgb, &jpeg, &size);
    size_t extra = v->carve ? 4 + js.len : 0, need = TRK_PREVIEW_HDR + extra + size;
    if (!err && !grow((void **)msg, cap, need)) err = TRK_ENOMEM;
    if (!err) {
        uint8_t *m = *msg;
        trk_msg_preview_header(m, seq, rgb.width, rgb.height, host->width, host->height);
        if (v->carve) {
            memcpy(m, "TRKC", 4);
            for (int i = 0; i < 4; i++)
                m[TRK_PREVIEW_HDR + i] = (uint8_t)(js.len >> (8 * i));
            memcpy(m + TRK_PREVIEW_HDR + 4, js.data, js.len);
        }
        memcpy(m + TRK_PREVIEW_HDR + extra, jpeg, size);
        *len = need;
    }
    trk_buf_free(&js);
    return err;
}

int trk_preview_scale(struct trk_preview *p, struct trk_image *rgb, int w, int h,
                      struct trk_preview_obj *objs, int n)
{
    const int sw = rgb->width, sh = rgb->height;
    /* The carved picture is in p->carved: p->rgb is free to take it. */
    if (w < 1 || h < 1 || rgb->plane[0] != p->carved ||
        !grow((void **)&p->rgb, &p->rgb_cap, (size_t)w * h * 3))
        return w < 1 || h < 1 || rgb->plane[0] != p->carved ? TRK_EINVAL : TRK_ENOMEM;
    for (int y = 0; y < h; y++) {
        const uint8_t *row =
            rgb->plane[0] + (size_t)(((long)y * 2 + 1) * sh / (2L * h)) * rgb->pitch[0];
        for (int x = 0; x < w; x++)
            memcpy(p->rgb + ((size_t)y * w + x) * 3,
                   row + (size_t)(((long)x * 2 + 1) * sw / (2L * w)) * 3, 3);
    }
    const double fx = (double)w / sw, fy = (double)h / sh;
    for (int i = 0; i < n; i++) {
        int *b = objs[i].box;
        b[0] = (int)(b[0] * fx), b[1] = (int)(b[1] * fy);
        b[2] = (int)((b[2] + 1) * fx) - 1, b[3] = (int)((b[3] + 1) * fy) - 1;
        b[2] = b[2] < b[0] ? b[0] : b[2], b[3] = b[3] < b[1] ? b[1] : b[3];
        objs[i].cx = (objs[i].cx + 0.5) * fx - 0.5;
        objs[i].cy = (objs[i].cy + 0.5) * fy - 0.5;
    }
    *rgb = own_rgb(p, w, h);
    return 0;
}
