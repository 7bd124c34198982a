/* trk_docgen: what the build writes from the daemon's own tables, so the
 * installed files cannot drift from the binary:
 *
 *   trk_docgen man OUT            the man page trackd.1 (cli.c's option table)
 *   trk_docgen demo-objects OUT   the demo scene's objects file (demo_objects.c)
 *
 * OUT is written whole or not at all (a temporary file renamed over it), so
 * a failed step never leaves a half page for make to take as up to date. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exit.h"
#include "objects.h"

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "man") && strcmp(argv[1], "demo-objects"))) {
        fprintf(stderr, "usage: trk_docgen man|demo-objects OUT\n");
        return TRK_EX_USAGE;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]) >= (int)sizeof(tmp)) {
        fprintf(stderr, "trk_docgen: %s: path too long\n", argv[2]);
        return TRK_EX_USAGE;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        return TRK_EX_IOERR;
    }
    if (!strcmp(argv[1], "man"))
        trk_cli_man(f);
    else
        fputs(trk_objects_demo_json(), f);
    if (ferror(f) | fclose(f) || rename(tmp, argv[2])) {
        perror(argv[2]);
        remove(tmp);
        return TRK_EX_IOERR;
    }
    return TRK_EX_OK;
}
