/*
 * The bcast rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_bcast_knomial;           /* knomial.c */
extern const cohort_coll_algo_t cohort_bcast_scatter_allgather; /* scatter_allgather.c */
extern const cohort_coll_algo_t cohort_bcast_direct;            /* direct.c */
extern const cohort_coll_algo_t cohort_bcast_shm;               /* shm.c */
extern const cohort_coll_algo_t cohort_bcast_cuda_ipc;          /* cuda_ipc.c */

static const cohort_coll_algo_t *const bcast_rows[] = {
    &cohort_bcast_knomial, &cohort_bcast_scatter_allgather, &cohort_bcast_direct,
    &cohort_bcast_shm,     &cohort_bcast_cuda_ipc,
};

const cohort_coll_table_t cohort_bcast_table = {
    COHORT_COLL_BCAST, (int)(sizeof(bcast_rows) / sizeof(bcast_rows[0])), bcast_rows};
