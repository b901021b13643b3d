/*
 * cohort_bench <collective>, the timing: cohort's call, the A/B/B/A segments of both libraries,
 * per-call laps (--tail), the largest time over ranks, one size from fill to row, the sweep of
 * sizes and the memcpy bound the rows are held to.
 */
#include "sweep.h"

cohort_status_t bench_cohort_call(const bench_t *b)
{
    cohort_dtype_t dt = b->dt->dt;
    int root = (int)b->root;

    switch (b->coll) {
    case BENCH_BARRIER:
        return cohort_barrier(b->run.world);
    case BENCH_BCAST:
        return cohort_bcast(b->run.world, b->rbuf, b->count, dt, root);
    case BENCH_REDUCE:
        return cohort_reduce(b->run.world, b->sbuf, b->rbuf, b->count, dt, b->op, root);
    case BENCH_ALLREDUCE:
        return cohort_allreduce(b->run.world, b->sbuf, b->rbuf, b->count, dt, b->op);
    case BENCH_ALLGATHER:
        return cohort_allgather(b->run.world, b->sbuf, b->rbuf, b->count, dt);
    case BENCH_REDUCE_SCATTER:
        return cohort_reduce_scatter(b->run.world, b->sbuf, b->rbuf, b->count, dt, b->op);
    default:
        return cohort_alltoall(b->run.world, b->sbuf, b->rbuf, b->count, dt);
    }
}

/* A cohort call failed. UNSUPPORTED and INVALID_ARG come from argument checks and algorithm
 * selection, alike on every rank, so all ranks leave cleanly and rank 0 speaks for them.
 * Anything else may have left peers waiting in a collective: with MPI, abort the job. */
int bench_fail(const bench_t *b, const char *call, cohort_status_t st)
{
    int alike = st == COHORT_ERR_UNSUPPORTED || st == COHORT_ERR_INVALID_ARG;

    if (b->run.rank == 0 || !alike) {
        fprintf(
            stderr, "cohort_bench: rank %d: cohort_%s failed at %zu bytes (%s, %s): %s (%d)%s\n",
            b->run.rank, call, b->bytes, b->dt->name,
            bench_colls[b->coll].has_op ? bench_ops[b->op] : "no op", cohort_strerror(st), (int)st,
            st == COHORT_ERR_UNSUPPORTED ? "; this build has no algorithm for it yet" : "");
    }
    return alike ? 1 : bench_run_abort(&b->run);
}

/* The largest of v[0..k) over all ranks, in place (k <= BENCH_ALLMAX_MAX). */
int bench_allmax(bench_t *b, double *v, int k)
{
    char what[64];
    const char *call;
    cohort_status_t st;

    assert(k <= BENCH_ALLMAX_MAX);
    st = bench_run_allmax(&b->run, v, (size_t)k, &call);
    if (st == COHORT_OK) {
        return 0;
    }
    snprintf(what, sizeof(what), "%s (of the times)", call);
    return bench_fail(b, what, st);
}

/* --tail: call i's time, from the end of the call before it. One clock read per call, and
 * the segment's calls still add up to its time. A predicted branch without --tail. */
static inline void bench_lap(double *laps, long i, double *prev)
{
    double now;

    if (laps != NULL) {
        now = bench_now();
        laps[i] = now - *prev;
        *prev = now;
    }
}

/* iters calls of one library after that library's barrier; adds their time to *acc, and each
 * call's to laps[0..iters) unless laps is NULL. */
static int bench_segment(bench_t *b, int lib, long iters, double *acc, double *laps)
{
    cohort_status_t st;
    double t0, prev;

    if (iters == 0) {
        return 0;
    }
#ifdef BENCH_WITH_MPI
    if (lib == BENCH_LIB_MPI) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = prev = bench_now();
        for (long i = 0; i < iters; i++) {
            bench_mpi_call(b);
            bench_lap(laps, i, &prev);
        }
        *acc += bench_now() - t0;
        return 0;
    }
#endif
    (void)lib;
    st = cohort_barrier(b->run.world);
    if (st != COHORT_OK) {
        return bench_fail(b, "barrier (before timing)", st);
    }
    t0 = prev = bench_now();
    for (long i = 0; i < iters; i++) {
        st = bench_cohort_call(b);
        if (st != COHORT_OK) {
            return bench_fail(b, bench_colls[b->coll].name, st);
        }
        bench_lap(laps, i, &prev);
    }
    *acc += bench_now() - t0;
    return 0;
}

/* Enough iterations for small sizes to be steady, few enough for 16 MiB to stay short. */
static long bench_default_iters(size_t bytes)
{
    long iters;

    if (bytes <= 256 * BENCH_KIB) {
        return 200;
    }
    iters = (long)(200.0 * (double)(256 * BENCH_KIB) / (double)bytes);
    return iters < 10 ? 10 : iters;
}

