/* The context: one UCX worker, the exchange plugin, the peer table, the communicators. */
#ifndef COHORT_CONTEXT_H
#define COHORT_CONTEXT_H

#include <stdatomic.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>
#include "cohort.h"
#include "core/am_header.h"
#include "core/config.h"
#include "mem/arena.h"
#include "mem/room.h"
#include "base/list.h"
#include "core/log.h"
#include "core/proto_ops.h"
#include "base/map.h"
#include "base/poison.h"
#include "pmix_plugins/plugin.h"

#define COHORT_CTX_MAGIC 0xc0c0a11eu

typedef struct cohort_orphans cohort_orphans_t;
typedef struct cohort_comm cohort_comm_t;
typedef struct cohort_peer cohort_peer_t;
typedef struct cohort_xfer cohort_xfer_t;
typedef struct cohort_msg cohort_msg_t;

/* What the layers below the engine's matching hand up, through handlers they register at
 * context creation (never a call up by name). A message kind that is not matched (goodbyes,
 * revocations, single-copy answers) goes to its kind's entry (cohort_am_kind_set). */
typedef struct {
    int header_only; /* a message of it with data is malformed (dropped) */
    /* From any sender: @a data is lent (with @a rndv, UCX's rendezvous descriptor, which a
     * fetch started here consumes). */
    void (*ctl)(cohort_context_t *ctx, const cohort_am_hdr_t *h, void *data, size_t len, int rndv);
    /* For a communicator that exists here, from one of its members (checked first). */
    void (*member)(cohort_comm_t *c, const cohort_am_hdr_t *h);
} cohort_am_kind_t;

/* A matched message whose payload is a descriptor of the sender's memory, not its data
 * (COHORT_HDR_SINGLE_COPY), and one dropped unread: the protocol that offered it
 * (cohort_am_offer_set). */
typedef struct {
    void (*read)(cohort_context_t *ctx, cohort_xfer_t *x, const cohort_msg_t *m);
    void (*unread)(cohort_context_t *ctx, const cohort_am_hdr_t *h, const void *data, size_t len);
    /* Point-to-point message @a seq from group rank @a src of @a c, matched here, was cancelled
     * by its sender: a receive still reading it stops (no byte more is read) and ends
     * COHORT_ERR_CANCELED, its sender answered; one that has read it all ends as it would. */
    void (*cancel)(cohort_context_t *ctx, cohort_comm_t *c, int src, uint32_t seq);
} cohort_am_offer_t;

/* A matched rendezvous message's data, fetched into receive @a x (x->received bytes) by the
 * protocol that receives UCX's messages (cohort_am_fetch_set): @a desc is UCX's descriptor,
 * which the fetch consumes (or releases). */
typedef void (*cohort_am_fetch_t)(cohort_context_t *ctx, cohort_xfer_t *x, void *desc);

/* What the transfers (xfer.c) need of the communicators above them (comm.c registers it at
 * context creation, cohort_comm_init): the transfers sit below the communicators, which route
 * and fail them, so they reach these two through a pointer, never by name. Neither is on the
 * per-message path: the first use runs once per communicator (cohort_comm_use, comm.h, checks
 * inline), a revocation once per failure. */
typedef struct {
    /* the communicator's first operation: start its first-use step (comm.c) */
    cohort_status_t (*first_use)(cohort_comm_t *c);
    /* fail every pending and later operation, and tell the members (cohort_comm_revoke) */
    void (*revoke)(cohort_comm_t *c, cohort_status_t status, const char *why);
} cohort_comm_hooks_t;

/* Who hears that a peer failed, left or was wired (cohort_peer_observe), in the order
 * registered. Wiring (endpoint.c) reaches the matching and the communicators above it only
 * through these hooks, never by name, so that it can be read without them. */
typedef struct {
    const char *name;
    /* @a tell: seen here (its communicators are revoked and their members told), not on
     * another member's word. */
    void (*failed)(cohort_peer_t *peer, cohort_status_t status, const char *why, int tell);
    void (*wired)(cohort_peer_t *peer);  /* optional: its endpoint is usable */
    void (*forget)(cohort_peer_t *peer); /* optional: its entry is freed (context destruction) */
    /* optional: it finalized (its goodbye came): what waits to hear from it fails, since
     * nothing more comes (@a why says so) */
    void (*left)(cohort_peer_t *peer, const char *why);
    /* optional: whether this observer knows, by other means than an endpoint (a mark in a
     * shared segment), that the peer finalized; asked when its endpoint fails */
    int (*finalized)(cohort_peer_t *peer);
} cohort_peer_observer_t;

