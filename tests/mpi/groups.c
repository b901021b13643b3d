/* run: 4 */
/* run: 7 */
/*
 * Member-only groups: 1,000+ groups per rank created with no message sent and no endpoint
 * made; members agree on ids; overlapping groups carry traffic side by side; a message for a
 * group its receiver has not created yet waits until the group exists.
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"

#define NGROUPS 1200

/* Every member checks the id it derived against its ring neighbour's. */
static void check_same_id(cohort_group_t *g)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    uint64_t mine = cohort_group_id(g), theirs = 0;
    cohort_request_t *rr;

    if (n == 1) {
        return;
    }
    CHECK_OK(cohort_irecv(g, &theirs, 1, COHORT_UINT64, (me - 1 + n) % n, 0, &rr));
    CHECK_OK(cohort_send(g, &mine, 1, COHORT_UINT64, (me + 1) % n, 0));
    CHECK_OK(cohort_wait(rr));
    cohort_request_free(rr);
    CHECK(theirs == mine);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    cohort_group_t **gs = calloc(NGROUPS, sizeof(*gs));
    cohort_stats_t before, after;
    int created = 0, members[3];

    CHECK(gs != NULL);
    CHECK_OK(cohort_stats(ctx, &before));

    /* 1,200 groups in which this rank is a member: pairs and triples around the ring, and
     * repeats of identical (tag, members), which must get distinct ids. */
    for (int i = 0; i < NGROUPS; i++) {
        int k = 2 + i % 2;
        for (int j = 0; j < k; j++) {
            members[j] = (me + j * (1 + i % (n - 1 > 0 ? n - 1 : 1))) % n;
        }
        if (k == 3 && (members[2] == members[0] || members[2] == members[1])) {
            k = 2;
        }
        if (members[1] == members[0]) {
            k = 1;
        }
        CHECK_OK(cohort_group_create(ctx, i % 3 ? "pair" : "other", members, k, &gs[i]));
        created++;
    }
    CHECK_OK(cohort_stats(ctx, &after));
    CHECK(after.messages_sent == before.messages_sent);
    CHECK(after.endpoints == 0);
    CHECK(after.pmix_lookups == 0);
    CHECK(after.groups_created == before.groups_created + (uint64_t)created);
    for (int i = 0; i < NGROUPS; i++) {
        for (int j = 0; j < i && j < 8; j++) {
            CHECK(cohort_group_id(gs[i]) != cohort_group_id(gs[j]));
        }
    }
    for (int i = 0; i < NGROUPS; i++) {
        CHECK_OK(cohort_group_free(gs[i]));
    }

    /* Overlapping groups: world, evens, odds, and my neighbourhood, all used at once. */
    {
        int *evens = malloc(sizeof(int) * (size_t)n), *odds = malloc(sizeof(int) * (size_t)n);
        int ne = 0, no = 0;
        cohort_group_t *ge = NULL, *go = NULL, *gw = cohort_world(ctx);
        for (int r = 0; r < n; r++) {
            if (r % 2) {
                odds[no++] = r;
            } else {
                evens[ne++] = r;
            }
        }
        CHECK_STATUS(cohort_group_create(ctx, "evens", evens, ne, &ge),
                     me % 2 ? COHORT_ERR_NOT_MEMBER : COHORT_OK);
        CHECK_STATUS(cohort_group_create(ctx, "odds", odds, no, &go),
                     me % 2 ? COHORT_OK : COHORT_ERR_NOT_MEMBER);
        CHECK((me % 2 ? ge : go) == NULL);
        check_same_id(me % 2 ? go : ge);
        check_same_id(gw);
        CHECK_OK(cohort_barrier(me % 2 ? go : ge));
        CHECK_OK(cohort_barrier(gw));
        CHECK_OK(cohort_group_free(me % 2 ? go : ge));
        free(evens);
        free(odds);
    }

    /* Early messages: rank 0 sends on a group (eager and rendezvous) before rank 1 has
     * created it; rank 1 creates it only after a world barrier. */
    if (n >= 2) {
        int pair[2] = {0, 1};
        size_t big = 1 << 20;
        unsigned char *buf = malloc(big);
        int small = 0;
        cohort_group_t *g = NULL;
        cohort_request_t *r1 = NULL, *r2 = NULL;

        CHECK(buf != NULL);
        if (me == 0) {
            int v = 1234;
            CHECK_OK(cohort_group_create(ctx, "late", pair, 2, &g));
            memset(buf, 0x5a, big);
            CHECK_OK(cohort_isend(g, &v, 1, COHORT_INT32, 1, 1, &r1));
            CHECK_OK(cohort_isend(g, buf, big, COHORT_UINT8, 1, 2, &r2));
        }
        CHECK_OK(cohort_barrier(cohort_world(ctx)));
        if (me == 1) {
            CHECK_OK(cohort_group_create(ctx, "late", pair, 2, &g));
            memset(buf, 0, big);
            CHECK_OK(cohort_recv(g, &small, 1, COHORT_INT32, 0, 1));
            CHECK_OK(cohort_recv(g, buf, big, COHORT_UINT8, 0, 2));
            CHECK(small == 1234);
            for (size_t i = 0; i < big; i++) {
                CHECK(buf[i] == 0x5a);
            }
        }
        if (me == 0) {
            CHECK_OK(cohort_wait(r1));
            CHECK_OK(cohort_wait(r2));
            cohort_request_free(r1);
            cohort_request_free(r2);
        }
        if (g != NULL) {
            CHECK_OK(cohort_group_free(g));
        }
        free(buf);
    }

    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    free(gs);
    test_finish(ctx, "groups");
    return 0;
}
