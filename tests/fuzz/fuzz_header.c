/* libFuzzer: the active-message header decoder. Whatever the bytes, decode never reads past
 * them, and a header it accepts encodes back to bytes that decode to the same fields. */
#include <stdint.h>
#include <string.h>
#include "core/am_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cohort_am_hdr_t h, back;
    uint8_t buf[COHORT_AM_HDR_BYTES];

    if (cohort_am_hdr_decode(data, size, &h) != 0) {
        return 0;
    }
    cohort_am_hdr_encode(&h, buf);
    if (cohort_am_hdr_decode(buf, sizeof(buf), &back) != 0 || back.gid != h.gid ||
        back.seq != h.seq || back.src != h.src || back.wsrc != h.wsrc || back.tag != h.tag ||
        back.fingerprint != h.fingerprint || back.kind != h.kind || back.flags != h.flags || h.src < 0 ||
        h.wsrc < 0) {
        __builtin_trap();
    }
    return 0;
}
