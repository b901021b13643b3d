/*
 * The collective framework. Every algorithm is a state machine: `start` sets up its state,
 * `progress` advances it as far as it can without waiting and returns COHORT_OK when done,
 * COHORT_INPROGRESS to be called again, or an error. A blocking collective is "post, then
 * wait", so blocking and nonblocking calls share one code path.
 */
#ifndef COHORT_COLL_H
#define COHORT_COLL_H

#include <stdio.h>
#include "coll/coll_type.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/request.h"

typedef struct {
    cohort_coll_type_t coll;
    const void *sbuf; /* COHORT_IN_PLACE allowed where MPI allows it */
    void *rbuf;
    size_t count;
    cohort_dtype_t dt;
    cohort_op_t op;
    int root;
    size_t esize; /* bytes per element */
} cohort_coll_args_t;

/* A tuning parameter, set by COHORT_ALGO_<COLL>_<ALGO>_<NAME> (env), read at init. */
#define COHORT_COLL_KNOBS_MAX 3
typedef struct {
    const char *name; /* lower case, as shown */
    const char *env;
    size_t def, min, max;
    int bytes;
    const char *description;
} cohort_coll_knob_t;

/* What a group allows beyond messages (cohort_coll_node_local). */
#define COHORT_NODE_DIRECT 1 /* every member on this node, single copy allowed (path/direct.c) */
/* The same, and calls start in the order they were posted (not so under COHORT_CHECK=1): the
 * members may share a segment (shm_seg.c), which path/shm.c runs on and which fences
 * path/direct.c's writes into the others' buffers. */
#define COHORT_NODE_SHM 2
/* Every member is on this node, whether or not single copy may be tried (CUDA IPC's need). */
#define COHORT_NODE_SAME 4

/* What an algorithm's usable() says of a case (select.c). */
enum { COHORT_COLL_NO, COHORT_COLL_TAKE, COHORT_COLL_VOTE };

typedef struct cohort_coll_algo {
    const char *name;
    const char *description;
    cohort_coll_type_t coll;
    /* Its public id (cohort_algo_info, cohort_bench algorithms): fixed once given, so users'
     * scripts and stored results keep their meaning; a new row takes the next unused number.
     * Unique over every table (check_select checks it). */
    int id;
    /* Bytes of state (starting with cohort_coll_base_t) for these arguments on a group. */
    size_t (*state_size)(const cohort_coll_args_t *args, int gsize);
    cohort_status_t (*start)(cohort_request_t *req);
    cohort_status_t (*progress)(cohort_request_t *req);
    /* Optional: free what start allocated (scratch buffers). Called once, when the request is
     * released and no UCX operation still points into it. */
    void (*cleanup)(cohort_request_t *req);
    /* Optional: the comm ranks this rank will send to, so their wiring starts at post and
     * overlaps (one round trip, not one per step). Writes at most max; returns how many. */
    int (*peers)(const cohort_coll_args_t *args, int gsize, int grank, int *out, int max);
    /* Optional: nonzero when the algorithm cannot run this case; selection moves on to the
     * next rule that matches. @a algo: this row (a family's rows share one decline). */
    int (*decline)(const struct cohort_coll_algo *algo, const cohort_coll_args_t *args, int gsize);
    /* Optional, for an algorithm that depends on settings and the machine (CUDA IPC):
     * COHORT_COLL_NO (selection moves on; @a why, when set, says why, for a user's rule),
     * COHORT_COLL_TAKE, or COHORT_COLL_VOTE: taken instead of what the following rules choose
     * if every member votes so. @a forced: the rule is the user's (COHORT_ALGO_*). Settings and
     * placement only, never this rank's buffers, so every member answers alike. */
    int (*usable)(cohort_context_t *ctx, const cohort_coll_args_t *args, int gsize, int forced,
                  const char **why);
    int nknobs;
    cohort_coll_knob_t knobs[COHORT_COLL_KNOBS_MAX];
    /* Nonzero: takes device buffers itself (path/cuda_ipc.c), so they are not staged. */
    int device;
    /* Nonzero: may run on device buffers as they are, its local copies, reductions and scratch
     * through the cohort_coll_mem_* calls (coll_mem.c) and its transfers staged one by one
     * (proto/xfer_stage.c); otherwise device buffers are staged whole around it (stage.c). */
    int device_ok;
    /* COHORT_NODE_* bits the group must have for this to be chosen (0: any group). */
    int node;
    /* Nonzero: its messages carry descriptors that name the call (cohort_coll_ident_t or shm
     * tags), which every member checks in a round all of them take: they go with fingerprint
     * 0, so that a difference is the members' agreed MISMATCH (the group goes on), not one
     * transfer's (which revokes it). A member that took another algorithm still finds 0 unlike
     * its own fingerprint. */
    int ident;
    /* Nonzero: runs on the group's shared segment where the group has one (COHORT_NODE_SHM);
     * such a call takes its number there at post (shm_seg.h). */
    int segment;
    /* Optional: append to a timeout's description what it waits for beyond its transfers
     * (shared memory); returns the new length used. */
    size_t (*describe)(const cohort_request_t *req, char *buf, size_t len, size_t used);
    /* Optional: the call is given up here (cancelled, or freed after a timeout), with
     * @a status: tell the members that wait on it in shared memory, where no message says so. */
    void (*abandon)(cohort_request_t *req, cohort_status_t status);
    /* A row of a same-node family (src/coll/path/): what this collective does differently, a
     * table of the family's own type (path/<family>.h) that only the family's code reads;
     * NULL for the other rows. */
    const void *family;
} cohort_coll_algo_t;

