/**
 * @file cohort.h
 * @brief cohort: process groups and collectives over UCX, bootstrapped through PMIx, where a
 *        group costs only its own members anything.
 *
 * Threading: a context may be used from several threads at once, one thread per group at a
 * time. Progress happens only inside cohort calls; there are no hidden threads. A call that
 * changes or walks a context's state takes the context's lock (src/core/guard.c) for its
 * length; a blocking call (a blocking collective, cohort_send, cohort_recv, cohort_wait, and the
 * waits inside cohort_request_free, cohort_group_free and cohort_finalize) lets it go between
 * two progress passes and while it sleeps, so the calls of other threads come in meanwhile and
 * progress too: progress made by any thread completes every thread's requests. Threads come in
 * in the order they asked (a ticket lock). Two contexts are independent.
 *
 * Per function, as the code is today (the entry points name their class):
 *  - Take the context and the group for the call: every collective and its nonblocking twin
 *    (cohort_barrier ... cohort_ialltoall), cohort_send, cohort_recv, cohort_isend,
 *    cohort_irecv, cohort_group_free, cohort_group_set_stream. A group is one thread's while
 *    that thread is inside one of these calls on it (a nonblocking one: until it returns; a
 *    blocking one: until it completes). Another thread's call on the same group meanwhile is
 *    refused: COHORT_ERR_INVALID_ARG, logged ("another thread is inside a call on group"). A
 *    refused collective, send or receive would leave the group's other members waiting in a call
 *    this rank never made, so the refusal revokes the group at once (logged) and tells its
 *    members: every member's pending and later calls on it return COHORT_ERR_MISMATCH, the
 *    refused thread's included (a member whose call had already received all it needed from
 *    this rank may complete that one call; its next call returns MISMATCH). Never a hang
 *    (tests/mpi/thread_refuse). Other groups are untouched. Calls on one group from different
 *    threads one after the other are fine; the members must still make a group's collectives in
 *    the same order, which with one thread per group is that thread's order
 *    (tests/mpi/threads: 2 to 4 threads, each on its own group).
 *  - Take the context only: cohort_group_create, cohort_layout_create, cohort_layout_group,
 *    cohort_layout_free (refused, INVALID_ARG, while another thread is inside a call on one of
 *    the layout's groups), cohort_test, cohort_wait (any thread; the request's group is not
 *    taken, so a thread may wait on a request while another posts on its group),
 *    cohort_request_free (refused, logged and ignored, while another thread waits on that
 *    request), cohort_group_abort (any thread, even while another is inside a call on the group:
 *    that call returns COHORT_ERR_REVOKED; a watchdog's way out of a hung collective), and
 *    cohort_finalize (refused, INVALID_ARG, while another thread is inside a call on the
 *    context; once it has begun, every other thread's call on the context is refused, also one
 *    made while finalize waits, and once it returned every call is refused as stale).
 *  - Take the context for their read, and so never race a writer: cohort_wired_peers,
 *    cohort_peer_info, cohort_node_info, cohort_failed_ranks, cohort_stats, cohort_cuda_info,
 *    cohort_group_info (any thread, even while another is inside a call on the group).
 *  - Read without taking anything what never changes after creation, from any thread:
 *    cohort_world, cohort_world_rank, cohort_world_size, cohort_group_rank, cohort_group_size,
 *    cohort_group_world_rank, cohort_group_id, and cohort_request_source once
 *    a cohort_wait or cohort_test on that thread saw the request complete. The object must not
 *    be freed (or its context finalized) by another thread meanwhile: that is a use after free
 *    in the program, which the handle check catches only once the free is over.
 *  - Need no context, safe from any thread at any time: cohort_strerror, cohort_version,
 *    cohort_setting_count, cohort_setting_info, cohort_algo_count, cohort_algo_info,
 *    cohort_algo_param_count, cohort_algo_param_info, the cohort_layout_spec_* and
 *    cohort_layout_* arithmetic on a spec (pure; a spec is read-only after parse, so threads may
 *    share one, but cohort_layout_spec_free must not race its readers), and the float16 and
 *    bfloat16 conversions.
 *  - cohort_init and cohort_init_exchange make a new context: safe from several threads at once
 *    as far as cohort's own state goes (the handle table and the list of live contexts are
 *    locked), but each starts a PMIx client (PMIx_Init) or calls the caller's store, whose own
 *    rules apply; init contexts one thread at a time unless those allow more.
 *
 * Misuse is a status, never a crash. Handles are not addresses: a group, layout or request
 * handle names a slot with a generation, and a context's block is never reused, so a handle
 * that was real once (freed, its context finalized, a group of a finalized context passed while
 * another context lives) gives COHORT_ERR_INVALID_ARG on every later call (or -1 / NULL / 0 as
 * above; cohort_request_free logs and ignores it), logged, and is never read through. A value
 * that was never a handle is refused the same way. In a fork child, every call on a context
 * the parent made, and on its groups, layouts and requests (cohort_finalize included), returns
 * COHORT_ERR_INVALID_ARG and touches nothing of the parent's: the child makes its own context.
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

/** Marks the functions libcohort exports; the library is built with hidden visibility, so
 *  nothing else leaves it. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define COHORT_API __attribute__((visibility("default")))
#else
#define COHORT_API
#endif

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
    COHORT_ERR_REVOKED = -11,
    /** A point-to-point receive whose sender freed (cancelled) its send before the data was
     *  all here: nothing written into the buffer after the sender's free, the group usable. */
    COHORT_ERR_CANCELED = -12
} cohort_status_t;

/**
 * @return a static, human-readable description of @a status (never NULL).
 */
COHORT_API const char *cohort_strerror(cohort_status_t status);

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

/** Peer value of cohort_irecv()/cohort_recv(): match a message of that tag from any member
 * (MPI_ANY_SOURCE); cohort_request_source() says whose it was. */
#define COHORT_ANY_SOURCE (-1)

