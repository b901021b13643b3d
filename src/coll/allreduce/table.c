/*
 * The allreduce rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_allreduce_recursive_doubling; /* recursive_doubling.c */
extern const cohort_coll_algo_t cohort_allreduce_ring;               /* ring.c */
extern const cohort_coll_algo_t cohort_allreduce_rabenseifner;       /* rabenseifner.c */
extern const cohort_coll_algo_t cohort_allreduce_direct;             /* direct.c */
extern const cohort_coll_algo_t cohort_allreduce_shm;                /* shm.c */
extern const cohort_coll_algo_t cohort_allreduce_cuda_ipc;           /* cuda_ipc.c */

static const cohort_coll_algo_t *const allreduce_rows[] = {
    &cohort_allreduce_recursive_doubling,
    &cohort_allreduce_ring,
    &cohort_allreduce_rabenseifner,
    &cohort_allreduce_direct,
    &cohort_allreduce_shm,
    &cohort_allreduce_cuda_ipc,
};

const cohort_coll_table_t cohort_allreduce_table = {
    COHORT_COLL_ALLREDUCE, (int)(sizeof(allreduce_rows) / sizeof(allreduce_rows[0])),
    allreduce_rows};
