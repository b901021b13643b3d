/*
 * cohort_bench groups: the cost of creating groups member-only (default 2,000 per rank), and
 * that creating them sends nothing, wires nothing and looks nothing up.
 */
#include <stdlib.h>
#include <string.h>
#include "../bench.h"

int cohort_bench_groups(int argc, char **argv)
{
    bench_run_t run;
    cohort_context_t *ctx;
    cohort_stats_t before, after;
    cohort_group_t **gs;
    long count = 2000;
    int n, me, members[3], rc = 0;
    double t0, t, tmax = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            if (bench_parse_long(argv[++i], 1, 10000000, &count) != 0) {
                fprintf(stderr, "cohort_bench groups: --count must be from 1 to 10000000\n");
                return 2;
            }
        } else {
            fprintf(stderr, "cohort_bench groups: unknown option '%s' (use --count N)\n", argv[i]);
            return 2;
        }
    }
    if (bench_run_start(&run, "cohort_bench groups", 1) != 0) {
        return 1;
    }
    ctx = run.ctx;
    n = run.n;
    me = run.rank;
    gs = calloc((size_t)count, sizeof(*gs));
    if (gs == NULL) {
        fprintf(stderr, "cohort_bench groups: rank %d: out of memory\n", me);
        return bench_run_abort(&run);
    }
    cohort_stats(ctx, &before);
    t0 = bench_now();
    /* Groups of 2 and 3 ranks around the ring, the shape of tp/cp/ep groups. */
    for (int i = 0; i < count && rc == 0; i++) {
        int k = n >= 3 ? 2 + i % 2 : n;
        cohort_status_t st;

        for (int j = 0; j < k; j++) {
            members[j] = (me + j) % n;
        }
        st = cohort_group_create(ctx, i % 2 ? "odd" : "even", members, k, &gs[i]);
        if (st != COHORT_OK) {
            fprintf(stderr, "cohort_bench groups: cohort_group_create: %s\n", cohort_strerror(st));
            rc = 1;
        }
    }
    t = bench_now() - t0;
    cohort_stats(ctx, &after);
    for (int i = 0; i < count; i++) {
        cohort_group_free(gs[i]);
    }
    free(gs);
    /* The maximum over ranks, taken only now so creation itself stays message-free. */
    if (rc == 0) {
        const char *call;
        cohort_status_t st;

        tmax = t;
        st = bench_run_allmax(&run, &tmax, 1, &call);
        if (st != COHORT_OK) {
            fprintf(stderr, "cohort_bench groups: rank %d: %s of the times: %s\n", me, call,
                    cohort_strerror(st));
            return bench_run_abort(&run);
        }
    }
    if (rc == 0 && me == 0) {
        printf("# %d ranks, %ld groups per rank (2-3 members each), created member-only\n", n,
               count);
        printf("create_total_ms %.3f  us_per_group %.3f  messages_sent %llu  "
               "new_endpoints %llu  pmix_lookups %llu\n",
               tmax * 1e3, tmax / (double)count * 1e6,
               (unsigned long long)(after.messages_sent - before.messages_sent),
               (unsigned long long)(after.endpoints - before.endpoints),
               (unsigned long long)(after.pmix_lookups - before.pmix_lookups));
    }
    bench_run_end(&run);
    return rc;
}
