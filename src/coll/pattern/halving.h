/*
 * Recursive halving and doubling as tasks (task.h): the recursive-halving reduce-scatter
 * (reduce_scatter/recursive_halving.c), the recursive-doubling allgather (halving.c) and the
 * whole-vector recursive-doubling allreduce (allreduce/recursive_doubling.c). The
 * reduce_scatter recursive_halving row runs the first alone; allreduce_rabenseifner runs one,
 * then the second; the allreduce recursive_doubling row runs the third.
 *
 * Both work on any group size through the fold of pattern/fold.h: the largest power of two
 * p <= n ranks (the core) run log2(p) rounds; each even rank among the lowest 2r (r = n - p)
 * hands its input to the odd rank above it before the halving, and gets the result back after
 * the doubling. The vector is cut into p core blocks, core rank i ending the halving with block
 * i finished; how it is cut is the caller's (cohort_halving_how_t).
 *
 * Every exchange between two partners (cohort_pair_xchg_t) is cut into up to max_segs messages,
 * all posted at once; a received segment is combined as soon as it, and those before it, are
 * in: the arithmetic overlaps the rest of the transfer and works on data still in cache. A
 * task's round k (the fold's is 0) takes its message steps k x max_segs .. (k + 1) x max_segs - 1.
 * The three tasks run the same loop over their rounds (cohort_rounds_progress), the same fold
 * (cohort_halving_fold_post) and the same hand-back (cohort_halving_unfold_post); what differs
 * is what each round exchanges.
 */
#ifndef COHORT_COLL_PATTERN_HALVING_H
#define COHORT_COLL_PATTERN_HALVING_H

#include "coll/coll.h"
#include "coll/task.h"

/* How the vector is cut into the p core blocks. */
typedef enum {
    /* total elements cut into p near-equal blocks (cohort_coll_block_off): the extras' share
     * is spread over the core (allreduce, where every rank ends with the whole vector). */
    COHORT_HALVING_CUT_CORE,
    /* n equal blocks of total / n, one per group rank; a folded pair's two blocks make one core
     * block, the even rank's first (reduce_scatter, where each rank ends with its own). */
    COHORT_HALVING_CUT_RANKS,
} cohort_halving_how_t;

/* The fold and the cut, as every member computes them alike. */
typedef struct {
    cohort_halving_how_t how;
    size_t total;      /* elements in the vector */
    int p, r, nrounds; /* cohort_coll_fold */
    int newrank;       /* this rank's core rank, -1 for an even rank folded into its partner */
} cohort_halving_cut_t;

/* One exchange with a partner, in segments. The caller sets combine (and dst, mine,
 * peer_is_lower) before the post: each received segment is then combined as
 * dst = lower-ranked op higher-ranked with mine, at the same offsets. */
typedef struct {
    cohort_xfer_t *x;     /* 2 x max_segs slots: sends in [0, S), receives in [S, 2S) */
    int max_segs;         /* S */
    size_t min_seg_elems; /* a segment holds at least this many elements (at least 1) */
    int combine, peer_is_lower;
    int sends_first; /* combine only once the sends are over: dst is (part of) what is sent */
    char *dst;
    const char *mine;
    /* the exchange's own, from its post */
    size_t seg_elems, rlen;
    int nsend, nrecv, nproc;
    char *recv_buf;
    int waiting; /* posted and not yet over */
} cohort_pair_xchg_t;

/* Post the exchange of task @a t's round @a round with group rank @a peer: @a slen elements
 * from @a sbuf, @a rlen into @a rbuf; a NULL buffer skips that direction (its length still
 * counts: both partners cut by the larger of the two, which they agree on, so their segments
 * match). */
cohort_status_t cohort_pair_xchg_post(cohort_request_t *req, const cohort_task_t *t,
                                      cohort_pair_xchg_t *xg, int round, int peer, const void *sbuf,
                                      size_t slen, void *rbuf, size_t rlen);
/* Combine the received segments in order as they land: COHORT_OK once the whole exchange is
 * over (its sends too), COHORT_INPROGRESS, or the first error. */
cohort_status_t cohort_pair_xchg_progress(cohort_request_t *req, cohort_pair_xchg_t *xg);

/* One round of a task made of rounds: post its exchange (xg->waiting then set), or nothing
 * when this rank has no part in the round (xg->waiting left 0: the round is passed over). */
typedef cohort_status_t (*cohort_round_post_fn)(cohort_request_t *req, cohort_task_t *t, int round);
/* Once round @a round's exchange is over: the round to run next (@a round + 1, or past the last
 * to end the task). NULL: always @a round + 1. */
typedef int (*cohort_round_next_fn)(cohort_request_t *req, cohort_task_t *t, int round);

/* A task's progress over its rounds, *round up to @a last, one exchange @a xg at a time:
 * COHORT_OK once the last is over, COHORT_INPROGRESS, or the first error. */
