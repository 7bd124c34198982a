/* Pinned host frames and pipelining with the CPU backend (CI has no GPU):
 * the backend's host memory API, frames laid out in it, FFmpeg decoding
 * into the host pool (frames identical to the default allocator's, buffers
 * reused; ASan builds catch a leak), and the pipelined processing thread
 * (NDJSON identical and in order to the unpipelined one's, the pool on and
 * off), and the paced hand-off (every frame once, in order). The clip is made by the ffmpeg CLI
 * (argv[2]: a work directory). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libavformat/avformat.h>

#include "../check.h"
#include "control/control.h"
#include "out/ndjson.h"
#include "out/outputs.h"
#include "source/hostpool.h"
#include "pipeline.h"
#include "source/source.h"

#define W      320
#define H      240
#define FRAMES 90

static char clip[4096];

/* The clip for one test case: a file of its own (ctest runs the cases in
 * parallel; one case rewriting a clip another is reading made that one's
 * open fail). */
static int make_clip(const char *dir, const char *test)
{
    snprintf(clip, sizeof(clip), "%s/pinned-clip-%s.mp4", dir, test);
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=%dx%d:rate=30 -frames:v %d "
             "-c:v libx264 -preset veryfast -pix_fmt yuv420p '%s'",
             W, H, FRAMES, clip);
    return system(cmd);
}

static struct trk_backend *cpu_backend(void)
{
    struct trk_backend *b = NULL;
    struct trk_backend_cfg bc = {
        .kind = TRK_BACKEND_CPU, .max_width = W, .max_height = H, .threads = 1
    };
    CHECK(trk_backend_create(&bc, &b) == 0);
    return b;
}

static void test_host_api(void)
{
    struct trk_backend *b = cpu_backend();
    uint8_t *p = trk_backend_host_alloc(b, 1000);
    CHECK(p && (uintptr_t)p % 64 == 0);
    memset(p, 1, 1000); /* all of it usable (ASan) */
    CHECK(trk_backend_host_alloc(b, 0) == NULL);
    CHECK(trk_backend_host_register(b, p, 1000) == 0);
    CHECK(trk_backend_host_register(b, NULL, 10) == TRK_EINVAL);
    CHECK(trk_backend_host_register(b, p, 0) == TRK_EINVAL);
    CHECK(!trk_backend_host_pinned(b, p, 1000)); /* CPU backends pin nothing */
    trk_backend_host_unregister(b, p);
    trk_backend_host_free(b, p);
    trk_backend_host_free(b, NULL);
    CHECK(!trk_backend_async(b));
    trk_backend_destroy(&b);
}

static int unholds;
static void count_unhold(void *h)
{
    (void)h;
    unholds++;
}

static void count_one(void *h)
{
    (*(int *)h)++;
}

static void test_frame_mem(void)
{
    struct trk_backend *b = cpu_backend();
    struct trk_frame f = { .mem = b };
    CHECK(trk_frame_layout(&f, TRK_FMT_NV12, 33, 17, 64) == 0);
    CHECK(f.data_host && (uintptr_t)f.data % 64 == 0 && f.img.plane[0] == f.data);
    memset(f.data, 7, f.cap);
    int dummy;
    trk_frame_keep(&f, &dummy, count_unhold);
    CHECK(unholds == 0);
    CHECK(trk_frame_layout(&f, TRK_FMT_RGB24, 40, 20, 64) == 0); /* lets the hold go */
    CHECK(unholds == 1 && f.keep == NULL);
    trk_frame_keep(&f, &dummy, count_unhold);
    trk_frame_free_data(&f);
    CHECK(unholds == 2 && f.data == NULL && !f.data_host);
    trk_frame_free_data(&f); /* twice is fine */
    CHECK(unholds == 2);
    trk_backend_destroy(&b);
}

/* The pool lets go of a frame's outside buffer (a camera's driver buffer)
 * when its last holder releases it, not before and only once, on every path
 * a holder goes: release, a live publish replacing a stale ready frame, a
 * publish into a closed pool. */
