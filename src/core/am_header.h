/* The fixed header of every cohort active message, and its wire encoding. */
#ifndef COHORT_AM_HEADER_H
#define COHORT_AM_HEADER_H

#include <stddef.h>
#include <stdint.h>

#define COHORT_AM_ID        17
#define COHORT_AM_HDR_BYTES 32
#define COHORT_AM_MAGIC     0xC0u /* first byte: catches a foreign or corrupted message */

typedef enum {
    COHORT_MSG_P2P = 1,     /* cohort_send/recv: matched by (src, tag), in sending order */
    COHORT_MSG_COLL = 2,    /* collective step: matched exactly by (src, seq, step) */
    COHORT_MSG_BYE = 3,     /* the sender finalizes: gid 0, src its world rank, nothing after */
    COHORT_MSG_REVOKE = 4,  /* gid is revoked: tag the failed world rank (-1: none), status
                               why, seq the group rank that started the notification tree */
    COHORT_MSG_SINGLE_COPY_ACK = 5, /* single copy: gid the sender's token, status how the read
                               went (0: read), seq the receiver's token when it asks for the
                               data instead */
    COHORT_MSG_SINGLE_COPY_DATA = 6, /* single copy refused: the data, gid the receiver's token */
    COHORT_MSG_CANCEL = 7    /* a point-to-point send was freed before it finished: gid, seq,
                                src, tag and wsrc are the cancelled message's; left 1 when
                                that message went out (the receiver drops it, stops reading it, or
                                lets a fetch already running end), 0 when it never did (this
                                one stands in for it, so the numbers stay in step) */
} cohort_msg_kind_t;

/* Header flags. */
/* the payload is a cohort_sc_desc_t, not the data (proto/single_copy.h) */
#define COHORT_HDR_SINGLE_COPY 0x1u

typedef struct {
    uint64_t gid;  /* group id, the same on every member */
    uint32_t seq;  /* P2P: message number from this source; COLL: collective number */
    int32_t src;   /* sender's rank in the group */
    int32_t tag;   /* P2P: user tag; COLL: algorithm step */
    /* One word on the wire, which means something else for each kind: */
    union {
        uint32_t fingerprint; /* COLL: of (collective, dtype, op, count, root); P2P: 0 */
        uint32_t status;      /* REVOKE, SINGLE_COPY_ACK: a cohort_status_t */
        uint32_t left;        /* CANCEL: 1 when the cancelled message went out */
    };
    int32_t wsrc;  /* sender's world rank: a message naming a group must come from its member */
    uint8_t kind;  /* cohort_msg_kind_t */
    uint8_t flags; /* COHORT_HDR_* */
} cohort_am_hdr_t;

/* Little-endian, fixed layout, so mixed builds agree. buf holds COHORT_AM_HDR_BYTES. */
void cohort_am_hdr_encode(const cohort_am_hdr_t *hdr, uint8_t *buf);
/* @return 0, or -1 when len is wrong, the magic is wrong or the kind is unknown. */
int cohort_am_hdr_decode(const void *buf, size_t len, cohort_am_hdr_t *hdr);

#endif
