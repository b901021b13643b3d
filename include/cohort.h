/**
 * @file cohort.h
 * @brief cohort: process groups and collectives over UCX, bootstrapped through PMIx, where a
 *        group costs only its own members anything.
 *
 * Threading: a context and everything made from it (groups, requests, layouts) must be used
 * by one thread at a time. Progress happens only inside cohort calls; there are no hidden
 * threads.
 */
#ifndef COHORT_H
#define COHORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COHORT_VERSION_MAJOR 0
#define COHORT_VERSION_MINOR 1

typedef struct cohort_context cohort_context_t;
typedef struct cohort_group cohort_group_t;
typedef struct cohort_request cohort_request_t;
typedef struct cohort_layout cohort_layout_t;

/** Status codes: OK is zero, errors are negative. */
typedef enum {
    COHORT_OK = 0,
    COHORT_INPROGRESS = 1,
    COHORT_ERR_INVALID_ARG = -1,
    COHORT_ERR_NO_MEMORY = -2,
    COHORT_ERR_NOT_MEMBER = -3,
    COHORT_ERR_UNSUPPORTED = -4,
    COHORT_ERR_PMIX = -5,
    COHORT_ERR_UCX = -6,
    COHORT_ERR_TIMEOUT = -7,
    COHORT_ERR_PEER_FAILED = -8,
    COHORT_ERR_MISMATCH = -9,
    COHORT_ERR_CUDA = -10,
    COHORT_ERR_REVOKED = -11
} cohort_status_t;

/**
 * @return a static, human-readable description of @a status (never NULL).
 */
const char *cohort_strerror(cohort_status_t status);

typedef enum {
    COHORT_INT8,
    COHORT_UINT8,
    COHORT_INT32,
    COHORT_UINT32,
    COHORT_INT64,
    COHORT_UINT64,
    COHORT_FLOAT16,
    COHORT_BFLOAT16,
    COHORT_FLOAT32,
    COHORT_FLOAT64
} cohort_dtype_t;

/** COHORT_AVG is defined for floating types only. */
typedef enum { COHORT_SUM, COHORT_PROD, COHORT_MIN, COHORT_MAX, COHORT_AVG } cohort_op_t;

/** Send-buffer value meaning "the receive buffer holds my contribution" (MPI_IN_PLACE). */
#define COHORT_IN_PLACE ((const void *)1)

/* ------------------------------------------------------------------------------------------ */
/* Context                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/**
 * Connect to the launcher's PMIx server (or run as a singleton, a world of one, when there is
 * none), create one UCX worker and publish its address once.
 *
 * @param [out] ctx  the new context; set only on success.
 * @return COHORT_OK, or an error: COHORT_ERR_INVALID_ARG for a bad COHORT_* setting (logged
 *         with its name), COHORT_ERR_UNSUPPORTED when the chosen exchange plugin cannot work
 *         with this PMIx server, COHORT_ERR_PMIX / COHORT_ERR_UCX for lower-layer failures.
 * @note Communicates with the PMIx server only (Put + Commit); no fence on the default path.
 *       Release with cohort_finalize().
 */
cohort_status_t cohort_init(cohort_context_t **ctx);

/**
 * Release everything the context owns: groups, layouts, endpoints, the UCX worker and the
 * PMIx connection. Accepts NULL.
 *
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a context that is not live (finalized already,
 *         or never made), logged.
 * @note Requests still outstanding are cancelled (COHORT_ERR_REVOKED). A request the caller
 *       still holds stays a valid handle: cohort_test()/cohort_wait() report its final status
 *       and cohort_request_free() releases it, after finalize too. Wired peers are told this
 *       rank leaves, so messages it sent before are still delivered to them and its leaving
 *       is not taken for a failure. Bounded: sends nobody receives are cancelled, endpoints
 *       close together within COHORT_TIMEOUT (5 s when unset).
 */
cohort_status_t cohort_finalize(cohort_context_t *ctx);

/** @return this process's rank in the job, or -1 for a NULL context. */
int cohort_world_rank(const cohort_context_t *ctx);

