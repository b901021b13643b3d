/*
 * The algorithm table and default selection. COHORT_ALGO_<COLLECTIVE>=<name> forces one.
 */
#include <stdio.h>
#include <string.h>
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_barrier_dissemination;
extern const cohort_coll_algo_t cohort_bcast_knomial;
extern const cohort_coll_algo_t cohort_bcast_scatter_allgather;
extern const cohort_coll_algo_t cohort_allgather_bruck;
extern const cohort_coll_algo_t cohort_allgather_ring;
extern const cohort_coll_algo_t cohort_alltoall_bruck;
extern const cohort_coll_algo_t cohort_alltoall_pairwise;
extern const cohort_coll_algo_t cohort_allreduce_recursive_doubling;
extern const cohort_coll_algo_t cohort_allreduce_ring;
extern const cohort_coll_algo_t cohort_allreduce_rabenseifner;
extern const cohort_coll_algo_t cohort_reduce_knomial;
extern const cohort_coll_algo_t cohort_reduce_scatter_ring;
extern const cohort_coll_algo_t cohort_reduce_scatter_recursive_halving;

static const cohort_coll_algo_t *const cohort_algos[] = {
    &cohort_barrier_dissemination,
    &cohort_bcast_knomial,
    &cohort_bcast_scatter_allgather,
    &cohort_allgather_bruck,
    &cohort_allgather_ring,
    &cohort_alltoall_bruck,
    &cohort_alltoall_pairwise,
    &cohort_allreduce_recursive_doubling,
    &cohort_allreduce_ring,
    &cohort_allreduce_rabenseifner,
    &cohort_reduce_knomial,
    &cohort_reduce_scatter_ring,
    &cohort_reduce_scatter_recursive_halving,
    NULL,
};

static const cohort_coll_algo_t *cohort_coll_find(cohort_coll_type_t coll, const char *name)
{
    for (int i = 0; cohort_algos[i] != NULL; i++) {
        if (cohort_algos[i]->coll == coll && strcmp(cohort_algos[i]->name, name) == 0) {
            return cohort_algos[i];
        }
    }
    return NULL;
}

/* Data movement. Thresholds measured on a 2-core machine with 2-16 oversubscribed ranks over
 * shared memory (min of two quiet runs); there, ranks share cores, so total copy work decides
 * more than per-link bandwidth does. */
static const cohort_coll_algo_t *cohort_coll_select_bcast(size_t bytes, int gsize)
{
    /* The tree won or tied at every size up to 16 ranks here (16 MiB at np=8: 9.2 ms against
     * 13.5 ms). Scatter + ring keeps the root's link to ~1x the message where the tree root
     * sends it 3 log4(n) times, which pays on machines with a core per rank and big groups:
     * not measurable here, hence the conservative bound. */
    return bytes >= 1024 * 1024 && gsize > 16 ? &cohort_bcast_scatter_allgather
                                              : &cohort_bcast_knomial;
}

static const cohort_coll_algo_t *cohort_coll_select_allgather(size_t bytes, int gsize)
{
    /* bytes per rank. Crossover at ~64-256 KiB per rank for np=4 and 8; at n=2 both send
     * one message each way, and the ring needs no scratch. */
    return gsize == 2 || bytes * (size_t)gsize >= 1024 * 1024 ? &cohort_allgather_ring
                                                              : &cohort_allgather_bruck;
}

static const cohort_coll_algo_t *cohort_coll_select_alltoall(size_t bytes, int gsize)
{
    /* bytes per pair. Pairwise (4 steps in flight) matched Bruck even at 8 B up to np=8;
     * Bruck won 2x at np=16 up to 1 KiB per pair and lost from 4 KiB. */
    return gsize > 4 && bytes * (size_t)gsize <= 16 * 1024 ? &cohort_alltoall_bruck
                                                           : &cohort_alltoall_pairwise;
}

/* Reductions, measured the same way (2-8 ranks, float32 SUM). Whole-vector recursive doubling
 * wins while steps cost more than bytes: up to 128 KiB on 2-4 ranks, 8 KiB on 8, where its
 * log2(n) whole-vector rounds lose to halving. A group that is not a power of two pays two
 * extra whole-vector transfers in either log-step algorithm's fold; recursive doubling still
 * wins there up to 512 KiB, then the ring. From 4 MiB the ring's pipeline wins (and keeps its
 * scratch to a few segments, where rabenseifner's is half the vector). */
