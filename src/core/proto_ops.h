/*
 * What the engine needs from the layer that moves a transfer's bytes to another process (the
 * protocols, src/proto). The engine says here what it calls, and calls only through the
 * context's pointer to it (ctx->proto_ops); the api room, which composes the layers, hands
 * cohort_context_create the protocol layer's own (src/proto/proto.c, cohort_proto_layer). So
 * the engine names no protocol and no symbol of the room above it, the way it runs a request
 * only through the ops table its posting layer gave it (core/request.h).
 *
 * Every verb is required: cohort_context_create refuses a layer that lacks one, so the engine
 * calls them without a NULL test on every transfer.
 */
#ifndef COHORT_PROTO_OPS_H
#define COHORT_PROTO_OPS_H

#include <stddef.h>
#include "cohort.h"

typedef struct cohort_context cohort_context_t;
typedef struct cohort_peer cohort_peer_t;
typedef struct cohort_xfer cohort_xfer_t;

typedef struct cohort_proto_ops {
    const char *name; /* for log lines */
    /* Once per context, at its creation, after the engine's own message kinds and peer
     * observers are registered and before the communicators' (a peer's failure reaches the
     * protocols before the groups). @return COHORT_OK, or an error (logged) with nothing kept. */
    cohort_status_t (*init)(cohort_context_t *ctx);
    /* At destruction, after the UCX worker is gone (nothing completes into a transfer then);
     * also after a failed creation that got past init. */
    void (*cleanup)(cohort_context_t *ctx);
    /* At post of a transfer of a request that may carry device memory (req->device): where its
     * buffer lives, and whether a protocol carries device memory UCX cannot take as it is or it
     * goes through a page-locked bounce (x->stage; a send's copy into it runs while
     * x->stage_copy is set, and the engine waits for it: cohort_xfer_copy_wait). @return
     * COHORT_OK, or COHORT_ERR_NO_MEMORY / COHORT_ERR_CUDA (logged) with nothing kept. */
    cohort_status_t (*stage)(cohort_xfer_t *x);
    /* Send @a x to @a peer, now wired: the protocol's, or finished (cohort_xfer_finish). */
    void (*start)(cohort_xfer_t *x, cohort_peer_t *peer);
    /* Once per progress pass: what the protocols queued themselves. @return how many moved. */
    int (*progress)(cohort_context_t *ctx);
    /* UCX finished sending @a x without error: 1 when the transfer is not over (its reader
     * answers), 0 to finish it. */
    int (*sent)(cohort_xfer_t *x);
    /* Cancel @a x (not done): 1 when its protocol holds it until an answer, 0 to let the
     * engine stop and finish it now. */
    int (*cancel)(cohort_xfer_t *x, cohort_status_t status);
    /* @a x is finishing: its protocol forgets it. */
    void (*finish)(cohort_xfer_t *x);
    /* What UCX reads for send @a x while it is in flight (*len bytes): x->buf, or a descriptor. */
    const void *(*payload)(const cohort_xfer_t *x, size_t *len);
    /* At finish of a transfer that holds a bounce (x->stage): a receive that succeeded starts
     * its copy to the device, @return 1 when the transfer waits for it (it is finished again
     * then); 0 to finish now, *status an error if the copy could not start. */
    int (*drain)(cohort_xfer_t *x, cohort_status_t *status);
    /* Likewise: the bounce goes back once UCX lets go of it (a copy still running is waited
     * for first: a cancel). @return the status to finish with. */
    cohort_status_t (*unstage)(cohort_xfer_t *x, cohort_status_t status);
} cohort_proto_ops_t;

#endif
