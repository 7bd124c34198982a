/* trackd's exit status: the sysexits.h values it uses, one name each. */
#ifndef TRK_DAEMON_EXIT_H
#define TRK_DAEMON_EXIT_H

enum trk_exit {
    TRK_EX_OK = 0,
    TRK_EX_DIFFERS = 1,      /* --verify: the replay's results differ             */
    TRK_EX_USAGE = 64,       /* bad command line                                  */
    TRK_EX_DATAERR = 65,     /* a --replay bundle is damaged                      */
    TRK_EX_NOINPUT = 66,     /* the source, --web-root or --output cannot be used */
    TRK_EX_UNAVAILABLE = 69, /* the backend or the web server cannot start        */
    TRK_EX_SOFTWARE = 70,    /* internal error, or the pipeline failed            */
    TRK_EX_IOERR = 74,       /* results were lost writing --output                */
    TRK_EX_CONFIG = 78,      /* the objects file given at start is invalid        */
};

#endif
