/* run: 8 */
/* run: 16 */
/*
 * Megatron-style layouts on real ranks: every kind's group holds exactly the members the layout
 * arithmetic gives, with the same id on every member; creating a layout sends no message and
 * wires no endpoint, and neither does asking for a token of either decomposition
 * ("expert:tp-ep") or a kind the spec's keys add (hcp, dopt, embd) later; allreduces in each own
 * group (their sums checked) then wire only peers inside the rank's groups, never one outside them;
 * bad specs are rejected with COHORT_ERR_INVALID_ARG and unknown kinds give NULL.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

/* Marks, per world rank, whether it is a member of one of this rank's groups so far. */
static char *in_my_groups;

static void check_layout(cohort_context_t *ctx, const char *spec_text)
{
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int *members = malloc((size_t)n * sizeof(int)), *wired = malloc((size_t)n * sizeof(int));
    cohort_layout_spec_t *spec = NULL;
    cohort_layout_t *layout = NULL;
    cohort_stats_t before, after;
    cohort_group_t *mine[64];
    int nmine = 0, nwired;
    char err[256];

    CHECK(members != NULL && wired != NULL);
    CHECK_OK(cohort_layout_spec_parse(spec_text, n, &spec, err, sizeof(err)));

    /* Creation is local: no message, no endpoint. */
    CHECK_OK(cohort_stats(ctx, &before));
    nwired = cohort_wired_peers(ctx, NULL, 0);
    CHECK_OK(cohort_layout_create(ctx, spec_text, &layout));
    CHECK_OK(cohort_stats(ctx, &after));
    CHECK(after.messages_sent == before.messages_sent);
    CHECK(after.endpoints == before.endpoints);
    CHECK(after.pmix_lookups == before.pmix_lookups);
    CHECK(cohort_wired_peers(ctx, NULL, 0) == nwired);

    static const char *const tokens[] = {"expert:tp-ep", "dense:cp-dp",  "dense:tp-pp-dp",
                                         "expert:dp-pp", "expert:ep-dp", "intra-edp",
                                         "inter-edp",    "dopt-instance"};
    int nspec = cohort_layout_spec_kind_count(spec);
    int nall = nspec + (int)(sizeof(tokens) / sizeof(tokens[0]));

    for (int k = 0; k < nall; k++) {
        const char *kind = k < nspec ? cohort_layout_spec_kind_name(spec, k) : tokens[k - nspec];
        cohort_group_t *g;
        int seen = 0;

        /* kinds made on request: member-only too, no message, no endpoint */
        CHECK_OK(cohort_stats(ctx, &before));
        g = cohort_layout_group(layout, kind);
        CHECK_OK(cohort_stats(ctx, &after));
        CHECK(after.messages_sent == before.messages_sent);
        CHECK(after.endpoints == before.endpoints);
        CHECK(after.pmix_lookups == before.pmix_lookups);
        /* asking again gives the same group */
        CHECK(cohort_layout_group(layout, kind) == g);
        int index, expect = 0;

        CHECK_OK(cohort_layout_rank_group(spec, kind, me, &index));
        if (index >= 0) {
            CHECK_OK(cohort_layout_group_members(spec, kind, index, members, n, &expect));
            CHECK(expect > 0 && expect <= n);
        }
        if (expect == 0) {
            CHECK(g == NULL); /* embd / pos-embd off the first and last stages */
            continue;
        }
        CHECK(g != NULL);
        CHECK(cohort_group_size(g) == expect);
        CHECK(cohort_group_size(g) == cohort_layout_group_size(spec, kind));
        for (int i = 0; i < expect; i++) {
            CHECK(cohort_group_world_rank(g, i) == members[i]);
            if (members[i] == me) {
                CHECK(cohort_group_rank(g) == i);
            }
            in_my_groups[members[i]] = 1;
        }
        /* A token spelling a built kind is that kind's group; other kinds with the same
         * members (dp and dp-cp when cp = 1) stay distinct groups. */
        for (int j = 0; j < nmine; j++) {
            seen |= mine[j] == g;
            CHECK(mine[j] == g || cohort_group_id(mine[j]) != cohort_group_id(g));
        }
        if (seen) {
            continue;
        }
        CHECK((size_t)nmine < sizeof(mine) / sizeof(mine[0]));
        mine[nmine++] = g;
    }
    CHECK(cohort_layout_group(layout, "expert:tp-ep") == cohort_layout_group(layout, "etp-ep"));
    CHECK(cohort_layout_group(layout, "dense:cp-dp") == cohort_layout_group(layout, "dp-cp"));
    CHECK(cohort_layout_group(layout, "dense:tp-tp") == NULL);
    CHECK(cohort_layout_group(layout, "hcp9") == NULL);
    CHECK(cohort_layout_group(layout, "nope") == NULL);
    CHECK(cohort_layout_group(layout, "") == NULL);

    /* Collectives in every own group, kinds in the same order on every rank: the sum counts
     * the members, and MAX over (id, ~id) shows every member derived the same id. */
    for (int j = 0; j < nmine; j++) {
        uint64_t id = cohort_group_id(mine[j]), ids[2] = {id, ~id}, got[2] = {0, 0};
        float one = 1.0f, sum = 0.0f;

        CHECK_OK(cohort_allreduce(mine[j], &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM));
        CHECK(sum == (float)cohort_group_size(mine[j]));
        CHECK_OK(cohort_allreduce(mine[j], ids, got, 2, COHORT_UINT64, COHORT_MAX));
        CHECK(got[0] == id && got[1] == ~id);
    }

    /* Whatever got wired lies inside this rank's groups. */
    nwired = cohort_wired_peers(ctx, wired, n);
    CHECK(nwired >= 0 && nwired <= n);
    for (int i = 0; i < nwired; i++) {
        if (!in_my_groups[wired[i]]) {
            fprintf(stderr, "rank %d: layout %s: wired rank %d, which is in none of its groups\n",
                    me, spec_text, wired[i]);
            exit(1);
        }
    }
    CHECK_OK(cohort_stats(ctx, &after));
    CHECK(after.endpoints == (uint64_t)nwired);

    CHECK_OK(cohort_layout_free(layout));
    cohort_layout_spec_free(spec);
    free(members);
    free(wired);
}

