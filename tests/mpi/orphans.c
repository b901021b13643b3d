/* run: 2 COHORT_ORPHAN_LIMIT=4194304 */
/*
 * Messages for a group this rank never creates are bounded: rank 1 sends 20,000 messages of
 * 1 KiB on a group rank 0 never creates; rank 0 keeps at most COHORT_ORPHAN_LIMIT (4 MiB) of
 * them, drops and counts the rest, and its memory stays bounded. When it then does create the
 * group, the group is revoked with a clear status instead of waiting forever for what was
 * dropped. Messages for a group it created and freed are dropped on arrival. Before, every
 * message was kept (1M x 1 KiB: +1.07 GB) and every later group creation scanned them all.
 */
#include <string.h>
#include "harness.h"

#define COUNT 20000

/*
 * A barrier does not order this rank's earlier sends (a same-node barrier goes through shared
 * memory, not behind them on the wire): rank 1 sends a marker on world after its sends, and
 * rank 0 has seen all of them once the marker is in, as messages from one peer arrive in order.
 */
static void flush_sends(cohort_group_t *w, int me)
{
    int marker = 1;

    if (me == 1) {
        CHECK_OK(cohort_send(w, &marker, 1, COHORT_INT32, 0, 99));
    } else if (me == 0) {
        CHECK_OK(cohort_recv(w, &marker, 1, COHORT_INT32, 1, 99));
    }
}

static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * 4;
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *phantom = NULL;
    int me = cohort_world_rank(ctx), pair[2] = {0, 1};
    char payload[1024];
    long before = rss_kib();
    cohort_stats_t st;

    memset(payload, 7, sizeof(payload));
    if (me == 1) {
        CHECK_OK(cohort_group_create(ctx, "phantom", pair, 2, &phantom));
        for (int i = 0; i < COUNT; i++) {
            CHECK_OK(cohort_send(phantom, payload, sizeof(payload), COHORT_UINT8, 0, 1));
        }
    }
    flush_sends(w, me);
    CHECK_OK(cohort_stats(ctx, &st));
    if (me == 0) {
        long grown = rss_kib() - before;
        printf("rank 0: %llu messages dropped, RSS grew by %ld KiB\n",
               (unsigned long long)st.messages_dropped, grown);
        CHECK(st.messages_dropped >= COUNT - 4 * 1024);
        CHECK(grown < 64 * 1024);
        /* The group appears after messages for it were dropped: revoked, not a hang. */
        CHECK_OK(cohort_group_create(ctx, "phantom", pair, 2, &phantom));
        CHECK_STATUS(cohort_recv(phantom, payload, sizeof(payload), COHORT_UINT8, 1, 1),
                     COHORT_ERR_REVOKED);
    }
    CHECK_OK(cohort_group_free(phantom));
    phantom = NULL;
    CHECK_OK(cohort_barrier(w));
    /* A group freed on both sides: a late message for it is dropped on arrival. */
    {
        cohort_group_t *g;
        cohort_stats_t st2;
        int v = 5;

        CHECK_OK(cohort_group_create(ctx, "brief", pair, 2, &g));
        if (me == 0) {
            CHECK_OK(cohort_group_free(g));
        }
        CHECK_OK(cohort_barrier(w));
        if (me == 1) {
            CHECK_OK(cohort_send(g, &v, 1, COHORT_INT32, 0, 3));
            CHECK_OK(cohort_group_free(g));
        }
        flush_sends(w, me);
        CHECK_OK(cohort_stats(ctx, &st2));
        if (me == 0) {
            /* The kept ones went to the revoked group and were dropped there: all of them. */
            CHECK(st2.messages_dropped == COUNT + 1);
        }
    }
    test_finish(ctx, "orphans");
    return 0;
}
