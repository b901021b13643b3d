/*
 * The protocol contract: every way a transfer's bytes cross to another process is one table
 * (cohort_proto_t) in its own file of src/proto/, the way a UCX request points at its
 * ucp_proto_t. A send points at the protocol that carries it (x->proto, chosen when its peer
 * is wired: the first row of the table whose select takes it); a receive points at the one
 * its matched message says (NULL: a plain message). The engine calls protocols only through
 * the verbs it declares itself (core/proto_ops.h), which this layer fills in
 * (cohort_proto_layer) and src/api hands the context when it makes it: core includes nothing
 * of src/proto and names none of its symbols (scripts/check-layers.sh). Protocols hear of peer
 * failures and control messages through the handlers the engine registers
 * (cohort_peer_observe, cohort_am_kind_set).
 *
 * Staging (xfer_stage.c) is not a row but this layer's own step around them: it changes where a
 * transfer's bytes are (a page-locked bounce instead of the device buffer) and any protocol
 * then carries the bounce, the peer's single copy out of it included. A protocol that can carry
 * device memory as it is claims the transfer at post (claim), before staging would.
 */
#ifndef COHORT_PROTO_H
#define COHORT_PROTO_H

#include <stddef.h>
#include "cohort.h"
#include "core/proto_ops.h"

typedef struct cohort_context cohort_context_t;
typedef struct cohort_peer cohort_peer_t;
typedef struct cohort_xfer cohort_xfer_t;

typedef struct cohort_proto {
    const char *name;
    /* Optional, at post of a send of device memory UCX cannot take: 1 when this protocol
     * carries it as it is (the engine does not stage it); it then points x->proto here. */
    int (*claim)(cohort_xfer_t *x);
    /* Whether it carries send @a x to @a peer (wired, on this rank's say so). May change how
     * @a x holds its data (a claimed device send staged after all) and decline. The table
     * caches the answer for a plain send (not claimed, the first send of a point-to-point or
     * collective message: cohort_proto_start), so for those it decides by the peer, x's memory
     * type and whether x->len reaches COHORT_CMA_MIN alone, with no side effect; a row whose
     * answer changes for another reason (a peer refused it) calls cohort_proto_repick. */
    int (*select)(cohort_xfer_t *x, cohort_peer_t *peer);
    /* Hand send @a x to @a peer. Ends with the transfer in UCX's hands, waiting for an
     * answer, or finished (cohort_xfer_finish); may hand it to another row (a fallback). */
    void (*start)(cohort_xfer_t *x, cohort_peer_t *peer);
    /* Optional: what the protocol queued for the context (answers, resends). @return how
     * many moved. */
    int (*progress)(cohort_context_t *ctx);
    /* Optional: UCX finished sending @a x without error: 1 when the transfer is not over
     * (its reader answers), 0 to finish it. */
    int (*sent)(cohort_xfer_t *x);
    /* Optional: cancel @a x (not done): 1 when the protocol holds it until an answer (the
     * status kept), 0 to let the engine stop and finish it now. */
    int (*cancel)(cohort_xfer_t *x, cohort_status_t status);
    /* Optional: @a x is finishing: forget what the protocol keeps for it. */
    void (*finish)(cohort_xfer_t *x);
    /* Optional: world rank @a world_rank failed: fail what this protocol holds for it. */
    void (*abort)(cohort_context_t *ctx, int world_rank, cohort_status_t status);
    /* Optional: what UCX reads for send @a x while it is in flight, when not x->buf. */
    const void *(*payload)(const cohort_xfer_t *x, size_t *len);
    /* Optional, the single-copy rows (single_copy.h): the next step of receive @a x's copy out
     * of its sender's memory, from progress: COHORT_INPROGRESS while some remains (or a device
     * copy it started runs), COHORT_OK once all is in, or an error (COHORT_ERR_UNSUPPORTED, with
     * @a why: it cannot be read here, the data is asked for). */
    cohort_status_t (*read_step)(cohort_context_t *ctx, cohort_xfer_t *x, const char **why);
    /* Optional, likewise: the read is over or given up on: let go of what it holds, once what
     * it started that writes the receive's buffer is over (its owner gets the buffer next). */
    void (*read_stop)(cohort_context_t *ctx, cohort_xfer_t *x);
    /* Optional, likewise: a read_step said this rank cannot read what world rank
     * @a world_rank offers (@a why): say so (once) and offer or take less from now on. */
    void (*read_refused)(cohort_context_t *ctx, int world_rank, const char *why);
    /* Say where @a x is (timeout messages). */
    void (*describe)(const cohort_xfer_t *x, char *buf, size_t len);
    /* Optional: once per context, at creation and at destruction. */
    void (*init)(cohort_context_t *ctx);
    void (*cleanup)(cohort_context_t *ctx);
    /* Bytes of per-context state the protocol keeps (its queues, maps, pools; 0: none),
     * zeroed before its init and freed after its cleanup: cohort_proto_ctx finds it. The
     * context holds it as one opaque pointer (ctx->protos), so the engine has no field of a
     * protocol's. */
    size_t ctx_size;
} cohort_proto_t;

/* The protocol layer, as the engine calls it (core/proto_ops.h), for src/api to hand the
 * context at its creation:
 * - init: every row's state and init, and one peer observer for their aborts
 *   (COHORT_ERR_NO_MEMORY with nothing kept, or COHORT_OK); cleanup: every row's cleanup,
 *   then their state freed (after a failed init, nothing);
 * - stage, drain, unstage: staging (xfer_stage.h), which asks the rows' claim first;
 * - start: send @a x to wired @a peer through the first row that selects it; none does
 *   (device data neither claimed nor staged): finished with COHORT_ERR_CUDA. The choice for a
 *   plain send is cached per (peer, memory type, size class: below or from COHORT_CMA_MIN),
 *   and said in a debug line (COHORT_LOG=debug) when it is made;
 * - progress: every row's, then staging's; sent, cancel, finish, payload: the hooks of @a x's
 *   row (no row: the plain answer). */
extern const cohort_proto_ops_t cohort_proto_layer;
/* At post of a device send UCX cannot take (xfer_stage.c): whether a row claims it, to carry it
 * unstaged. */
int cohort_proto_claim(cohort_xfer_t *x);
/* The per-context state of row @a row (its ctx_size bytes), NULL when it keeps none. */
void *cohort_proto_ctx(const cohort_context_t *ctx, const cohort_proto_t *row);
/* What a row's select goes by changed (a peer or the kernel refused single copy): every cached
 * choice is made again at its next send. */
void cohort_proto_repick(cohort_context_t *ctx);
/* What @a x's protocol says of it (timeout messages). */
void cohort_proto_describe(const cohort_xfer_t *x, char *buf, size_t len);

#endif