/* The members' agreement before a collective (check.c): on its arguments (COHORT_CHECK=1),
 * and on whether every member's buffers are on the device (the CUDA IPC vote,
 * COHORT_CUDA_IPC=auto), in one exchange when both are asked. */
#define COHORT_CHECK_FIELDS 5 /* the arguments, which must be alike */
#define COHORT_CHECK_DEVICE 5 /* then the vote: its lowest value is the answer */
/* then, in a group's first collective, the settings that must be alike (settings.c) */
#define COHORT_CHECK_SETTINGS  6
#define COHORT_SETTINGS_FIELDS 6
#define COHORT_AGREE_FIELDS    (COHORT_CHECK_SETTINGS + COHORT_SETTINGS_FIELDS)
typedef struct {
    int64_t lo[COHORT_AGREE_FIELDS], hi[COHORT_AGREE_FIELDS];
} cohort_coll_check_vals_t;

typedef struct {
    int active;   /* the agreement is under way; the algorithm has not started */
    int settings; /* it carries the must-match settings (the group's first collective) */
    int round, dist;
    uint32_t fingerprint; /* the collective's, set aside while the agreement runs */
    int64_t mine[COHORT_AGREE_FIELDS];
    cohort_coll_check_vals_t acc, in, out;
    cohort_xfer_t x[2];
} cohort_coll_check_t;

/* Device buffers staged through page-locked host memory (stage.c); all NULL/0 when the call
 * passed host buffers. */
typedef struct {
    void *host_s;    /* the staged send buffer */
    void *host_r;    /* the staged receive buffer, which the algorithm sees as rbuf */
    void *user_rbuf; /* the caller's device rbuf, written from host_r at completion */
    size_t rout;     /* bytes to write there; 0 once the copy is enqueued */
    uint64_t in;     /* the copies to the host: their mark until a poll finds them over (stage.c) */
    uint64_t out;    /* the copy's ticket until a poll finds it over (stage.c) */
} cohort_coll_stage_t;

/* One task of a collective's schedule (schedule.c): posted once, then progressed until it
 * returns COHORT_OK (done) or an error; COHORT_INPROGRESS: called again. */
typedef struct {
    const char *name; /* what the call waits for while it runs (timeout messages) */
    cohort_status_t (*post)(cohort_request_t *req);
    cohort_status_t (*progress)(cohort_request_t *req);
} cohort_coll_task_t;
#define COHORT_COLL_TASKS_MAX 8

