/*
 * Staging, the protocol layer's own step before and after its rows (not a row: it changes
 * where a transfer's bytes are, and any row then carries them). Device memory in a transfer,
 * where UCX takes none (Debian's UCX 1.13 has no CUDA transport) and no row claims it as it is
 * (CUDA IPC): the transfer's buffer is a page-locked bounce. A send's is filled from the device
 * by an asynchronous copy started when the send is posted, and the send goes to UCX once the
 * copy is over; a receive lands in one and is copied to the device by another once it is complete,
 * and its request hears of it only then. Progress polls the copies (ctx->copying), so nothing
 * here waits: each transfer is staged on its own, and an algorithm's segments are the
 * pipeline. While segment k is on its way (UCX, or the peer's single copy out of the bounce),
 * segment k+1 is being copied, on this rank too; copies to the host and to the device run on
 * two streams, so they overlap each other. Where UCX does take CUDA memory the buffer goes to
 * it as it is, with its memory type.
 *
 * The engine reaches it through the protocol layer's verbs (core/proto_ops.h: stage at post,
 * drain and unstage at finish, progress), and only for what may need it: a request that may
 * carry device memory (req->device) at post, a transfer that holds a bounce (x->stage) at
 * finish. Other transfers pay nothing here. A transfer whose copy runs waits in the engine's
 * ctx->copying (cohort_xfer_copy_wait); this step's progress moves it on.
 */
#include <string.h>
#include "core/am.h"
#include "mem/gpu.h"
#include "core/log.h"
#include "proto/proto.h"
#include "proto/xfer_stage.h"

/* @a x's device data through a page-locked bounce from now on: a send's copied into it
 * (asynchronously with @a async, its ticket in x->stage_copy), a receive's to land there. */
static cohort_status_t cohort_xfer_stage_bounce(cohort_xfer_t *x, int async)
{
    cohort_context_t *ctx = x->req->ctx;
    void *bounce = NULL;
    cohort_status_t status;

    if (x->is_send) {
        status = cohort_gpu_bounce_fill(ctx, x->buf, x->len, async ? &x->stage_copy : NULL,
                                        &bounce);
    } else {
        bounce = cohort_gpu_bounce_get(ctx, x->len);
        status = bounce != NULL ? COHORT_OK : COHORT_ERR_NO_MEMORY;
    }
    if (status != COHORT_OK) {
        return status;
    }
    ctx->stat_stage_xfers++;
    x->stage = bounce;
    x->stage_user = x->buf;
    x->buf = bounce;
    x->mem_type = COHORT_MEM_HOST;
    return COHORT_OK;
}

cohort_status_t cohort_xfer_stage_post(cohort_xfer_t *x)
{
    cohort_context_t *ctx = x->req->ctx;

    if (!x->req->device || x->len == 0 || cohort_gpu_mem_type(ctx, x->buf) != COHORT_MEM_CUDA) {
        return COHORT_OK;
    }
    x->mem_type = COHORT_MEM_CUDA;
    if (ctx->mem.ucx_mem_cuda) {
        return COHORT_OK;
    }
    if (cohort_proto_claim(x)) {
        return COHORT_OK; /* a protocol carries it as it is (CUDA IPC: the peer copies it out) */
    }
    return cohort_xfer_stage_bounce(x, 1);
}

cohort_status_t cohort_xfer_stage_now(cohort_xfer_t *x)
{
    return cohort_xfer_stage_bounce(x, 0);
}

int cohort_xfer_stage_drain(cohort_xfer_t *x, cohort_status_t *status)
{
    if (x->stage == NULL || x->is_send || x->stage_drained || *status != COHORT_OK ||
        x->received == 0) {
        return 0;
    }
    x->stage_drained = 1;
    *status = cohort_gpu_copy_start(x->req->ctx, x->stage_user, x->stage, x->received,
                                    COHORT_GPU_LANE_TO_DEVICE, &x->stage_copy);
    if (*status != COHORT_OK || x->stage_copy == 0) {
        return 0;
    }
    cohort_xfer_copy_wait(x);
    return 1;
}

int cohort_xfer_stage_progress(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp, over;
    int n = 0;

    if (cohort_list_empty(&ctx->copying)) {
        return 0;
    }
    /* The copies that are over first, then what follows them: a send that fails can revoke
     * its group, which cancels transfers still in either list (each leaves it). */
    cohort_list_init(&over);
    cohort_list_for_each(pos, tmp, &ctx->copying)
    {
        cohort_xfer_t *x = cohort_container_of(pos, cohort_xfer_t, link);
        cohort_status_t status = cohort_gpu_copy_test(ctx, x->stage_copy);
        if (status != COHORT_INPROGRESS) {
            x->stage_copy = 0;
            x->status = status; /* until it finishes */
            cohort_list_del(&x->link);
            cohort_list_push(&over, &x->link);
        }
    }
    while (!cohort_list_empty(&over)) {
        cohort_xfer_t *x = cohort_container_of(over.next, cohort_xfer_t, link);
        cohort_list_del(&x->link);
        x->waiting = 0;
        n++;
        if (x->is_send && x->status == COHORT_OK) {
            cohort_xfer_post_send(x); /* the bounce holds the data: on to UCX */
        } else {
            cohort_xfer_finish(x, x->status);
        }
    }
    return n;
}

cohort_status_t cohort_xfer_stage_release(cohort_xfer_t *x, cohort_status_t status)
{
    cohort_context_t *ctx = x->req->ctx;

    if (x->stage == NULL) {
        return status;
    }
    if (x->stage_copy != 0) {
        /* stopped half way (cancelled, failed): the copy still reads or writes the bounce */
        cohort_status_t copied = cohort_gpu_copy_finish(ctx, x->stage_copy);
        x->stage_copy = 0;
        if (status == COHORT_OK) {
            status = copied;
        }
    }
    if (x->ucx_req == NULL) {
        /* UCX no longer reads or writes it */
        cohort_gpu_bounce_put(ctx, x->stage);
        x->stage = NULL;
        x->buf = x->stage_user;
    }
    return status;
}
