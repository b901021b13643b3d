/* cohort_bench <collective>, the sweep (sweep.c): what its files share. One job a file: args.c
 * the options, values.c the values and their check, mpi.c the MPI side, time.c the timing and
 * the sweep, out.c the output, tail.c the distribution of per-call times, bound.c the memcpy
 * bound; sweep.c runs them in order. What the other modes share too is in ../bench.h. */
#ifndef COHORT_BENCH_SWEEP_H
#define COHORT_BENCH_SWEEP_H

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
#include "../bench.h"
#include "../cudart.h"

/* ---- tail.c: the distribution of per-call times (--tail) ---- */

enum {
    BENCH_TAIL_P50,
    BENCH_TAIL_P99,
    BENCH_TAIL_P999,
    BENCH_TAIL_MAX,
    BENCH_TAIL_OVER_1MS,   /* calls above 1 ms */
    BENCH_TAIL_OVER_250US, /* calls above 0.25 ms */
    BENCH_TAIL_CALLS,      /* calls timed */
    BENCH_TAIL_NSTATS
};

/* The statistics' names in the JSON and (prefixed) the CSV. */
extern const char *const bench_tail_names[BENCH_TAIL_NSTATS];

/* The statistics of @a n per-call times @a t (seconds; sorted in place) into @a out
 * (BENCH_TAIL_NSTATS values: times in microseconds, counts as whole numbers); all 0 when n is
 * 0. Doubles throughout, so that every rank's statistics reduce in one MAX allreduce. */
void bench_tail_stats(double *t, long n, double *out);

/* ---- bound.c: the copy bandwidth a collective is measured against ---- */

typedef struct {
    size_t bytes;             /* one buffer */
    int reps;                 /* timed copies; the median counts */
    const bench_cudart_t *cu; /* device-to-device cudaMemcpy through it; NULL: host memcpy */
    int (*sync)(void *arg);   /* a barrier of every rank, so that all ranks copy at once */
    void *arg;
} bench_bound_spec_t;

/* This rank's median copy bandwidth in GB/s (1e9 bytes/s) in @a gbs, 0 where the buffers or
 * the timing were not to be had. Calls spec->sync reps + 1 times whatever happens here, as the
 * other ranks do. @return 0, or the first nonzero value spec->sync returned. */
int bench_memcpy_bound(const bench_bound_spec_t *spec, double *gbs);

#define BENCH_KIB        ((size_t)1024)
#define BENCH_MAX_BYTES  ((size_t)1 << 40) /* an upper bound that keeps size arithmetic safe */
#define BENCH_MISMATCHES 5                 /* mismatches printed per rank and library */
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
    bench_run_t run; /* cohort's world, and MPI's beside it */
    int mpi_yield;   /* mpi_yield_when_idle as Open MPI uses it; -1: unknown */
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

extern const bench_coll_t bench_colls[];   /* by BENCH_<COLL> */
extern const bench_dtype_t bench_dtypes[]; /* float32 is [8], the default */
extern const char *const bench_ops[];      /* by cohort_op_t */

/* ---- args.c: the options, their defaults and the tables they name ---- */

/* The options into @a b: 0 to run, 1 for --help, 2 for bad input (explained on stderr). */
int bench_parse(bench_t *b, int argc, char **argv);

/* ---- values.c: what every rank puts in, what every result must be, the check ---- */

/* This rank's input of the current size, its output set to a sentinel. */
void bench_fill(bench_t *b);
/* --check: each library once against the reference; nonzero where any rank found one wrong. */
int bench_check(bench_t *b);

/* ---- mpi.c: the same call through MPI, and what the header says of MPI ---- */

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

/* ---- time.c: the call, the A/B/B/A segments, laps, the sweep, the memcpy bound ---- */

cohort_status_t bench_cohort_call(const bench_t *b);
/* A failed cohort call: said, and the ranks leave (with MPI, an abort where peers may wait);
 * the exit status. */
int bench_fail(const bench_t *b, const char *call, cohort_status_t st);
/* The largest of v[0..k) over all ranks, in place; 0, or bench_fail's status. */
int bench_allmax(bench_t *b, double *v, int k);
int bench_bound(bench_t *b);
int bench_sweep(bench_t *b);

/* ---- out.c: the header, the rows (table, CSV, JSON) and the summary ---- */

void bench_row(bench_t *b, double t_cohort, double t_mpi, int mpi_ran);
void bench_header(const bench_t *b);
void bench_json_header(bench_t *b);
int bench_json_finish(bench_t *b, int rc);
int bench_json_start(bench_t *b);
void bench_summary(const bench_t *b);

#endif
