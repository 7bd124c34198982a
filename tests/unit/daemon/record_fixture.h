/* A recorder's configuration as the recording tests and measurements
 * start one (test_record.c, test_record_copy.c,
 * tests/measure/record_copy_cost.c). Header-only; no check.h, so a
 * measurement can use it. */
#ifndef TRK_TEST_RECORD_FIXTURE_H
#define TRK_TEST_RECORD_FIXTURE_H

#include <stdbool.h>
#include <string.h>

#include "out/record.h"

/* A recorder's configuration with the command line its manifest names;
 * argv must live as long as the recorder (the manifest is written again
 * at its close), hence in here beside cfg. */
struct record_fixture {
    char *argv[5];
    struct trk_record_cfg cfg;
};

/* fx for a recording into dir with storage "raw", "ffv1" or "copy" (the
 * manifest's command line says so), from a source of kind and desc at fps.
 * wait_when_full: a busy machine delays frames instead of dropping them,
 * so every frame recorded is there to compare. The caller sets the rest
 * (size, input) in fx->cfg. */
static inline void record_fixture_init(struct record_fixture *fx, const char *dir,
                                       const char *storage, const char *kind, const char *desc,
                                       double fps)
{
    const bool raw = !strcmp(storage, "raw");
    fx->argv[0] = "trackd";
    fx->argv[1] = "--record";
    fx->argv[2] = (char *)dir;
    fx->argv[3] = "--record-storage";
    fx->argv[4] = (char *)storage;
    fx->cfg = (struct trk_record_cfg){ .dir = dir,
                                       .argc = raw ? 3 : 5,
                                       .argv = fx->argv,
                                       .version = "test",
                                       .source_kind = kind,
                                       .source_desc = desc,
                                       .fps = fps,
                                       .ffv1 = !strcmp(storage, "ffv1"),
                                       .copy = !strcmp(storage, "copy"),
                                       .wait_when_full = true };
}

#endif
