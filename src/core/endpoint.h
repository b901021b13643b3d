/*
 * The peer table: a peer is NONE -> LOOKING_UP -> WIRED, or LEFT (it finalized) or FAILED.
 * A transfer to a peer that is not wired waits on the peer's pending list while the address
 * lookup advances inside progress; when the address arrives the endpoint is created and the
 * pending transfers go out. No call here blocks.
 */
#ifndef COHORT_ENDPOINT_H
#define COHORT_ENDPOINT_H

#include "core/context.h"
#include "core/request.h"
#include "mem/arena.h"

typedef enum {
    COHORT_PEER_NONE = 0,   /* no endpoint, no lookup */
    COHORT_PEER_LOOKING_UP, /* address lookup in flight */
    COHORT_PEER_WIRED,      /* endpoint usable */
    COHORT_PEER_LEFT,       /* said goodbye: finalized normally */
    COHORT_PEER_FAILED      /* lookup failed, or UCX reported it unreachable */
} cohort_peer_state_t;

struct cohort_peer {
    cohort_context_t *ctx;
    int rank; /* world rank */
    uint8_t state;
    uint8_t lookups; /* PMIx lookups made for this peer */
    int8_t local;    /* on this node: 1, elsewhere: -1, not asked yet: 0 */
    uint8_t cma_off; /* it refused a single-copy read: send it the data */
    uint8_t ipc_off; /* it could not map our device memory (CUDA IPC): stage what we send it */
    uint8_t heard;   /* it sent us something: told at finalize that we leave, wired or not */
    uint8_t pid_only; /* the lookup in flight is for its pid: no endpoint when it ends */
    /* The protocol table's choice for messages to it, per (memory type, size class): kept and
     * read by proto.c alone (cohort_proto_start), valid while proto_epoch is the table's. */
    uint8_t proto_pick[4];
    uint32_t proto_epoch;
    int32_t pid;     /* its process, from its card (address_card.h); 0 until its address arrived */
    ucp_ep_h ep;
    cohort_pmix_lookup_t *lookup;
    cohort_status_t error; /* why it is FAILED */
    double start;          /* when wiring began */
    float wire_us;
    /* Where wire_us went (cohort_peer_info_t): the lookup's earlier tries, its last request at
     * the server, the wait until progress saw the answer, the card, ucp_ep_create; then the
     * first send on the endpoint. */
    float retry_us, server_us, poll_us, card_us, ep_us, first_send_us;
    uint8_t tries;
    double wired_at;       /* when its endpoint was made */
    void *card;            /* its card, kept after a lookup for its pid only (below) */
    const void *card_addr; /* ... its UCX address, inside card */
    int inflight;              /* UCX sends on ep not completed yet */
    cohort_list_t pending;     /* sends waiting for the endpoint (cohort_xfer_t) */
    cohort_list_t ctl_pending; /* control messages waiting for it (notify.c) */
    cohort_list_t link;        /* in ctx->looking_up */
    cohort_list_t close_link;  /* in ctx->to_close while its failed endpoint waits to close */
    cohort_list_t reset_link;  /* in ctx->resets while UCX's error on ep waits (below) */
    ucp_ep_h reset_ep;         /* ... the endpoint it came on */
    ucs_status_t reset;        /* ... and the error */
    /* Its connection was lost while its process lived (cohort_peer_lost): the endpoint UCX
     * failed waits in ctx->to_close for the next progress pass, and the spell of such losses
     * began at reset_since (the last at reset_last; resets in all). */
    ucp_ep_h dropped_ep;
    double reset_since, reset_last;
    unsigned resets;
    unsigned long long pid_start; /* its process's start time (/proc), once checked */
    /* On another node, where its process cannot be seen: since its connection was lost, it is
     * wired again, and a flush of the new endpoint (which waits for the peer's UCX to accept
     * the connection) says it lives; a second loss first, or none within COHORT_TIMEOUT (10 s
     * unset), fails it. */
    uint8_t suspect;
    double suspect_since;
    cohort_list_t all_link;

    /* Its shared arena (mem/arena.h), from its card with its pid (fd -1: none), and that arena
     * mapped here once a group of ours needs it (coll/shm_seg.c); NULL until then. */
    cohort_arena_ref_t arena;
    cohort_arena_view_t *view;
    uint8_t view_refused; /* mapping it failed once (logged then): not tried again */
};

/* @a obs hears of every peer failure (and wiring) from now on, after those registered
 * before; it stays valid for the context's life. */