/** @return the number of processes in the job, or -1 for a NULL context. */
int cohort_world_size(const cohort_context_t *ctx);

/**
 * @return the group of all ranks (owned by the context; do not free), or NULL.
 */
cohort_group_t *cohort_world(cohort_context_t *ctx);

/* ------------------------------------------------------------------------------------------ */
/* Groups                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/**
 * Create a group of the given world ranks, in the given order (group rank i is
 * world_ranks[i]).
 *
 * @param [in]  ctx          context.
 * @param [in]  tag          any string naming the group's purpose (copied); may not be NULL.
 * @param [in]  world_ranks  members, each in [0, world size), no duplicates (copied).
 * @param [in]  nranks       number of members, > 0.
 * @param [out] group        the new group; NULL when the caller is not a member.
 * @return COHORT_OK; COHORT_ERR_NOT_MEMBER (with *group = NULL) when the caller is not in
 *         world_ranks, so a loop over every group of a layout is safe on every rank;
 *         COHORT_ERR_INVALID_ARG for bad input (logged).
 * @note Never communicates and wires nothing: all members derive the same 64-bit id from
 *       (tag, members, how many identical groups this rank created before). Members must
 *       therefore create identical groups in the same order. Free with cohort_group_free().
 */
cohort_status_t cohort_group_create(cohort_context_t *ctx, const char *tag, const int *world_ranks,
                                    int nranks, cohort_group_t **group);

/**
 * Free a group created by cohort_group_create(). Outstanding requests on it are cancelled.
 * Accepts NULL. The world group and layout groups are owned elsewhere:
 * COHORT_ERR_INVALID_ARG.
 */
cohort_status_t cohort_group_free(cohort_group_t *group);

/** @return the caller's rank in the group, or -1 for NULL. */
int cohort_group_rank(const cohort_group_t *group);

/** @return the number of members, or -1 for NULL. */
int cohort_group_size(const cohort_group_t *group);

/** @return the world rank of group member @a group_rank, or -1 when out of range. */
int cohort_group_world_rank(const cohort_group_t *group, int group_rank);

/** @return the group's 64-bit id (the same on every member). 0 for NULL. */
uint64_t cohort_group_id(const cohort_group_t *group);

/* ------------------------------------------------------------------------------------------ */
/* Layouts (Megatron-style model-parallel groups)                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * Build the caller's groups of a Megatron-style layout.
 *
 * @param [in]  spec    "tp=2,pp=4,cp=1,ep=2,etp=1,order=tp-cp-ep-dp-pp"; every key optional;
 *                      dp is derived from the world size.
 * @param [out] layout  the new layout; set only on success.
 * @note Never communicates: only the caller's own groups are created, member-only.
 */
cohort_status_t cohort_layout_create(cohort_context_t *ctx, const char *spec,
                                     cohort_layout_t **layout);

/**
 * @param [in] kind  "tp", "pp", "dp", "cp", "dp-cp", "tp-pp", "tp-cp", "tp-dp", "tp-dp-cp",
 *                   "embd", "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp".
 * @return the caller's group of that kind (owned by the layout), or NULL when the caller is not
 *         in one (embd, pos-embd) or the kind is unknown (logged).
 */
cohort_group_t *cohort_layout_group(cohort_layout_t *layout, const char *kind);

/** Free the layout and its groups. Accepts NULL. */
cohort_status_t cohort_layout_free(cohort_layout_t *layout);

/* ------------------------------------------------------------------------------------------ */
/* Collectives and point-to-point. Blocking calls return when the result is in place. Every   */
/* member calls a group's collectives in the same order. Buffers must stay valid until the     */
/* request completes.                                                                          */
/* ------------------------------------------------------------------------------------------ */