#define COHORT_AM_KINDS       8
#define COHORT_PEER_OBSERVERS 8

struct cohort_context {
    /* Memory's part (mem/room.h): the CUDA module and pools, the scratch cache, the settings
     * memory reads. FIRST, always: memory reaches it by converting the context pointer, since it
     * may not look into the context (context.c asserts the offset is 0). */
    cohort_mem_room_t mem;
    uint32_t magic;
    cohort_config_t cfg;
    cohort_log_cfg_t log;
    int rank;
    int size;
    int singleton;
    int instance; /* contexts made before this one in this process: keys its PMIx address */

    const cohort_pmix_plugin_t *plugin; /* the exchange: a PMIx module, or the caller's store
                                         * (core/exchange_user.h, name "user", no plugin_dl) */
    void *plugin_dl;
    cohort_pmix_ctx_t *pmix;

    ucp_context_h ucp;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int event_fd;     /* COHORT_PROGRESS=block only */
    /* This process's shared arena (mem/arena.h), named in its card: groups' segments live in
     * it when group rank 0 is here. NULL where the others could not take it (COHORT_SHM_ARENA). */
    cohort_arena_t *arena;

    /* Peers this rank has dealt with (world rank + 1 -> cohort_peer_t*), never one per rank of
     * the world: a rank knows its own groups' peers only. */
    cohort_map_t peers;
    const cohort_am_kind_t *am_kinds[COHORT_AM_KINDS]; /* cohort_msg_kind_t -> its handler */
    const cohort_am_offer_t *am_offer;                 /* COHORT_HDR_SINGLE_COPY payloads */
    cohort_am_fetch_t am_fetch;                        /* rendezvous data of matched messages */
    const cohort_peer_observer_t *peer_obs[COHORT_PEER_OBSERVERS];
    int npeer_obs;
    cohort_list_t peer_list;  /* every cohort_peer_t */
    cohort_list_t looking_up; /* peers whose address lookup is in flight */
    cohort_list_t to_close;   /* failed peers whose endpoint is still open */
    int closing;              /* their force closes UCX has not finished */
    int suspects;             /* peers on other nodes whose connection was lost, wired again
                               * and not heard back from yet (cohort_peer_lost) */
    cohort_list_t resets;     /* peers whose endpoint UCX failed, not applied yet */
    cohort_map_t comms; /* id -> cohort_comm_t* (live communicators) */
    cohort_list_t comm_list;
    cohort_list_t preparing;  /* communicators whose first-use exchange is in flight */
    cohort_map_t orphans;     /* id -> cohort_orphans_t*: messages for groups not created yet */
    size_t orphan_bytes;      /* eager bytes held there */
    uint64_t orphans_dropped; /* messages dropped over COHORT_ORPHAN_LIMIT */
    cohort_poison_t poisoned; /* ids whose messages are dropped on arrival (poison.h) */
    cohort_list_t ready;      /* requests a completion woke, to progress */
    cohort_list_t polling;    /* requests waiting on memory, progressed once a pass */
    cohort_list_t copying;    /* transfers waiting on their staging copy (proto/xfer_stage.c) */
    cohort_list_t notices;    /* revocations to tell members about (notify.c) */
    const cohort_proto_ops_t *proto_ops; /* the protocol layer api composed in (proto_ops.h) */
    const cohort_comm_hooks_t *comm_hooks; /* the communicators' part the transfers call (comm.c) */
    /* The collective layer's step at a group's creation (set by cohort_coll_config; NULL: none):
     * a same-node group's segment is made, or group rank 0's card fetched (coll/shm_seg.h). */
    void (*comm_made)(cohort_comm_t *comm);
    int comm_made_due; /* groups that step left something to do at a first call (shm_seg.h) */
    void *protos;             /* the protocols' own state (proto/proto.c), opaque here */
    cohort_list_t ctl_inflight;  /* control messages UCX has not completed */
    cohort_list_t ctl_resend;    /* control messages a force-close cancelled, to send again */
    double watch_next;           /* when waits are next looked over (COHORT_WATCH_S) */
    unsigned watch_tick;
    cohort_list_t requests; /* every request not yet released (live or user-freed) */
    cohort_list_t req_free; /* released request blocks, for reuse */

