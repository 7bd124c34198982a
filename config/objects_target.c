/* Objects configuration: the save and reload target, the one file a running
 * daemon writes. Its folder is resolved once, at start; the file is then only
 * named in it. Save never follows a symbolic link, never replaces a file
 * that is not regular or belongs to another user, and writes a 0600
 * temporary file that is synced and renamed into place (atomic); reload
 * reads only a regular file of trackd's user (or root's) and quotes nothing
 * from it. Temporary files a killed daemon left are removed at open. */
#include "objects_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const void *data, size_t n)
{
    const char *s = data;
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Temporary files are NAME.tmp. plus TMP_RAND characters of tmp_chars: the
 * exact pattern trk_objects_target_open removes, so nothing else is. */
#define TMP_RAND 6
static const char tmp_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static bool is_our_tmp(const char *entry, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(entry, name, n) != 0 || strncmp(entry + n, ".tmp.", 5) != 0) return false;
    const char *r = entry + n + 5;
    if (strlen(r) != TMP_RAND) return false;
    for (int i = 0; i < TMP_RAND; i++)
        if (!r[i] || !strchr(tmp_chars, r[i])) return false;
    return true;
}

/* Removes NAME.tmp.XXXXXX files that a daemon killed in the middle of a
 * save left: regular files of this user only. Returns how many. */
