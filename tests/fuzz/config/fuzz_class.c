/* Fuzz target for the class file decoder (config/objects_classes.c,
 * trk_class_file_decode: the bytes of a FILE.lut beside an objects file).
 * Any input: decoded or refused with an offset inside the input (or its
 * end) and a message; a decoded table encodes back to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__, #c);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t bits[TRK_CLASS_BYTES], back[TRK_CLASS_FILE_BYTES];
    char msg[160] = "";
    size_t at = (size_t)-1;
    const int rc = trk_class_file_decode(data, size, bits, &at, msg, sizeof msg);
    if (rc == 0) {
        trk_class_file_encode(bits, back);
        FUZZ_ASSERT(size == TRK_CLASS_FILE_BYTES && !memcmp(back, data, size));
    } else {
        FUZZ_ASSERT(rc == TRK_EINVAL && at <= size && msg[0]);
    }
    return 0;
}
