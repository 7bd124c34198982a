/* Malformed-file corpus: loads bad/NAME.json and compares the formatted
 * error with the one line in bad/NAME.expect, byte for byte.
 *
 * Usage: test_config_bad_file NAME, run in tests/unit/config so the file
 * part of the message is "bad/NAME.json". One case per process, so ctest
 * reports each case on its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s NAME\n", argv[0]);
        return 2;
    }
    char json[512], expect_path[512], want[1024] = "", got[1024];
    snprintf(json, sizeof json, "bad/%s.json", argv[1]);
    snprintf(expect_path, sizeof expect_path, "bad/%s.expect", argv[1]);
    FILE *f = fopen(expect_path, "r");
    if (!f || !fgets(want, sizeof want, f)) {
        fprintf(stderr, "cannot read %s\n", expect_path);
        return 2;
    }
    fclose(f);
    want[strcspn(want, "\n")] = 0;

    struct trk_objects *o = malloc(sizeof *o);
    struct trk_config_error err;
    int rc = trk_objects_load_file(json, o, &err);
    free(o);
    if (rc == 0) {
        fprintf(stderr, "%s loaded without error; want\n  %s\n", json, want);
        return 1;
    }
    trk_config_error_format(&err, got, sizeof got);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "got\n  %s\nwant\n  %s\n", got, want);
        return 1;
    }
    printf("%s\n", got);
    return 0;
}
