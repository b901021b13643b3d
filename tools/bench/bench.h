/* cohort_bench: one program, one mode per job. Modes live in their own files. */
#ifndef COHORT_BENCH_H
#define COHORT_BENCH_H

#include <stdio.h>
#include <cohort.h>
#include "cudart.h"

/* Each mode parses its own options (argv[0] is the mode name) and returns the exit status.
 * Modes that communicate call cohort_init themselves (and MPI_Init when built with MPI). */
int cohort_bench_coll(int argc, char **argv);  /* collectives: size sweep, A/B/B/A vs MPI */
int cohort_bench_setup(int argc, char **argv); /* layout setup: create + first allreduce */
int cohort_bench_job(int argc, char **argv);   /* a layout's groups, for tools/job/job_mpi */
int cohort_bench_model(int argc, char **argv); /* scale model: no launch, pure arithmetic */
int cohort_bench_micro(int argc, char **argv); /* p2p latency/bandwidth; group creation cost */

/* Seconds on CLOCK_MONOTONIC (main.c). */
double bench_now(void);

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

/* ---- json.c: a small streaming JSON writer ---- */

#define BENCH_JSON_DEPTH 8

typedef struct {
    FILE *f;
    int depth;
    char close[BENCH_JSON_DEPTH];   /* '}' or ']' */
    char first[BENCH_JSON_DEPTH];   /* nothing written in this container yet */
    char oneline[BENCH_JSON_DEPTH]; /* members on one line (an array's objects: table rows) */
    char broken[BENCH_JSON_DEPTH];  /* a member went on a line of its own */
} bench_json_t;

/* Members take a key inside an object and NULL inside an array. A number that is not finite
 * is written null, as is a NULL string: "n/a" in the table is null in the JSON. */
void bench_json_open(bench_json_t *j, FILE *f); /* the outermost object */
void bench_json_object(bench_json_t *j, const char *key);
void bench_json_array(bench_json_t *j, const char *key);
void bench_json_end(bench_json_t *j); /* the innermost object or array; the last one ends
                                       * the document with a newline */
void bench_json_string(bench_json_t *j, const char *key, const char *s);
void bench_json_number(bench_json_t *j, const char *key, double v);
void bench_json_integer(bench_json_t *j, const char *key, long long v);
void bench_json_bool(bench_json_t *j, const char *key, int v);

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

#endif
