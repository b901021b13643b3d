/*
 * Staging (xfer_stage.c): the protocol layer's step that puts a transfer's device data through a
 * page-locked bounce where UCX takes no CUDA memory and no row claims it. The engine reaches
 * the first four through the layer's verbs (core/proto_ops.h, filled in by proto.c); the rows
 * call cohort_xfer_stage_now themselves.
 */
#ifndef COHORT_XFER_STAGE_H
#define COHORT_XFER_STAGE_H

#include "cohort.h"

typedef struct cohort_context cohort_context_t;
typedef struct cohort_xfer cohort_xfer_t;

/* At post, for a request that may carry device memory: where @a x's buffer lives, and, for
 * device memory UCX cannot take that no row claims, a bounce instead (a send's copy into it
 * starts now, its ticket in x->stage_copy). COHORT_ERR_NO_MEMORY or COHORT_ERR_CUDA (logged). */
cohort_status_t cohort_xfer_stage_post(cohort_xfer_t *x);
/* At finish, a staged receive that succeeded: its copy to the device is started, and @return 1
 * when the transfer must wait for it (finished again then); 0 to finish now, with *status an
 * error if the copy could not start. */
int cohort_xfer_stage_drain(cohort_xfer_t *x, cohort_status_t *status);
/* At finish: the bounce goes back once UCX lets go of it (a staging copy still running is
 * waited for first: a cancel); @return the status to finish with. */
cohort_status_t cohort_xfer_stage_release(cohort_xfer_t *x, cohort_status_t status);
/* From progress: the staging copies that are over move their transfers on. @return how many. */
int cohort_xfer_stage_progress(cohort_context_t *ctx);
/* A device send offered through CUDA IPC that must go as data after all (the peer cannot map
 * it): staged now, synchronously (a rare path). */
cohort_status_t cohort_xfer_stage_now(cohort_xfer_t *x);

#endif
