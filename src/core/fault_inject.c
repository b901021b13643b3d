/* COHORT_FAULT: the fault points tests fail on purpose (config.h says how they are named). */
#include "core/context.h"
#include "core/log.h"

int cohort_fault(cohort_context_t *ctx, cohort_fault_point_t point)
{
    if (ctx->cfg.fault_point != (int)point ||
        (ctx->cfg.fault_rank >= 0 && ctx->cfg.fault_rank != ctx->rank)) {
        return 0;
    }
    if (++ctx->fault_count != ctx->cfg.fault_nth) {
        return 0;
    }
    cohort_warn(ctx, "COHORT_FAULT: failing pass %d through this point on purpose",
                ctx->fault_count);
    return 1;
}