/* Every algorithm's state begins with this. */
typedef struct {
    const struct cohort_coll_algo *algo;
    cohort_coll_args_t args;
    uint32_t seq;         /* the group's collective number */
    uint32_t fingerprint; /* of (collective, dtype, op, count, root): its messages carry it */
    int step;             /* the algorithm's current step, for timeout messages */
    int agreed; /* the error returned is every member's alike (path/direct.c): they stay in step */
    int nxfers;
    cohort_xfer_t *xfers;       /* every transfer the algorithm may post, for cancel/describe */
    cohort_coll_check_t *check; /* COHORT_CHECK=1 only: after the algorithm's state */
    cohort_coll_stage_t stage;
    int on_device; /* runs on this rank's device buffers (coll_mem.c) */
    /* COHORT_CUDA_IPC=auto: the algorithm taken instead of algo when every member votes that
     * its buffers are on the device (path/cuda_ipc.c); NULL once decided, or without a vote */
    const struct cohort_coll_algo *vote_algo;
    /* cohort_group_set_stream: the work of the caller's stream at post, which the collective
     * waits for before it starts (0: none, or over); its buffers are staged after it */
    uint64_t stream_mark;
    /* The call's number on the group's shared segment, taken at post in posting order
     * (shm_seg.h); 0: it does not run there. */
    uint64_t seg_call;
    /* The group's first collective runs on the segment: its settings are agreed in the
     * segment's setup (check holds the state), not in an agreement round before it. */
    int settle;
    /* The receives posted wait for nothing in particular: the segment's setup posts one per
     * member for a "no" that does not come when all goes well, so a timeout message names the
     * members not attached (shm_seg.c), not these. */
    int rx_standby;
    /* A call on the segment: the algorithm it runs on messages instead if the segment cannot
     * be set up (every member learns so alike, seg_refused), and the bytes of state the
     * algorithm part has room for (the larger of the two's, as for a vote). */
    const struct cohort_coll_algo *fallback;
    int seg_refused;
    /* It would have run on the segment, but it is one of the group's first COHORT_SHM_DEFER
     * such calls: it runs on messages, and its progress sets the segment up beside it
     * (cohort_shm_early). */
    int seg_defer;
    size_t algo_bytes;
    cohort_status_t mem_status; /* the first failure of a cohort_coll_mem_* call */
    /* The schedule (schedule.c): its tasks, the one running, whether that one is posted. */
    const cohort_coll_task_t *tasks[COHORT_COLL_TASKS_MAX];
    int ntasks, task, task_posted;
} cohort_coll_base_t;

static inline cohort_coll_base_t *cohort_coll_base(cohort_request_t *req)
{
    return (cohort_coll_base_t *)req->state;
}

/* Post one message of a collective step; peers are group ranks. */
cohort_status_t cohort_coll_send(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 const void *buf, size_t len);
cohort_status_t cohort_coll_recv(cohort_request_t *req, cohort_xfer_t *x, int peer, int step,
                                 void *buf, size_t len);
/* One round of a flat exchange at @a step: with every other member (@a root < 0), or from
 * @a root to the others. Receive k lands at rx + k * rx_each, in slot x[k]; the send to k is
 * slot x[n + k]. Posted once (*posted set), then COHORT_INPROGRESS until every slot is done;
 * *posted is cleared on success, for the next round. */
cohort_status_t cohort_coll_flat_round(cohort_request_t *req, cohort_xfer_t *x, int *posted,
                                       int step, int root, void *rx, size_t rx_each, const void *tx,
                                       size_t tx_len);
/* Returns COHORT_INPROGRESS while any of xs[0..n) is pending, else the first error or OK. */
cohort_status_t cohort_coll_xfers_status(const cohort_xfer_t *xs, int n);

/* Peers of the common shapes, for algorithms' peers(): the right neighbour of a ring; the
 * ranks me + sign * 2^k (mod n) of dissemination and Bruck. Nothing when count is 0. */
int cohort_coll_peers_ring(const cohort_coll_args_t *a, int n, int me, int *out, int max);
int cohort_coll_peers_dist(int n, int me, int sign, int *out, int max);

/* The arguments (coll_args.c): COHORT_OK, or INVALID_ARG/UNSUPPORTED with the reason logged;
 * fills a->esize. Whether the collective has an op or a root; the fingerprint members compare. */
