/*
 * Device memory in a transfer, where UCX takes none (Debian's UCX 1.13 has no CUDA transport):
 * the transfer's buffer is a page-locked bounce. A send's is filled from the device when the
 * send is posted; a receive lands in one and is copied to the device when it is complete,
 * before its request hears of it. Each transfer is staged on its own, so an algorithm's own
 * segments are the pipeline: while segment k is on its way (UCX, or the peer's single copy
 * out of the bounce), segment k+1 is being copied. Where UCX does take CUDA memory the buffer
 * goes to it as it is, with its memory type.
 *
 * Only requests that may carry device memory (req->device) ask where a buffer lives: other
 * transfers pay nothing here.
 */
#include <string.h>
#include "core/am.h"
#include "core/gpu.h"
#include "core/log.h"

cohort_status_t cohort_xfer_stage(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;
    void *bounce;
    cohort_status_t status;

    if (!x->req->device || x->len == 0 || cohort_gpu_mem_type(ctx, x->buf) != COHORT_MEM_CUDA) {
        return COHORT_OK;
    }
    x->mem_type = COHORT_MEM_CUDA;
    if (ctx->ucx_mem_cuda) {
        return COHORT_OK;
    }
    bounce = cohort_gpu_bounce_get(ctx, x->len);
    if (bounce == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    if (x->is_send) {
        status = cohort_gpu_copy(ctx, bounce, x->buf, x->len);
        if (status != COHORT_OK) {
            cohort_gpu_bounce_put(ctx, bounce);
            return status;
        }
    }
    ctx->stat_stage_xfers++;
    x->stage = bounce;
    x->stage_user = x->buf;
    x->buf = bounce;
    x->mem_type = COHORT_MEM_HOST;
    return COHORT_OK;
}

cohort_status_t cohort_xfer_fill(cohort_context_t *ctx, cohort_xfer_t *x, const void *data,
                                 size_t len)
{
    if (len == 0) {
        return COHORT_OK;
    }
    if (x->mem_type == COHORT_MEM_CUDA) {
        return cohort_gpu_copy(ctx, x->buf, data, len);
    }
    memcpy(x->buf, data, len);
    return COHORT_OK;
}

cohort_status_t cohort_xfer_unstage(cohort_xfer_t *x, cohort_status_t status)
{
    cohort_context_t *ctx = x->req->ctx;

    if (x->stage == NULL) {
        return status;
    }
    if (!x->done && !x->is_send && status == COHORT_OK && x->received > 0) {
        status = cohort_gpu_copy(ctx, x->stage_user, x->stage, x->received);
    }
    if (x->ucx_req == NULL) {
        /* UCX no longer reads or writes it */
        cohort_gpu_bounce_put(ctx, x->stage);
        x->stage = NULL;
        x->buf = x->stage_user;
    }
    return status;
}