/** Send-buffer value meaning "the receive buffer holds my contribution" (MPI_IN_PLACE).
 * Collectives only: as any buffer of cohort_send/_isend/_recv/_irecv, or as a receive buffer,
 * it is COHORT_ERR_INVALID_ARG. */
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
COHORT_API cohort_status_t cohort_init(cohort_context_t **ctx);

/**
 * A key-value store the caller lends cohort_init_exchange() in place of a PMIx server: the
 * world's rank and size, and two callbacks over a store every rank of the world reaches (torch's
 * c10d Store, a shared directory, a KV service). cohort chooses the keys, all under
 * "cohort/<instance>/" ("cohort/0/3/card": what world rank 3 of this process's first context
 * published), so a store shared with other users keeps theirs apart.
 *
 * Each callback returns a cohort_status_t and is called only from a thread inside a cohort call
 * on the context it serves, with that context's lock held (one at a time for one context, not
 * always from the same thread; two contexts over one store may call it from two threads at
 * once).
 */
typedef struct {
    int rank; /**< this process's world rank, 0 <= rank < size */
    int size; /**< the world size, > 0 */
    /** Store @a len bytes of @a value (cohort's; copy them) under @a key; called by
     *  cohort_init_exchange() (a few keys, never again). COHORT_OK once stored: a peer's get may
     *  come at once. Any other status fails cohort_init_exchange() with it. */
    cohort_status_t (*put)(void *arg, const char *key, const void *value, size_t len);
    /** Look @a key up WITHOUT waiting: COHORT_OK with *value a malloc'ed copy that cohort frees
     *  with free() and *len its size; COHORT_INPROGRESS when nobody has put it yet (cohort asks
     *  again from progress, backing off, until COHORT_TIMEOUT, 300 s when unset); or an error,
     *  which fails that peer's lookup (the peer is taken as failed). */
    cohort_status_t (*get)(void *arg, const char *key, void **value, size_t *len);
    void *arg; /**< passed to put and get; must stay valid until cohort_finalize() */
} cohort_exchange_t;

/**
 * cohort_init() without a PMIx server: the world rank and size come from @a ex, and a rank's
 * card (its UCX worker address, its pid, and its host's identity: host name, boot id, PID
 * namespace) goes through @a ex's store. For launchers with no PMIx (torchrun, a script that
 * starts processes itself); cohort_init() stays the way under mpirun, srun and prterun.
 *
 * @param [in]  ex   the store and this rank's place in the world; copied (ex->arg is not: it
 *                   must stay valid until cohort_finalize()).
 * @param [out] ctx  the new context; set only on success.
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a NULL @a ex or @a ctx, a NULL put or get, a
 *         rank or size out of range, or a bad COHORT_* setting (each logged, naming it); the
 *         status put returned when it fails; COHORT_ERR_UCX for UCX failures.
 * @note Communicates only through @a ex's callbacks: one put, here, of this rank's card
 *       ("cohort/<instance>/<rank>/card"), and nothing else at init. A peer's card is read on
 *       this rank's first use of that peer (a send to it, a collective of a group holding it, a
 *       question about its node) and never before: a rank reads the cards of its groups'
 *       members and of no other rank. Reads are polled from progress, never waited on, except
 *       one case: whether a member shares this node must be known when a group first picks a
 *       collective algorithm (every member must pick alike), so a member that has not called
 *       cohort_init_exchange() yet is waited for there, polling get, within COHORT_TIMEOUT.
 *       A peer that never puts its card fails with COHORT_ERR_TIMEOUT within COHORT_TIMEOUT
 *       (300 s when unset), logged with the key. COHORT_PMIX_PLUGIN is not used; cohort_stats()
 *       names the exchange "user". Every rank of the world must call cohort_init_exchange()
 *       with the same size over the same store, making its contexts in the same order. Release
 *       with cohort_finalize().
 */
COHORT_API cohort_status_t cohort_init_exchange(const cohort_exchange_t *ex,
                                                cohort_context_t **ctx);

/**
 * Release everything the context owns: groups, layouts, endpoints, the UCX worker and the
 * PMIx connection. Accepts NULL.
 *
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a context that is not live (finalized already,
 *         or never made), made by the parent of this fork child, or in use by another thread,
 *         logged, and nothing is released; COHORT_ERR_PMIX (or COHORT_ERR_TIMEOUT) when the exchange
 *         plugin could not undo what it made (the group plugin's PMIx_Group_destruct), logged:
 *         the context is released all the same.
 * @note Requests still outstanding are cancelled (COHORT_ERR_REVOKED). A request the caller
 *       still holds stays a valid handle: cohort_test()/cohort_wait() report its final status
 *       and cohort_request_free() releases it, after finalize too. Wired peers are told this
 *       rank leaves, so messages it sent before are still delivered to them and its leaving
 *       is not taken for a failure. Bounded: sends nobody receives are cancelled, endpoints
 *       close together within COHORT_TIMEOUT (5 s when unset). With COHORT_PMIX_PLUGIN=group
 *       it also waits, within COHORT_TIMEOUT (300 s when unset), until the other members of
 *       this rank's groups have freed them too (PMIx_Group_destruct is collective).
 */
COHORT_API cohort_status_t cohort_finalize(cohort_context_t *ctx);

/** @return this process's rank in the job, or -1 for a NULL, finalized or foreign context
 *  (logged). */
COHORT_API int cohort_world_rank(const cohort_context_t *ctx);

/** @return the number of processes in the job, or -1 as cohort_world_rank. */
COHORT_API int cohort_world_size(const cohort_context_t *ctx);

/**
 * @return the group of all ranks (owned by the context; do not free), or NULL for a context
 *         that is not live (logged). Its handle is refused once the context is finalized.
 */
COHORT_API cohort_group_t *cohort_world(cohort_context_t *ctx);

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
 *         COHORT_ERR_INVALID_ARG for bad input or a context that is not live (logged).
 * @note Never communicates and wires nothing: all members derive the same 64-bit id from
 *       (tag, members, how many identical groups this rank created before). Members must
 *       therefore create identical groups in the same order. Free with cohort_group_free().
 */
