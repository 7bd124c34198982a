/* Plain-C driver for a libFuzzer target, so its corpus runs in ctest under
 * gcc (no libFuzzer needed): every file of the given files/directories is
 * passed to LLVMFuzzerTestOneInput, then, with --mutate N, N deterministic
 * mutations of each (byte flips, inserted JSON tokens, deleted spans,
 * truncations, splices), seeded from the input so every run is identical.
 * A failing input is written to ./crash-replay for reproduction. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tokens[] = { "{",
                                      "}",
                                      "[",
                                      "]",
                                      ",",
                                      ":",
                                      "\"",
                                      "\\",
                                      "\\u00e9",
                                      "\\ud83c\\udfaf",
                                      "\\u0000",
                                      "0",
                                      "-1",
                                      "359",
                                      "360",
                                      "255",
                                      "256",
                                      "1e3",
                                      "2.5",
                                      "9223372036854775807",
                                      "99999999999999999999",
                                      "true",
                                      "null",
                                      "\"objects\"",
                                      "\"name\"",
                                      "\"space\"",
                                      "\"lo\"",
                                      "\"hi\"",
                                      "\"min_mass\"",
                                      "\"color\"",
                                      "\"blobs\"",
                                      "\"min_area\"",
                                      "\"connectivity\"",
                                      "64",
                                      "\"#ff00ff\"",
                                      "\"hsv\"",
                                      "\"rgb\"",
                                      "\"ycbcr\"",
                                      "\n",
                                      "\r\n",
                                      "\xef\xbb\xbf",
                                      "\xc3\xa9",
                                      "\xff",
                                      "\xe7\x90" };

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* What is running now, for the crash handler. */
static const uint8_t *cur_data;
static size_t cur_size;
static const char *cur_file = "";
static int cur_mutation = -1;

static void run(const uint8_t *d, size_t n, int mutation)
{
    cur_data = d;
    cur_size = n;
    cur_mutation = mutation;
    LLVMFuzzerTestOneInput(d, n);
}

static void say(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

/* Saves the input that crashed (only async-signal-safe calls), then the
 * default action runs (SA_RESETHAND). */
static void on_crash(int sig)
{
    (void)sig;
    char num[24];
    int i = (int)sizeof num - 1, m = cur_mutation;
    num[i] = 0;
    do {
        num[--i] = (char)('0' + (m < 0 ? 0 : m % 10));
        m /= 10;
    } while (m > 0 && i > 0);
    say("crash on ");
    say(cur_file);
    say(cur_mutation < 0 ? " (as is)" : " mutation ");
    if (cur_mutation >= 0) say(num + i);
    say("; input saved to ./crash-replay\n");
    int fd = open("crash-replay", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t r = write(fd, cur_data, cur_size);
        (void)r;
        close(fd);
    }
}

static void mutate_and_run(const uint8_t *d, size_t n, int count)
{
    size_t cap = n + 256;
    uint8_t *m = malloc(cap);
    rng = 0x9E3779B97F4A7C15ull ^ n;
    for (size_t i = 0; i < n; i++)
        rng = (rng ^ d[i]) * 0x100000001B3ull;
    rng |= 1;
    for (int k = 0; k < count; k++) {
        memcpy(m, d, n);
        size_t len = n;
        int edits = 1 + (int)(next() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = len ? (size_t)(next() % (len + 1)) : 0;
            switch (next() % 5) {
            case 0: /* flip a byte */
                if (at < len) m[at] ^= (uint8_t)(1u << (next() % 8));
                break;
            case 1: { /* insert a token */
                const char *t = tokens[next() % (sizeof tokens / sizeof tokens[0])];
                size_t tl = strlen(t);
                if (len + tl <= cap) {
                    memmove(m + at + tl, m + at, len - at);
                    memcpy(m + at, t, tl);
                    len += tl;
                }
                break;
            }
            case 2: { /* delete a span */
                size_t span = 1 + (size_t)(next() % 8);
                if (at + span <= len) {
                    memmove(m + at, m + at + span, len - at - span);
                    len -= span;
                }
                break;
            }
            case 3: /* truncate */ len = at; break;
            default: { /* duplicate a span (repeats objects, nests deeper) */
                size_t span = 1 + (size_t)(next() % 64);
                if (at + span <= len && len + span <= cap) {
                    memmove(m + at + span, m + at, len - at);
                    len += span;
                }
                break;
            }
            }
        }
        run(m, len, k);
    }
    free(m);
}

static int run_file(const char *path, int mutations)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *d = malloc(cap);
    size_t r;
    while ((r = fread(d + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) d = realloc(d, cap *= 2);
    }
    fclose(f);
    cur_file = path;
    run(d, n, -1);
    if (mutations) mutate_and_run(d, n, mutations);
    free(d);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int mutations = 0, files = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = (int)SA_RESETHAND;
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mutate") == 0 && i + 1 < argc) {
            mutations = atoi(argv[++i]);
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i], mutations)) return 2;
            files++;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            perror(argv[i]);
            return 2;
        }
        char **names = NULL;
        size_t nn = 0;
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.') continue;
            names = realloc(names, (nn + 1) * sizeof *names);
            names[nn++] = strdup(de->d_name);
        }
        closedir(dir);
        qsort(names, nn, sizeof *names, cmp);
        for (size_t k = 0; k < nn; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], names[k]);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(p, mutations)) return 2;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs, %d mutations each\n", files, mutations);
    return files ? 0 : 1;
}