cohort_status_t cohort_barrier(cohort_group_t *g);
cohort_status_t cohort_bcast(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                             int root);
/**
 * Combine every member's @a count elements with @a op; the result lands in the root's rbuf.
 * @param [in]  sbuf  this member's contribution; COHORT_IN_PLACE at the root only (its rbuf
 *                    holds its contribution). Never modified.
 * @param [out] rbuf  the result, significant at the root only (may be NULL elsewhere).
 * @return COHORT_ERR_INVALID_ARG for COHORT_AVG on an integer dtype, among others (logged).
 * @note count 0 is legal and every member must still call. Float results depend on the order
 *       of combination, which is fixed for a given group, count and algorithm.
 */
cohort_status_t cohort_reduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                              cohort_dtype_t dt, cohort_op_t op, int root);
/**
 * Combine every member's @a count elements with @a op; every member receives the result.
 * @param [in]  sbuf  this member's contribution, or COHORT_IN_PLACE (rbuf holds it). Never
 *                    modified.
 * @param [out] rbuf  @a count elements of result.
 * @note Every member ends with bitwise identical results, floats included. COHORT_AVG (floats
 *       only) divides the sum by the group size once, where the sum is final.
 */
cohort_status_t cohort_allreduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt, cohort_op_t op);
/** @param count elements contributed by each rank; rbuf holds size * count. */
cohort_status_t cohort_allgather(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt);
/**
 * Combine every member's size * @a count elements with @a op and scatter the result: group
 * rank i receives elements [i * count, (i + 1) * count) (MPI_Reduce_scatter_block).
 * @param [in]  sbuf   size * count elements, never modified; or COHORT_IN_PLACE: the input is
 *                     then taken from rbuf, which must hold size * count elements, and the
 *                     result is written to the start of rbuf (its first count elements; the
 *                     rest of rbuf is left undefined).
 * @param [out] rbuf   @a count elements of result (size * count under COHORT_IN_PLACE).
 * @param [in]  count  elements each rank receives.
 */
cohort_status_t cohort_reduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                      cohort_dtype_t dt, cohort_op_t op);
/** @param count elements sent to each peer. */
cohort_status_t cohort_alltoall(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                cohort_dtype_t dt);

/**
 * Point-to-point within a group. Messages from one sender on one group are matched in the
 * order they were sent, by (peer, tag). tag must be >= 0.
 * @note The first send to a peer wires an endpoint to it (one PMIx lookup), in the background:
 *       the send waits inside progress, no call blocks on it. A receive from a peer that
 *       finalized still gets what it sent before; one that nothing queued can satisfy fails
 *       with COHORT_ERR_PEER_FAILED.
 */
cohort_status_t cohort_send(cohort_group_t *g, const void *buf, size_t count, cohort_dtype_t dt,
                            int peer, int tag);
cohort_status_t cohort_recv(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt, int peer,
                            int tag);

/* Nonblocking twins: same arguments, plus the request to test/wait/free. */
cohort_status_t cohort_ibarrier(cohort_group_t *g, cohort_request_t **req);
cohort_status_t cohort_ibcast(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                              int root, cohort_request_t **req);
cohort_status_t cohort_ireduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                               cohort_dtype_t dt, cohort_op_t op, int root, cohort_request_t **req);
cohort_status_t cohort_iallreduce(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                  cohort_dtype_t dt, cohort_op_t op, cohort_request_t **req);
cohort_status_t cohort_iallgather(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                  cohort_dtype_t dt, cohort_request_t **req);
cohort_status_t cohort_ireduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf,
                                       size_t count, cohort_dtype_t dt, cohort_op_t op,
                                       cohort_request_t **req);
cohort_status_t cohort_ialltoall(cohort_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 cohort_dtype_t dt, cohort_request_t **req);
cohort_status_t cohort_isend(cohort_group_t *g, const void *buf, size_t count, cohort_dtype_t dt,
                             int peer, int tag, cohort_request_t **req);
cohort_status_t cohort_irecv(cohort_group_t *g, void *buf, size_t count, cohort_dtype_t dt,
                             int peer, int tag, cohort_request_t **req);