COHORT_API cohort_status_t cohort_group_create(cohort_context_t *ctx, const char *tag,
                                               const int *world_ranks, int nranks,
                                               cohort_group_t **group);

/**
 * Free a group created by cohort_group_create(). Outstanding requests on it are cancelled
 * (COHORT_ERR_REVOKED; they stay the caller's to free), and since that leaves the other
 * members waiting on this rank, they are told: their operations on it return
 * COHORT_ERR_REVOKED (cohort_group_abort()). Accepts NULL. The world group and layout groups are owned elsewhere:
 * COHORT_ERR_INVALID_ARG. A freed group's handle is refused by every later call
 * (COHORT_ERR_INVALID_ARG, freeing it again included), even once a new group is made.
 */
COHORT_API cohort_status_t cohort_group_free(cohort_group_t *group);

/** @return the caller's rank in the group, or -1 for NULL or a handle that names no live group
 *  (logged; the same for the three calls below). */
COHORT_API int cohort_group_rank(const cohort_group_t *group);

/** @return the number of members, or -1 for NULL. */
COHORT_API int cohort_group_size(const cohort_group_t *group);

/** @return the world rank of group member @a group_rank, or -1 when out of range. */
COHORT_API int cohort_group_world_rank(const cohort_group_t *group, int group_rank);

/** @return the group's 64-bit id (the same on every member). 0 for NULL or a dead handle. */
COHORT_API uint64_t cohort_group_id(const cohort_group_t *group);

/* ------------------------------------------------------------------------------------------ */
/* Layouts (Megatron-style model-parallel groups)                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * Build the caller's groups of a Megatron-style layout.
 *
 * @param [in]  spec    "tp=2,pp=4,cp=1,ep=2,etp=1,order=tp-cp-ep-dp-pp"; every key optional;
 *                      dp is derived from the world size. Keys that add groups (docs/layouts.md):
 *                      hcp=2x4 (Megatron's hierarchical_context_parallel_sizes: levels whose
 *                      product is cp; kinds hcp0, hcp1, ...), dopt=N
 *                      (num_distributed_optimizer_instances: kinds dopt-instance and, for N > 1,
 *                      intra-dp-cp, intra-edp, inter-edp), embd=first+last+K (the stages that
 *                      hold the word embeddings: first, last, stage numbers; default
 *                      first+last; Megatron's GPT script with untied embeddings is embd=first,
 *                      with multi-token prediction on stage K embd=first+last+K).
 * @param [out] layout  the new layout; set only on success.
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a bad spec or a context that is not live
 *         (logged).
 * @note Never communicates: only the caller's own groups are created, member-only. The kinds
 *       built are those cohort_layout_spec_kind_name() lists for the spec.
 */
COHORT_API cohort_status_t cohort_layout_create(cohort_context_t *ctx, const char *spec,
                                                cohort_layout_t **layout);

/**
 * @param [in] kind  "tp", "pp", "dp", "cp", "dp-cp", "tp-pp", "tp-cp", "tp-dp", "tp-dp-cp",
 *                   "embd", "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp".
 *                   Also the kinds the spec adds (hcp0, ..., dopt-instance, intra-dp-cp,
 *                   intra-edp, inter-edp) and any token of either of Megatron's decompositions:
 *                   "dense:<names>" (tp, cp, dp, pp; ep = 1) or "expert:<names>" (etp as tp,
 *                   ep, edp as dp, pp; cp = 1), names joined by '-' in any order, each once,
 *                   e.g. "expert:tp-ep", "dense:dp-cp".
 * @return the caller's group of that kind (owned by the layout), or NULL when the caller is not
 *         in one (embd, pos-embd), the kind is unknown or the handle names no live layout
 *         (logged). The group's handle is refused once the layout is freed.
 * @note A kind the layout did not build at creation (a token, or a derived kind its spec did
 *       not ask for) is created member-only on first request, without communication; as with
 *       cohort_group_create(), every member must then request the same kinds of a layout in the
 *       same order. A token with the members of a built kind returns that kind's group.
 */
COHORT_API cohort_group_t *cohort_layout_group(cohort_layout_t *layout, const char *kind);

/** Free the layout and its groups. Accepts NULL. @return COHORT_OK, or COHORT_ERR_INVALID_ARG
 *  for a handle that names no live layout (freed already, or its context finalized). */
COHORT_API cohort_status_t cohort_layout_free(cohort_layout_t *layout);

/* ------------------------------------------------------------------------------------------ */
/* Layout arithmetic: any world size, no context, no communication                            */
/* ------------------------------------------------------------------------------------------ */

/** A parsed, validated layout spec for one world size (opaque). */
typedef struct cohort_layout_spec cohort_layout_spec_t;

/**
 * Parse and validate a layout spec against a world size, without a context: the arithmetic
 * behind cohort_layout_create(), for planning tools and for any world size.
 *
 * @param [in]  spec    the same text cohort_layout_create() takes; NULL or "" means all
 *                      defaults.
 * @param [in]  world   the world size, > 0.
 * @param [out] out     the new spec; set only on success. Free with cohort_layout_spec_free().
 * @param [out] err     when not NULL: on failure a one-line reason (truncated to @a errlen),
 *                      on success "".
 * @param [in]  errlen  size of @a err.
 * @return COHORT_OK, COHORT_ERR_INVALID_ARG for a bad spec or world, COHORT_ERR_NO_MEMORY.
 * @note Pure: never communicates, never logs; thread-safe.
 */
COHORT_API cohort_status_t cohort_layout_spec_parse(const char *spec, int world,
                                                    cohort_layout_spec_t **out, char *err,
                                                    size_t errlen);

/** Free a spec from cohort_layout_spec_parse(). Accepts NULL. */
COHORT_API void cohort_layout_spec_free(cohort_layout_spec_t *spec);

/**
 * @param [in] spec  a parsed spec.
 * @param [in] dim  "world", "tp", "pp", "cp", "ep", "etp", "dp" (derived), "edp" (derived,
 *                  the expert data-parallel size), "dopt" (1 unless given), "hcp" (the number
 *                  of hierarchical cp levels, 0 unless given).
 * @return that size, or -1 for a NULL spec or an unknown name.
 */
