/* The error codes of trackd and their text: the ground floor every layer
 * (base/, gpu/, config/, protocol/, daemon/) builds on. Functions return 0,
 * a negative -errno or one of these; trk_strerror names either kind.
 *
 * Plain C, usable from .cu files. */
#ifndef TRK_BASE_ERROR_H
#define TRK_BASE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: negative, distinct from -errno values (which are > -4096). */
enum {
    TRK_EINVAL = -10001,   /* bad argument (format, size, pitch, object)   */
    TRK_ENOMEM = -10002,   /* host or device allocation failed             */
    TRK_ENODEV = -10003,   /* backend unavailable (no GPU, not compiled)   */
    TRK_EBACKEND = -10004, /* backend runtime failure (CUDA error, ...)    */
    TRK_ETOOBIG = -10005,  /* frame larger than the size given at create   */
};
/* Human text for a TRK_E* or -errno code. */
const char *trk_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