static void test_pool_hold(void)
{
    static struct trk_pool pool;
    trk_pool_init(&pool, false);
    int a = 0, b = 0, c = 0;
    struct trk_frame *fa = trk_pool_get(&pool);
    trk_frame_keep(fa, &a, count_one);
    CHECK(trk_pool_publish(&pool, fa));
    struct trk_frame *t = trk_pool_take(&pool);
    CHECK(t == fa && a == 0);
    trk_pool_ref(&pool, t); /* processing hands it to the preview too */
    trk_pool_release(&pool, t);
    CHECK(a == 0 && t->keep == &a); /* one holder still reads it */
    trk_pool_release(&pool, t);
    CHECK(a == 1 && t->keep == NULL);
    /* A newer frame replaces a ready one no one took: the stale one goes. */
    struct trk_frame *fb = trk_pool_get(&pool);
    trk_frame_keep(fb, &b, count_one);
    CHECK(trk_pool_publish(&pool, fb));
    struct trk_frame *fc = trk_pool_get(&pool);
    CHECK(fc != fb);
    trk_frame_keep(fc, &c, count_one);
    CHECK(trk_pool_publish(&pool, fc));
    CHECK(b == 1 && c == 0 && trk_pool_drops(&pool) == 1);
    /* Publishing into a closed pool lets go of the frame. */
    trk_pool_close(&pool);
    CHECK(trk_pool_take(&pool) == fc);
    trk_pool_release(&pool, fc);
    CHECK(c == 1);
    struct trk_frame *fd = &pool.frames[TRK_POOL_FRAMES - 1];
    pool.holders[TRK_POOL_FRAMES - 1] = 1; /* as trk_pool_get would have */
    int d = 0;
    trk_frame_keep(fd, &d, count_one);
    CHECK(!trk_pool_publish(&pool, fd) && d == 1);
    trk_pool_destroy(&pool);
    CHECK(a == 1 && b == 1 && c == 1 && d == 1); /* once each */
}

/* A producer at a steady rate (2 ms a frame on an absolute schedule, as
 * the capture thread paces), with every 7th frame published late and a
 * pause before the last one, into a pool whose take spins near each
 * predicted frame; then the pool closes. */
#define PACED_FRAMES 150
struct paced {
    struct trk_pool *pool;
    int published;
};