/* --tail: room for every timed call of each library at this size, before any is timed. */
static int bench_laps_alloc(bench_t *b, long iters, int mpi_ran)
{
    for (int lib = BENCH_LIB_COHORT; lib <= BENCH_LIB_MPI; lib++) {
        b->lapped[lib] = 0;
        if (lib == BENCH_LIB_COHORT || mpi_ran) {
            b->laps[lib] = malloc((size_t)iters * sizeof(double));
            if (b->laps[lib] == NULL) {
                return -1;
            }
        }
    }
    return 0;
}

/* Where the next segment of @a lib's iters calls writes their times; NULL without --tail. */
static double *bench_laps(bench_t *b, int lib, long iters)
{
    double *at;

    if (b->laps[lib] == NULL) {
        return NULL;
    }
    at = b->laps[lib] + b->lapped[lib];
    b->lapped[lib] += iters;
    return at;
}

/* --tail: each library's statistics on this rank, then the largest over ranks of each. */
static int bench_tail_reduce(bench_t *b)
{
    if (!b->tail) {
        return 0;
    }
    for (int lib = BENCH_LIB_COHORT; lib <= BENCH_LIB_MPI; lib++) {
        bench_tail_stats(b->laps[lib], b->laps[lib] != NULL ? b->lapped[lib] : 0,
                         b->tail_stats[lib]);
    }
    return bench_allmax(b, &b->tail_stats[0][0], BENCH_ALLMAX_MAX);
}

/* One size: buffers, optional check, warmup, then the A/B/B/A blocks, then one row. */
static int bench_size(bench_t *b)
{
    long iters = b->iters > 0 ? b->iters : bench_default_iters(b->bytes);
    long warmup = b->warmup >= 0 ? b->warmup : (iters / 10 < 2 ? 2 : iters / 10);
    long segs = 2 * b->blocks, seg_iters;
    int mpi_ran = bench_mpi_usable(b), rc = 0, lib;
    double t[2] = {0, 0}, bad;
    size_t es = b->dt->size;

    b->sbytes = b->coll == BENCH_BARRIER || b->coll == BENCH_BCAST ? 0
                : b->coll == BENCH_ALLGATHER                       ? b->bytes / (size_t)b->run.n
                                                                   : b->bytes;
    b->rbytes = b->coll == BENCH_BARRIER          ? 0
                : b->coll == BENCH_REDUCE_SCATTER ? b->bytes / (size_t)b->run.n
                                                  : b->bytes;
    /* Never empty, so that a NULL from malloc means failure. */
    b->hsbuf = malloc(b->sbytes > 0 ? b->sbytes : es);
    b->hrbuf = malloc(b->rbytes > 0 ? b->rbytes : es);
    b->sbuf = b->hsbuf;
    b->rbuf = b->hrbuf;
    if (b->mem_cuda) {
        b->sbuf = b->rbuf = NULL;
        if (b->cu.malloc_device(&b->sbuf, b->sbytes > 0 ? b->sbytes : es) != 0 ||
            b->cu.malloc_device(&b->rbuf, b->rbytes > 0 ? b->rbytes : es) != 0) {
            b->sbuf = b->sbuf != NULL ? (b->cu.free_device(b->sbuf), NULL) : NULL;
        }
    }
    bad = b->sbuf == NULL || b->rbuf == NULL || b->hsbuf == NULL || b->hrbuf == NULL;
    if (bad != 0) {
        fprintf(stderr, "cohort_bench: rank %d: cannot allocate %zu + %zu bytes\n", b->run.rank,
                b->sbytes, b->rbytes);
    } else if (b->tail && bench_laps_alloc(b, iters, mpi_ran) != 0) {
        fprintf(stderr, "cohort_bench: rank %d: --tail: cannot allocate 2 x %ld call times\n",
                b->run.rank, iters);
        bad = 1;
    }
    if (bench_allmax(b, &bad, 1) != 0 || bad != 0) {
        rc = 1;
        goto out_free;
    }
    if (b->check && bench_check(b) != 0) {
        rc = 1;
        goto out_free;
    }
    /* Real values, not the sentinel: NaNs or subnormals would slow the reductions. */
    bench_fill(b);
    for (lib = BENCH_LIB_COHORT; lib <= (mpi_ran ? BENCH_LIB_MPI : BENCH_LIB_COHORT); lib++) {
        double unused = 0;
        if (bench_segment(b, lib, warmup, &unused, NULL) != 0) {
            rc = 1;
            goto out_free;
        }
    }
    /* Per block: cohort, MPI, MPI, cohort; segment k of a library gets its share. */
    for (long k = 0; k < segs; k++) {
        seg_iters = iters / segs + (k < iters % segs);
        for (int s = 0; s < 2; s++) {
            lib = (k % 2 == 0) == (s == 0) ? BENCH_LIB_COHORT : BENCH_LIB_MPI;
            if ((lib == BENCH_LIB_COHORT || mpi_ran) &&
                bench_segment(b, lib, seg_iters, &t[lib], bench_laps(b, lib, seg_iters))) {
                rc = 1;
                goto out_free;
            }
        }
    }
    t[0] /= (double)iters;
    t[1] /= (double)iters;
    if (bench_allmax(b, t, 2) != 0 || bench_tail_reduce(b) != 0) {
        rc = 1;
        goto out_free;
    }
    bench_row(b, t[0], t[1], mpi_ran);
out_free:
    free(b->laps[BENCH_LIB_MPI]);
    free(b->laps[BENCH_LIB_COHORT]);
    b->laps[BENCH_LIB_COHORT] = b->laps[BENCH_LIB_MPI] = NULL;
    if (b->mem_cuda) {
        b->cu.free_device(b->rbuf);
        b->cu.free_device(b->sbuf);
    }
    free(b->hrbuf);
    free(b->hsbuf);
    b->sbuf = b->rbuf = b->hsbuf = b->hrbuf = NULL;
    return rc;
}