static void check_bad_specs(cohort_context_t *ctx)
{
    static const char *const bad[] = {"tp=3",      "tp=2,foo=1", "tp=0", "tp=2,,",      "dp=2",
                                      "tp=2,tp=2", "tp=-2",      "tp=x", "order=tp-zz", "tp=2,"};
    static char untouched;
    cohort_layout_t *const sentinel = (cohort_layout_t *)&untouched;
    cohort_layout_t *layout = sentinel; /* outputs are set only on success */

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_STATUS(cohort_layout_create(ctx, bad[i], &layout), COHORT_ERR_INVALID_ARG);
        CHECK(layout == sentinel);
    }
    /* A product larger than the world. */
    CHECK_STATUS(cohort_layout_create(ctx, "tp=1024,pp=1024", &layout), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_layout_create(NULL, "tp=2", &layout), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_layout_create(ctx, "tp=2", NULL), COHORT_ERR_INVALID_ARG);
    CHECK(layout == sentinel);
    CHECK(cohort_layout_group(NULL, "tp") == NULL);
    CHECK_OK(cohort_layout_free(NULL));
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int n = cohort_world_size(ctx);
    cohort_stats_t stats;

    in_my_groups = calloc((size_t)n, 1);
    CHECK(in_my_groups != NULL);
    /* Nothing is wired before the first collective. */
    CHECK(cohort_wired_peers(ctx, NULL, 0) == 0);
    CHECK_OK(cohort_stats(ctx, &stats));
    CHECK(stats.endpoints == 0 && stats.messages_sent == 0);

    check_bad_specs(ctx);
    check_layout(ctx, "tp=2,pp=2");
    if (n == 8) {
        check_layout(ctx, "tp=2,cp=2,hcp=2,dopt=2");
        check_layout(ctx, "pp=4,embd=first+2,dopt=1");
    }
    if (n == 16) {
        check_layout(ctx, "tp=2,pp=2,ep=2,etp=1");
        check_layout(ctx, "tp=2,pp=2,cp=2");
        check_layout(ctx, "pp=2,cp=4,ep=2,etp=1,hcp=2x2,dopt=2,embd=last");
    }
    free(in_my_groups);
    test_finish(ctx, "layout");
    return 0;
}
