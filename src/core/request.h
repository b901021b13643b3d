/* Requests, and the transfers (one message sent or received) they are made of. */
#ifndef COHORT_REQUEST_H
#define COHORT_REQUEST_H

#include <stdint.h>
#include "cohort.h"
#include "core/am_header.h"
#include "core/list.h"

typedef struct cohort_msg cohort_msg_t;

/* Where a transfer's buffer lives; detected per call by the layer that posts it (host until
 * the CUDA layer lands). */
typedef enum { COHORT_MEM_HOST = 0, COHORT_MEM_CUDA = 1 } cohort_mem_type_t;

typedef struct cohort_xfer {
    cohort_list_t link;    /* in the group's posted list, or the rndv_ready list */
    cohort_request_t *req; /* owner */
    int is_send;
    int peer;     /* group rank */
    uint8_t kind; /* cohort_msg_kind_t */
    uint32_t seq;
    int32_t tag;
    uint32_t fp;
    void *buf;
    size_t len; /* send: bytes; recv: capacity */
    size_t received;
    uint8_t mem_type; /* cohort_mem_type_t of buf */
    int posted;       /* recv: in the posted list */
    int done;
    cohort_status_t status;
    void *ucx_req;                    /* UCX request while in flight */
    void *rndv_desc;                  /* recv: rendezvous descriptor to fetch */
    uint8_t hdr[COHORT_AM_HDR_BYTES]; /* send: the encoded header UCX may still read */
} cohort_xfer_t;

typedef enum { COHORT_REQ_SEND, COHORT_REQ_RECV, COHORT_REQ_COLL } cohort_req_type_t;

struct cohort_coll_algo;

struct cohort_request {
    cohort_context_t *ctx;
    cohort_group_t *group;
    int type; /* cohort_req_type_t */
    int done;
    cohort_status_t status;
    int user_freed;
    int inflight;                        /* UCX operations that still point into this request */
    int active;                          /* in ctx->active */
    cohort_list_t link;                  /* in ctx->active or ctx->zombies */
    cohort_list_t group_link;            /* in group->requests */
    const struct cohort_coll_algo *algo; /* COHORT_REQ_COLL */
    void *state;                         /* COHORT_REQ_COLL: the algorithm's state */
    cohort_xfer_t xfer;                  /* SEND / RECV */
};

/* Allocate a request with @a extra bytes of algorithm state (zeroed), on @a group. */
cohort_request_t *cohort_request_alloc(cohort_group_t *group, int type, size_t extra);
/* Mark finished with @a status; the first status set sticks. */
void cohort_request_complete(cohort_request_t *req, cohort_status_t status);
/* Free now, or when the last UCX operation in flight completes. */
void cohort_request_release(cohort_request_t *req);
/* Cancel everything the request still waits for (user free, group free, abort, finalize). */
void cohort_request_cancel(cohort_request_t *req, cohort_status_t status);
/* Say what a request is waiting for, for timeout messages. */
void cohort_request_describe(const cohort_request_t *req, char *buf, size_t len);
cohort_status_t cohort_request_wait_internal(cohort_request_t *req);

#endif
