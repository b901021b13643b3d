/* cohort_bench: one program, one mode per job, each job in its own folder (sweep/, micro/,
 * setup/, model/, job/). This header is what the jobs share, and only that: the clock,
 * option values, the JSON writer, and a job of ranks running cohort with MPI beside it. */
#ifndef COHORT_BENCH_H
#define COHORT_BENCH_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stddef.h>
#include <stdio.h>
#include <cohort.h>

/* Each mode parses its own options (argv[0] is the mode name) and returns the exit status.
 * Modes that communicate start their ranks with bench_run_start. */
int cohort_bench_coll(int argc, char **argv);   /* sweep/: size sweep, A/B/B/A vs MPI */
int cohort_bench_setup(int argc, char **argv);  /* setup/: create + first allreduce */
int cohort_bench_job(int argc, char **argv);    /* job/: a layout's groups, for job_mpi */
int cohort_bench_model(int argc, char **argv);  /* model/: scale model, pure arithmetic */
int cohort_bench_p2p(int argc, char **argv);    /* micro/: p2p latency and bandwidth */
int cohort_bench_groups(int argc, char **argv); /* micro/: member-only group creation */

/* ---- run.c: the clock, who speaks first, and a job of ranks with MPI beside cohort ---- */

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/* Whether this process is rank 0 by its launcher's word (PMIX_RANK, OMPI_COMM_WORLD_RANK), or
 * runs with none: only one rank speaks before MPI and cohort know who is who. */
int bench_is_first_rank(void);

/* One job's ranks: cohort's world and, built with MPI (BENCH_WITH_MPI), MPI_COMM_WORLD in the
 * same processes, so that a mode can run the same work through both side by side. */
typedef struct {
    const char *who; /* the mode's name in messages: "cohort_bench", "cohort_bench setup" */
    cohort_context_t *ctx;
    cohort_group_t *world;
    int rank, n;
    int mpi;        /* MPI initialised and run beside cohort */
    int yield_set;  /* this program set OMPI_MCA_mpi_yield_when_idle */
    int allmax_p2p; /* cohort_allreduce is not available: bench_run_allmax sends instead */
} bench_run_t;

/* MPI_Init when @a with_mpi and built with MPI, its waits yielding the core as cohort's do
 * (unless the environment already says), then cohort_init; MPI and cohort must see the same
 * ranks. @return 0, or 1 after saying why (nothing is left initialised then). */
int bench_run_start(bench_run_t *r, const char *who, int with_mpi);
/* cohort_finalize, then MPI_Finalize where it was initialised. */
void bench_run_end(bench_run_t *r);
/* An MPI barrier of every rank where MPI runs, nothing otherwise: a start line that wires
 * nothing in cohort, so that it does not change what a mode measures of cohort's wiring. */
void bench_run_sync(const bench_run_t *r);
/* A failure after the ranks parted ways may leave peers waiting: with MPI and peers, the job
 * ends here. @return 1, the exit status, otherwise. */
int bench_run_abort(const bench_run_t *r);
/* The largest of v[0..k) over all ranks, in place: MPI's allreduce where MPI runs, else
 * cohort's, else (cohort has no allreduce for it, alike on every rank) sends to rank 0 and
 * back. @return COHORT_OK, or the failed call's status with its name in *call. */
cohort_status_t bench_run_allmax(bench_run_t *r, double *v, size_t k, const char **call);

/* ---- parse.c: option values ---- */

/* An integer from @a min to @a max into *out; -1 (nothing set) when @a s is not one. */
int bench_parse_long(const char *s, long min, long max, long *out);
/* "16M", "64K", "1G", "4096", "2KiB", "8MB" (binary multiples) up to @a max bytes into
 * *out; -1 when @a s is not one. */
int bench_parse_size(const char *s, size_t max, size_t *out);

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

#endif