/* The size of the step that asks for @a req bytes: whole elements, and for the split
 * collectives whole elements per rank, at least one, as nccl-tests rounds. */
static size_t bench_round(const bench_t *b, size_t req)
{
    size_t per = b->dt->size * (bench_colls[b->coll].split ? (size_t)b->run.n : 1);

    return (req / per > 0 ? req / per : 1) * per;
}

/* The request after @a req in the sweep; 0 past --max-bytes. */
static size_t bench_next(const bench_t *b, size_t req)
{
    return req > b->max_bytes / b->step ? 0 : req * b->step;
}

/* -b 0 asks for the smallest size there is: one element. */
static size_t bench_first(const bench_t *b)
{
    return b->min_bytes > 0 ? b->min_bytes : 1;
}

static int bench_bound_sync(void *arg)
{
    bench_t *b = arg;
    cohort_status_t st = cohort_barrier(b->run.world);

    return st == COHORT_OK ? 0 : bench_fail(b, "barrier (memcpy bound)", st);
}

/* The memcpy bound of the rows: the largest size of the sweep (a barrier's: none), and at
 * least BENCH_BOUND_MIN so that the copy does not run from the first cache levels; the lowest
 * rank's median, as the times are reduced (the largest of the negated values). */
int bench_bound(bench_t *b)
{
    bench_bound_spec_t spec = {.reps = BENCH_BOUND_REPS, .sync = bench_bound_sync, .arg = b};
    size_t req = bench_first(b), last = req;
    double v = 0;

    while ((req = bench_next(b, req)) != 0) {
        last = req;
    }
    spec.bytes = b->coll == BENCH_BARRIER ? 0 : bench_round(b, last);
    spec.bytes = spec.bytes > BENCH_BOUND_MIN ? spec.bytes : BENCH_BOUND_MIN;
    spec.cu = b->mem_cuda ? &b->cu : NULL;
    b->bound_bytes = spec.bytes;
    if (bench_memcpy_bound(&spec, &v) != 0) {
        return 1;
    }
    v = -v;
    if (bench_allmax(b, &v, 1) != 0) {
        return 1;
    }
    b->bound_gbs = -v;
    snprintf(b->bound_how, sizeof(b->bound_how),
             "%s of %zu B, %s, all %d ranks at once, median of %d copies after a warm one, the "
             "lowest rank's",
             b->mem_cuda ? "cudaMemcpy device to device" : "memcpy host to host", b->bound_bytes,
             b->mem_cuda ? "each rank on its device" : "one thread per rank", b->run.n,
             BENCH_BOUND_REPS);
    return 0;
}

int bench_sweep(bench_t *b)
{
    size_t prev = 0;
    int rc = 0;

    b->vmod = bench_colls[b->coll].has_op ? b->dt->cap / b->run.n : b->dt->cap;
    b->vsparse = b->vmod < 2;
    if (b->coll == BENCH_BARRIER) {
        return bench_size(b);
    }
    for (size_t req = bench_first(b); req != 0 && rc == 0; req = bench_next(b, req)) {
        b->bytes = bench_round(b, req);
        if (b->bytes == prev) {
            continue;
        }
        b->elems = b->bytes / b->dt->size;
        b->count = bench_colls[b->coll].split ? b->elems / (size_t)b->run.n : b->elems;
        rc = bench_size(b);
        prev = b->bytes;
    }
    return rc;
}
