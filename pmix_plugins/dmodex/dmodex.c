/*
 * dmodex (default): publish once with Put + Commit, fetch a peer's address with a direct
 * PMIx_Get on first use. The PMIx server asks the peer's server; nobody else takes part.
 */
#include "pmix_plugins/common.h"

const cohort_pmix_plugin_t cohort_pmix_plugin = {
    .abi = COHORT_PMIX_PLUGIN_ABI,
    .name = "dmodex",
    .description = "Put+Commit once, PMIx_Get per peer on first use (no fence)",
    .init = cohort_pmix_connect,
    .publish = cohort_pmix_put_commit,
    .lookup_start = cohort_pmix_lookup_start,
    .lookup_test = cohort_pmix_lookup_test,
    .wake_fd = cohort_pmix_wake_fd,
    .node_info = cohort_pmix_node_info,
    .finalize = cohort_pmix_disconnect,
};
