/*
 * The barrier rows, one file each in this folder, in ascending id (coll.h): the one list of
 * them, which selection (select.c) asks. A new row is added here and takes the next unused id.
 */
#include "coll/coll.h"

extern const cohort_coll_algo_t cohort_barrier_dissemination; /* dissemination.c */
extern const cohort_coll_algo_t cohort_barrier_shm;           /* shm.c */

static const cohort_coll_algo_t *const barrier_rows[] = {
    &cohort_barrier_dissemination,
    &cohort_barrier_shm,
};

const cohort_coll_table_t cohort_barrier_table = {
    COHORT_COLL_BARRIER, (int)(sizeof(barrier_rows) / sizeof(barrier_rows[0])), barrier_rows};