COHORT_API int cohort_layout_spec_size(const cohort_layout_spec_t *spec, const char *dim);

/**
 * Write the spec in full, every size given, e.g.
 * "tp=8,pp=16,cp=2,ep=8,etp=8,order=tp-cp-ep-dp-pp", then hcp=, dopt=, embd= when the spec gave
 * them; the text parses back to the same layout. The order is written as the spec gave it (or
 * the default): Megatron checks the order string before completing it ("ends with pp"), so a
 * completed order would not always read back.
 * @param [in]  spec  a parsed spec.
 * @param [out] buf   the text, NUL-terminated when @a len > 0; may be NULL when @a len is 0.
 * @param [in]  len   size of @a buf.
 * @return the length of the full text (as snprintf: may be >= @a len, then truncated), or -1
 *         for a NULL spec.
 */
COHORT_API int cohort_layout_spec_text(const cohort_layout_spec_t *spec, char *buf, size_t len);

/** @return how many named kinds there are (the 16 every layout builds). */
COHORT_API int cohort_layout_kind_count(void);

/**
 * @param [in] index  0 <= index < cohort_layout_kind_count(); the order is stable.
 * @return the kind's name ("tp", "dp-cp", ...), static; NULL when out of range.
 */
COHORT_API const char *cohort_layout_kind_name(int index);

/**
 * @param [in] spec  a parsed spec.
 * @return how many kinds a layout of @a spec builds (the 16 named, then those its keys add); 0
 *         for NULL.
 */
COHORT_API int cohort_layout_spec_kind_count(const cohort_layout_spec_t *spec);

/**
 * @param [in] spec   a parsed spec.
 * @param [in] index  0 <= index < cohort_layout_spec_kind_count(spec).
 * @return the name of kind @a index of those the spec builds (static), or NULL out of range.
 */
COHORT_API const char *cohort_layout_spec_kind_name(const cohort_layout_spec_t *spec, int index);

/* The calls below take every kind cohort_layout_group() takes: the named ones, those the spec's
 * keys add, and "dense:"/"expert:" tokens. */

/**
 * @param [in] spec  a parsed spec.
 * @param [in] kind  a named kind, a kind the spec's keys add, or a token ("expert:tp-ep").
 * @return the number of groups of @a kind over the whole world; 0 for a NULL spec or an unknown
 *         kind. Every rank is in exactly one group of each kind, except embd and pos-embd (only
 *         the embedding stages).
 */
COHORT_API int cohort_layout_ngroups(const cohort_layout_spec_t *spec, const char *kind);

/**
 * @param [in] spec  a parsed spec.
 * @param [in] kind  as for cohort_layout_ngroups().
 * @return the members of each group of @a kind (all groups of a kind have the same size); 0
 *         for a NULL spec or an unknown kind.
 */
COHORT_API int cohort_layout_group_size(const cohort_layout_spec_t *spec, const char *kind);

/**
 * The world ranks of group @a index of @a kind, in group-rank order (Megatron's order: the
 * same members, in the same order, as cohort_layout_create() gives that group).
 *
 * @param [in]  spec      a parsed spec.
 * @param [in]  kind      as for cohort_layout_ngroups().
 * @param [in]  index     0 <= index < cohort_layout_ngroups().
 * @param [out] members   at most @a max ranks are written; may be NULL when @a max is 0.
 * @param [in]  max       room in @a members.
 * @param [out] nmembers  the group's size (which may exceed @a max).
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a NULL spec, an unknown kind or an index out of
 *         range.
 * @note Pure; never logs. Groups are numbered in the order Megatron-LM creates them; for a
 *       plain orthogonal kind (tp, dense:dp-cp, ...) that is by smallest member, ascending.
 */
COHORT_API cohort_status_t cohort_layout_group_members(const cohort_layout_spec_t *spec,
                                                       const char *kind, int index, int *members,
                                                       int max, int *nmembers);

/**
 * Which group of @a kind holds world rank @a rank.
 *
 * @param [in]  spec   a parsed spec.
 * @param [in]  kind   as for cohort_layout_ngroups().
 * @param [in]  rank   a world rank, 0 <= rank < world.
 * @param [out] index  the group's index for cohort_layout_group_members(), or -1 when the rank
 *                     is in no group of that kind (embd, pos-embd off the embedding stages).
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a NULL spec or index, an unknown kind or a rank
 *         outside [0, world).
 * @note Pure; never logs.
 */
COHORT_API cohort_status_t cohort_layout_rank_group(const cohort_layout_spec_t *spec,
                                                    const char *kind, int rank, int *index);

/* ------------------------------------------------------------------------------------------ */
/* Collectives and point-to-point. Blocking calls return when the result is in place. Every   */
/* member calls a group's collectives in the same order. Buffers must stay valid until the     */
/* request completes.                                                                          */
/*                                                                                             */
/* Misuse, for every call below: a handle that names no live group (or, for the request calls,*/
/* no request) gives COHORT_ERR_INVALID_ARG (see the top of this file: stale handles, other    */
/* threads, fork children). Input and output that overlap without COHORT_IN_PLACE are          */
/* COHORT_ERR_INVALID_ARG for every collective, checked over the bytes each side spans (count, */
/* or size * count for allgather's output, reduce_scatter's input and alltoall's both), before */
/* anything is posted; one exact alias is well defined and taken as COHORT_IN_PLACE:           */
/* sbuf == rbuf in allreduce, and in reduce at the root. A call refused for its arguments       */
/* posts nothing, so the group stays in step when every member's call is refused alike.       */
/* Buffers may be at any address: host reductions load and store elements one by one where a  */
/* buffer is not aligned to its element type.                                                  */
/*                                                                                             */
/* CUDA buffers: every buffer may be host memory or CUDA device memory (managed memory counts */
/* as device memory), detected per buffer per call; host and device buffers mix in one call.  */
/* Streams: cohort uses streams of its own and never waits on the caller's. So (1) the data  */
/* of a device buffer must be ready when the call is made: synchronize the stream that wrote  */
/* it (cudaStreamSynchronize, or an event) before calling; (2) the result is ready when a     */
/* blocking call returns or cohort_test/cohort_wait reports the request complete, for every   */
/* stream (cohort's own work on it is finished then); (3) the caller must not write a buffer  */
/* of a pending request from any stream. Without a device (or COHORT_CUDA=off) every buffer   */
/* is host memory. See docs/cuda.md.                                                          */
/* ------------------------------------------------------------------------------------------ */