static void *paced_producer(void *arg)
{
    struct paced *pc = arg;
    const double t0 = trk_now();
    for (int i = 0; i < PACED_FRAMES; i++) {
        struct trk_frame *f = trk_pool_get(pc->pool);
        if (!f) break;
        f->seq = (uint64_t)i;
        double due = t0 + i * 2e-3 + (i % 7 == 6 ? 1.5e-3 : 0) + (i == PACED_FRAMES - 1 ? 0.1 : 0);
        while (trk_now() < due) {
            struct timespec ts = { 0, 100 * 1000 };
            nanosleep(&ts, NULL);
        }
        if (!trk_pool_publish(pc->pool, f)) break;
        pc->published++;
    }
    /* Closed while the consumer waits for a frame predicted to come. */
    struct timespec ts = { 0, 2 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    trk_pool_close(pc->pool);
    return NULL;
}

/* The paced hand-off (trk_pool_set_spin) hands over every frame of a
 * lossless source once and in order, and a live source's newest (older
 * ones counted as drops), late and early frames and pauses included; a
 * take waiting for a frame that never comes ends when the pool closes. */
static void test_pool_paced(void)
{
    for (int lossless = 1; lossless >= 0; lossless--) {
        static struct trk_pool pool;
        trk_pool_init(&pool, lossless);
        trk_pool_set_spin(&pool, 0.3e-3, 1e-3);
        struct paced pc = { .pool = &pool };
        pthread_t th;
        CHECK(pthread_create(&th, NULL, paced_producer, &pc) == 0);
        int taken = 0;
        long last = -1;
        bool ordered = true;
        struct trk_frame *f;
        while ((f = trk_pool_take(&pool))) {
            if (lossless ? (long)f->seq != last + 1 : (long)f->seq <= last) ordered = false;
            last = (long)f->seq;
            taken++;
            trk_pool_release(&pool, f);
        }
        pthread_join(th, NULL);
        CHECKF(ordered, "%s: frames out of order or missing (last %ld)",
               lossless ? "lossless" : "live", last);
        CHECKF(pc.published == PACED_FRAMES && last == PACED_FRAMES - 1,
               "%s: %d published, last taken %ld", lossless ? "lossless" : "live", pc.published,
               last);
        CHECKF((uint64_t)taken + trk_pool_drops(&pool) == (uint64_t)pc.published,
               "%s: %d taken + %llu dropped != %d published", lossless ? "lossless" : "live", taken,
               (unsigned long long)trk_pool_drops(&pool), pc.published);
        if (lossless)
            CHECKF(taken == PACED_FRAMES, "lossless: %d of %d taken", taken, PACED_FRAMES);
        trk_pool_destroy(&pool);
    }
}

/* Reads every frame of the clip, keeping each in a frame of its own (as
 * the pipeline's pool does: the held decoder buffers must stay intact while
 * the decoder goes on), and returns the payload bytes of them all. */
static uint8_t *decode_all(struct trk_backend *mem, int *n)
{
    struct trk_source src;
    struct trk_file_cfg fc = { .path = clip };
    CHECK(trk_source_file_create(&fc, &src) == 0);
    src.host_mem = mem;
    CHECK(trk_source_open(&src) == 0);
    static struct trk_frame frames[FRAMES + 1];
    memset(frames, 0, sizeof(frames));
    const size_t fsz = (size_t)W * H * 3 / 2;
    uint8_t *out = calloc(FRAMES + 1, fsz);
    *n = 0;
    while (*n <= FRAMES && trk_source_read(&src, &frames[*n]) == 0)
        (*n)++;
    for (int i = 0; i < *n; i++) {
        struct trk_frame *f = &frames[i];
        CHECKF(f->img.fmt == TRK_FMT_I420 && f->img.width == W && f->img.height == H,
               "frame %d: %s %dx%d", i, trk_pixfmt_name(f->img.fmt), f->img.width, f->img.height);
        struct trk_plane_layout L;
        trk_image_plane_layout(f->img.fmt, W, H, &L);
        uint8_t *o = out + (size_t)i * fsz;
        for (int p = 0; p < L.planes; p++)
            for (int y = 0; y < L.rows[p]; y++, o += L.row_bytes[p])
                memcpy(o, f->img.plane[p] + (size_t)y * f->img.pitch[p], L.row_bytes[p]);
    }
    for (int i = 0; i < *n; i++)
        trk_frame_free_data(&frames[i]);
    trk_source_destroy(&src);
    return out;
}

static void test_pool(void)
{
    struct trk_backend *b = cpu_backend();
    int n_pool = 0, n_plain = 0;
    uint8_t *pool = decode_all(b, &n_pool);
    uint8_t *plain = decode_all(NULL, &n_plain);
    CHECKF(n_pool == FRAMES && n_plain == FRAMES, "decoded %d and %d of %d frames", n_pool, n_plain,
           FRAMES);
    const size_t fsz = (size_t)W * H * 3 / 2;
    int first = -1;
    for (int i = 0; i < n_pool && i < n_plain && first < 0; i++)
        if (memcmp(pool + i * fsz, plain + i * fsz, fsz)) first = i;
    CHECKF(first < 0, "frame %d differs between the host pool and FFmpeg's allocator", first);
    free(pool);
    free(plain);
    trk_backend_destroy(&b);
}

/* The pool's own logic on a decoder: every frame it serves comes from a
 * small set of buffers, reused. */
static void test_pool_reuse(void)
{
    struct trk_backend *b = cpu_backend();
    struct trk_hostpool *hp = NULL;
    CHECK(trk_hostpool_create(&hp) == 0);
    trk_hostpool_set_mem(hp, b);
    /* The clip's H.264 decoder driven here, the pool attached, counting. */
    AVFormatContext *fmt = NULL;
    CHECK(avformat_open_input(&fmt, clip, NULL, NULL) == 0);
    CHECK(avformat_find_stream_info(fmt, NULL) >= 0);
    const AVCodec *dc = NULL;
    int si = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &dc, 0);
    CHECK(si >= 0);
    AVCodecContext *dec = avcodec_alloc_context3(dc);
    avcodec_parameters_to_context(dec, fmt->streams[si]->codecpar);
    trk_hostpool_attach(hp, dec);
    CHECK(avcodec_open2(dec, dc, NULL) == 0);
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int frames = 0;
    for (bool eof = false; !eof;) {
        if (av_read_frame(fmt, pkt) < 0) {
            eof = true;
            avcodec_send_packet(dec, NULL);
        } else {
            if (pkt->stream_index == si) avcodec_send_packet(dec, pkt);
            av_packet_unref(pkt);
        }
        while (avcodec_receive_frame(dec, fr) == 0) {
            CHECK(fr->linesize[0] % 64 == 0 && (uintptr_t)fr->data[0] % 64 == 0);
            frames++;
            av_frame_unref(fr);
        }
    }
    struct trk_hostpool_stats st;
    trk_hostpool_get_stats(hp, &st);
    CHECKF(frames == FRAMES && st.frames >= (uint64_t)FRAMES && st.fallbacks == 0,
           "%d frames decoded, %llu served by the pool, %llu by FFmpeg", frames,
           (unsigned long long)st.frames, (unsigned long long)st.fallbacks);
    /* Reuse: the decoder holds its references and threads' frames, never
     * one buffer per frame. */
    CHECKF(st.allocated > 0 && st.allocated < (uint64_t)FRAMES / 2,
           "%llu buffers allocated for %llu frames", (unsigned long long)st.allocated,
           (unsigned long long)st.frames);
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    /* Back in the pool now; freed when it goes (an ASan build reports any
     * buffer that is not). */
    trk_hostpool_destroy(&hp);
    trk_backend_destroy(&b);
}

