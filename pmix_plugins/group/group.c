/*
 * group: PMIx_Group_construct over a group's members at its first use (PMIx v4 servers such
 * as PRRTE). Servers that do not implement groups (Open MPI 4.1's mpirun) are detected at init
 * by constructing a group of this process alone, so the failure is immediate and explained
 * rather than a hang at the first collective.
 */
#include <stdio.h>
#include "pmix_plugins/common.h"

static cohort_status_t cohort_pmix_group_init(const cohort_pmix_opts_t *opts,
                                              cohort_pmix_ctx_t **pctx, cohort_pmix_job_t *job)
{
    cohort_pmix_ctx_t *p;
    pmix_info_t *results = NULL;
    size_t nresults = 0;
    char name[64];
    pmix_status_t rc;
    cohort_status_t status;

    status = cohort_pmix_connect(opts, &p, job);
    if (status != COHORT_OK || job->singleton) {
        *pctx = p;
        return status;
    }

    snprintf(name, sizeof(name), "cohort-probe-%u-%d", (unsigned)p->me.rank, opts->instance);
    rc = PMIx_Group_construct(name, &p->me, 1, NULL, 0, &results, &nresults);
    if (results != NULL) {
        PMIX_INFO_FREE(results, nresults);
    }
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(p, 0,
                        "COHORT_PMIX_PLUGIN=group: this PMIx server cannot construct groups "
                        "(PMIx_Group_construct: %s); plugins that work with it: dmodex "
                        "(default), fence, global",
                        PMIx_Error_string(rc));
        cohort_pmix_disconnect(p);
        return COHORT_ERR_UNSUPPORTED;
    }
    PMIx_Group_destruct(name, NULL, 0);
    *pctx = p;
    return COHORT_OK;
}

static void cohort_pmix_group_cb(pmix_status_t status, pmix_info_t *info, size_t ninfo,
                                 void *cbdata, pmix_release_cbfunc_t release_fn,
                                 void *release_cbdata)
{
    if (release_fn != NULL) {
        release_fn(release_cbdata);
    }
    cohort_pmix_prepare_answer(cbdata, status);
}

static cohort_status_t cohort_pmix_group_prepare_start(cohort_pmix_ctx_t *p, uint64_t gid,
                                                       const int *ranks, int nranks,
                                                       cohort_pmix_prepare_t **op_p)
{
    cohort_pmix_prepare_t *op;
    cohort_status_t status = cohort_pmix_prepare_new(p, ranks, nranks, 0, &op);
    char name[64];
    pmix_status_t rc;

    if (status != COHORT_OK) {
        return status;
    }
    snprintf(name, sizeof(name), "cohort-%016llx-%d", (unsigned long long)gid, p->opts.instance);
    snprintf(op->what, sizeof(op->what), "PMIx_Group_construct(%s)", name);
    rc = PMIx_Group_construct_nb(name, op->procs, op->nprocs, op->info, op->ninfo,
                                 cohort_pmix_group_cb, op);
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_prepare_answer(op, rc); /* the test logs it */
        return cohort_pmix_prepare_test(op);
    }
    *op_p = op;
    return COHORT_OK;
}

const cohort_pmix_plugin_t cohort_pmix_plugin = {
    .abi = COHORT_PMIX_PLUGIN_ABI,
    .name = "group",
    .description = "PMIx_Group_construct over a group's members at its first use (PMIx v4)",
    .init = cohort_pmix_group_init,
    .publish = cohort_pmix_put_commit,
    .lookup_start = cohort_pmix_lookup_start,
    .lookup_test = cohort_pmix_lookup_test,
    .group_prepare_start = cohort_pmix_group_prepare_start,
    .group_prepare_test = cohort_pmix_prepare_test,
    .group_prepare_abandon = cohort_pmix_prepare_abandon,
    .finalize = cohort_pmix_disconnect,
};
