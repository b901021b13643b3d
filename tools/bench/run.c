/*
 * What every mode that launches ranks shares: the clock, which process speaks before the
 * ranks are known, and one job of ranks with cohort and (built with MPI) MPI side by side:
 * starting and ending both, a start line, leaving on a failure, the largest figure over ranks.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BENCH_WITH_MPI
#include <mpi.h>
#endif
#include "bench.h"

/* The tag of bench_run_allmax's sends, when cohort has no allreduce for it. */
#define BENCH_RUN_TAG 0x7b3

double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_is_first_rank(void)
{
    const char *r = getenv("PMIX_RANK");

    if (r == NULL) {
        r = getenv("OMPI_COMM_WORLD_RANK");
    }
    return r == NULL || strcmp(r, "0") == 0;
}

#ifdef BENCH_WITH_MPI
/* MPI_Init, asking first for waits that yield the core: on an oversubscribed machine a
 * spinning MPI rank takes the core from the rank it waits for, and cohort's waits yield
 * (COHORT_PROGRESS=yield). MPI_Init reads the setting, nothing later can change it. */
static void bench_run_mpi_init(bench_run_t *r)
{
    if (getenv("OMPI_MCA_mpi_yield_when_idle") == NULL) {
        r->yield_set = setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0) == 0;
    }
    MPI_Init(NULL, NULL);
    r->mpi = 1;
}

/* Both libraries must number the same processes alike, or the side-by-side figures compare
 * different jobs. */
static void bench_run_same_job(const bench_run_t *r)
{
    int mrank, msize;

    MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
    MPI_Comm_size(MPI_COMM_WORLD, &msize);
    if (mrank != r->rank || msize != r->n) {
        fprintf(stderr, "%s: MPI says rank %d of %d, cohort rank %d of %d: not one job\n", r->who,
                mrank, msize, r->rank, r->n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#endif

int bench_run_start(bench_run_t *r, const char *who, int with_mpi)
{
    cohort_status_t st;

    memset(r, 0, sizeof(*r));
    r->who = who;
#ifdef BENCH_WITH_MPI
    if (with_mpi) {
        bench_run_mpi_init(r);
    }
#else
    (void)with_mpi;
#endif
    st = cohort_init(&r->ctx);
    if (st != COHORT_OK) {
        fprintf(stderr, "%s: cohort_init failed: %s (%d)%s\n", who, cohort_strerror(st), (int)st,
                st == COHORT_ERR_UNSUPPORTED || st == COHORT_ERR_INVALID_ARG
                    ? " (cohort's log line above says why; check the COHORT_* settings, "
                      "COHORT_PMIX_PLUGIN and COHORT_PLUGIN_PATH)"
                    : "");
        r->ctx = NULL;
        bench_run_end(r);
        return 1;
    }
    r->world = cohort_world(r->ctx);
    r->rank = cohort_world_rank(r->ctx);
    r->n = cohort_world_size(r->ctx);
#ifdef BENCH_WITH_MPI
    if (r->mpi) {
        bench_run_same_job(r);
    }
#endif
    return 0;
}

void bench_run_end(bench_run_t *r)
{
    if (r->ctx != NULL) {
        cohort_finalize(r->ctx);
        r->ctx = NULL;
    }
#ifdef BENCH_WITH_MPI
    if (r->mpi) {
        MPI_Finalize();
        r->mpi = 0;
    }
#endif
}

void bench_run_sync(const bench_run_t *r)
{
#ifdef BENCH_WITH_MPI
    if (r->mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
#else
    (void)r;
#endif
}

int bench_run_abort(const bench_run_t *r)
{
#ifdef BENCH_WITH_MPI
    if (r->mpi && r->n > 1) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#else
    (void)r;
#endif
    return 1;
}

/* Every rank sends its values to rank 0, which keeps the largest and sends them back. */
static cohort_status_t bench_run_allmax_p2p(bench_run_t *r, double *v, double *tmp, size_t k)
{
    cohort_status_t st = COHORT_OK;

    for (int p = 1; p < r->n && st == COHORT_OK; p++) {
        if (r->rank == 0) {
            st = cohort_recv(r->world, tmp, k, COHORT_FLOAT64, p, BENCH_RUN_TAG);
            for (size_t i = 0; i < k && st == COHORT_OK; i++) {
                v[i] = tmp[i] > v[i] ? tmp[i] : v[i];
            }
        } else if (p == r->rank) {
            st = cohort_send(r->world, v, k, COHORT_FLOAT64, 0, BENCH_RUN_TAG);
        }
    }
    for (int p = 1; p < r->n && st == COHORT_OK; p++) {
        if (r->rank == 0) {
            st = cohort_send(r->world, v, k, COHORT_FLOAT64, p, BENCH_RUN_TAG);
        } else if (p == r->rank) {
            st = cohort_recv(r->world, v, k, COHORT_FLOAT64, 0, BENCH_RUN_TAG);
        }
    }
    return st;
}

cohort_status_t bench_run_allmax(bench_run_t *r, double *v, size_t k, const char **call)
{
    cohort_status_t st = COHORT_OK;
    double *tmp;

    *call = "";
    if (r->n == 1 || k == 0) {
        return COHORT_OK;
    }
#ifdef BENCH_WITH_MPI
    if (r->mpi) {
        MPI_Allreduce(MPI_IN_PLACE, v, (int)k, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        return COHORT_OK;
    }
#endif
    tmp = malloc(k * sizeof(*tmp));
    if (tmp == NULL) {
        *call = "malloc";
        return COHORT_ERR_NO_MEMORY;
    }
    if (!r->allmax_p2p) {
        *call = "allreduce";
        st = cohort_allreduce(r->world, v, tmp, k, COHORT_FLOAT64, COHORT_MAX);
        if (st == COHORT_OK) {
            memcpy(v, tmp, k * sizeof(*v));
        }
        /* UNSUPPORTED comes alike on every rank: all switch to sends together. */
        r->allmax_p2p = st == COHORT_ERR_UNSUPPORTED;
    }
    if (r->allmax_p2p) {
        *call = "send/recv";
        st = bench_run_allmax_p2p(r, v, tmp, k);
    }
    free(tmp);
    return st;
}
