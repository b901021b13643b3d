#include <endian.h>
#include <string.h>
#include "core/am_header.h"

/* Little-endian on the wire whatever the host: on x86 and arm64 these are plain moves, which
 * matters on the small-message path (every message is decoded once, encoded once). */
static void cohort_put_le32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static void cohort_put_le64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static uint32_t cohort_get_le32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return le32toh(v);
}

static uint64_t cohort_get_le64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return le64toh(v);
}

/* Layout: magic(1) kind(1) flags(1) pad(1) seq(4) gid(8) src(4) tag(4) fingerprint, status or
 * left (4: one word, am_header.h) wsrc(4). */
void cohort_am_hdr_encode(const cohort_am_hdr_t *hdr, uint8_t *buf)
{
    memset(buf, 0, COHORT_AM_HDR_BYTES);
    buf[0] = COHORT_AM_MAGIC;
    buf[1] = hdr->kind;
    buf[2] = hdr->flags;
    cohort_put_le32(buf + 4, hdr->seq);
    cohort_put_le64(buf + 8, hdr->gid);
    cohort_put_le32(buf + 16, (uint32_t)hdr->src);
    cohort_put_le32(buf + 20, (uint32_t)hdr->tag);
    cohort_put_le32(buf + 24, hdr->fingerprint); /* status and left are the same word */
    cohort_put_le32(buf + 28, (uint32_t)hdr->wsrc);
}

int cohort_am_hdr_decode(const void *buf, size_t len, cohort_am_hdr_t *hdr)
{
    const uint8_t *p = buf;

    if (buf == NULL || len != COHORT_AM_HDR_BYTES || p[0] != COHORT_AM_MAGIC ||
        p[1] < COHORT_MSG_P2P || p[1] > COHORT_MSG_CANCEL ||
        (p[2] & ~COHORT_HDR_SINGLE_COPY) != 0 || p[3] != 0 ||
        (p[2] != 0 && p[1] != COHORT_MSG_P2P && p[1] != COHORT_MSG_COLL)) {
        return -1;
    }
    hdr->kind = p[1];
    hdr->flags = p[2];
    hdr->seq = cohort_get_le32(p + 4);
    hdr->gid = cohort_get_le64(p + 8);
    hdr->src = (int32_t)cohort_get_le32(p + 16);
    hdr->tag = (int32_t)cohort_get_le32(p + 20);
    hdr->fingerprint = cohort_get_le32(p + 24);
    hdr->wsrc = (int32_t)cohort_get_le32(p + 28);
    /* No rank is negative; a message that says otherwise was not written by cohort. */
    if (hdr->src < 0 || hdr->wsrc < 0) {
        return -1;
    }
    return 0;
}