/**
 * Advance outstanding work and report whether @a req has finished.
 * @param [out] done  1 when finished (the return value is then the request's final status).
 * @return COHORT_OK (or the request's error once done), COHORT_ERR_INVALID_ARG for NULL or a
 *         freed request (logged).
 * @note Never blocks: address lookups, endpoint creation and the exchange plugins' first-use
 *       steps advance in the background; one call takes microseconds whatever peers do.
 */
cohort_status_t cohort_test(cohort_request_t *req, int *done);

/**
 * Wait until @a req finishes, progressing as configured by COHORT_PROGRESS.
 * @return the request's status; COHORT_ERR_TIMEOUT when COHORT_TIMEOUT seconds pass first
 *         (logged with what was awaited); the request then stays valid: wait again, or free it
 *         to cancel it.
 */
cohort_status_t cohort_wait(cohort_request_t *req);

/**
 * Release a request. A request that has not finished is cancelled first (COHORT_ERR_REVOKED):
 * its receives stop matching, its sends not yet handed to UCX are dropped. Accepts NULL; a
 * freed or foreign handle is logged and ignored.
 *
 * @note When this returns, cohort will not read or write the request's buffers again. UCX
 *       cannot cancel a transfer in flight, so the call waits for it: a receive being fetched
 *       finishes in moments; a send the receiver has not asked for yet is given COHORT_TIMEOUT
 *       (1 s when unset), then its endpoint is closed by force, which also fails that peer's
 *       matching receive. Cancelling a collective, or a point-to-point send, leaves the other
 *       members out of step: the group is revoked (later operations fail with the request's
 *       status). Requests are pooled per context; a freed handle is recognized as freed while
 *       its context lives.
 */
void cohort_request_free(cohort_request_t *req);

/**
 * Fail every pending and later operation on @a g with COHORT_ERR_REVOKED (local only). A group
 * is also revoked by the library when this rank can no longer stay in step with the other
 * members: a collective that failed or was cancelled, a point-to-point send that failed, a
 * message lost for lack of memory or over COHORT_ORPHAN_LIMIT. Messages arriving for a revoked
 * group are dropped (counted in cohort_stats_t.messages_dropped).
 */
cohort_status_t cohort_group_abort(cohort_group_t *g);

/* ------------------------------------------------------------------------------------------ */
/* Introspection                                                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * The world ranks this process holds a UCX endpoint to, ascending.
 * @return how many there are (which may exceed @a max; only @a max are written).
 * @note Never communicates.
 */
int cohort_wired_peers(const cohort_context_t *ctx, int *world_ranks, int max);

/** What cohort knows about one wired peer (for diagnostics). */
typedef struct {
    int world_rank;
    double wire_us;       /**< time to look up the address and create the endpoint */
    int pmix_lookups;     /**< PMIx lookups made for this peer (0 or 1) */
    char transports[128]; /**< the UCX lanes of the endpoint, e.g. "sysv/memory cma/memory" */
} cohort_peer_info_t;

/**
 * Describe wired peer @a world_rank.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG when no endpoint to it exists.
 * @note Never communicates.
 */
cohort_status_t cohort_peer_info(const cohort_context_t *ctx, int world_rank,
                                 cohort_peer_info_t *info);

/** Counters of one context, for diagnostics and benchmarks. */
typedef struct {
    uint64_t groups_created;   /**< groups this rank created (world included) */
    uint64_t pmix_lookups;     /**< peer addresses fetched through the exchange plugin */
    uint64_t endpoints;        /**< UCX endpoints currently held */
    uint64_t messages_sent;    /**< active messages sent */
    uint64_t messages_dropped; /**< messages nobody could take, dropped: for groups not
                                    created here (over COHORT_ORPHAN_LIMIT), freed or revoked */
    const char *pmix_plugin;   /**< exchange plugin in use ("singleton" without a server) */
    const char *progress;      /**< "yield", "spin" or "block" */
} cohort_stats_t;

cohort_status_t cohort_stats(const cohort_context_t *ctx, cohort_stats_t *stats);

#ifdef __cplusplus
}
#endif
#endif /* COHORT_H */