/**
 * Return once every member has entered the barrier.
 * @note Like MPI_Barrier, it orders nothing else: a message sent before it may still be on its
 *       way after it (same-node barriers go through shared memory, not behind the message).
 *       To know a message has arrived, receive it, or have its receiver say so.
 */
COHORT_API cohort_status_t cohort_barrier(cohort_group_t *g);
COHORT_API cohort_status_t cohort_bcast(cohort_group_t *g, void *buf, size_t count,
                                        cohort_dtype_t dt, int root);
/**
 * Combine every member's @a count elements with @a op; the result lands in the root's rbuf.
 * @param [in]  sbuf  this member's contribution; COHORT_IN_PLACE at the root only (its rbuf
 *                    holds its contribution). Never modified.
 * @param [out] rbuf  the result, significant at the root only (may be NULL elsewhere).
 * @return COHORT_ERR_INVALID_ARG for COHORT_AVG on an integer dtype, among others (logged).
 * @note count 0 is legal and every member must still call. Float results depend on the order
 *       of combination, which is fixed for a given group, count and algorithm.
 */
COHORT_API cohort_status_t cohort_reduce(cohort_group_t *g, const void *sbuf, void *rbuf,
                                         size_t count, cohort_dtype_t dt, cohort_op_t op, int root);
/**
 * Combine every member's @a count elements with @a op; every member receives the result.
 * @param [in]  sbuf  this member's contribution, or COHORT_IN_PLACE (rbuf holds it). Never
 *                    modified.
 * @param [out] rbuf  @a count elements of result.
 * @note Every member ends with bitwise identical results, floats included. COHORT_AVG (floats
 *       only) divides the sum by the group size once, where the sum is final.
 */
COHORT_API cohort_status_t cohort_allreduce(cohort_group_t *g, const void *sbuf, void *rbuf,
                                            size_t count, cohort_dtype_t dt, cohort_op_t op);
/** @param count elements contributed by each rank; rbuf holds size * count. */
COHORT_API cohort_status_t cohort_allgather(cohort_group_t *g, const void *sbuf, void *rbuf,
                                            size_t count, cohort_dtype_t dt);
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
COHORT_API cohort_status_t cohort_reduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf,
                                                 size_t count, cohort_dtype_t dt, cohort_op_t op);
/** @param count elements sent to each peer. */
COHORT_API cohort_status_t cohort_alltoall(cohort_group_t *g, const void *sbuf, void *rbuf,
                                           size_t count, cohort_dtype_t dt);

/**
 * Point-to-point within a group. Messages from one sender on one group are matched in the
 * order they were sent, by (peer, tag). tag must be >= 0.
 * @return COHORT_ERR_INVALID_ARG (logged) for COHORT_IN_PLACE or NULL (count > 0) as buf, a
 *         peer out of range (COHORT_ANY_SOURCE is a receive's only), a negative tag, an unknown
 *         dtype, or a handle that names no live group.
 * @note The first send to a peer wires an endpoint to it (one PMIx lookup), in the background:
 *       the send waits inside progress, no call blocks on it. A receive from a peer that
 *       finalized still gets what it sent before; one that nothing queued can satisfy fails
 *       with COHORT_ERR_PEER_FAILED. A blocking cohort_send to this rank itself of more than an
 *       eager message completes only once it is received, which only this thread can post:
 *       it waits for ever (or COHORT_TIMEOUT, counted from COHORT_WATCH_S on); past
 *       COHORT_WATCH_S the log says that it waits on a receive this same thread must post.
 *       Post the receive first (cohort_irecv), or send with cohort_isend.
 */
COHORT_API cohort_status_t cohort_send(cohort_group_t *g, const void *buf, size_t count,
                                       cohort_dtype_t dt, int peer, int tag);
COHORT_API cohort_status_t cohort_recv(cohort_group_t *g, void *buf, size_t count,
                                       cohort_dtype_t dt, int peer, int tag);

/* Nonblocking twins: same arguments, plus the request to test/wait/free. */
COHORT_API cohort_status_t cohort_ibarrier(cohort_group_t *g, cohort_request_t **req);
COHORT_API cohort_status_t cohort_ibcast(cohort_group_t *g, void *buf, size_t count,
                                         cohort_dtype_t dt, int root, cohort_request_t **req);
COHORT_API cohort_status_t cohort_ireduce(cohort_group_t *g, const void *sbuf, void *rbuf,
                                          size_t count, cohort_dtype_t dt, cohort_op_t op, int root,
                                          cohort_request_t **req);
COHORT_API cohort_status_t cohort_iallreduce(cohort_group_t *g, const void *sbuf, void *rbuf,
                                             size_t count, cohort_dtype_t dt, cohort_op_t op,
                                             cohort_request_t **req);
COHORT_API cohort_status_t cohort_iallgather(cohort_group_t *g, const void *sbuf, void *rbuf,
                                             size_t count, cohort_dtype_t dt,
                                             cohort_request_t **req);
COHORT_API cohort_status_t cohort_ireduce_scatter(cohort_group_t *g, const void *sbuf, void *rbuf,
                                                  size_t count, cohort_dtype_t dt, cohort_op_t op,
                                                  cohort_request_t **req);
COHORT_API cohort_status_t cohort_ialltoall(cohort_group_t *g, const void *sbuf, void *rbuf,
                                            size_t count, cohort_dtype_t dt,
                                            cohort_request_t **req);
COHORT_API cohort_status_t cohort_isend(cohort_group_t *g, const void *buf, size_t count,
                                        cohort_dtype_t dt, int peer, int tag,
                                        cohort_request_t **req);
