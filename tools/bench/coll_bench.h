/* cohort_bench <collective> (coll.c): what its files share. One job a file: coll_args.c the
 * options, coll_values.c the values and their check, coll_mpi.c the MPI side, coll_time.c the
 * timing and the sweep, coll_out.c the output; coll.c runs them in order. */
#ifndef COHORT_BENCH_COLL_H
#define COHORT_BENCH_COLL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef BENCH_WITH_MPI
#include <mpi.h>
#endif
#include "bench.h"

#define BENCH_KIB        ((size_t)1024)
#define BENCH_MAX_BYTES  ((size_t)1 << 40) /* an upper bound that keeps size arithmetic safe */
#define BENCH_TAG        0x7b3
#define BENCH_MISMATCHES 5 /* mismatches printed per rank and library */
#define BENCH_SENTINEL   0xa5
#define BENCH_LIB_COHORT 0
#define BENCH_LIB_MPI    1
/* The memcpy bound: 11 copies, so that one slowed by another process on a shared core moves
 * the median by at most a place; at least 1 MiB, past the first cache levels, as the largest
 * sizes of a sweep are. */
#define BENCH_BOUND_REPS 11
#define BENCH_BOUND_MIN  (BENCH_KIB * BENCH_KIB)
/* The most values bench_allmax reduces at once: both libraries' tail statistics. */
#define BENCH_ALLMAX_MAX (2 * BENCH_TAIL_NSTATS)

#ifdef PACKAGE_VERSION
#define BENCH_VERSION PACKAGE_VERSION
#else
#define BENCH_VERSION "0.1"
#endif

enum {
    BENCH_BARRIER,
    BENCH_BCAST,
    BENCH_REDUCE,
    BENCH_ALLREDUCE,
    BENCH_ALLGATHER,
    BENCH_REDUCE_SCATTER,
    BENCH_ALLTOALL
};

typedef struct {
    const char *name;
    int has_op;
    int has_root;
    int split; /* the size is spread over the ranks: count = elements / ranks */
} bench_coll_t;

/* cap: |values| stay below it in any partial result, so every reference is exact. */
typedef struct {
    const char *name;
    cohort_dtype_t dt;
    size_t size;
    int is_float;
    int is_signed;
    double cap;
    double avg_tol; /* relative tolerance of an AVG result */
} bench_dtype_t;

typedef struct {
    /* options */
    int coll;
    size_t min_bytes, max_bytes, step;
    long iters, warmup; /* < 0: scaled by size */
    long blocks;
    const bench_dtype_t *dt;
    cohort_op_t op;
    long root;
    int root_given, op_given, no_mpi, check, csv;
    int tail;              /* --tail: every timed call timed on its own */
    const char *json_path; /* --json: a file, or "-" for stdout */
    int mem_cuda;          /* --mem cuda: sbuf and rbuf are device buffers */
    bench_cudart_t cu;     /* the CUDA runtime, loaded by --mem cuda only */
    int argc;
    char **argv;
    /* the run */
    cohort_context_t *ctx;
    cohort_group_t *world;
    int rank, n;
    int mpi;        /* MPI runs side by side */
    int yield_set;  /* this program set OMPI_MCA_mpi_yield_when_idle */
    int allmax_p2p; /* cohort_allreduce is not available: reduce times over send/recv */
    int mpi_yield;  /* mpi_yield_when_idle as Open MPI uses it; -1: unknown */
    char yield_note[160];
    char mpi_lib[160];
    char mem_note[160]; /* --mem cuda: the devices and the path cohort takes */
    int text;           /* the header and rows (table or CSV) on stdout: not with --json - */
    FILE *json_file;    /* rank 0 with --json */
    bench_json_t json;
    double bound_gbs; /* the memcpy bound of the rows; 0: n/a */
    size_t bound_bytes;
    char bound_how[224];
    double vmod; /* check values are taken modulo this */
    int vsparse; /* too many ranks for dense values: one rank contributes per element */
    /* the current size */
    size_t bytes, elems, count, sbytes, rbytes;
    void *sbuf, *rbuf;   /* what the calls get: host memory, or device memory (--mem cuda) */
    void *hsbuf, *hrbuf; /* host views, filled and checked here: sbuf and rbuf, or copies */
    double *laps[2];     /* --tail: each library's per-call times, allocated per size */
    long lapped[2];      /* how many of them are taken */
    double tail_stats[2][BENCH_TAIL_NSTATS]; /* theirs, each the largest over ranks */
    double busbw_sum[2];
    int rows, mpi_rows;
} bench_t;

/* One row as every output writes it: times in seconds, NAN where the table says n/a. */
typedef struct {
    const char *type, *op;
    const char *mpi_note; /* the CSV's last MPI column: "", "mpi-ran-sum" or "no-mpi-type" */
    int root;
    double time, algbw, busbw, frac;
    double mpi_time, mpi_algbw, mpi_busbw, ratio;
    const double *tail[2]; /* --tail: each library's statistics; NULL where it did not run */
} bench_row_t;

#define BENCH_NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

extern const bench_coll_t bench_colls[];  /* by BENCH_<COLL> */
extern const bench_dtype_t bench_dtypes[]; /* float32 is [8], the default */
extern const char *const bench_ops[];      /* by cohort_op_t */

/* ---- coll_args.c: the options, their defaults and the tables they name ---- */

/* The options into @a b: 0 to run, 1 for --help, 2 for bad input (explained on stderr). */
int bench_parse(bench_t *b, int argc, char **argv);

/* ---- coll_values.c: what every rank puts in, what every result must be, the check ---- */

/* This rank's input of the current size, its output set to a sentinel. */
void bench_fill(bench_t *b);
/* --check: each library once against the reference; nonzero where any rank found one wrong. */
int bench_check(bench_t *b);

/* ---- coll_mpi.c: the same call through MPI, and what the header says of MPI ---- */

#ifdef BENCH_WITH_MPI
void bench_mpi_call(const bench_t *b);
#endif
/* Why MPI cannot run this case (NULL: it can), and whether it runs beside cohort here. */
const char *bench_mpi_absent(const bench_t *b);
int bench_mpi_usable(const bench_t *b);
#ifdef BENCH_WITH_MPI
/* One job for both libraries, and Open MPI's waits and version for the header. */
void bench_mpi_facts(bench_t *b);
#endif

/* ---- coll_time.c: the call, the A/B/B/A segments, laps, the sweep, the memcpy bound ---- */

cohort_status_t bench_cohort_call(const bench_t *b);
/* A failed cohort call: said, and the ranks leave (with MPI, an abort where peers may wait);
 * the exit status. */
int bench_fail(const bench_t *b, const char *call, cohort_status_t st);
/* The largest of v[0..k) over all ranks, in place; 0, or bench_fail's status. */
int bench_allmax(bench_t *b, double *v, int k);
int bench_bound(bench_t *b);
int bench_sweep(bench_t *b);

/* ---- coll_out.c: the header, the rows (table, CSV, JSON) and the summary ---- */

void bench_row(bench_t *b, double t_cohort, double t_mpi, int mpi_ran);
void bench_header(const bench_t *b);
void bench_json_header(bench_t *b);
int bench_json_finish(bench_t *b, int rc);
int bench_json_start(bench_t *b);
void bench_summary(const bench_t *b);

#endif
