/* The objects of the daemon's built-in demo scene, kept in this one place so
 * the scene, the tests and the docs agree. The scene draws balls in these
 * colours on a mid-gray textured background:
 *
 *   red (230,40,40)  green (40,200,60)   blue (40,80,230)   yellow (240,220,40)
 *   magenta (220,50,220)   cyan (40,210,220)   orange (250,140,30)
 *
 * Most are hsv boxes: the ball's hue (gpu/color.h trk_rgb_to_hsv) +-12
 * degrees, s >= 120 and v >= 100, which leaves out the gray background
 * (saturation near 0) and tolerates shading and sensor noise. red wraps
 * through hue 0. "blue" is a ycbcr box and "yellow" an rgb box so the demo
 * exercises every space: the blue box holds the ball's Y, Cb, Cr under
 * BT.601 and BT.709, full and limited range (Y 82..89, Cb 198..210,
 * Cr 96..105), so it works whatever YUV the demo source produces.
 * tests/unit/config checks every ball matches only its own object and the
 * background none. */
#include "objects.h"

static const char demo_json[] =
    "{\"objects\": [\n"
    "  {\"name\": \"red\", \"space\": \"hsv\", \"lo\": [348, 120, 100], \"hi\": [12, 255, 255], "
    "\"min_mass\": 20, \"color\": \"#e62828\"},\n"
    "  {\"name\": \"green\", \"space\": \"hsv\", \"lo\": [116, 120, 100], \"hi\": [140, 255, 255], "
    "\"min_mass\": 20, \"color\": \"#28c83c\"},\n"
    "  {\"name\": \"blue\", \"space\": \"ycbcr\", \"lo\": [40, 180, 70], \"hi\": [140, 240, 120], "
    "\"min_mass\": 20, \"color\": \"#2850e6\"},\n"
    "  {\"name\": \"yellow\", \"space\": \"rgb\", \"lo\": [210, 190, 0], \"hi\": [255, 250, 80], "
    "\"min_mass\": 20, \"color\": \"#f0dc28\"},\n"
    "  {\"name\": \"magenta\", \"space\": \"hsv\", \"lo\": [288, 120, 100], \"hi\": [312, 255, "
    "255], "
    "\"min_mass\": 20, \"color\": \"#dc32dc\"},\n"
    "  {\"name\": \"cyan\", \"space\": \"hsv\", \"lo\": [171, 120, 100], \"hi\": [195, 255, 255], "
    "\"min_mass\": 20, \"color\": \"#28d2dc\"},\n"
    "  {\"name\": \"orange\", \"space\": \"hsv\", \"lo\": [18, 120, 100], \"hi\": [42, 255, 255], "
    "\"min_mass\": 20, \"color\": \"#fa8c1e\"}\n"
    "]}\n";

const char *trk_objects_demo_json(void)
{
    return demo_json;
}
