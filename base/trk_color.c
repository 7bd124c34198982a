#include "trk_color.h"

#include <stdio.h>

void trk_color_hex(const uint8_t rgb[3], char out[TRK_COLOR_HEX_SIZE])
{
    snprintf(out, TRK_COLOR_HEX_SIZE, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}
