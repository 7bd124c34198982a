/* The MQTT publisher's frame queue is bounded in bytes as well as in frames
 * (daemon/out/mqtt.h, TRK_MQTT_QUEUE_BYTES; issue 25, item 5): with no
 * publisher thread nothing leaves the queue (nor ages out of it), so what
 * stays and what is counted as dropped, all under the "queue" reason,
 * follow from the bounds alone. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "frame.h" /* trk_now */
#include "out/mqtt.h"

int main(void)
{
    struct trk_mqtt_cfg cfg = { .url = "mqtt://127.0.0.1:1/t",
                                .camera = "cam",
                                .server = "trackd test" };
    struct trk_mqtt *m = NULL;
    CHECK(trk_mqtt_create(&cfg, &m) == 0 && m);
    size_t big = 300 * 1000;
    char *msg = malloc(big);
    CHECK(msg != NULL);
    if (!m || !msg) return 1;
    memset(msg, 'x', big);
    struct trk_mqtt_stats st;
    /* Large frames: as many as fit in the bytes, the oldest dropped. */
    for (int i = 0; i < TRK_MQTT_QUEUE_LEN; i++)
        trk_mqtt_frame(m, msg, big, NULL, 0, trk_now());
    trk_mqtt_get_stats(m, &st);
    uint64_t fit = TRK_MQTT_QUEUE_BYTES / big;
    CHECKF(st.queue_len == fit, "%llu queued, %llu fit", (unsigned long long)st.queue_len,
           (unsigned long long)fit);
    CHECK(st.dropped == TRK_MQTT_QUEUE_LEN - fit);
    /* A frame over the whole budget still goes in, alone: the newest stays. */
    char *huge = malloc(TRK_MQTT_QUEUE_BYTES + 1);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, 'y', TRK_MQTT_QUEUE_BYTES + 1);
        trk_mqtt_frame(m, huge, TRK_MQTT_QUEUE_BYTES + 1, NULL, 0, trk_now());
        trk_mqtt_get_stats(m, &st);
        CHECK(st.queue_len == 1);
        CHECK(st.dropped == TRK_MQTT_QUEUE_LEN);
        free(huge);
    }
    /* Small frames: the frame count bounds them. */
    for (int i = 0; i < 2 * TRK_MQTT_QUEUE_LEN; i++)
        trk_mqtt_frame(m, msg, 100, NULL, 0, trk_now());
    trk_mqtt_get_stats(m, &st);
    CHECK(st.queue_len == TRK_MQTT_QUEUE_LEN);
    CHECK(st.dropped == 2 * TRK_MQTT_QUEUE_LEN + 1);
    CHECK(st.drops[TRK_MQTT_DROP_QUEUE] == st.dropped);
    free(msg);
    trk_mqtt_destroy(&m);
    CHECK(m == NULL);
    return check_failures ? 1 : 0;
}
