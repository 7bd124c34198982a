/* prefilter.h's fast row passes spread over the pool: strips of
 * FAST_STRIP_ROWS rows of every grid from one dispenser, all horizontal
 * strips in one round, all vertical ones in the next (a vertical row reads
 * the horizontal rows of its neighbours). Any split gives the same bytes. */
#include "cpu_fast_int.h"

int trk_fast_set_prefilter(void *self, const struct trk_prefilter *pf)
{
    struct cpu_fast *s = self;
    struct fast_pf *p = &s->pf;
    if (pf->sigma > 0 && !p->frame) {
        p->pad_stride = align64(trk_prefilter_pad_bytes(s->max_width));
        uint8_t *frame =
            aligned_alloc(64, align64(trk_prefilter_frame_bytes(s->max_width, s->max_height)));
        uint16_t *tmp = aligned_alloc(
            64, align64(trk_prefilter_tmp_elems(s->max_width, s->max_height) * sizeof(*tmp)));
        uint8_t *pad = aligned_alloc(64, p->pad_stride * (size_t)s->nthreads);
        if (!frame || !tmp || !pad) {
            free(frame);
            free(tmp);
            free(pad);
            return TRK_ENOMEM;
        }
        p->frame = frame, p->tmp = tmp, p->pad = pad;
    }
    p->pf = *pf;
    return 0;
}

/* A thread's share of one round: strips until none is left. */
void trk_fast_pf_share(struct worker *w, struct cpu_fast *s)
{
    struct fast_pf *p = &s->pf;
    uint8_t *pad = p->pad + (size_t)(w - s->w) * p->pad_stride;
    for (;;) {
        const int u = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (u >= p->first_unit[p->nch]) break;
        int i = 0;
        while (u >= p->first_unit[i + 1])
            i++;
        const struct trk_prefilter_chan *c = &p->ch[i];
        const int y0 = (u - p->first_unit[i]) * FAST_STRIP_ROWS;
        const int y1 = y0 + FAST_STRIP_ROWS < c->height ? y0 + FAST_STRIP_ROWS : c->height;
        uint16_t *slab = p->tmp + (size_t)i * p->slab;
        if (p->phase == 1)
            trk_prefilter_hrows(&p->pf, c, p->src, y0, y1, slab, p->tmp_pitch, pad);
        else
            trk_prefilter_vrows(&p->pf, c, slab, p->tmp_pitch, y0, y1, p->dst, p->out.pitch);
    }
}

/* One round of phase on nt threads (1, or the whole pool). */
static void pf_round(struct cpu_fast *s, int phase, int nt)
{
    s->pf.phase = phase;
    atomic_store_explicit(&s->pf.next, 0, memory_order_relaxed);
    trk_fast_pool_wake(s, nt);
    trk_fast_pf_share(&s->w[0], s);
    trk_fast_pool_join(s, nt);
}

/* img filtered into the backend's frame, which is returned. */
const struct trk_image *trk_fast_pf_frame(struct cpu_fast *s, const struct trk_image *img)
{
    struct fast_pf *p = &s->pf;
    trk_prefilter_frame_at(p->frame, img, &p->out, p->dst);
    p->src = img;
    p->nch = trk_prefilter_chans(img->fmt, img->width, img->height, p->ch);
    TRK_ASSERT(p->nch > 0); /* backend.c checked the image */
    p->tmp_pitch = trk_prefilter_tmp_pitch(img->width);
    p->slab = trk_prefilter_tmp_slab(img->width, img->height);
    p->first_unit[0] = 0;
    for (int i = 0; i < p->nch; i++)
        p->first_unit[i + 1] =
            p->first_unit[i] + (p->ch[i].height + FAST_STRIP_ROWS - 1) / FAST_STRIP_ROWS;
    const long px = (long)img->width * img->height;
    const int nt = s->nthreads > 1 && px >= FAST_MIN_POOL_PIXELS ? s->nthreads : 1;
    pf_round(s, 1, nt);
    pf_round(s, 2, nt);
    p->phase = 0;
    return &p->out;
}