/* Deletes "key":value (a number or a {...} object) and the comma after it. */
static void strip_key(char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    char *a = strstr(s, k);
    if (!a) return;
    char *z = a + strlen(k);
    if (*z == '{') {
        while (*z && *z != '}')
            z++;
        if (*z) z++;
    } else {
        while (*z && *z != ',' && *z != '}')
            z++;
    }
    if (*z == ',') z++;
    memmove(a, z, strlen(z) + 1);
}

/* Runs the real pipeline on the clip (cpu backend, roi tracking with blobs
 * and instances) and returns its NDJSON without the timing fields. */
static char *run_clip(int pipeline, bool pageable, struct trk_pipeline_summary *sum)
{
    struct trk_source src;
    struct trk_file_cfg fc = { .path = clip };
    CHECK(trk_source_file_create(&fc, &src) == 0);
    if (trk_source_open(&src) != 0) {
        fprintf(stderr, "cannot open %s\n", clip);
        exit(1);
    }
    struct trk_backend *b = cpu_backend();
    static struct trk_objects objs;
    memset(&objs, 0, sizeof(objs));
    objs.n = 3;
    objs.def[0] = (struct trk_object_def){ .name = "red",
                                           .space = TRK_SPACE_RGB,
                                           .lo = { 150, 0, 0 },
                                           .hi = { 255, 90, 90 },
                                           .min_mass = 20,
                                           .blobs = 4,
                                           .track = true,
                                           .coast_frames = 5 };
    objs.def[1] = (struct trk_object_def){ .name = "green",
                                           .space = TRK_SPACE_RGB,
                                           .lo = { 0, 150, 0 },
                                           .hi = { 110, 255, 110 },
                                           .min_mass = 20,
                                           .blobs = 2 };
    objs.def[2] = (struct trk_object_def){ .name = "bright",
                                           .space = TRK_SPACE_YCBCR,
                                           .lo = { 200, 0, 0 },
                                           .hi = { 255, 255, 255 },
                                           .min_mass = 1 };
    struct trk_control_cfg cc = { .objects = &objs };
    struct trk_control *control = NULL;
    CHECK(trk_control_create(&cc, &control) == 0);
    FILE *out = tmpfile();
    struct trk_outputs *outs = NULL;
    CHECK(trk_outputs_create(&outs) == 0);
    CHECK(trk_ndjson_add(outs, fdopen(dup(fileno(out)), "w"), "results", false, NULL) == 0);
    struct trk_pipeline_cfg pc = { .source = &src,
                                   .backend = b,
                                   .outputs = outs,
                                   .fast = true,
                                   .control = control,
                                   .pipeline = pipeline,
                                   .pageable = pageable };
    volatile sig_atomic_t stop = 0;
    CHECK(trk_pipeline_run(&pc, &stop, sum) == 0);
    CHECK(trk_outputs_destroy(&outs) == 0);
    trk_source_destroy(&src);
    trk_control_destroy(&control);
    trk_backend_destroy(&b);
    rewind(out);
    size_t cap = 1 << 22, len = 0;
    char *all = calloc(1, cap), line[65536];
    while (fgets(line, sizeof(line), out)) {
        strip_key(line, "t_capture");
        strip_key(line, "wall_ms");
        strip_key(line, "latency");
        size_t n = strlen(line);
        if (len + n + 1 < cap) memcpy(all + len, line, n + 1), len += n;
    }
    fclose(out);
    return all;
}

