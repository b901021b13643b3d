/*
 * The cuda_ipc family: same-node collectives on device buffers through CUDA IPC
 * (path/cuda_ipc.c runs them all). Each collective's row, every one but barrier, is a file in
 * that collective's folder (allreduce/cuda_ipc.c, ...) that fills in COHORT_CUDA_IPC_ROW.
 */
#ifndef COHORT_COLL_PATH_CUDA_IPC_H
#define COHORT_COLL_PATH_CUDA_IPC_H

#include "coll/coll.h"
#include "mem/gpu.h"

/* A member's descriptor: its input and output as IPC handles, and the call with the lengths,
 * checked before anything is mapped. */
typedef struct {
    cohort_gpu_ipc_t in, out;
    cohort_coll_ident_t id;
} cohort_cuda_ipc_desc_t;

/* The family's state (path/cuda_ipc.c), which a row's hooks read and fill in. */
typedef struct {
    cohort_coll_base_t base;
    int phase;  /* where the call is (path/cuda_ipc.c) */
    int posted; /* the current phase's messages are posted */
    size_t in_bytes, out_bytes;
    char *din, *dout;   /* device input and output this rank exports */
    void *scratch[2];   /* device scratch standing in for host or unexportable buffers */
    int out_is_scratch; /* the result goes to the caller's rbuf at the end */
    void *final_dst;    /* where: the caller's rbuf */
    uint8_t signal;     /* the byte each signal carries */
    uint8_t mapped;     /* whether this rank mapped every buffer of the others it needs */
    uint64_t work;      /* the mark of the device work enqueued and not yet found finished, or 0 */
    int fb_posted;      /* the fallback's transfers are posted */
    char *fb_in;        /* fallback: device scratch for the members' inputs */
    cohort_cuda_ipc_desc_t mine;
    cohort_cuda_ipc_desc_t *peers; /* n descriptors */
    char **in_map, **out_map;      /* n: every member's input and output as mapped here */
    void **opened;                 /* 2n: bases mapped through the IPC cache, to give back */
    uint8_t *sig_rx;               /* 2n: the agreement's and the signal's receive bytes */
    /* then xfers: the rounds' (n receives + n sends each), own rank's slots unused */
} cohort_cuda_ipc_state_t;

/* Every device copy and kernel of a call goes on this lane, in order, and is never waited for
 * inside progress: the family marks the lane after a hook's work and polls the mark. */
#define COHORT_CUDA_IPC_LANE COHORT_GPU_LANE_TO_DEVICE

/* What a cuda_ipc row does that the others do not: its file (<collective>/cuda_ipc.c) fills
 * one in. The family exchanges the descriptors, maps, agrees, signals and falls back; the
 * row says what this member exports, whose buffers it reads, the work on them, and the
 * fallback's messages. */
typedef struct {
    /* At start: s->in_bytes and s->out_bytes, and this member's input and output as
     * exportable device buffers (s->din, s->dout, s->mine.in, s->mine.out), through
     * cohort_cuda_ipc_coll_export. */
    cohort_status_t (*exports)(cohort_request_t *req, cohort_cuda_ipc_state_t *s);
    /* Optional: whether this member reads member @a k's input (NULL: every member's). */
    int (*reads)(const cohort_coll_args_t *a, int me, int k);
    /* Nonzero: this member also writes into every member's output (maps them too). */
    int writes_outputs;
    /* The work on the mapped buffers (s->in_map, s->out_map, s->dout), enqueued on the lane. */
    cohort_status_t (*combine)(cohort_request_t *req, cohort_cuda_ipc_state_t *s);
    /* The fallback, when a member could not map: whether this member combines what it
     * receives (s->fb_in holds every member's input then); where member @a k's message lands
     * here and what this member sends it (NULL: nothing); the work after the messages,
     * enqueued on the lane (optional). */
    int (*fallback_reduces)(const cohort_coll_args_t *a, int me);
    void (*fallback_peer)(const cohort_cuda_ipc_state_t *s, int me, int k, char **rx,
                          const char **tx);
    cohort_status_t (*fallback_end)(cohort_request_t *req, cohort_cuda_ipc_state_t *s);
} cohort_cuda_ipc_row_t;

/* @a user as an exportable device buffer of @a bytes: itself, or scratch slot @a k (0 or 1)
 * holding a copy of its first @a copy bytes (enqueued; the family marks it). */
cohort_status_t cohort_cuda_ipc_coll_export(cohort_request_t *req, cohort_cuda_ipc_state_t *s,
                                            const void *user, size_t bytes, size_t copy, int k,
                                            char **dev, cohort_gpu_ipc_t *ipc);
/* The exports of an exports hook, from s->in_bytes and s->out_bytes: _both, the call's input
 * and rbuf, each its own buffer; _shared, rbuf alone as input and output (in place, or a
 * bcast), its first @a copy bytes copied if it goes to scratch; _apart, rbuf as the input and
 * scratch for the output, copied to rbuf at the end (in place where the result would
 * overwrite input the others still read). */
cohort_status_t cohort_cuda_ipc_coll_export_both(cohort_request_t *req, cohort_cuda_ipc_state_t *s);
cohort_status_t cohort_cuda_ipc_coll_export_shared(cohort_request_t *req,
                                                   cohort_cuda_ipc_state_t *s, size_t copy);
cohort_status_t cohort_cuda_ipc_coll_export_apart(cohort_request_t *req,
                                                  cohort_cuda_ipc_state_t *s);
/* The members' @a count elements at byte @a off of their inputs, combined (this member's
 * first, then in ring order from it), into every one of @a ndst outputs at byte @a dst_off:
 * one kernel, each input read once. */
cohort_status_t cohort_cuda_ipc_coll_combine(cohort_request_t *req, cohort_cuda_ipc_state_t *s,
                                             size_t off, size_t count, char *const *outs, int ndst,
                                             size_t dst_off);
/* The fallback's combination into s->dout: every member's input from s->fb_in, this member's
 * own at byte @a own_off of s->din, in member order. */
cohort_status_t cohort_cuda_ipc_coll_fallback_reduce(cohort_request_t *req,
                                                     cohort_cuda_ipc_state_t *s, size_t own_off);

size_t cohort_cuda_ipc_coll_state_size(const cohort_coll_args_t *args, int n);
cohort_status_t cohort_cuda_ipc_coll_start(cohort_request_t *req);
cohort_status_t cohort_cuda_ipc_coll_progress(cohort_request_t *req);
void cohort_cuda_ipc_coll_cleanup(cohort_request_t *req);
/* By settings and the node only, never this rank's buffers (cohort_coll_algo_t's usable). */
int cohort_cuda_ipc_coll_usable(cohort_context_t *ctx, const cohort_coll_args_t *args, int gsize,
                                int forced, const char **why);

/* A cuda_ipc row: its id, collective and cohort_cuda_ipc_row_t; every one is the same
 * otherwise. */
#define COHORT_CUDA_IPC_ROW(id_, coll_, row_)                                                      \
    {                                                                                              \
        .name = "cuda_ipc",                                                                        \
        .description = "same node: members read each other's device buffers through CUDA IPC",     \
        .coll = coll_, .id = id_, .state_size = cohort_cuda_ipc_coll_state_size,                   \
        .start = cohort_cuda_ipc_coll_start, .progress = cohort_cuda_ipc_coll_progress,            \
        .cleanup = cohort_cuda_ipc_coll_cleanup, .usable = cohort_cuda_ipc_coll_usable,            \
        .device = 1, .node = COHORT_NODE_SAME, .ident = 1, .family = row_,                         \
    }

#endif
