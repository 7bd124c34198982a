/* trackd objects configuration: the JSON file that says which colour boxes to
 * track (format and every key: config/OBJECTS.md).
 *
 *   {"objects": [
 *     {"name": "red",  "space": "hsv", "lo": [346, 110, 70], "hi": [14, 255, 255]},
 *     {"name": "ball", "space": "rgb", "lo": [180, 0, 0], "hi": [255, 80, 80], "min_mass": 30}
 *   ]}
 *
 * Loading is all-or-nothing: the first problem found stops it and is reported
 * as "file:line:col: message", line and column (1-based, column in bytes)
 * pointing at the offending token, so a daemon can print it and exit (trackd:
 * 78, TRK_EX_CONFIG of daemon/exit.h), or a reload can keep the objects it
 * already has.
 *
 * Thread safety: every function is reentrant; none keeps state.
 */
#ifndef TRK_CONFIG_OBJECTS_H
#define TRK_CONFIG_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"  /* struct trk_object_def, TRK_MAX_OBJECTS, TRK_NAME_MAX, TRK_E* */
#include "calib.h"    /* struct trk_calib */
#include "patterns.h" /* struct trk_pattern */

#include "objects_light.h" /* struct trk_light_cfg: "illumination", "adapt" */

#ifdef __cplusplus
extern "C" {
#endif

/* Largest objects file or string accepted, in bytes. 256 objects written one
 * per line take about 30 KiB; the cap bounds the memory a hostile input can
 * make the loader use. */
#define TRK_OBJECTS_MAX_BYTES (1024 * 1024)

/* "coast_frames": the default (absent key) and the largest. */
#define TRK_OBJECTS_COAST_DEFAULT 10
#define TRK_OBJECTS_COAST_MAX     1000

/* Largest "min_area": the pixels of the largest frame trackd takes
 * (16384 x 16384, --size's bound); a larger one would drop every blob. */
#define TRK_OBJECTS_MIN_AREA_MAX (16384 * 16384)

/* What one frame may carry (OBJECTS.md, Limits). Each object puts up to
 * trk_objects_frame_items() results in every frame: 1, plus its "blobs" K,
 * plus K instances when tracked; a set's total is at most
 * TRK_FRAME_ITEMS_MAX, which bounds a frame message (about 250 KiB at the
 * most, long names and world coordinates included) and the work to build,
 * queue and send it. At most TRK_BLOB_OBJECTS_MAX objects may have blobs:
 * each one is a labelling pass over every frame, whatever K is (16: marker
 * and robot-soccer sets, team and pattern colours and a ball, need more
 * than 8). */
#define TRK_FRAME_ITEMS_MAX  1024
#define TRK_BLOB_OBJECTS_MAX 16

/* Which rule a load broke, for callers that answer with a code (the
 * daemon's control replies) rather than the text. */
enum trk_config_kind {
    TRK_CONFIG_INVALID = 0, /* anything else: syntax, a key, a value, reading */
    TRK_CONFIG_DUPLICATE,   /* two objects share a name                       */
    TRK_CONFIG_TOO_MANY,    /* more than TRK_MAX_OBJECTS objects, or over the
                             * frame limits (TRK_FRAME_ITEMS_MAX, ...)        */
};

/* Where and why a load failed. line/col are 1-based, col counted in bytes;
 * both are 0 when the error has no place in a text (trk_objects_from_json).
 * Strings are NUL-terminated, truncated to fit, valid UTF-8 on one line. */
struct trk_config_error {
    char file[256]; /* the path, or the name given for a string         */
    int line, col;
    char msg[256]; /* the message alone, without "file:line:col: "     */
    enum trk_config_kind kind;
};

#define TRK_CAMERA_MAX_CONTROLS 16

/* One V4L2 control setting: from the objects file's "camera" object or a
 * --control option. */
struct trk_camera_control {
    char name[64]; /* v4l2-ctl style: lower case, '_' for other characters */
    long value;
};

/* Edits a camera list (list[0..*n), at most TRK_CAMERA_MAX_CONTROLS; the
 * objects' "camera" section, in setting order) the way the web page's
 * camera card changes one control. set: the first entry of that name gets
 * the value (later duplicates go); a new automatic mode (auto_exposure,
 * white_balance_automatic, gain_automatic: trk_camera_control_is_auto)
 * goes before the first manual entry, so that it is set before the
 * values it would otherwise override, any other new name at the end.
 * Returns 0, TRK_EINVAL for a name that is empty or too long, or
 * TRK_ENOMEM when the list is full. remove: drops every entry of that name
 * and returns how many went. */
int trk_camera_controls_set(struct trk_camera_control *list, int *n, const char *name, long value);
int trk_camera_controls_remove(struct trk_camera_control *list, int *n, const char *name);
bool trk_camera_control_is_auto(const char *name);

/* Painted colour classes (OBJECTS.md, "Classes"): an object with "class":
 * FILE tracks the pixels whose colour cell is set in the table FILE, a
 * file beside the objects file (1..TRK_CLASS_FILE_MAX - 1 bytes of
 * A-Z a-z 0-9 . _ -, not starting with '.', ending ".lut"). The file:
 * TRK_CLASS_FILE_BYTES bytes, little-endian: "TRKCLASS", version (u16, 1),
 * space (u8, 0: R G B), bits per channel (u8, 6), the count of set cells
 * (u32), then the table of backend.h (TRK_CLASS_BYTES bytes). */
#define TRK_CLASS_FILE_MAX    64
#define TRK_CLASS_FILE_HEADER 16
#define TRK_CLASS_FILE_BYTES  (TRK_CLASS_FILE_HEADER + TRK_CLASS_BYTES)
#define TRK_CLASS_VERSION     1

/* One class of a set: its file name and its table. */
struct trk_objects_class {
    char file[TRK_CLASS_FILE_MAX];
    uint8_t bits[TRK_CLASS_BYTES];
};

/* A validated object set. def[0..n) go straight to trk_backend_set_objects;
 * color[i] is object i's display colour (R, G, B) for the web UI: the file's
 * "color" or, when absent, trk_object_display_rgb(&def[i]) (gpu/color.h).
 * Entries past n are zero after a load. */
struct trk_objects {
    int n;
    struct trk_object_def def[TRK_MAX_OBJECTS];
    uint8_t color[TRK_MAX_OBJECTS][3];
    /* The optional top-level "camera" object as V4L2 controls in the order
     * they must be set (automatic modes off before manual values), names in
     * v4l2-ctl style (OBJECTS.md lists the keys). Applied to --device
     * cameras before --control options. */
    int n_camera;
    struct trk_camera_control camera[TRK_CAMERA_MAX_CONTROLS];
    /* The optional top-level "prefilter": {"gaussian": SIGMA}: the
     * denoising pre-filter's standard deviation in pixels (gpu/prefilter.h,
     * trk_backend_set_prefilter), 0..TRK_PREFILTER_MAX_SIGMA; 0 = off, also
     * when the key is absent. */
    double prefilter_sigma;
    /* The optional top-level "calibration" (calib.h): world coordinates
     * for result points; calib.on false when absent. Solved by the loader
     * (h, rms, decimals are set). */
    struct trk_calib calib;
    /* The optional top-level "patterns" (OBJECTS.md): markers assembled
     * from the objects' blob lists (daemon/markers.h), colours as object
     * indices into def[]. n_patterns 0 when absent. */
    int n_patterns;
    struct trk_pattern patterns[TRK_PATTERNS_MAX];
    /* The optional "illumination" and each object's "adapt"
     * (objects_light.h; light.adapt[i] goes with def[i]). All off when
     * absent. */
    struct trk_light_cfg light;
    /* The class objects' tables (def[i].space TRK_SPACE_CLASS: classes[
     * def[i].cls_slot]), n_classes of them, at most TRK_MAX_CLASSES.
     * def[i].cls points into this struct: a copy of the set must be
     * re-bound (trk_objects_bind_classes) before its defs go to a backend. A
     * set read from a file has its tables; one from a text or JSON value
     * (no folder to read them from) has them all clear. */
    int n_classes;
    struct trk_objects_class classes[TRK_MAX_CLASSES];
};

/* Points every class object's def.cls at its table in o (after o was
 * copied). */
void trk_objects_bind_classes(struct trk_objects *o);

/* Editing classes (the daemon's control module). class_slot: the slot a
 * class object stored as object k (k == n: a new one) takes for file: the
 * slot of that file when no other object uses it (its table kept), else a
 * new clear one. Returns the slot, or TRK_EINVAL with why (another object
 * has the file; TRK_MAX_CLASSES in use). compact: drops the slots no
 * object uses (after an edit or a removal), renumbers, re-binds. */
int trk_objects_class_slot(struct trk_objects *o, int k, const char *file, char *why,
                           size_t why_len);
void trk_objects_compact_classes(struct trk_objects *o);

/* Object i's default display colour (trk_object_display_rgb), a class
 * object's from its table in o, whether or not o is bound. */
void trk_objects_display_rgb(const struct trk_objects *o, int i, uint8_t rgb[3]);

/* Whether s is a valid class file name (the rule above); 0, or -1 with msg
 * saying why. */
int trk_class_file_name_check(const char *s, char *msg, size_t msg_len);

/* A class file's bytes data[0..len) into bits. 0, or TRK_EINVAL with *at
 * the offset of the fault and msg the rule it breaks, e.g. "version 2
 * (this trackd reads 1)". */
int trk_class_file_decode(const uint8_t *data, size_t len, uint8_t bits[TRK_CLASS_BYTES],
                          size_t *at, char *msg, size_t msg_len);

/* bits as a class file's bytes. */
void trk_class_file_encode(const uint8_t bits[TRK_CLASS_BYTES], uint8_t out[TRK_CLASS_FILE_BYTES]);

/* Reads and decodes the class file name in the open folder dirfd (never
 * following a symbolic link; a regular file only). 0, or a negative code
 * with msg saying why ("ball.lut: offset 8: version 2 (...)" or "ball.lut:
 * cannot open: ..."). */
int trk_class_file_read(int dirfd, const char *name, uint8_t bits[TRK_CLASS_BYTES], char *msg,
                        size_t msg_len);

/* Reads and validates an objects file. Returns 0, or a negative code with
 * *err filled (err may be NULL): -errno when the file cannot be opened or
 * read (err at file:1:1 with strerror text), TRK_EINVAL for a file that is
 * too large, not JSON or not a valid objects file, TRK_ENOMEM. *out is
 * written only on success. */
int trk_objects_load_file(const char *path, struct trk_objects *out, struct trk_config_error *err);

/* Same for text[0..len) (need not be NUL-terminated). name_for_errors is
 * the "file" of error messages (NULL: "<string>"). */
int trk_objects_load_string(const char *text, size_t len, const char *name_for_errors,
                            struct trk_objects *out, struct trk_config_error *err);

/* Same for an already parsed jansson value (e.g. part of a WebSocket
 * message) holding {"objects": [...]}. Errors carry line = col = 0 and the
 * path in the message (e.g. "objects[2].lo[1] = 300 is out of range ..."). */
struct json_t;
int trk_objects_from_json(const struct json_t *root, const char *name_for_errors,
                          struct trk_objects *out, struct trk_config_error *err);

/* Validates one object value {"name": ..., ...} on its own (all the rules
 * except name uniqueness, which needs the whole set). On success fills *def
 * and color (the given or default colour) and returns 0; else TRK_EINVAL and
 * a message such as `lo[1] = 300 is out of range 0..255 (rgb G)` in msg. */
int trk_objects_parse_object(const struct json_t *obj, struct trk_object_def *def, uint8_t color[3],
                             char *msg, size_t msg_len);

/* trk_objects_parse_object, a class object's file name into file ("" for
 * a box object). */
int trk_objects_parse_object_file(const struct json_t *obj, struct trk_object_def *def,
                                  uint8_t color[3], char file[TRK_CLASS_FILE_MAX], char *msg,
                                  size_t msg_len);

/* Checks a set built in code (or edited by a client) against the same rules
 * as the loader: 0..TRK_MAX_OBJECTS objects, names non-empty, NUL-terminated,
 * < TRK_NAME_MAX bytes, valid UTF-8 without control characters, unique;
 * known space; channels in range; lo <= hi except the hsv hue; min_mass >= 1;
 * blobs 0..TRK_MAX_BLOBS; min_area 1..TRK_OBJECTS_MIN_AREA_MAX; connectivity
 * 4 or 8 (the loader stores absent keys as 0, 1 and 8: a set built in code
 * must too, though a backend also takes 0 for the last two); track only
 * with blobs >= 1; coast_frames 0..TRK_OBJECTS_COAST_MAX;
 * prefilter_sigma in 0..TRK_PREFILTER_MAX_SIGMA; a calibration that is on
 * passes trk_calib_solve (on a copy) with a valid unit; the frame limits
 * (trk_objects_check_limits). Returns 0 or
 * TRK_EINVAL with a message naming the object (msg may be NULL). */
int trk_objects_validate(const struct trk_objects *objs, char *msg, size_t msg_len);

/* The results object d adds to every frame: 1, + blobs, + blobs again when
 * tracked (its instances). */
int trk_objects_frame_items(const struct trk_object_def *d);

/* Checks defs[0..n) against the frame limits (TRK_FRAME_ITEMS_MAX,
 * TRK_BLOB_OBJECTS_MAX). Returns 0, or TRK_EINVAL with *at (may be NULL) the
 * index of the first object that goes over one and a message in msg, e.g.
 * `objects[16].blobs: 17 objects with blobs (at most 16: ...)`. */
int trk_objects_check_limits(const struct trk_object_def *defs, int n, int *at, char *msg,
                             size_t msg_len);

/* Writes "file:line:col: message" (or "file: message" when line is 0) into
 * buf like snprintf: always NUL-terminated when len > 0, returns the length
 * the full text needs (excluding the NUL), or TRK_EINVAL for a NULL err. */
int trk_config_error_format(const struct trk_config_error *err, char *buf, size_t len);

/* The set as pretty JSON text, one object per line, that loads back into an
 * identical struct trk_objects. "color" is written only when it differs from
 * the default colour, "blobs", "min_area", "connectivity", "track" and
 * "coast_frames" only when not 0, 1, 8, false and 10 (a file without them
 * round-trips unchanged), "calibration" when on, with the values given.
 * Returns a malloc'd NUL-terminated string
 * (free() it), or NULL when objs fails trk_objects_validate or memory runs out. */
char *trk_objects_to_json(const struct trk_objects *objs);

/* The set as a new jansson value {"objects": [...]} (the caller owns the
 * reference; every object carries all keys, "color" included), or NULL as
 * for trk_objects_to_json. For embedding in protocol messages. */
struct json_t *trk_objects_to_value(const struct trk_objects *objs);

/* Object i of the set as a new jansson object in the file's form, every
 * key written; "color" always with every_key, else only when it differs
 * from the default colour (as the file writer does, so that an edit of the
 * box merged over it keeps a default colour following the box). NULL for an
 * index out of range or no memory. */
struct json_t *trk_objects_object_value(const struct trk_objects *objs, int i, bool every_key);

/* Where a running daemon saves the objects and reloads them from, fixed at
 * start: the folder is resolved and opened once, and the file is only ever
 * named inside that open folder, so replacing a folder of the path later
 * redirects nothing. Rules (PROTOCOL.md section 5):
 * - the file itself is never followed as a symbolic link, and a name that
 *   is not a regular file (FIFO, device, folder, socket) is neither read
 *   nor replaced;
 * - save never replaces a file owned by a user other than the process's
 *   effective one; reload reads only files owned by it or by root;
 * - save is atomic: NAME.tmp.XXXXXX (created exclusively, mode 0600, in the
 *   same folder), fsync, chmod to the old file's mode (a new file: 0644),
 *   rename over NAME, fsync the folder; a crash leaves the old file or the
 *   new one, never a mix;
 * - reload errors quote no text of the file (it may not be readable by the
 *   one who asked): file:line:col and the rule broken only.
 * Any thread: the functions only read *t; saves and loads may overlap (each
 * save has its own temporary file, a rename is atomic). */
struct trk_objects_target {
    int dirfd;       /* the folder, open O_DIRECTORY; -1 when closed */
    char name[256];  /* the file's name in it                        */
    char path[4096]; /* absolute path (folder resolved), for messages */
};

/* Resolves path's folder (relative: to the working directory now) and opens
 * it; the file need not exist. Removes NAME.tmp.XXXXXX files a killed save
 * left there (regular files of this user, exactly that pattern) and counts
 * them in *stale_removed (may be NULL). Returns 0, TRK_EINVAL (no file name,
 * too long) or -errno (the folder cannot be opened), with a message in why. */
int trk_objects_target_open(const char *path, struct trk_objects_target *t, int *stale_removed,
                            char *why, size_t why_len);
/* Safe twice and after a failed open. */
void trk_objects_target_close(struct trk_objects_target *t);

/* 0 when a save could replace the file now (or it does not exist), else the
 * code trk_objects_target_save would return and the reason in why. */
int trk_objects_target_check(const struct trk_objects_target *t, char *why, size_t why_len);

/* Saves objs by the rules above, its class tables first (each FILE.lut
 * beside the file, by the same rules). Returns 0, TRK_EINVAL (objs invalid; why
 * says which object), TRK_ENOMEM, -ELOOP (a symbolic link), -EINVAL (not a
 * regular file), -EPERM (another user's file) or -errno; why says what
 * happened, naming the path. On failure no temporary file is left. */
int trk_objects_target_save(const struct trk_objects_target *t, const struct trk_objects *objs,
                            char *why, size_t why_len);

/* Reads and validates the file by the rules above; codes as
 * trk_objects_load_file plus -ELOOP, -EINVAL and -EPERM as for save (err
 * then has line 0 and says why). */
int trk_objects_target_load(const struct trk_objects_target *t, struct trk_objects *out,
                            struct trk_config_error *err);

/* One save by the same rules to path (its folder resolved now). Returns as
 * trk_objects_target_save. */
int trk_objects_save_file(const char *path, const struct trk_objects *objs);

/* The objects JSON for the built-in demo scene (7 balls: red, green, blue,
 * yellow, magenta, cyan, orange; config/demo_objects.c). Static storage. */
const char *trk_objects_demo_json(void);

/* dst gets src's patterns, their colours found again by object name in
 * dst (a set edited from src: objects added, removed, reordered). 0, or
 * TRK_EINVAL with why naming the pattern and the object dst lacks (or has
 * without blobs); dst's patterns are then left alone. */
int trk_objects_carry_patterns(struct trk_objects *dst, const struct trk_objects *src, char *why,
                               size_t why_len);

/* The colour slots of a pattern the page shows and set_pattern replaces,
 * as object indices into out: a colour code's colours in order; a centre +
 * dots pattern's dot colours, each once, in the order its ids table first
 * uses them (id 0's dots, then id 1's new ones, ...; the centre is apart).
 * Returns how many. */
#define TRK_PATTERN_SLOTS_MAX (TRK_PATTERN_IDS_MAX * TRK_PATTERN_DOTS_MAX)
unsigned trk_pattern_slots(const struct trk_pattern *pt, uint16_t out[TRK_PATTERN_SLOTS_MAX]);

/* Pattern k of o takes new colours, given by object name: centre (centre +
 * dots only; NULL keeps it) and names[0..n) in place of trk_pattern_slots'
 * list, position by position (NULL names keeps them all), every use of a
 * slot's colour in the ids table following it. Checked as the file checks
 * them (each an object of o with blobs; ids still differ); key names the
 * list in messages ("dots" or "colors"). 0, or TRK_EINVAL with why and o
 * unchanged. */
int trk_objects_set_pattern(struct trk_objects *o, int k, const char *centre,
                            const char *const *names, unsigned n, const char *key, char *why,
                            size_t why_len);

/* Index of the object called name, or -1. */
int trk_objects_find(const struct trk_objects *objs, const char *name);

/* Whether s is a valid object name: 1..TRK_NAME_MAX - 1 bytes of UTF-8
 * without controls (C0, DEL, C1) or Unicode noncharacters (OBJECTS.md,
 * "Names"), the rule every loader and editor applies. 0, or -1 with msg
 * saying why, starting with what (e.g. "mask is not valid UTF-8"). */
int trk_objects_check_name(const char *what, const char *s, char *msg, size_t msg_len);

/* A name as one part of an output's address (an MQTT topic level, an OSC
 * address part): the bytes of reserved, '%', controls (< 0x20) and DEL
 * written as %XX (uppercase hex), every other byte (UTF-8 included) as it
 * is. Percent-decoding gives the name back, so two names never share an
 * address (OBJECTS.md, "Names"). out gets at most cap - 1 bytes and a NUL,
 * never part of an escape; TRK_NAME_ESCAPED_MAX holds any valid name.
 * Returns the length written. */
#define TRK_NAME_ESCAPED_MAX (3 * (TRK_NAME_MAX - 1) + 1)
size_t trk_objects_escape_name(const char *name, const char *reserved, char *out, size_t cap);

/* "rgb", "hsv", "ycbcr", "lab", "rg", and "class" for TRK_SPACE_CLASS (NULL
 * for an unknown value); parse gives the enum value of a box space or -1. */
const char *trk_objects_space_name(enum trk_space space);
int trk_objects_space_parse(const char *s);

/* The channel rules the loader checks, for clients that edit objects (the
 * hello's "limits", PROTOCOL.md): channel c (0..2) of space is called
 * trk_objects_channel_name ("H", "Cb", ...; NULL out of range), takes the
 * values 0..trk_objects_channel_max, and may have lo > hi, a range through 0,
 * when trk_objects_channel_wraps (the hsv hue only). */
const char *trk_objects_channel_name(enum trk_space space, int c);
int trk_objects_channel_max(enum trk_space space, int c);
bool trk_objects_channel_wraps(enum trk_space space, int c);

#ifdef __cplusplus
}
#endif
#endif
