/* trackd wire messages: the JSON the server sends (WebSocket and NDJSON) and
 * the parser for what clients send. protocol/PROTOCOL.md is the document;
 * this header is its C side.
 *
 * Server -> client messages are encoded by hand into a growable buffer: the
 * frame message is built for every frame, so it avoids a JSON library, and
 * its output is byte-for-byte deterministic for the same input (tests and
 * NDJSON diffs rely on that). Client -> server messages are rare and
 * untrusted, so they are parsed with jansson, strictly.
 *
 * Every trk_msg_* encoder APPENDS one complete JSON value to the buffer (no
 * newline; NDJSON writers add '\n' themselves) and returns 0 or TRK_ENOMEM.
 * On TRK_ENOMEM the buffer may hold a partial message and stays failed (see
 * struct trk_buf): never send it; reset it to reuse it.
 *
 * Thread safety: all functions are reentrant; a trk_buf belongs to one thread.
 */
#ifndef TRK_PROTOCOL_MESSAGES_H
#define TRK_PROTOCOL_MESSAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "calib.h"
#include "result.h"  /* struct trk_frame_result: what frame messages say */
#include "trk_buf.h" /* struct trk_buf and its appenders */

#ifdef __cplusplus
extern "C" {
#endif

/* Wire protocol version, sent in the hello. Bumped only for changes that
 * break existing clients (removed/renamed fields, changed units). Adding
 * fields or message types does not bump it; clients ignore what they do not
 * know. */
#define TRK_PROTOCOL_VERSION 1

/* Largest client -> server message accepted (bytes); larger ones are
 * answered with a "too_large" error. */
#define TRK_MSG_MAX_CLIENT 65536

/* Longest echoed request id (a JSON string id, in bytes, before escaping). */
#define TRK_MSG_ID_MAX 128

/* ------------------------------------------------- server -> client: frame */

/* Appends the "frame" message of r: camera (when given), seq, pts (3
 * decimals), width, height, t_capture (6), wall_ms (3), backend,
 * latency{queue_ms, upload_ms, kernel_ms, process_ms, backend_ms, handoff_ms when >= 0}
 * (3 decimals each) and objects[] with, per object i: id (= i), name
 * (escaped), found, mass, cx, cy (2 decimals) and bbox [x0, y0, x1, y1]
 * (inclusive); cx, cy and bbox are null when mass == 0; then orientation,
 * major, minor (2 decimals: the shape, result.h struct trk_point; 0 for a
 * mass of 0 or 1). An object whose
 * definition has blobs K > 0 then gets "blobs": its listed blobs, each
 * {mass, cx, cy (2 decimals), bbox, perimeter, orientation, major, minor};
 * objects with blobs 0 have
 * no "blobs" key. With r->calibrated each centroid (object and blob) is
 * followed by wx, wy: its world point (r->world_decimals decimals), both
 * null when cx is or the point has none, and each minor by wheading (2
 * decimals, null without one). An object with has_instances gets
 * "instances": each {id, mass, cx, cy (2 decimals), bbox, perimeter,
 * orientation, major, minor, vx, vy (3 decimals), vtheta (2, null without a
 * frame rate), age, lost, via ("roi"/"full")} (calibrated: wx, wy, wvx, wvy,
 * wheading after vtheta); a lost one has mass 0, its
 * predicted cx, cy, and bbox, perimeter and via null. With meta.pass the
 * header also has "pass", "rounds" and "upload_bytes". With r->n_patterns
 * > 0, "markers" follows "objects": each {pattern (its name), id, cx, cy,
 * heading (2 decimals), confidence (3), track_id, lost(, wx, wy, wheading
 * when calibrated, null without a world point)}. Only formats: every
 * value is r's (protocol/result.h). */
int trk_msg_frame(struct trk_buf *b, const struct trk_frame_result *r);

/* Appends one element of the frame's objects[]: object id's entry as
 * trk_msg_frame writes it. */
int trk_msg_frame_object(struct trk_buf *b, const struct trk_frame_result *r, int id);

/* Appends the MQTT per-object message (PROTOCOL.md section 9):
 * {"type":"object","camera":camera,"seq","t_capture","wall_ms",...} and
 * then object id's fields as trk_msg_frame_object writes them. */
int trk_msg_object_result(struct trk_buf *b, const struct trk_frame_result *r, const char *camera,
                          int id);

/* Appends one element of the frame's markers[]: marker k's entry as
 * trk_msg_frame writes it (TRK_EINVAL past the list). */
int trk_msg_frame_marker(struct trk_buf *b, const struct trk_frame_result *r, size_t k);

/* Appends one part of a frame as a UDP datagram carries it (PROTOCOL.md,
 * "UDP datagrams"): the frame message with "camera" and "part" (1..parts)
 * of "parts" after seq, and only units first..first+count-1: objects
 * 0..n-1 (keeping their ids), then markers (unit n + k is marker k; the
 * "markers" key only when r's set has patterns). With part = parts = 1,
 * first = 0 and count = n + n_markers it is the whole frame message plus
 * camera, part and parts. */
int trk_msg_frame_part(struct trk_buf *b, const struct trk_frame_result *r, const char *camera,
                       int part, int parts, int first, int count);

/* ------------------------------------------------- server -> client: hello */

/* Preview stream settings announced in the hello. */
struct trk_preview_info {
    bool enabled;      /* the server produces preview JPEGs at all          */
    int width, height; /* preview size in pixels                            */
    double fps;        /* most previews per second                          */
    int quality;       /* JPEG quality 1..100                               */
};

/* The preview size for frames of width x height when previews are at most
 * max_width wide: the frame's aspect, never wider than the frame, never
 * 0 x 0 (a 16384x16 frame still gives a row). Zero when the frame size is
 * not known. The one rule the hello and the encoder share. */
void trk_msg_preview_size(int width, int height, int max_width, int *pw, int *ph);

/* Everything the hello message describes. colors is optional: NULL or a
 * NULL entry derives a display colour from the centre of the object's box. */
struct trk_hello_info {
    const char *version; /* trackd version, e.g. "0.1.0" -> "trackd 0.1.0" */
    const char *backend; /* trk_backend_name()                              */
    const char *source;  /* human description of the source                 */
    int width, height;   /* frame size in pixels (0 = not known yet)         */
    double fps;          /* nominal source rate, 0 = unknown                 */
    struct trk_preview_info preview;
    const struct trk_object_def *defs;
    int n_objects;
    const char *const *colors; /* "#rrggbb" per object, optional             */
    /* Control messages need the control token on this server (ws.h
     * control_token set): a page asks for it before offering edits. */
    bool control_auth;
    /* The set's calibration: "calibration" is it or null (NULL, or off). */
    const struct trk_calib *calib;
    const char *camera; /* the camera's name (--name), NULL = omitted         */
    /* The set's patterns ("patterns", always sent: [] without), their
     * colours indices into defs. */
    const struct trk_pattern *patterns;
    int n_patterns;
};

/* Appends the "hello" message (sent first on every connection). */
int trk_msg_hello(struct trk_buf *b, const struct trk_hello_info *h);

/* Appends {"type":"objects","objects":[...]}: the current object set, same
 * object encoding as the hello; broadcast after the set changes. */
int trk_msg_objects(struct trk_buf *b, const struct trk_object_def *defs, int n,
                    const char *const *colors);

/* Appends {"type":"objects"[,"id":id],"objects":[...],"calibration":C}:
 * the objects message and get_objects reply of a set with its calibration
 * (C as trk_msg_calibration). The daemon sends this form; trk_msg_objects
 * and trk_msg_objects_reply leave the key out. */
int trk_msg_objects_calib(struct trk_buf *b, const char *id_json, const struct trk_object_def *defs,
                          int n, const char *const *colors, const struct trk_calib *calib);

/* trk_msg_objects_calib with "patterns":[...] after the calibration (as in
 * the hello; PROTOCOL.md section 3): the daemon's objects message. */
int trk_msg_objects_patterns(struct trk_buf *b, const char *id_json,
                             const struct trk_object_def *defs, int n, const char *const *colors,
                             const struct trk_calib *calib, const struct trk_pattern *patterns,
                             int n_patterns);

/* trk_msg_objects_calib without an id and with "camera":camera after the
 * type: the retained MQTT config message (PROTOCOL.md section 9). */
int trk_msg_objects_camera(struct trk_buf *b, const char *camera, const struct trk_object_def *defs,
                           int n, const char *const *colors, const struct trk_calib *calib);

/* Appends the calibration value: null when c is NULL or off, else
 * {"unit","points"[,"camera_matrix"][,"distortion"],"homography","rms",
 * "decimals"}: the values as the objects file has them (each number with
 * the fewest digits that read back the same, so sending them back in
 * set_objects changes nothing), then the solved homography (row-major,
 * undistorted pixel -> world), the fit's rms and wx, wy's decimals. */
int trk_msg_calibration(struct trk_buf *b, const struct trk_calib *c);

/* Appends one object description {"id","name","space","lo","hi",
 * "min_mass","blobs","min_area","connectivity","color"} (the element of
 * hello.objects; min_area 0 is sent as 1, connectivity 0 as 8, the
 * backend's reading). color NULL derives one. */
int trk_msg_object(struct trk_buf *b, int id, const struct trk_object_def *def, const char *color);

/* Writes "#rrggbb" (8 bytes with the NUL) of def's default display colour,
 * trk_object_display_rgb (gpu/color.h: the one rule the objects file uses
 * too). A display colour, not a tracking rule. */
void trk_msg_object_color(const struct trk_object_def *def, char out[8]);

/* ------------------------------------------- server -> client: stats etc. */

/* The 1 Hz statistics. Latency fields are medians over the last interval in
 * ms; a negative value means "not measured" and is sent as null. */
struct trk_stats_info {
    double uptime_s;
    double fps;       /* frames processed per second, last interval      */
    uint64_t frames;  /* frames processed since start                    */
    uint64_t drops;   /* frames captured but never processed (stale)     */
    uint64_t skipped; /* frames the backend rejected (not in frames)    */
    int clients;      /* connected WebSocket clients                     */
    long rss_kb;      /* resident set size, < 0 = unknown                */
    double queue_ms, upload_ms, kernel_ms, process_ms; /* medians            */
    double send_ms;                         /* results ready -> handed to the WebSocket thread */
    double total_ms;                        /* capture -> handed to the WebSocket thread       */
    uint64_t ws_sent, ws_dropped, ws_bytes; /* trk_ws_get_stats totals       */
    /* Result messages' hand-off -> written to a client's socket over the
     * interval (trk_ws_write_delays): median, 99th percentile, max; < 0 =
     * none written (null). */
    double write_p50_ms, write_p99_ms, write_max_ms;
    /* The MQTT sink's totals (daemon/out/mqtt.h), sent as "mqtt" when has_mqtt. */
    bool has_mqtt, mqtt_connected;
    uint64_t mqtt_published, mqtt_dropped, mqtt_connects;
    /* The tracking mode ("roi" or "full"; NULL = omitted with the next) and
     * the median host-to-device bytes per frame (< 0 = null). */
    const char *mode;
    double upload_bytes;
    /* Frames since start read from pinned host memory (sent with mode). */
    uint64_t pinned_frames;
    /* With mode: frames since start that took a round over grown regions,
     * and of those a whole-frame round (daemon/tracker.h, "reruns"). */
    uint64_t grown_frames, whole_frames;
    /* The focus check (daemon/ops/focus.h), sent as "focus" when focus_on:
     * its state name, the newest sharpness and the baseline (< 0 = null),
     * and the warning fraction. */
    bool focus_on;
    const char *focus_state;
    double focus_sharpness, focus_baseline, focus_warn;
};

/* Appends the "stats" message. */
int trk_msg_stats(struct trk_buf *b, const struct trk_stats_info *s);

/* Appends {"type":"status","source":state,"message":msg}. state is one of
 * "ok", "lost", "eof", "error" (see PROTOCOL.md); message may be NULL. */
int trk_msg_status(struct trk_buf *b, const char *state, const char *message);
/* The same with the source's frame size appended ("width","height"): sent
 * when the size changes mid-stream (PROTOCOL.md), so clients rescale. */
int trk_msg_status_size(struct trk_buf *b, const char *state, const char *message, int width,
                        int height);

/* Appends the retained MQTT status (PROTOCOL.md section 9):
 * {"type":"status","camera":camera,"online":online,"server":server,
 * "source":state,"message":message}; state and message may be NULL (null). */
int trk_msg_camera_status(struct trk_buf *b, const char *camera, bool online, const char *server,
                          const char *state, const char *message);

/* Appends {"type":"error","code":code,"message":message[,"id":id]}. id_json
 * is the request's id as JSON text (from trk_msg_parse_client or
 * trk_msg_request_id), NULL or "" when the request had none. */
int trk_msg_error(struct trk_buf *b, const char *code, const char *message, const char *id_json);

/* Appends {"type":"pong"[,"id":id],"wall_ms":now}. */
int trk_msg_pong(struct trk_buf *b, const char *id_json, double wall_ms);

/* The server's times of one clock-sync exchange (PROTOCOL.md, "sync"):
 * when the request was received and when the reply is built, on the wall
 * clock (Unix epoch ms) and on CLOCK_MONOTONIC (s: t_capture's clock). */
struct trk_sync_times {
    double rx_wall_ms, rx_mono, tx_wall_ms, tx_mono;
};

/* Appends {"type":"sync"[,"id":id][,"t0":t0],"rx_wall_ms",...,"tx_mono",
 * "capture_clock":"mono"}. t0_json is the request's t0 as JSON text (""
 * when it had none), echoed so the client needs to keep no state. The
 * same reply on the WebSocket and on MQTT (section 9). */
int trk_msg_sync(struct trk_buf *b, const char *id_json, const char *t0_json,
                 const struct trk_sync_times *t);

/* Fills the tx times of t now: call right before the reply goes out. */
void trk_msg_sync_stamp_tx(struct trk_sync_times *t);

/* Appends {"type":"ack","request":request[,"id":id]} and leaves the object
 * OPEN when more is true (the caller appends ",\"field\":..." and then "}"),
 * else closes it. */
int trk_msg_ack(struct trk_buf *b, const char *request, const char *id_json, bool more);

/* The replies to the daemon's control messages (PROTOCOL.md section 5).
 * id_json as for trk_msg_error. */

/* {"type":"objects"[,"id":id],"objects":[...]}: the answer to get_objects
 * (trk_msg_objects plus the request's id). */
int trk_msg_objects_reply(struct trk_buf *b, const char *id_json, const struct trk_object_def *defs,
                          int n, const char *const *colors);

/* {"type":"ack","request":request[,"id":id],key:value}: the ack carrying one
 * integer ("count" for set/reload_objects, "object_id" for edits). */
int trk_msg_ack_int(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                    int64_t value);

/* {"type":"ack","request":request[,"id":id],key:"value"}: the ack carrying
 * one string ("dir" for save_rewind). */
int trk_msg_ack_str(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                    const char *value);

/* {"type":"ack","request":"save_objects"[,"id":id],"path":path,"count":n}
 * plus, for a save of one part (part non-NULL: "calibration", "camera"),
 * "part":part,"whole":whole (whole: no file existed, the whole set was
 * written). n: the objects in the file written. */
int trk_msg_ack_saved(struct trk_buf *b, const char *id_json, const char *path, int count,
                      const char *part, bool whole);

/* A client's own preview view, for its preview ack. */
struct trk_msg_view {
    const char *name;                 /* mask: this object, or NULL        */
    const struct trk_object_def *box; /* mask: this range (space, lo, hi)  */
    long long hold;                   /* the frame it holds, -1 none (null),
                                       * -2 not written                      */
    bool edges;                       /* the edges view                     */
    bool carve;                       /* fit "carve" to fit_w:fit_h, else "scale" */
    int fit_w, fit_h;
};

/* trk_msg_ack_preview with the view: "mask" the name, the range
 * {"space","lo","hi"} or null, then "hold" (seq or null), "edges", "fit"
 * and, with "carve", "size" [W, H]. */
int trk_msg_ack_preview_view(struct trk_buf *b, const char *id_json, int width, double fps,
                             const struct trk_msg_view *v);

/* {"type":"ack","request":"focus"[,"id":id],"baseline":b} (3 decimals). */
int trk_msg_ack_focus(struct trk_buf *b, const char *id_json, double baseline);

/* {"type":"ack","request":"preview"[,"id":id],"width":w,"fps":f,"mask":m}
 * (fps with 3 decimals; mask the object's name or NULL for null). */
int trk_msg_ack_preview(struct trk_buf *b, const char *id_json, int width, double fps,
                        const char *mask);

/* What a sample reply says; arrays indexed [enum trk_space][channel]. */
struct trk_sample_info {
    const char *id_json;          /* the request's id, NULL or "" for none             */
    int x, y;                     /* the point asked for                               */
    int radius;                   /* as asked; < 0 (a rectangle request) = omitted     */
    int rect[4];                  /* x0, y0, x1, y1 read, inclusive                    */
    uint64_t seq;                 /* the frame read                                    */
    long n;                       /* pixels read                                       */
    int mean[TRK_SPACE_COUNT][3]; /* channel means per space                     */
    int lo[TRK_SPACE_COUNT][3], hi[TRK_SPACE_COUNT][3]; /* suggested box per space */
    bool has_share;                /* share is set ("frame_share" is written)   */
    double share[TRK_SPACE_COUNT]; /* per space: the frame's pixels the box matches */
};

/* Appends {"type":"sample",...} (PROTOCOL.md section 5): x, y, radius,
 * rect, seq, n, the means per space ("rgb", "hsv", "ycbcr", "lab", "rg"),
 * "suggest" (the hsv box),
 * "suggest_all" (one box per space) and, with has_share, "frame_share"
 * (per space, 3 decimals). */
int trk_msg_sample(struct trk_buf *b, const struct trk_sample_info *s);

/* ---------------------------------------------------- preview (binary) */

/* Size of the binary preview header. Layout (little-endian):
 *   0..3   "TRKP"
 *   4..11  frame seq (uint64)
 *   12..13 preview width, 14..15 preview height (uint16)
 *   16..17 frame width,   18..19 frame height   (uint16)
 *   20..   one complete JPEG (SOI .. EOI) */
#define TRK_PREVIEW_HDR 20

/* One camera control in a "camera" message (PROTOCOL.md, get_camera). */
struct trk_cam_ctrl_info {
    const char *name;  /* v4l2-ctl style, what set_camera takes              */
    const char *label; /* the driver's own name                              */
    const char *group; /* "exposure", "gain" or "white_balance"              */
    bool is_auto;      /* the group's automatic mode switch                  */
    const char *kind;  /* "int", "bool" or "menu"                            */
    int64_t min, max, step, def, value;
    int64_t auto_value, manual_value; /* is_auto: the values meaning on / off */
    bool inactive;                    /* the driver ignores it now (auto on)  */
    bool fixed;                       /* set by --control: set_camera refuses */
    int n_menu;                       /* menu: its items                      */
    const int64_t *menu_values;
    const char *const *menu_names;
};

/* The source's camera controls; device NULL = none (reason says why). */
struct trk_camera_info {
    const char *device;
    const char *reason;
    int n;
    const struct trk_cam_ctrl_info *ctrls;
};

/* {"type":"camera"(,"id":..),"available":..,"device":..,"reason":..,
 * "controls":[...]}: the reply to get_camera (id_json) and, without an id,
 * the broadcast after a change. */
int trk_msg_camera(struct trk_buf *b, const char *id_json, const struct trk_camera_info *c);

/* The set_camera ack: {"type":"ack","request":"set_camera",...,"name":..,"value":..}. */
int trk_msg_ack_camera(struct trk_buf *b, const char *id_json, const char *name, int64_t value);

/* Writes the 20-byte header into out. Sizes above 65535 are clamped. */
void trk_msg_preview_header(uint8_t out[TRK_PREVIEW_HDR], uint64_t seq, int preview_w,
                            int preview_h, int frame_w, int frame_h);

/* ---------------------------------------------- client -> server: parsing */

/* Error codes of the client message parser (also the "code" strings). */
enum trk_msg_err {
    TRK_MSG_OK = 0,
    TRK_MSG_BAD_JSON = -1,                  /* "bad_json": not valid JSON / not UTF-8      */
    TRK_MSG_NOT_OBJECT = -2,                /* "not_object": valid JSON, not an object     */
    TRK_MSG_BAD_TYPE = -3,                  /* "bad_type": "type" missing or not a string  */
    TRK_MSG_UNKNOWN_TYPE = -4,              /* "unknown_type": type nobody handles         */
    TRK_MSG_TOO_LARGE = -5,                 /* "too_large": over TRK_MSG_MAX_CLIENT bytes  */
    TRK_MSG_BAD_FIELD = -6,                 /* "bad_field": a field has the wrong type     */
    TRK_MSG_BINARY = -7,                    /* "binary": binary frame (only text accepted) */
    TRK_MSG_UNSUPPORTED = -8,               /* "unsupported": a control type this server
                                             * has no handler for (no on_message)       */
    TRK_MSG_UNAUTHORIZED = -9,              /* "unauthorized": control message without the
                                             * control token (ws.h control_token)      */
    TRK_MSG_ERR_MIN = TRK_MSG_UNAUTHORIZED, /* the parser's lowest          */
    /* The daemon's answers to control messages it cannot carry out
     * (PROTOCOL.md section 6); never returned by the parser. */
    TRK_MSG_INVALID_OBJECT = -10,   /* "invalid_object"                    */
    TRK_MSG_DUPLICATE_NAME = -11,   /* "duplicate_name"                    */
    TRK_MSG_TOO_MANY_OBJECTS = -12, /* "too_many_objects"                  */
    TRK_MSG_NOT_FOUND = -13,        /* "not_found"                         */
    TRK_MSG_OUT_OF_RANGE = -14,     /* "out_of_range"                      */
    TRK_MSG_BUSY = -15,             /* "busy"                              */
    TRK_MSG_NO_FILE = -16,          /* "no_file"                           */
    TRK_MSG_IO_ERROR = -17,         /* "io_error"                          */
    TRK_MSG_NO_CAMERA = -18,        /* "no_camera": the source has no controls */
    TRK_MSG_FIXED = -19,            /* "fixed": the control is a --control one */
};

/* The "code" string of a trk_msg_err ("bad_json", ...). */
const char *trk_msg_err_code(int err);

enum trk_cmsg_kind {
    TRK_CMSG_PING = 0,  /* handled by the server itself: pong               */
    TRK_CMSG_SUBSCRIBE, /* handled by the server itself: preview on/off     */
    TRK_CMSG_SYNC,      /* handled by the server itself: clock sync reply   */
    TRK_CMSG_CONTROL,   /* a known control type: forwarded to the daemon    */
};

/* A parsed client message. */
struct trk_cmsg {
    enum trk_cmsg_kind kind;
    char type[32];                   /* the "type" string (truncated to fit)       */
    char id[TRK_MSG_ID_MAX * 6 + 3]; /* "id" as JSON text, "" when absent or
                                      * not echoable (see trk_msg_request_id)       */
    int preview;                     /* subscribe: 1 on, 0 off, -1 not given        */
    int predict;                     /* subscribe: 1 "send" or a time, 0 false, -1 not given */
    double predict_ahead;            /* subscribe: s after the send ("send": 0)      */
    char t0[48]; /* sync: the client's "t0" number as JSON text, "" when absent */
};

/* The control message types forwarded to the daemon (PROTOCOL.md section 5,
 * "Forwarded to the daemon"): the one list of them. The daemon maps each to
 * a handler (daemon/control/control.c); "auth" is answered by the server (ws.h). */
enum trk_ctl_type {
    TRK_CTL_SET_OBJECTS = 0,
    TRK_CTL_ADD_OBJECT,
    TRK_CTL_UPDATE_OBJECT,
    TRK_CTL_RENAME_OBJECT,
    TRK_CTL_REMOVE_OBJECT,
    TRK_CTL_GET_OBJECTS,
    TRK_CTL_SAVE_OBJECTS,
    TRK_CTL_RELOAD_OBJECTS,
    TRK_CTL_SAMPLE,
    TRK_CTL_PREVIEW,
    TRK_CTL_AUTH,
    TRK_CTL_GET_CAMERA,
    TRK_CTL_SET_CAMERA,
    TRK_CTL_SAVE_REWIND,
    TRK_CTL_RESET_RANGE,
    TRK_CTL_KEEP_RANGE,
    TRK_CTL_FOCUS,
    TRK_CTL_SET_PATTERN,
    TRK_CTL_REPLAY_PAUSE, /* the replay's transport (--replay): pause, play, */
    TRK_CTL_REPLAY_PLAY,  /* step, seek and re-run a range                   */
    TRK_CTL_REPLAY_STEP,
    TRK_CTL_REPLAY_SEEK,
    TRK_CTL_REPLAY_RUN,
    TRK_CTL_LIST_BUNDLES, /* the bundles a live trackd offers the page */
    TRK_CTL_PAINT_CLASS,
    TRK_CTL_CLEAR_CLASS,
    TRK_CTL_COUNT
};

/* The wire names, indexed by enum trk_ctl_type, NULL-terminated: the list
 * forwarded when trk_ws_cfg names none. */
extern const char *const trk_msg_control_types[TRK_CTL_COUNT + 1];

/* The enum trk_ctl_type of a wire name, or -1 when it is not one. */
int trk_msg_control_type(const char *type);

/* Parses one client text message. control_types: NULL-terminated list of the
 * types forwarded to the daemon (NULL = trk_msg_control_types; an empty list
 * = none). Returns TRK_MSG_OK with *out filled, or a TRK_MSG_* error; on error
 * out->id still holds the request's id when one could be read, and err_msg
 * (if non-NULL) receives a human explanation. Never reads past len; data
 * need not be NUL-terminated. */
int trk_msg_parse_client(const char *data, size_t len, const char *const *control_types,
                         struct trk_cmsg *out, char *err_msg, size_t err_len);

/* Extracts the "id" of a JSON request as JSON text into out (cap bytes):
 * numbers as written, strings up to TRK_MSG_ID_MAX bytes re-escaped; other
 * types, absent ids or bad JSON give "". Returns the length written. For the
 * daemon's replies to control messages. */
size_t trk_msg_request_id(const char *data, size_t len, char *out, size_t cap);

/* The most a subscribe's "predict" time may ask for (s after the send). */
#define TRK_MSG_PREDICT_MAX_S 1.0

/* The subscribe ack: {"type":"ack","request":"subscribe"[,"id":id],
 * "preview":bool[,"predict":"send"|S|false]}: "send" when predict > 0 and
 * ahead is 0, ahead otherwise; predict < 0 leaves it out (the request did
 * not ask). */
int trk_msg_ack_subscribe(struct trk_buf *b, const char *id_json, bool preview, int predict,
                          double ahead);

/* {"type":"ack","request":request[,"id":id],key:true|false}: the acks the
 * WebSocket server gives itself ("ok" for auth, "preview" for subscribe). */
int trk_msg_ack_bool(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                     bool value);

#ifdef __cplusplus
}
#endif
#endif