/* The first line where a and b differ, printed. */
static bool same_lines(const char *a, const char *b, const char *what)
{
    if (!strcmp(a, b)) return true;
    int line = 1;
    while (*a && *a == *b) {
        line += *a == '\n';
        a++, b++;
    }
    fprintf(stderr, "%s: line %d differs:\n  %.200s\n  %.200s\n", what, line, a, b);
    return false;
}

static void test_pipeline(void)
{
    struct trk_pipeline_summary s0, s1, s2;
    char *serial = run_clip(-1, true, &s0);
    char *pooled = run_clip(-1, false, &s1);
    char *piped = run_clip(1, false, &s2);
    CHECKF(s0.frames == FRAMES && s1.frames == FRAMES && s2.frames == FRAMES,
           "frames %llu %llu %llu", (unsigned long long)s0.frames, (unsigned long long)s1.frames,
           (unsigned long long)s2.frames);
    CHECK(strstr(serial, "\"instances\":") != NULL); /* the tracker's state is exercised */
    CHECK(same_lines(serial, pooled, "host pool vs FFmpeg's allocator"));
    CHECK(same_lines(serial, piped, "pipelined vs not"));
    /* Mode 1 on a file waits for the next frame: all but the last start
     * while the one before is sent; -1 never. */
    CHECKF(s0.pipelined == 0 && s1.pipelined == 0 && s2.pipelined == FRAMES - 1,
           "pipelined %llu %llu %llu", (unsigned long long)s0.pipelined,
           (unsigned long long)s1.pipelined, (unsigned long long)s2.pipelined);
    CHECK(s0.skipped == 0 && s2.skipped == 0 && s2.drops == 0);
    free(serial);
    free(pooled);
    free(piped);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 64;
    if (!strcmp(argv[1], "host_api"))
        test_host_api();
    else if (!strcmp(argv[1], "frame_mem"))
        test_frame_mem();
    else if (!strcmp(argv[1], "pool_hold"))
        test_pool_hold();
    else if (!strcmp(argv[1], "pool_paced"))
        test_pool_paced();
    else {
        if (argc < 3 || make_clip(argv[2], argv[1])) {
            fprintf(stderr, "cannot make the clip with the ffmpeg CLI\n");
            return 1;
        }
        if (!strcmp(argv[1], "pool"))
            test_pool(), test_pool_reuse();
        else if (!strcmp(argv[1], "pipeline"))
            test_pipeline();
        else
            return 64;
    }
    return check_exit(argv[1]);
}