static const cohort_coll_algo_t *cohort_coll_select_allreduce(size_t bytes, int gsize)
{
    int pow2 = (gsize & (gsize - 1)) == 0;

    if (bytes <= (gsize <= 4 ? 128 * 1024 : 8 * 1024) || (!pow2 && bytes <= 512 * 1024)) {
        return &cohort_allreduce_recursive_doubling;
    }
    return pow2 && bytes < 4 * 1024 * 1024 ? &cohort_allreduce_rabenseifner
                                           : &cohort_allreduce_ring;
}

static const cohort_coll_algo_t *cohort_coll_select_reduce_scatter(size_t bytes, int gsize)
{
    /* bytes per rank. Halving moves as many bytes as the ring in log2(n) steps, but its
     * scratch is twice the whole input; a fold (not a power of two) costs a whole input. */
    size_t total = bytes * (size_t)gsize;
    int pow2 = (gsize & (gsize - 1)) == 0;

    return total <= (pow2 ? 1024 * 1024 : 16 * 1024) ? &cohort_reduce_scatter_recursive_halving
                                                     : &cohort_reduce_scatter_ring;
}

const cohort_coll_algo_t *cohort_coll_select(const cohort_config_t *cfg,
                                             const cohort_coll_args_t *args, int gsize)
{
    const cohort_coll_algo_t *forced;

    if (cfg->algo[args->coll][0] != '\0') {
        forced = cohort_coll_find(args->coll, cfg->algo[args->coll]);
        if (forced != NULL) { /* names were checked at init */
            return forced;
        }
    }
    switch (args->coll) {
    case COHORT_COLL_BARRIER:
        return &cohort_barrier_dissemination;
    case COHORT_COLL_BCAST:
        return cohort_coll_select_bcast(args->count * args->esize, gsize);
    case COHORT_COLL_ALLGATHER:
        return cohort_coll_select_allgather(args->count * args->esize, gsize);
    case COHORT_COLL_ALLTOALL:
        return cohort_coll_select_alltoall(args->count * args->esize, gsize);
    case COHORT_COLL_ALLREDUCE:
        return cohort_coll_select_allreduce(args->count * args->esize, gsize);
    case COHORT_COLL_REDUCE:
        return &cohort_reduce_knomial;
    case COHORT_COLL_REDUCE_SCATTER:
        return cohort_coll_select_reduce_scatter(args->count * args->esize, gsize);
    default:
        return NULL;
    }
}

cohort_status_t cohort_coll_config_check(const cohort_config_t *cfg, char *err, size_t errlen)
{
    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        size_t used;

        if (cfg->algo[c][0] == '\0' || cohort_coll_find(c, cfg->algo[c]) != NULL) {
            continue;
        }
        used = (size_t)snprintf(err, errlen, "COHORT_ALGO_%s=%s: unknown algorithm; valid:",
                                cohort_coll_env_names[c], cfg->algo[c]);
        for (int i = 0; cohort_algos[i] != NULL && used < errlen; i++) {
            if ((int)cohort_algos[i]->coll == c) {
                used += (size_t)snprintf(err + used, errlen - used, " %s", cohort_algos[i]->name);
            }
        }
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

void cohort_coll_print_algos(FILE *f)
{
    fprintf(f, "%-3s %-15s %-22s %s\n", "id", "collective", "name", "description");
    for (int i = 0; cohort_algos[i] != NULL; i++) {
        fprintf(f, "%-3d %-15s %-22s %s\n", i, cohort_coll_names[cohort_algos[i]->coll],
                cohort_algos[i]->name, cohort_algos[i]->description);
    }
}

/* The public table (cohort.h): an algorithm's id is its position in cohort_algos, so new
 * algorithms are appended and none is ever removed or moved (a retired one would keep its slot
 * and decline every case). */
int cohort_algo_count(void)
{
    int n = 0;

    while (cohort_algos[n] != NULL) {
        n++;
    }
    return n;
}

cohort_status_t cohort_algo_info(int index, cohort_algo_info_t *info)
{
    if (info == NULL || index < 0 || index >= cohort_algo_count()) {
        return COHORT_ERR_INVALID_ARG;
    }
    info->id = index;
    info->collective = cohort_coll_names[cohort_algos[index]->coll];
    info->name = cohort_algos[index]->name;
    info->description = cohort_algos[index]->description;
    return COHORT_OK;
}
