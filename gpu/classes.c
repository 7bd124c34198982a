/* Painted colour classes (backend.h): the cell table the fast CPU and CUDA
 * backends classify with, one lookup per pixel whatever the number of class
 * objects. */
#include "color.h"

#include <string.h>

int trk_class_cells(const struct trk_object_def *objs, int n, uint16_t *cells, int *ord)
{
    int k = 0;
    memset(cells, 0, TRK_CLASS_CELLS * sizeof(*cells));
    for (int i = 0; i < n; i++) {
        ord[i] = -1;
        if (objs[i].space != TRK_SPACE_CLASS) continue;
        if (k == TRK_MAX_CLASSES || !objs[i].cls) return TRK_EINVAL;
        const uint8_t *tab = objs[i].cls;
        for (int c = 0; c < TRK_CLASS_CELLS; c += 8) {
            unsigned byte = tab[c >> 3];
            for (; byte; byte &= byte - 1)
                cells[c + __builtin_ctz(byte)] |= (uint16_t)(1u << k);
        }
        ord[i] = k++;
    }
    return k;
}