COHORT_API cohort_status_t cohort_irecv(cohort_group_t *g, void *buf, size_t count,
                                        cohort_dtype_t dt, int peer, int tag,
                                        cohort_request_t **req);

/**
 * Advance outstanding work and report whether @a req has finished.
 * @param [out] done  1 when finished (the return value is then the request's final status).
 * @return COHORT_OK (or the request's error once done), COHORT_ERR_INVALID_ARG for NULL, a
 *         freed or never-made request, or done NULL (logged; *done is not written).
 * @note Never blocks: address lookups, endpoint creation and the exchange plugins' first-use
 *       steps advance in the background; one call takes microseconds whatever peers do.
 */
COHORT_API cohort_status_t cohort_test(cohort_request_t *req, int *done);

/**
 * Wait until @a req finishes, progressing as configured by COHORT_PROGRESS.
 * @return the request's status; COHORT_ERR_TIMEOUT when COHORT_TIMEOUT seconds pass first
 *         (logged with what was awaited); the request then stays valid: wait again, or free it
 *         to cancel it. COHORT_ERR_INVALID_ARG for NULL or a freed or never-made request
 *         (logged).
 */
COHORT_API cohort_status_t cohort_wait(cohort_request_t *req);

/**
 * Release a request. A request that has not finished is cancelled first: its receives stop
 * matching; a point-to-point send is cancelled with its receiver (below); a collective is
 * cancelled with COHORT_ERR_REVOKED, which revokes its group (the other members would be out of
 * step). Accepts NULL; a freed or foreign handle is logged and ignored.
 *
 * @note Free means finished: when this returns, no process reads or writes the request's
 *       buffers again. A point-to-point send that has not finished tells its receiver
 *       (a cancel message) and progress runs inside this call until the receiver has answered:
 *       a message it had not matched yet is dropped, and the receive that matches it later
 *       ends COHORT_ERR_CANCELED; a single-copy read (COHORT_CMA) stops between two pieces and
 *       the receive ends COHORT_ERR_CANCELED, holding only bytes written before this call; a
 *       rendezvous UCX is already fetching cannot be stopped, so the receive ends COHORT_OK
 *       with the whole message and this call returns once the fetch is over. The group is not
 *       revoked: the next call between the two ranks works. The wait ends early only when the
 *       receiver is declared dead; it is bounded by COHORT_TIMEOUT when set (past that the
 *       peer is named in the log, and it may still read the buffer until it answers), never by
 *       a fixed time, and no endpoint is ever closed by force (a live peer would take that for
 *       this rank's death). A receive being fetched likewise ends before this returns. A
 *       freed handle is recognized as freed for the life of the process, after cohort_finalize
 *       too: a second free is logged and ignored.
 */
COHORT_API void cohort_request_free(cohort_request_t *req);

/**
 * The group rank a finished point-to-point receive got its message from (the one matched, for
 * a receive posted with COHORT_ANY_SOURCE).
 * @return that rank; -1 for a request that is not a finished receive, NULL, or a handle that
 *         names no live request (logged).
 * @note Never communicates.
 */
COHORT_API int cohort_request_source(const cohort_request_t *req);

/**
 * Fail every pending and later operation on @a g with COHORT_ERR_REVOKED, here and on every
 * other member: they are told (a REVOKE message along a tree rooted here, passed on by each
 * member), and their pending and later operations on the group return COHORT_ERR_REVOKED.
 * Returns at once, whether or not peers are alive; the telling goes on inside progress.
 *
 * A group is also revoked by the library, and its members told, when this rank can no longer
 * stay in step with them: a collective that failed or was cancelled, a point-to-point send
 * that failed, a message lost for lack of memory or over COHORT_ORPHAN_LIMIT, the group freed
 * (cohort_group_free) with operations outstanding, a collective's message one member found
 * not to fit (longer than its buffer, another fingerprint: COHORT_ERR_MISMATCH on every
 * member, unlike COHORT_CHECK's agreed mismatch, which leaves the group usable; a
 * point-to-point receive too small for its message fails alone); and when a member failed
 * (COHORT_ERR_PEER_FAILED on every member, groups without that rank untouched).
 * Messages arriving for a revoked group are dropped (counted in
 * cohort_stats_t.messages_dropped). A revoked group stays revoked: free it and create another.
 */
COHORT_API cohort_status_t cohort_group_abort(cohort_group_t *g);

/**
 * The world ranks this process knows to have failed (seen by UCX, or reported by a fellow
 * member of a group), ascending. A rank that finalized normally is not among them, nor, on
 * this node, one whose process still lives after UCX lost the connection to it (it is wired
 * again; see README "When a rank dies").
 * @return how many there are (which may exceed @a max; only @a max are written).
 * @note Never communicates.
 */
COHORT_API int cohort_failed_ranks(const cohort_context_t *ctx, int *world_ranks, int max);

/* ------------------------------------------------------------------------------------------ */
/* Introspection                                                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * The world ranks this process holds a UCX endpoint to, ascending.
 * @return how many there are (which may exceed @a max; only @a max are written).
 * @note Never communicates.
 */
COHORT_API int cohort_wired_peers(const cohort_context_t *ctx, int *world_ranks, int max);

/** What cohort knows about one wired peer (for diagnostics). */
typedef struct {
    int world_rank;
    double wire_us;       /**< time to look up the address and create the endpoint */
    int pmix_lookups;     /**< PMIx lookups made for this peer (0 or 1) */
    char transports[128]; /**< the UCX lanes of the endpoint, e.g. "sysv/memory cma/memory" */
    int same_node;        /**< 1 when the peer runs on this rank's node (launcher's node id) */
    /* Where wire_us went; the lookup's three parts are 0 for a peer wired from a card that
     * was already at hand (fetched before for its pid, or this rank itself). */
    double lookup_retry_us;  /**< the lookup's earlier tries and its waits to ask again */
    double lookup_server_us; /**< its last request, until the exchange's answer arrived */
    double lookup_poll_us;   /**< from that answer until cohort's progress took it */
    int lookup_tries;        /**< requests the lookup made (0: no lookup) */
    double card_us;          /**< reading the card (pid, UCX address) */
    double ep_create_us;     /**< ucp_ep_create, with peer error handling */
    double first_send_us;    /**< from the endpoint's creation until UCX completed the first
                                  send on it (wireup included); -1 while none has */
} cohort_peer_info_t;