cohort_status_t cohort_coll_validate(const cohort_comm_t *g, cohort_coll_args_t *a);
int cohort_coll_has_op(cohort_coll_type_t c);
int cohort_coll_has_root(cohort_coll_type_t c);
uint32_t cohort_coll_fingerprint(const cohort_coll_args_t *a);
/* A collective as a request of the engine (coll_ops.c). */
extern const cohort_request_ops_t cohort_coll_ops;

/* Whether the group's collective number @a seq is the one whose agreement carries the settings
 * every member must share (settings.c): the group's first. */
static inline int cohort_coll_carries_settings(uint32_t seq)
{
    return seq == 0;
}

size_t cohort_coll_check_size(void);
/* Start the agreement (the algorithm starts once it is over): it checks the arguments under
 * COHORT_CHECK=1, and carries this rank's vote when the request has a vote_algo. */
cohort_status_t cohort_coll_check_start(cohort_request_t *req, cohort_coll_check_t *check);
/* A group's first collective on its shared segment agrees on the settings there, with no
 * message (shm_seg.c): cohort_coll_check_arm makes the state (this rank's values in mine) and
 * posts only the first round's receive, from group rank r - 1, to which a member that took the
 * message path (its settings differ) sends first; cohort_coll_check_tripped says it came. Then
 * cohort_coll_check_join sends this rank's first round and the agreement goes on by messages
 * (cohort_coll_check_progress), which carries the next member along the same way. Otherwise,
 * once every member is in the segment, cohort_coll_check_settle takes back the receive and
 * folds every member's settings (n x COHORT_SETTINGS_FIELDS values, group order) into the
 * verdict: COHORT_OK or MISMATCH (the group revoked, logged), alike on every member. */
cohort_status_t cohort_coll_check_arm(cohort_request_t *req, cohort_coll_check_t *check);
int cohort_coll_check_tripped(const cohort_coll_check_t *check);
cohort_status_t cohort_coll_check_join(cohort_request_t *req, cohort_coll_check_t *check);
cohort_status_t cohort_coll_check_settle(cohort_request_t *req, cohort_coll_check_t *check,
                                         const int64_t *vals);
/* The call's schedule (schedule.c), chosen at post once every number is taken: waiting for the
 * group's stream (@a stream), staging after it (@a stage_late), the agreement (@a agree),
 * staging after a vote (@a vote), the algorithm, the group's first-use step over (@a prepare),
 * staging out. _post posts the first task (at the call's post); _progress runs them in turn
 * (the request's progress); _now names the one running, NULL when it is the algorithm or all
 * are done. */
void cohort_coll_schedule(cohort_coll_base_t *b, int stream, int stage_late, int agree, int vote,
                          int prepare);
cohort_status_t cohort_coll_schedule_post(cohort_request_t *req);
cohort_status_t cohort_coll_schedule_progress(cohort_request_t *req);
const char *cohort_coll_schedule_now(const cohort_coll_base_t *b);

/* This rank's must-match settings, hashed, for the agreement (settings.c), @a same_node: the
 * group is on one node (all its members, as every member sees alike); a field's name
 * ("COHORT_CMA") and this rank's value as text, for the message that names a difference. */
void cohort_coll_settings(const cohort_context_t *ctx, int same_node,
                          int64_t vals[COHORT_SETTINGS_FIELDS]);
const char *cohort_coll_settings_name(int f);
void cohort_coll_settings_describe(const cohort_context_t *ctx, int f, char *buf, size_t len);
/* COHORT_INPROGRESS, COHORT_OK (agreed: the algorithm may start; a vote's answer is in
 * acc.lo[COHORT_CHECK_DEVICE]), COHORT_ERR_MISMATCH on every member (logged, naming the
 * field), or a transfer's error. */
cohort_status_t cohort_coll_check_progress(cohort_request_t *req, cohort_coll_check_t *check);

/* What a member's descriptor says of the call it belongs to, for those that read or write its
 * memory directly (path/direct.c, path/cuda_ipc.c): the call's number on the group, its
 * fingerprint, and the bytes of its input and output that it exposes. Every member checks every
 * other's before its first copy and never copies past those lengths (check.c). */
