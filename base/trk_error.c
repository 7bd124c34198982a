#include "trk_error.h"

#include <string.h>

const char *trk_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case TRK_EINVAL: return "invalid argument";
    case TRK_ENOMEM: return "out of memory";
    case TRK_ENODEV: return "backend not available";
    case TRK_EBACKEND: return "backend failure";
    case TRK_ETOOBIG: return "frame larger than the backend was created for";
    default: return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
    }
}
