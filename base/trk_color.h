/* The text form of a colour: "#rrggbb", lower-case hex, as the objects
 * file, the wire messages and MQTT all write it.
 *
 * Plain C, usable from .cu files. */
#ifndef TRK_BASE_COLOR_H
#define TRK_BASE_COLOR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of "#rrggbb" with its terminator. */
#define TRK_COLOR_HEX_SIZE 8

/* Writes rgb as "#rrggbb" (NUL-terminated) into out. */
void trk_color_hex(const uint8_t rgb[3], char out[TRK_COLOR_HEX_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