typedef struct {
    uint64_t in_len, out_len;
    uint32_t seq, fingerprint;
} cohort_coll_ident_t;

/* This rank's, from its own arguments: the same on every member of the same call. */
void cohort_coll_ident(const cohort_request_t *req, cohort_coll_ident_t *id);
/* Whether @a its (group rank @a k's) names the same call with the same lengths; logged when
 * not. */
int cohort_coll_ident_same(cohort_request_t *req, const cohort_coll_ident_t *mine,
                           const cohort_coll_ident_t *its, int k);
/* Every other member's, at byte @a off of each of the group's descriptors (@a stride bytes
 * apart from @a descs): whether all are the same as @a mine. Where two members differ every
 * member finds one unlike its own, so all say so. */
int cohort_coll_ident_check(cohort_request_t *req, const cohort_coll_ident_t *mine,
                            const void *descs, size_t stride, size_t off);
/* Every other member's pid (an int32_t at byte @a off of each descriptor) against what that
 * rank published through PMIx (core/address_card.h), before any byte is copied from or into it:
 * COHORT_OK, MISMATCH (logged), COHORT_INPROGRESS while a card is fetched, or why a member
 * is unreachable. cohort_coll_pids_know starts the fetches early (at start). */
void cohort_coll_pids_know(cohort_request_t *req);
cohort_status_t cohort_coll_pids_check(cohort_request_t *req, const void *descs, size_t stride,
                                       size_t off);
/* The same for group rank @a k's descriptor alone (pid @a pid), unlogged: the caller says
 * what a MISMATCH refuses (shm_seg.c: the segment of group rank 0). */
cohort_status_t cohort_coll_pid_check(cohort_request_t *req, int k, int32_t pid);

/* Staging (stage.c): before the algorithm starts, device buffers are replaced in the request's
 * arguments by host copies; at completion the result goes back; at release the copies return
 * to the context's cache. Or, for an algorithm that is device_ok and a call large enough
 * (COHORT_CUDA_PIPELINE_MIN) whose buffers are all on the device, nothing is copied whole: the
 * algorithm runs on them (on_device), its transfers staged one by one. */
cohort_status_t cohort_coll_stage_in(cohort_request_t *req, const cohort_coll_algo_t *algo);
/* COHORT_OK once stage_in's copies are over (the algorithm may start), COHORT_INPROGRESS (the
 * request polled), or the device's error. */
cohort_status_t cohort_coll_stage_in_test(cohort_request_t *req);
cohort_status_t cohort_coll_stage_out(cohort_request_t *req);
/* Whether every buffer this rank passes to the call (those it reads or writes) is device
 * memory: its vote on CUDA IPC. */
int cohort_coll_stage_all_device(cohort_request_t *req);
void cohort_coll_stage_release(cohort_request_t *req);

/* An algorithm's local work on its buffers (coll_mem.c): host loops, or for a request that
 * runs on device buffers (on_device) the CUDA module's copies and kernels and device scratch.
 * A device failure is kept in the request's mem_status (logged), which its next progress
 * returns: the call sites stay as simple as memcpy's. */
void *cohort_coll_mem_scratch(cohort_request_t *req, size_t bytes);
void cohort_coll_mem_release(cohort_request_t *req, void *buf);
void cohort_coll_mem_copy(cohort_request_t *req, void *dst, const void *src, size_t bytes);
/* dst = a op b and AVG's division, with the request's dtype and op. */
void cohort_coll_mem_reduce(cohort_request_t *req, void *dst, const void *a, const void *b,
                            size_t count);
void cohort_coll_mem_finish(cohort_request_t *req, void *buf, size_t count, int nranks);

/* Validate, select an algorithm, post on a communicator. */
cohort_status_t cohort_coll_post(cohort_comm_t *comm, const cohort_coll_args_t *args,
                                 cohort_request_t **req);
/* Post and wait: the blocking collectives. */
cohort_status_t cohort_coll_run(cohort_comm_t *comm, const cohort_coll_args_t *args);

