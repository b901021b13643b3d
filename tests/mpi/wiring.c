/* run: 6 */
/* run: 5 COHORT_PMIX_PLUGIN=global */
/*
 * Lazy wiring: a rank holds an endpoint exactly to the peers it sent to — not to those it only
 * received from — and under dmodex made one PMIx lookup per wired peer, none for itself.
 */
#include <string.h>
#include "harness.h"

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int main(void)
{
    cohort_context_t *ctx;

    /* The watch (COHORT_WATCH_S) wires the source of a receive that waited longer: under load,
     * or across hosts, a first message can take that long, and the count below would then hold
     * a peer this rank never sent to (seen in hosts.sh). This test counts lazy wiring alone. */
    setenv("COHORT_WATCH_S", "0", 1);
    ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int targets[2] = {(me + 1) % n, (me + 3) % n};
    int sources[2] = {(me - 1 + n) % n, (me - 3 + 3 * n) % n};
    int expect[2], nexpect = 0, wired[64], nwired;
    int v[2] = {me, me}, got[2] = {-1, -1};
    cohort_request_t *rr[2];
    cohort_stats_t st;
    const char *plugin = getenv("COHORT_PMIX_PLUGIN");

    CHECK(n >= 4);
    CHECK(cohort_wired_peers(ctx, wired, 64) == 0);
    for (int i = 0; i < 2; i++) {
        CHECK_OK(cohort_irecv(w, &got[i], 1, COHORT_INT32, sources[i], i, &rr[i]));
    }
    for (int i = 0; i < 2; i++) {
        CHECK_OK(cohort_send(w, &v[i], 1, COHORT_INT32, targets[i], i));
    }
    for (int i = 0; i < 2; i++) {
        CHECK_OK(cohort_wait(rr[i]));
        cohort_request_free(rr[i]);
        CHECK(got[i] == sources[i]);
    }

    /* Expected: the distinct targets, ascending. */
    expect[nexpect++] = targets[0];
    if (targets[1] != targets[0]) {
        expect[nexpect++] = targets[1];
    }
    qsort(expect, (size_t)nexpect, sizeof(int), cmp_int);
    nwired = cohort_wired_peers(ctx, wired, 64);
    if (nwired != nexpect) {
        /* Which peers, and what the library knows of each, make a mismatch debuggable. */
        fprintf(stderr, "rank %d: wired %d peers, expected %d (targets %d %d):", me, nwired,
                nexpect, targets[0], targets[1]);
        for (int i = 0; i < nwired && i < 64; i++) {
            fprintf(stderr, " %d", wired[i]);
        }
        fprintf(stderr, "; failed ranks %d\n", cohort_failed_ranks(ctx, NULL, 0));
    }
    CHECK(nwired == nexpect);
    for (int i = 0; i < nexpect; i++) {
        CHECK(wired[i] == expect[i]);
    }
    /* max smaller than the count: returns the count, writes only max entries */
    wired[0] = -7;
    wired[1] = -7;
    CHECK(cohort_wired_peers(ctx, wired, 1) == nexpect && wired[0] == expect[0] && wired[1] == -7);

    CHECK_OK(cohort_stats(ctx, &st));
    CHECK(st.endpoints == (uint64_t)nexpect);
    CHECK(st.pmix_lookups == (uint64_t)nexpect);
    CHECK(strcmp(st.pmix_plugin, plugin ? plugin : "dmodex") == 0);
    for (int i = 0; i < nexpect; i++) {
        cohort_peer_info_t info;
        CHECK_OK(cohort_peer_info(ctx, expect[i], &info));
        CHECK(info.world_rank == expect[i] && info.pmix_lookups == 1 && info.wire_us > 0);
        CHECK(info.transports[0] != '\0');
        /* Where wire_us went (issue 37): parts on one clock, none negative, adding up to at most
         * the whole (1 us for rounding); one lookup request at least; the send to it completed,
         * so its first send's time is known. */
        CHECK(info.lookup_tries >= 1);
        CHECK(info.lookup_retry_us >= 0 && info.lookup_server_us >= 0 &&
              info.lookup_poll_us >= 0 && info.card_us >= 0 && info.ep_create_us >= 0);
        CHECK(info.lookup_retry_us + info.lookup_server_us + info.lookup_poll_us + info.card_us +
                  info.ep_create_us <=
              info.wire_us + 1);
        CHECK(info.first_send_us >= 0);
        /* PEER error handling must not lose shared memory (DESIGN.md): within one node the
         * lanes are sysv/posix, never tcp alone; across nodes (tests/launch) a network. */
        {
            cohort_node_info_t node;
            CHECK_OK(cohort_node_info(ctx, expect[i], &node));
            CHECK(info.same_node == node.same_node);
            if (info.same_node) {
                CHECK(strstr(info.transports, "sysv") != NULL ||
                      strstr(info.transports, "posix") != NULL);
            } else {
                CHECK(strstr(info.transports, "tcp") != NULL);
            }
        }
    }
    /* Where ranks run, from the launcher, for any rank (wired or not), no message sent. */
    {
        cohort_node_info_t mine, other;
        uint64_t sent = st.messages_sent;

        CHECK_OK(cohort_node_info(ctx, me, &mine));
        CHECK_OK(cohort_node_info(ctx, cohort_world_size(ctx) - 1 - me, &other));
        CHECK(mine.same_node == 1 && mine.hostname[0] != '\0');
        /* Same node: the same node id and host. Other nodes: the launcher may not say. */
        if (other.same_node) {
            CHECK(other.node_id == mine.node_id && strcmp(other.hostname, mine.hostname) == 0);
        } else {
            CHECK(other.node_id != mine.node_id || other.node_id == UINT32_MAX);
        }
        CHECK_STATUS(cohort_node_info(ctx, cohort_world_size(ctx), &mine), COHORT_ERR_INVALID_ARG);
        CHECK_STATUS(cohort_node_info(ctx, me, NULL), COHORT_ERR_INVALID_ARG);
        CHECK_OK(cohort_stats(ctx, &st));
        CHECK(st.messages_sent == sent);
    }
    /* no endpoint to self yet */
    CHECK_STATUS(cohort_peer_info(ctx, me, &(cohort_peer_info_t){0}), COHORT_ERR_INVALID_ARG);

    /* Sending to self wires self, with no lookup. */
    {
        int x = 5, y = 0;
        cohort_request_t *r;
        CHECK_OK(cohort_irecv(w, &y, 1, COHORT_INT32, me, 9, &r));
        CHECK_OK(cohort_send(w, &x, 1, COHORT_INT32, me, 9));
        CHECK_OK(cohort_wait(r));
        cohort_request_free(r);
        CHECK_OK(cohort_stats(ctx, &st));
        CHECK(st.pmix_lookups == (uint64_t)nexpect);
        CHECK(st.endpoints == (uint64_t)nexpect + 1);
    }
    CHECK_OK(cohort_barrier(w));
    test_finish(ctx, "wiring");
    return 0;
}