void cohort_peer_observe(cohort_context_t *ctx, const cohort_peer_observer_t *obs);
/* The entry for world rank @a rank, made (NONE) when first named; NULL when out of memory. */
cohort_peer_t *cohort_peer_get(cohort_context_t *ctx, int rank);
/* Whether @a peer shares this rank's node: job-level data of the local PMIx server (no message
 * to another node, unlike its node id), asked once per peer. */
int cohort_peer_same_node(cohort_peer_t *peer);
/* Peers a collective will send to: start their lookups now, so they overlap. */
void cohort_peer_want(cohort_peer_t *peer);
/* Watch @a peer: wire it, so that its death shows (keepalive, the endpoint's error), when
 * nothing of ours is wired or wiring to it, and not at finalize. @return whether wiring
 * started. */
int cohort_peer_watch(cohort_peer_t *peer);
/* Start fetching its card for its pid only (a peer this rank reads from but may never send
 * to gets no endpoint); nothing when its pid is known or a lookup is in flight. */
void cohort_peer_know(cohort_peer_t *peer);
/* Whether @a pid is what the peer published as its process (address_card.h): COHORT_OK, MISMATCH,
 * COHORT_INPROGRESS while its card is being fetched (started here), or why it failed. */
cohort_status_t cohort_peer_pid_check(cohort_peer_t *peer, int32_t pid);
/* With lookups in flight and a plugin that can wake us (plugin.h, wake_fd), sleep until one is
 * answered or @a max_s (at most COHORT_LOOKUP_NAP_S) passes, and @return 1; else 0 at once. */
int cohort_peer_lookup_nap(cohort_context_t *ctx, double max_s);
/* A send on the peer's endpoint completed (UCX): the first one's time is kept. */
void cohort_peer_sent(cohort_peer_t *peer);
/* Advance lookups in flight; wire and flush the peers whose address arrived. */
int cohort_peer_progress(cohort_context_t *ctx);
/* Fail the suspects (cohort_peer_lost) not heard back from in time. @return how many. */
int cohort_peer_suspects_check(cohort_context_t *ctx);
/* The peer is gone, seen here: fail what waits on it, revoke the communicators that contain
 * it and tell their members. */
void cohort_peer_fail(cohort_peer_t *peer, cohort_status_t status, const char *why);
/* The same, on another member's word: its communicators are revoked here only. */
void cohort_peer_fail_reported(cohort_peer_t *peer, const char *why);
/* Whether the peer's process is alive, where this rank can tell: on this node, its pid known,
 * the same process as when first checked, not a zombie. 0 when it cannot tell. */
int cohort_peer_alive(cohort_peer_t *peer);
/* UCX lost the connection to @a peer (@a ucs: an endpoint error, a send failed for it). LEFT
 * when it finalized (its mark in a segment); a live process on this node keeps its place: the
 * endpoint is dropped and made again when next needed, unless such losses have gone on longer
 * than COHORT_TIMEOUT (10 s when unset); else FAILED (cohort_peer_fail). Not from inside a
 * UCX callback's own endpoint close: the endpoint is closed at the next progress pass. */
void cohort_peer_lost(cohort_peer_t *peer, ucs_status_t ucs);
/* The peer finalized (its goodbye came, or its mark in a shared segment, @a how): LEFT, and
 * the receives posted from it fail; no communicator is revoked. */
void cohort_peer_left(cohort_peer_t *peer, const char *how);

/* Endpoint errors UCX reported, applied (cohort_peer_fail) once what had already arrived is
 * taken in: a peer that finalized says goodbye and then closes, and its goodbye (or its last
 * message) may come in after the close on another connection. @return how many. */
int cohort_peer_apply_resets(cohort_context_t *ctx);

/* COHORT_FAULT=ep_drop: close a wired peer's endpoint by force now, as UCX does when it loses
 * the connection, and leave the peer to be wired again (outside UCX's callbacks). */
void cohort_peer_drop(cohort_peer_t *peer);
/* Close, by force, the endpoint a live peer's lost connection left (cohort_peer_lost), if
 * any; outside UCX's callbacks. */
void cohort_peer_close_dropped(cohort_peer_t *peer);
/* Close the endpoints of peers that failed, and those dropped (outside UCX's callbacks).
 * @return how many. */
int cohort_peer_close_failed(cohort_context_t *ctx);
/* Finalize: goodbye to every wired peer, then close all endpoints at once (bounded). */
void cohort_endpoint_close_all(cohort_context_t *ctx);
void cohort_peer_table_cleanup(cohort_context_t *ctx);

#endif