/* The tuning values in effect, by row id and knob (select.c sets them at init: the defaults,
 * then COHORT_ALGO_<COLL>_<ALGO>_<PARAM>). The context's selection begins with them, so that a
 * row reads its own without calling up into selection. */
#define COHORT_ALGOS_MAX 48
typedef struct {
    size_t value[COHORT_ALGOS_MAX][COHORT_COLL_KNOBS_MAX];
} cohort_coll_knobs_t;

/* The value in effect of tuning parameter @a i of the request's algorithm. */
static inline size_t cohort_coll_knob(const cohort_request_t *req, int i)
{
    const struct cohort_coll_algo *algo = ((const cohort_coll_base_t *)req->state)->algo;
    const cohort_coll_knobs_t *knobs = req->ctx->coll;

    return knobs != NULL ? knobs->value[algo->id][i] : algo->knobs[i].def;
}

/* One collective's rows (src/coll/<collective>/table.c), in ascending id, the order in which
 * an unknown COHORT_ALGO_<COLL> name's error lists the valid ones. Selection (select.c) asks
 * these tables and names no row. */
typedef struct {
    cohort_coll_type_t coll;
    int nrows;
    const cohort_coll_algo_t *const *rows;
} cohort_coll_table_t;
extern const cohort_coll_table_t cohort_barrier_table, cohort_bcast_table, cohort_reduce_table,
    cohort_allreduce_table, cohort_allgather_table, cohort_reduce_scatter_table,
    cohort_alltoall_table;

/* Selection (select.c). @a node: the COHORT_NODE_* bits the group has. *vote: an
 * algorithm to take instead if every member votes that its buffers are on the device (CUDA IPC
 * under COHORT_CUDA_IPC=auto), or NULL. */
const cohort_coll_algo_t *cohort_coll_select(cohort_context_t *ctx, const cohort_coll_args_t *args,
                                             int gsize, int node, const cohort_coll_algo_t **vote);
/* The same for a call on @a g, with the group's placement; one that votes, as if the group
 * had no shared segment (its number there is taken at post, and a vote may not use it). */
const cohort_coll_algo_t *cohort_coll_pick(cohort_comm_t *g, const cohort_coll_args_t *args,
                                           const cohort_coll_algo_t **vote);
/* The algorithm a call on @a g takes on messages alone: as if no member could read another's
 * memory (what a group whose segment failed uses from then on); NULL if none is there. */
const cohort_coll_algo_t *cohort_coll_pick_messages(cohort_comm_t *g,
                                                    const cohort_coll_args_t *args);
/* The call's segment could not be set up, on every member alike: it runs on b->fallback from
 * its start instead, in the same state (none of the segment's transfers is in flight). Returns
 * the fallback's first progress, or COHORT_ERR_UNSUPPORTED when it cannot. */
cohort_status_t cohort_coll_fall_back(cohort_request_t *req);

/* One rule of the selection (select.c): the case it matches and the algorithm it names. */
typedef struct {
    cohort_coll_type_t coll;
    int min_n, max_n; /* group sizes, inclusive; 0: no bound */
    int pow2;         /* -1 any size, 1 powers of two only, 0 the others only */
    int total;        /* compare bytes x group size */
    size_t lo, hi;    /* lo <= bytes < hi */
    const cohort_coll_algo_t *algo;
} cohort_coll_rule_t;

/* The default rules of @a coll as parsed into @a ctx's selection (for tests); *n of them. */
const cohort_coll_rule_t *cohort_coll_default_rules(const cohort_context_t *ctx,
                                                    cohort_coll_type_t coll, int *n);
/* The COHORT_NODE_* bits of @a g: whether every member shares this node and single copy may be
 * tried among them; placement and settings only, so every member answers alike (placement
 * asked once, then cached). */
int cohort_coll_node_local(cohort_comm_t *g);
/* Read every COHORT_ALGO_* setting into the context's selection (ctx->coll); an unknown
 * collective or algorithm is an error naming the valid ones. */
cohort_status_t cohort_coll_config(cohort_context_t *ctx, char *err, size_t errlen);

#endif