/**
 * Describe wired peer @a world_rank.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG when no endpoint to it exists.
 * @note Never communicates.
 */
COHORT_API cohort_status_t cohort_peer_info(const cohort_context_t *ctx, int world_rank,
                                            cohort_peer_info_t *info);

/** A group's shared segment, as this rank sees it (cohort_group_info). */
typedef enum {
    COHORT_SEGMENT_NONE = 0,   /**< none: not every member is on this node, or no call needed
                                    one yet */
    COHORT_SEGMENT_SETTING_UP, /**< the group's first call on it is making or reaching it */
    COHORT_SEGMENT_READY,      /**< every member reached it: same-node collectives run there,
                                    with no message and no endpoint */
    COHORT_SEGMENT_FAILED      /**< a member could not reach it: the group runs on messages */
} cohort_segment_state_t;

/** Which path a group's collectives take on this rank (for diagnostics: cohort_peers). */
typedef struct {
    int node_local;                 /**< 1: every member runs on this node; 0: not; -1: not
                                         known yet (asked at the group's first collective) */
    cohort_segment_state_t segment; /**< its shared segment */
    const char *last_algorithm;     /**< the algorithm of the last collective posted on it
                                         here (cohort_algo_info's names: "shm", "ring", ...);
                                         NULL before the first. Valid for the library's life. */
    uint32_t collectives;           /**< collectives posted on it here */
} cohort_group_info_t;

/**
 * Describe which path @a group's collectives took on this rank.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG for a NULL or freed group, or a NULL @a info.
 * @note Never communicates.
 */
COHORT_API cohort_status_t cohort_group_info(const cohort_group_t *group,
                                             cohort_group_info_t *info);

/** Where a rank runs, as the launcher says (PMIx job data), or under cohort_init_exchange() as
 *  the rank put it in the store (host name, boot id, PID namespace; node_id UINT32_MAX). */
typedef struct {
    int world_rank;
    int same_node;     /**< 1 when it runs on this rank's node (PMIX_LOCAL_PEERS; under
                            cohort_init_exchange(), the same host name, boot id and PID
                            namespace) */
    uint32_t node_id;  /**< the launcher's node id, UINT32_MAX when it does not say (Open MPI
                            4.1 gives it for this node's ranks only) */
    char hostname[64]; /**< the node's host name ("" when the launcher does not say) */
} cohort_node_info_t;

/**
 * Describe where world rank @a world_rank runs (any rank of the job, this one included).
 * @param [out] info  set only on success.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG for a bad context, rank or NULL info (logged);
 *         COHORT_ERR_PMIX when the launcher does not say; under cohort_init_exchange(),
 *         COHORT_ERR_TIMEOUT (logged) when the rank never put its card.
 * @note Answered from the job data the local PMIx client holds: no message to any peer. A
 *       singleton is node 0 of its own host. Under cohort_init_exchange(), from the rank's key,
 *       read once (a get), waited for within COHORT_TIMEOUT when the rank has not put it yet.
 */
COHORT_API cohort_status_t cohort_node_info(const cohort_context_t *ctx, int world_rank,
                                            cohort_node_info_t *info);

/** Counters of one context, for diagnostics and benchmarks. */
typedef struct {
    uint64_t groups_created;    /**< groups this rank created (world included) */
    uint64_t pmix_lookups;      /**< peer addresses fetched through the exchange plugin */
    uint64_t endpoints;         /**< UCX endpoints currently held */
    uint64_t messages_sent;     /**< active messages sent */
    uint64_t messages_dropped;  /**< messages nobody could take, dropped: for groups not
                                     created here (over COHORT_ORPHAN_LIMIT), freed or revoked */
    const char *pmix_plugin;    /**< exchange plugin in use ("singleton" without a server,
                                     "user" under cohort_init_exchange()) */
    const char *progress;       /**< "yield", "spin" or "block" */
    uint64_t messages_rejected; /**< messages dropped as malformed: a bad header, or a sender
                                     that is not a member of the group the message names */
    uint64_t peers_failed;      /**< world ranks known failed (cohort_failed_ranks) */
    uint64_t single_copies;     /**< single copies this rank made (COHORT_CMA): one per
                                     piece of COHORT_CMA_CHUNK bytes of a message received
                                     so, and one per chunk a same-node ("direct") collective
                                     read from a peer's buffer or wrote into one */
    uint64_t single_copy_bytes; /**< the bytes of those */
    uint64_t cuda_ipc_opens;    /**< other members' device allocations this rank mapped
                                     through CUDA IPC (cudaIpcOpenMemHandle) */
    uint64_t cuda_ipc_reuses;   /**< mappings of those kept from an earlier call and used
                                     again (COHORT_CUDA_IPC_CACHE) */
    uint64_t cuda_staged_calls; /**< collectives whose device buffers were copied whole to
                                     host memory and back around the algorithm */
    uint64_t cuda_staged_xfers; /**< transfers of device data staged one by one through
                                     page-locked memory (COHORT_CUDA_PIPELINE_MIN, p2p) */
    uint64_t cuda_ipc_calls;    /**< collectives this rank ran through CUDA IPC */
    uint64_t cuda_ipc_votes;    /**< collectives whose members voted on CUDA IPC first
                                     (COHORT_CUDA_IPC=auto, COHORT_CUDA_IPC_MIN) */
} cohort_stats_t;

COHORT_API cohort_status_t cohort_stats(const cohort_context_t *ctx, cohort_stats_t *stats);

