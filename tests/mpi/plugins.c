/* run: 4 COHORT_PMIX_PLUGIN=dmodex */
/* run: 4 COHORT_PMIX_PLUGIN=fence */
/* run: 5 COHORT_PMIX_PLUGIN=global */
/* run: 3 COHORT_PMIX_PLUGIN=group COHORT_TIMEOUT=20 */
/*
 * Every exchange plugin carries the same traffic on the world and on subgroups. The group
 * plugin needs a server that constructs PMIx groups: where the server answers NOT-SUPPORTED
 * (Open MPI 4.1's mpirun), init must fail at once with COHORT_ERR_UNSUPPORTED, not hang.
 */
#include <string.h>
#include "harness.h"

static void ring(cohort_group_t *g)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int v = cohort_group_world_rank(g, me), got = -1;
    cohort_request_t *r;

    CHECK_OK(cohort_irecv(g, &got, 1, COHORT_INT32, (me - 1 + n) % n, 4, &r));
    CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, (me + 1) % n, 4));
    CHECK_OK(cohort_wait(r));
    cohort_request_free(r);
    CHECK(got == cohort_group_world_rank(g, (me - 1 + n) % n));
}

int main(void)
{
    const char *plugin = getenv("COHORT_PMIX_PLUGIN");
    cohort_context_t *ctx = NULL;
    cohort_status_t status = cohort_init(&ctx);
    cohort_stats_t st;
    int n, me, half[64], nh = 0;
    cohort_group_t *g = NULL;

    CHECK(plugin != NULL);
    if (strcmp(plugin, "group") == 0 && status == COHORT_ERR_UNSUPPORTED) {
        CHECK(ctx == NULL);
        if (getenv("OMPI_COMM_WORLD_RANK") && atoi(getenv("OMPI_COMM_WORLD_RANK")) == 0) {
            printf("plugins: passed (group plugin refused by this server, as it must be)\n");
        }
        return 0;
    }
    CHECK_OK(status);
    test_rank = cohort_world_rank(ctx);
    n = cohort_world_size(ctx);
    me = cohort_world_rank(ctx);
    CHECK_OK(cohort_stats(ctx, &st));
    CHECK(strcmp(st.pmix_plugin, plugin) == 0);

    /* Every member makes its first use of each group in the same order (fence and group
     * plugins synchronise the members there). */
    ring(cohort_world(ctx));
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    for (int r = 0; r < n; r += 2) {
        half[nh++] = r;
    }
    status = cohort_group_create(ctx, "half", half, nh, &g);
    CHECK_STATUS(status, me % 2 ? COHORT_ERR_NOT_MEMBER : COHORT_OK);
    if (g != NULL) {
        CHECK_OK(cohort_barrier(g));
        ring(g);
        CHECK_OK(cohort_group_free(g));
    }
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    test_finish(ctx, "plugins");
    return 0;
}
