/* cohort_bench: one program, one mode per job. Modes live in their own files. */
#ifndef COHORT_BENCH_H
#define COHORT_BENCH_H

#include <cohort.h>

/* Each mode parses its own options (argv[0] is the mode name) and returns the exit status.
 * Modes that communicate call cohort_init themselves (and MPI_Init when built with MPI). */
int cohort_bench_coll(int argc, char **argv);  /* collectives: size sweep, A/B/B/A vs MPI */
int cohort_bench_setup(int argc, char **argv); /* layout setup: create + first allreduce */
int cohort_bench_model(int argc, char **argv); /* scale model: no launch, pure arithmetic */
int cohort_bench_micro(int argc, char **argv); /* p2p latency/bandwidth; group creation cost */

#endif
