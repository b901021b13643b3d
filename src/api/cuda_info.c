/* cohort_cuda_info: what the CUDA module (src/mem/gpu.c) found, for the user to print. */
#include <stdio.h>
#include <string.h>
#include <config.h> /* the build's (top of the tree): COHORT_HAVE_CUDA */
#include "core/context.h"
#include "core/guard.h"
#include "core/log.h"
#include "mem/gpu.h"

/* With the context taken: loading the CUDA module changes it (ctx->mem.gpu). */
static cohort_status_t cohort_cuda_info_held(cohort_context_t *ctx, cohort_cuda_info_t *info)
{
    if (info == NULL) {
        cohort_error(ctx, "cohort_cuda_info: info is NULL");
        return COHORT_ERR_INVALID_ARG;
    }
    memset(info, 0, sizeof(*info));
#ifdef COHORT_HAVE_CUDA
    info->built = 1;
#endif
    (void)cohort_gpu_get(ctx);
    info->devices = ctx->mem.gpu.ndevices;
    info->ucx_cuda = ctx->mem.ucx_mem_cuda;
    info->ipc = info->devices > 0 && ctx->cfg.cuda_ipc != COHORT_CUDA_IPC_OFF;
    snprintf(info->reason, sizeof(info->reason), "%s",
             ctx->mem.gpu.state == COHORT_GPU_READY ? "" : ctx->mem.gpu.why);
    return COHORT_OK;
}

cohort_status_t cohort_cuda_info(cohort_context_t *ctx, cohort_cuda_info_t *info)
{
    cohort_status_t status;

    if (cohort_context_enter(ctx, "ctx") != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    status = cohort_cuda_info_held(ctx, info);
    cohort_guard_leave(ctx);
    return status;
}