cohort_status_t cohort_rounds_progress(cohort_request_t *req, cohort_task_t *t,
                                       cohort_pair_xchg_t *xg, int *round, int last,
                                       cohort_round_post_fn post, cohort_round_next_fn next);

/* The start of a row made of these tasks: the call's transfers are @a x (@a nxfers slots, lent
 * to its tasks). With nothing to exchange (no elements, a group of one) the input is copied to
 * rbuf and 0 returned: the row lines up no task. Else 1, with @a cut's how and total set. */
int cohort_halving_row_begin(cohort_request_t *req, cohort_xfer_t *x, int nxfers,
                             cohort_halving_how_t how, size_t total, cohort_halving_cut_t *cut);

/* Set @a c up for this rank of the request's group (@a how and @a total set by the caller). */
void cohort_halving_cut_init(const cohort_request_t *req, cohort_halving_cut_t *c);
/* First element of core block @a i; core block p is the end of the vector. */
size_t cohort_halving_off(const cohort_halving_cut_t *c, int i);

/* The fold as a task's round 0: an even extra sends its input @a in (c->total elements) to the
 * odd rank above it, which receives it into @a tmp and combines it into @a acc as
 * (extra's op own @a in), the lower-ranked partner's data first. A rank in no pair posts
 * nothing. */
cohort_status_t cohort_halving_fold_post(cohort_request_t *req, cohort_task_t *t,
                                         cohort_pair_xchg_t *xg, const cohort_halving_cut_t *c,
                                         const void *in, char *acc, char *tmp);
/* The hand-back as a task's round @a round: the odd rank of a folded pair sends @a buf
 * (c->total elements) to the even one below it, which receives it into its @a buf. A rank in no
 * pair posts nothing. */
cohort_status_t cohort_halving_unfold_post(cohort_request_t *req, cohort_task_t *t,
                                           cohort_pair_xchg_t *xg, const cohort_halving_cut_t *c,
                                           int round, void *buf);

/* The recursive-halving reduce-scatter: the fold (round 0: an even extra sends its input, its
 * partner combines it as partner's op own), then rounds mask = p/2 .. 1, where a core rank keeps
 * one half of its window of core blocks, sends the other to core rank newrank ^ mask and
 * combines what it receives (lower-ranked op higher-ranked). At the end this rank's core block
 * of @a acc is final, and finished (AVG's division). An even extra is done once its input has
 * left. Steps: (nrounds + 1) x max_segs. */
typedef struct {
    cohort_halving_cut_t cut; /* how and total set by the parent */
    const void *in;           /* the input, total elements */
    char *acc; /* total elements, partial sums at their places (may be @a in); NULL: the task
                * takes scratch for it (not on an even extra) */
    cohort_pair_xchg_t xchg; /* x, max_segs, min_seg_elems set by the parent */
    /* the task's own */
    const void *cur; /* partial sums over the vector: in until the first combination, then acc */
    int mask, round;
    char *tmp;     /* the largest receive: the whole vector for a fold partner, else a half */
    char *scratch; /* what the task allocated: tmp, and acc when the parent gave none */
} cohort_halving_rs_t;
extern const cohort_task_row_t cohort_task_halving_reduce_scatter;

/* The recursive-doubling allgather on @a buf (total elements, each core rank holding its core
 * block): rounds mask = 1 .. p/2, where a core rank sends its window of core blocks to core rank
 * newrank ^ mask and receives that one's, straight into place; then the unfold, where each odd
 * rank of a folded pair hands the whole vector to the even one. Steps: (nrounds + 1) x max_segs. */
typedef struct {
    cohort_halving_cut_t cut; /* how and total set by the parent */
    void *buf;
    cohort_pair_xchg_t xchg; /* x, max_segs, min_seg_elems set by the parent */
    /* the task's own */
    int mask, round;
} cohort_doubling_ag_t;
extern const cohort_task_row_t cohort_task_doubling_allgather;

/* The whole-vector recursive-doubling allreduce: the fold (round 0), then rounds k = 1 ..
 * nrounds, where a core rank swaps its whole partial result with core rank newrank ^ 2^(k-1) and
 * combines the two (lower-ranked op higher-ranked: both partners compute the same bits) into
 * @a out, finished (AVG's division) after the last; then the hand-back (round nrounds + 1).
 * Every exchange is one message (xchg.max_segs 1): few steps for small vectors.
 * Steps: nrounds + 2. */
typedef struct {
    cohort_halving_cut_t cut; /* how and total set by the parent */
    const void *in;           /* the input, total elements */
    char *out;                /* the result, total elements (may be @a in) */
    cohort_pair_xchg_t xchg;  /* x (2 slots) set by the parent */
    /* the task's own */
    const void *cur; /* the partial result: in until the first combination, then out */
    int round;
    char *tmp; /* the partner's partial result (scratch; not on an even extra) */
} cohort_doubling_ar_t;
extern const cohort_task_row_t cohort_task_doubling_allreduce;

#endif