static int remove_stale(const struct trk_objects_target *t)
{
    int fd = openat(t->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)) != NULL) {
        if (!is_our_tmp(e->d_name, t->name)) continue;
        if (fstatat(t->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && unlinkat(t->dirfd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int trk_objects_target_open(const char *path, struct trk_objects_target *t, int *stale_removed,
                            char *why, size_t why_len)
{
    char dummy[1];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (stale_removed) *stale_removed = 0;
    if (!t) return TRK_EINVAL;
    t->dirfd = -1;
    t->name[0] = t->path[0] = 0;
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *base = slash ? slash + 1 : path;
    if (!path || !*base || !strcmp(base, ".") || !strcmp(base, "..") ||
        strlen(base) >= sizeof t->name) {
        snprintf(why, why_len, "'%s' does not name a file", path ? path : "");
        return TRK_EINVAL;
    }
    char dir[sizeof t->path];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else {
        snprintf(why, why_len, "the path is too long");
        return TRK_EINVAL;
    }
    char eb[128];
    /* The folder is resolved here, once; later the file is only named in
     * it, so swapping a folder of the path afterwards redirects nothing. */
    char *real = realpath(dir, NULL);
    int fd = real ? open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_len, "folder %s: %s", dir, trk_config_errno_text(e, eb, sizeof eb));
        free(real);
        return -e;
    }
    snprintf(t->name, sizeof t->name, "%s", base);
    int n = snprintf(t->path, sizeof t->path, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(real);
    if (n < 0 || (size_t)n >= sizeof t->path) {
        close(fd);
        snprintf(why, why_len, "the path is too long");
        return TRK_EINVAL;
    }
    t->dirfd = fd;
    int removed = remove_stale(t);
    if (stale_removed) *stale_removed = removed;
    return 0;
}

void trk_objects_target_close(struct trk_objects_target *t)
{
    if (t && t->dirfd >= 0) {
        close(t->dirfd);
        t->dirfd = -1;
    }
}

/* The state of the file name in the folder (the objects file, or a class
 * file beside it) for save (for_save) or reload: 0 with *st filled when it
 * may be used, -ENOENT when it is absent, else a negative code and why (a
 * predicate for the path: "is a symbolic link: ..."). */
static int check_name(const struct trk_objects_target *t, const char *name, bool for_save,
                      struct stat *st, char *why, size_t why_len)
{
    char eb[128];
    if (fstatat(t->dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
        int e = errno;
        snprintf(why, why_len, "cannot be examined: %s", trk_config_errno_text(e, eb, sizeof eb));
        return -e;
    }
    if (S_ISLNK(st->st_mode)) {
        snprintf(why, why_len, "is a symbolic link: trackd does not follow it (%s a regular file)",
                 for_save ? "save to" : "reload from");
        return -ELOOP;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, why_len, "is not a regular file: trackd does not %s it",
                 for_save ? "replace" : "read");
        return -EINVAL;
    }
    /* Replacing a file of another user would give it to us; reading one could
     * hand its content to whoever asked. Root's files are read (a daemon
     * user reading /etc), never replaced unless we are root. */
    uid_t me = geteuid();
    if (st->st_uid != me && (for_save || st->st_uid != 0)) {
        snprintf(why, why_len,
                 "belongs to uid %u, not to trackd's user (uid %u): trackd does not %s it",
                 (unsigned)st->st_uid, (unsigned)me, for_save ? "replace" : "read");
        return -EPERM;
    }
    return 0;
}

static int check_file(const struct trk_objects_target *t, bool for_save, struct stat *st, char *why,
                      size_t why_len)
{
    return check_name(t, t->name, for_save, st, why, why_len);
}

int trk_objects_target_check(const struct trk_objects_target *t, char *why, size_t why_len)
{
    char dummy[1];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (!t || t->dirfd < 0) return TRK_EINVAL;
    struct stat st;
    char m[200];
    int rc = check_file(t, true, &st, m, sizeof m);
    if (rc == -ENOENT) return 0;
    if (rc) snprintf(why, why_len, "%s %s", t->path, m);
    return rc;
}

int trk_objects_target_load(const struct trk_objects_target *t, struct trk_objects *out,
                            struct trk_config_error *err)
{
    struct trk_config_error local;
    if (trk_config_error_begin(&err, &local, t ? t->path : NULL, t && t->dirfd >= 0 && out))
        return TRK_EINVAL;
    /* Checked without opening (opening a device can act on it); the open
     * re-checks that the same regular file is there. A file replaced in
     * between (an atomic save by trackd or an editor: rename over it) is
     * checked again, a few times. O_NONBLOCK: a FIFO swapped in meanwhile
     * does not wait for a writer. */
    int rc = -EAGAIN, fd = -1;
    for (int tries = 0; rc == -EAGAIN && tries < 5; tries++) {
        struct stat st, fst;
        char m[200];
        rc = check_file(t, false, &st, m, sizeof m);
        if (rc) {
            trk_config_error_set(err, 0, 0, "%s", rc == -ENOENT ? "does not exist" : m);
            return rc;
        }
        fd = openat(t->dirfd, t->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            char eb[128];
            trk_config_error_set(err, 0, 0, "cannot open: %s",
                                 trk_config_errno_text(e, eb, sizeof eb));
            return -e;
        }
        if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino ||
            fst.st_dev != st.st_dev) {
            close(fd);
            fd = -1;
            rc = -EAGAIN;
        }
    }
    if (fd < 0) {
        trk_config_error_set(err, 0, 0, "the file kept changing while it was opened: not read");
        return -EAGAIN;
    }
    return trk_objects_load_fd(fd, t->path, true, t->dirfd, out, err);
}

/* Writes data[0..len) to name in t's folder by the save rules (objects.h):
 * a temporary file, fsync, the old file's mode (new: 0644), rename over
 * name. shown: the path for messages. 0 or a negative code, why set. */
static int save_bytes(const struct trk_objects_target *t, const char *name, const char *shown,
                      const void *data, size_t len, char *why, size_t why_len)
{
    char eb[128];
    struct stat st;
    char m[200];
    int rc = check_name(t, name, true, &st, m, sizeof m);
    if (rc && rc != -ENOENT) {
        snprintf(why, why_len, "%s %s", shown, m);
        return rc;
    }
    mode_t mode = rc ? 0644 : (st.st_mode & 0777); /* no set-id bits on a data file */
    rc = 0;
    char tmp[sizeof t->name + 16];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        unsigned char r[TMP_RAND];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            rc = -errno;
            break;
        }
        int k = snprintf(tmp, sizeof tmp, "%s.tmp.", name);
        for (int i = 0; i < TMP_RAND; i++)
            tmp[k + i] = tmp_chars[r[i] % (sizeof tmp_chars - 1)];
        tmp[k + TMP_RAND] = 0;
        /* O_EXCL: never an existing file, never through a link. */
        fd = openat(t->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
    }
    if (fd < 0) {
        if (!rc) rc = -EEXIST;
        snprintf(why, why_len, "cannot create a temporary file beside %s: %s", shown,
                 trk_config_errno_text(-rc, eb, sizeof eb));
        return rc;
    }
    rc = write_all(fd, data, len);
    if (!rc && (fchmod(fd, mode) < 0 || fsync(fd) < 0)) rc = -errno;
    if (close(fd) < 0 && !rc) rc = -errno;
    /* rename replaces the directory entry, never writes into what the name
     * pointed to: even a link or FIFO put there after the check above only
     * loses its name, whatever it pointed to stays untouched. */
    if (!rc && renameat(t->dirfd, tmp, t->dirfd, name) < 0) rc = -errno;
    if (rc) {
        unlinkat(t->dirfd, tmp, 0);
        snprintf(why, why_len, "writing %s: %s", shown, trk_config_errno_text(-rc, eb, sizeof eb));
    }
    return rc;
}

int trk_objects_target_save(const struct trk_objects_target *t, const struct trk_objects *objs,
                            char *why, size_t why_len)
{
    char dummy[1], eb[128];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (!t || t->dirfd < 0 || trk_objects_validate(objs, why, why_len)) return TRK_EINVAL;
    struct stat st;
    char m[200];
    int rc = check_file(t, true, &st, m, sizeof m);
    if (rc && rc != -ENOENT) {
        snprintf(why, why_len, "%s %s", t->path, m);
        return rc;
    }
    /* The class tables first, each by the same rules, so that the objects
     * file never names a table that is not there. */
    static _Thread_local uint8_t lut[TRK_CLASS_FILE_BYTES];
    char shown[sizeof t->path + TRK_CLASS_FILE_MAX];
    const char *slash = strrchr(t->path, '/');
    const int dir_len = slash ? (int)(slash - t->path) + 1 : 0;
    for (int k = 0; k < objs->n_classes; k++) {
        snprintf(shown, sizeof shown, "%.*s%s", dir_len, t->path, objs->classes[k].file);
        trk_class_file_encode(objs->classes[k].bits, lut);
        rc = save_bytes(t, objs->classes[k].file, shown, lut, sizeof lut, why, why_len);
        if (rc) return rc;
    }
    char *text = trk_objects_to_json(objs);
    if (!text) {
        snprintf(why, why_len, "out of memory");
        return TRK_ENOMEM;
    }
    rc = save_bytes(t, t->name, t->path, text, strlen(text), why, why_len);
    free(text);
    if (rc) return rc;
    /* The rename is durable only once the directory entry is on disk; some
     * file systems refuse fsync on a directory (EINVAL): the data is safe. */
    if (fsync(t->dirfd) < 0 && errno != EINVAL) {
        rc = -errno;
        snprintf(why, why_len, "syncing the folder of %s: %s", t->path,
                 trk_config_errno_text(-rc, eb, sizeof eb));
    }
    return rc;
}

int trk_objects_save_file(const char *path, const struct trk_objects *objs)
{
    if (!path || !*path || trk_objects_validate(objs, NULL, 0)) return TRK_EINVAL;
    struct trk_objects_target t;
    int rc = trk_objects_target_open(path, &t, NULL, NULL, 0);
    if (!rc) rc = trk_objects_target_save(&t, objs, NULL, 0);
    trk_objects_target_close(&t);
    return rc;
}
