#include <string.h>
#include "core/am_header.h"

static void cohort_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t cohort_get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

/* Layout: magic(1) kind(1) flags(1) pad(1) seq(4) gid(8) src(4) tag(4) fp(4) wsrc(4). */
void cohort_am_hdr_encode(const cohort_am_hdr_t *hdr, uint8_t *buf)
{
    memset(buf, 0, COHORT_AM_HDR_BYTES);
    buf[0] = COHORT_AM_MAGIC;
    buf[1] = hdr->kind;
    buf[2] = hdr->flags;
    cohort_put_le(buf + 4, hdr->seq, 4);
    cohort_put_le(buf + 8, hdr->gid, 8);
    cohort_put_le(buf + 16, (uint32_t)hdr->src, 4);
    cohort_put_le(buf + 20, (uint32_t)hdr->tag, 4);
    cohort_put_le(buf + 24, hdr->fp, 4);
    cohort_put_le(buf + 28, (uint32_t)hdr->wsrc, 4);
}

int cohort_am_hdr_decode(const void *buf, size_t len, cohort_am_hdr_t *hdr)
{
    const uint8_t *p = buf;

    if (buf == NULL || len != COHORT_AM_HDR_BYTES || p[0] != COHORT_AM_MAGIC ||
        p[1] < COHORT_MSG_P2P || p[1] > COHORT_MSG_CMA_DATA || (p[2] & ~COHORT_HDR_CMA) != 0 ||
        p[3] != 0 || (p[2] != 0 && p[1] != COHORT_MSG_P2P && p[1] != COHORT_MSG_COLL)) {
        return -1;
    }
    hdr->kind = p[1];
    hdr->flags = p[2];
    hdr->seq = (uint32_t)cohort_get_le(p + 4, 4);
    hdr->gid = cohort_get_le(p + 8, 8);
    hdr->src = (int32_t)(uint32_t)cohort_get_le(p + 16, 4);
    hdr->tag = (int32_t)(uint32_t)cohort_get_le(p + 20, 4);
    hdr->fp = (uint32_t)cohort_get_le(p + 24, 4);
    hdr->wsrc = (int32_t)(uint32_t)cohort_get_le(p + 28, 4);
    /* No rank is negative; a message that says otherwise was not written by cohort. */
    if (hdr->src < 0 || hdr->wsrc < 0) {
        return -1;
    }
    return 0;
}
