#include "bundles.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "out/record.h"
#include "trk_error.h"

/* One bundle's entry from its manifest, or NULL when dir holds none. */
static json_t *entry(const char *dir, const char *kind)
{
    char path[PATH_MAX + 32], abs[PATH_MAX];
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    const char *format = json_string_value(json_object_get(m, "format"));
    if (!format || strcmp(format, TRK_BUNDLE_FORMAT) || !realpath(dir, abs)) {
        json_decref(m);
        return NULL;
    }
    const char *name = strrchr(abs, '/');
    json_t *end = json_object_get(m, "end");
    json_t *src = json_object_get(m, "source");
    json_t *rw = json_object_get(m, "rewind");
    json_t *e = json_pack("{s:s,s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:b}", "dir", abs, "name",
                          name && name[1] ? name + 1 : abs, "kind", kind, "frames",
                          json_object_get(end, "frames") ?: json_null(), "seconds",
                          json_object_get(rw, "seconds") ?: json_null(), "started_wall_ms",
                          json_object_get(m, "started_wall_ms") ?: json_null(), "source",
                          json_object_get(src, "description") ?: json_null(), "trigger",
                          json_object_get(rw, "trigger") ?: json_null(), "closed", end != NULL);
    json_decref(m);
    return e;
}

static int by_name_newest_first(const void *a, const void *b)
{
    return strcmp(*(char *const *)b, *(char *const *)a);
}

/* The bundles directly inside dir (rewind saves, or --record-rotate's
 * parts: kind), newest names first. */
static void folder(json_t *list, const char *dir, const char *kind)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*nn));
            if (!nn) break;
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) break;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), by_name_newest_first);
    char path[PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        json_t *e =
            json_array_size(list) < TRK_BUNDLES_MAX && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)
                ? entry(path, kind)
                : NULL;
        if (e) json_array_append_new(list, e);
        free(names[i]);
    }
    free(names);
}

int trk_bundles_list(const struct trk_bundles_cfg *cfg, struct trk_buf *out)
{
    json_t *list = json_array();
    if (!list) return TRK_ENOMEM;
    json_t *rec = cfg->record ? entry(cfg->record, "record") : NULL;
    if (rec) json_array_append_new(list, rec);
    if (cfg->record && !rec) folder(list, cfg->record, "record"); /* rotated: its parts */
    if (cfg->rewind_dir) folder(list, cfg->rewind_dir, "rewind");
    char *s = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    int rc = s ? trk_buf_append(out, s, strlen(s)) : TRK_ENOMEM;
    free(s);
    return rc ? TRK_ENOMEM : 0;
}
