/*
 * global: the classic way, kept as a measured baseline. Put + Commit, then one fence over the
 * whole job collecting every address, so init costs a global barrier and O(world) memory.
 */
#include "pmix_plugins/common.h"

static cohort_status_t cohort_pmix_global_publish(cohort_pmix_ctx_t *p, const void *addr,
                                                  size_t len)
{
    cohort_status_t status = cohort_pmix_put_commit(p, addr, len);

    if (status != COHORT_OK) {
        return status;
    }
    return cohort_pmix_fence_ranks(p, NULL, 0);
}

const cohort_pmix_plugin_t cohort_pmix_plugin = {
    .abi = COHORT_PMIX_PLUGIN_ABI,
    .name = "global",
    .description = "Put+Commit, then a global PMIx_Fence at init (the classic baseline)",
    .init = cohort_pmix_connect,
    .publish = cohort_pmix_global_publish,
    .lookup_start = cohort_pmix_lookup_start,
    .lookup_test = cohort_pmix_lookup_test,
    .wake_fd = cohort_pmix_wake_fd,
    .node_info = cohort_pmix_node_info,
    .finalize = cohort_pmix_disconnect,
};