    /* Lists the layers above keep here (the core never looks inside). */
    cohort_group_t *world;
    cohort_list_t group_list;
    cohort_list_t group_pool;     /* freed group structs, reused oldest first */
    cohort_map_t group_instances; /* (tag, members) key -> groups created so far */
    cohort_list_t layouts;
    cohort_list_t layout_pool; /* freed layouts, kept until finalize */
    void *coll;                /* the collective layer's per-context state (its selection table) */
    void (*coll_free)(void *coll);

    uint8_t bye_hdr[COHORT_AM_HDR_BYTES]; /* the goodbye's header, read by UCX after the call */
    int fault_count;                      /* passes through cfg.fault_point so far */
    uint64_t stat_groups;
    uint64_t stat_lookups;
    uint64_t stat_msgs;
    uint64_t stat_rejected; /* malformed messages, or from a non-member */
    uint64_t stat_failed;   /* peers marked failed */
    uint64_t stat_cma;      /* single-copy reads (a chunk of a message, or cohort_cma_pull's
                             * whole), and their bytes */
    uint64_t stat_cma_bytes;
    uint64_t stat_stage_calls; /* collectives staged whole (coll/stage.c) */
    uint64_t stat_stage_xfers; /* transfers staged one by one (proto/xfer_stage.c) */
    uint64_t stat_ipc_calls;   /* collectives run through CUDA IPC (coll/path/cuda_ipc.c) */
    uint64_t stat_ipc_votes;   /* votes held on it (COHORT_CUDA_IPC=auto) */
    int in_progress;           /* guards against re-entering progress from a callback */
    pid_t pid;                 /* the process that made it (core/guard.c) */
    unsigned fork_epoch;       /* forks the process had seen then */
    /* The context lock (core/guard.c): a ticket lock, and who holds it. */
    _Atomic uintptr_t guard_owner; /* the thread holding it, 0: none */
    _Atomic uint32_t guard_next;   /* tickets drawn */
    _Atomic uint32_t guard_serving; /* the ticket that holds it */
    int guard_depth;                /* the holder's nested calls */
    int guard_inside;               /* threads inside a call on it: holding it, or waiting in a
                                     * blocking call with it let go */
    uintptr_t guard_last;           /* the thread that took it last */
    int guard_shared;               /* a second thread came in once: waits let it go to sleep */
    int guard_closed;               /* finalize has begun: other threads' calls are refused */
    cohort_list_t retired_link;    /* once finalized: in the process's list of old contexts */
    int finalizing;
};

/* A layer's own reading of the settings, run by cohort_context_create before it connects to
 * anything (so a bad setting fails init without a PMIx session to tear down). */
typedef cohort_status_t (*cohort_context_configure_t)(cohort_context_t *ctx, char *err,
                                                      size_t errlen);

/* Create the engine part of a context: config (then @a configure), the exchange (the caller's
 * store @a ex, checked already, or with @a ex NULL the PMIx plugin COHORT_PMIX_PLUGIN names),
 * the protocol layer @a proto (its init), UCX worker, published address. @a proto is the
 * composer's to give (src/api); NULL, or one that lacks a verb, is COHORT_ERR_INVALID_ARG
 * (logged) before anything is made. */
cohort_status_t cohort_context_create(cohort_context_t **ctx, cohort_context_configure_t configure,
                                      const cohort_proto_ops_t *proto,
                                      const cohort_exchange_t *ex);
/* Tear down what cohort_context_create made, after the layers above released theirs:
 * cancels every request, says goodbye to wired peers, closes endpoints (bounded). Torn down
 * whatever happens; an error is the plugin's finalize failing (e.g. a group destruct). */
cohort_status_t cohort_context_destroy(cohort_context_t *ctx);
/* INVALID_ARG (logged, naming @a what) unless @a ctx is a live context of this process. */
cohort_status_t cohort_context_check(const cohort_context_t *ctx, const char *what);
/* The same, and @a ctx is taken for this thread (core/guard.h): cohort_guard_leave gives it
 * back. */
cohort_status_t cohort_context_enter(cohort_context_t *ctx, const char *what);
/* 1 when this pass through fault point @a point must fail (COHORT_FAULT; fault_inject.c, a leaf the
 * engine's files call without calling into context.c). */
int cohort_fault(cohort_context_t *ctx, cohort_fault_point_t point);
/* The bound for engine-internal waits that must end even when COHORT_TIMEOUT is unset. */
static inline double cohort_context_bound(const cohort_context_t *ctx, double fallback_s)
{
    return ctx->cfg.timeout_s > 0 ? ctx->cfg.timeout_s : fallback_s;
}
/* Translate a UCX status, at the boundary. */
cohort_status_t cohort_ucs_status(ucs_status_t status);

#endif