/** What this process can do with CUDA buffers. */
typedef struct {
    int built;        /**< 1 when this libcohort was built with its CUDA module */
    int devices;      /**< CUDA devices this process sees; 0: none (see reason) */
    int ucx_cuda;     /**< 1 when UCX takes CUDA memory itself; 0: device data is staged
                           through page-locked host buffers */
    int ipc;          /**< 1 when same-node collectives (all but barrier) may go
                           through CUDA IPC: a device, and COHORT_CUDA_IPC=on (always) or
                           auto (large calls on device buffers on every member) */
    char reason[192]; /**< devices == 0: why ("no CUDA device (...)"); "" otherwise */
} cohort_cuda_info_t;

/**
 * Whether device buffers can be passed to this context's calls.
 * @param [in]  ctx  a context
 * @param [out] info filled on success
 * @return COHORT_OK, also when there is no device, no driver or no CUDA support (then
 *         info->devices is 0 and info->reason says which); COHORT_ERR_INVALID_ARG.
 * @note Loads the CUDA module the first time (as the first call with a buffer does); never
 *       communicates. Without a device every buffer is host memory.
 */
COHORT_API cohort_status_t cohort_cuda_info(cohort_context_t *ctx, cohort_cuda_info_t *info);

/**
 * Order the collectives posted on @a g from now on after the work of a CUDA stream, instead
 * of the caller synchronizing the stream before each call: a collective posted on @a g waits,
 * before it reads or writes any buffer, for the work enqueued on @a stream when it was posted
 * (its other members wait for it as for any late member). Nothing blocks: a nonblocking call
 * returns at once and its request starts when the stream gets there.
 * @param [in] g       a group
 * @param [in] stream  a cudaStream_t, as a pointer; NULL (the default) for none: the data must
 *                     then be ready when the call is made
 * @return COHORT_OK; COHORT_ERR_INVALID_ARG for a bad group; COHORT_ERR_UNSUPPORTED for a
 *         stream where this process has no CUDA device (logged).
 * @note The result is ready for every stream when a blocking call returns or the request
 *       completes, as without a stream: @a stream is not made to wait for cohort. Point-to-point
 *       calls do not look at it. One setting per group: set it again whenever the stream
 *       that produces the data changes (no message; no CUDA call after the first).
 */
COHORT_API cohort_status_t cohort_group_set_stream(cohort_group_t *g, void *stream);

/* ------------------------------------------------------------------------------------------ */
/* Library information                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** @return the library's version, "major.minor.patch" (static); the major and minor numbers
 *          are COHORT_VERSION_MAJOR and COHORT_VERSION_MINOR of the header it was built with. */
COHORT_API const char *cohort_version(void);

/** One collective algorithm of the library's table. */
typedef struct {
    int id;                  /**< stable: an algorithm keeps its id; ids are never reused */
    const char *collective;  /**< "allreduce", "bcast", ... */
    const char *name;        /**< the value COHORT_ALGO_<COLLECTIVE> takes to force it */
    const char *description; /**< one line */
} cohort_algo_info_t;

/** @return how many algorithms the table holds. */
COHORT_API int cohort_algo_count(void);

/**
 * Describe algorithm @a index of the table (0 <= index < cohort_algo_count()).
 * @param [out] info  set only on success; its strings are static.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG for an index out of range or a NULL info.
 * @note Needs no context; thread-safe.
 */
COHORT_API cohort_status_t cohort_algo_info(int index, cohort_algo_info_t *info);

/** A tuning parameter of one algorithm (segment size, window, ...), set from the environment. */
typedef struct {
    const char *name;        /**< "segment", "window" */
    const char *env;         /**< the variable that sets it: COHORT_ALGO_<COLL>_<ALGO>_<NAME> */
    size_t default_value;    /**< what the library uses when the variable is unset */
    size_t min, max;         /**< the accepted range (a value outside it fails cohort_init) */
    int is_bytes;            /**< a size in bytes (k/m/g suffixes accepted), else a count */
    const char *description; /**< one line: what it trades, and why the default */
} cohort_algo_param_t;

/** @return how many tuning parameters algorithm @a index has (0 for none or a bad index). */
COHORT_API int cohort_algo_param_count(int index);

/**
 * Describe tuning parameter @a param of algorithm @a index.
 * @param [out] info  set only on success; its strings are static.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG for an index out of range or a NULL info.
 * @note Needs no context; thread-safe. The value in effect is read at cohort_init.
 */
COHORT_API cohort_status_t cohort_algo_param_info(int index, int param, cohort_algo_param_t *info);

/** One COHORT_* environment setting the library reads (besides the algorithm parameters). */
typedef struct {
    const char *name;   /**< "COHORT_TIMEOUT"; COHORT_ALGO_<COLL> stands for the family */
    const char *values; /**< what it accepts, e.g. "seconds, 0 = none" */
    const char *default_value;
    const char *description; /**< one line */
} cohort_setting_t;

/** @return how many settings cohort_setting_info() describes. */
COHORT_API int cohort_setting_count(void);

/**
 * Describe setting @a index (0 <= index < cohort_setting_count()).
 * @param [out] info  set only on success; its strings are static.
 * @return COHORT_OK, or COHORT_ERR_INVALID_ARG for an index out of range or a NULL info.
 * @note Needs no context; thread-safe. Values are read at cohort_init.
 */
COHORT_API cohort_status_t cohort_setting_info(int index, cohort_setting_t *info);

/* 16-bit floats as COHORT_FLOAT16 (IEEE 754 binary16) and COHORT_BFLOAT16 hold them, as raw
 * bits. Float to 16 bits rounds to nearest, ties to even, overflows to infinity as IEEE says;
 * NaNs stay NaN (quiet). These are the conversions the reductions use. Pure; thread-safe. */

/** @return the binary16 value @a h as a float (exact). */
COHORT_API float cohort_float16_to_float(uint16_t h);
/** @return @a f rounded to binary16. */
COHORT_API uint16_t cohort_float_to_float16(float f);
/** @return the bfloat16 value @a b as a float (exact). */
COHORT_API float cohort_bfloat16_to_float(uint16_t b);
/** @return @a f rounded to bfloat16. */
COHORT_API uint16_t cohort_float_to_bfloat16(float f);

#ifdef __cplusplus
}
#endif
#endif /* COHORT_H */
