/*
 * fence: publish with Put + Commit, then at a group's first use fence over its members only,
 * collecting their data, so later lookups are answered locally. Every member must make that
 * first use, in the same group order (PMIx_Fence is collective over the members).
 */
#include "pmix_plugins/common.h"

const cohort_pmix_plugin_t cohort_pmix_plugin = {
    .abi = COHORT_PMIX_PLUGIN_ABI,
    .name = "fence",
    .description = "Put+Commit once, PMIx_Fence over a group's members at its first use",
    .init = cohort_pmix_connect,
    .publish = cohort_pmix_put_commit,
    .lookup_start = cohort_pmix_lookup_start,
    .lookup_test = cohort_pmix_lookup_test,
    .wake_fd = cohort_pmix_wake_fd,
    .group_prepare_start = cohort_pmix_fence_start,
    .group_prepare_test = cohort_pmix_fence_test,
    .group_prepare_abandon = cohort_pmix_fence_abandon,
    .node_info = cohort_pmix_node_info,
    .finalize = cohort_pmix_disconnect,
};
