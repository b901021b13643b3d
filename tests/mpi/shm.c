/* clang-format off */
/* run: 4 */
/* run: 2 */
/* run: 5 COHORT_PROGRESS=block */
/* run: 3 COHORT_CMA=off */
/* run: 4 COHORT_FAULT=shm:1@2 */
/* run: 4 COHORT_FAULT=shm_pid:1@0 */
/* run: 2 COHORT_FAULT=shm_view:1@1 */
/* run: 3 COHORT_TIMEOUT=1 SHM_ABSENT=1 */
/* run: 4 COHORT_SHM_ARENA=off */
/* run: 4 SHM_REUSE=2000 */
/* run: 4 SHM_REUSE=2000 SHM_UNUSED=1 */
/* runs: together */
/* clang-format on */
/*
 * Small same-node collectives through a group's shared segment (src/coll/shm.c), chosen by
 * default: once the segment exists no message is sent at all, which the test checks
 * (cohort_stats' messages_sent stays put over 300 calls) along with every result. Back to back
 * blocking calls of every kind (the two buffers of each slot reused every other call), then
 * nonblocking ones posted together and waited in reverse order, on the world and on two groups
 * at once (evens, odds). COHORT_CMA=off: no segment, messages, the same results.
 *
 * COHORT_FAULT=shm:1@R: world rank R cannot reach the segment. The first call runs on messages
 * instead on every member (none hangs, none fails; its sum is right, and messages were sent),
 * cohort_group_info says the segment failed and names the message algorithm; the group then
 * keeps to the message algorithms and gets the right results. COHORT_FAULT=shm_pid:1@0: world
 * rank 0 offers the world's segment in a descriptor naming its parent process: the others
 * refuse it before they take a file descriptor from that process (the pid checked against
 * rank 0's card, and their log says so), and the call runs on messages alike on every member.
 * Without the check they take whatever file the parent holds at that number, and only the segment's
 * magic, if the mapping works at all, stands between them and another process's memory.
 *
 * SHM_ABSENT=1 (under COHORT_TIMEOUT=1): once the segment exists, the last rank stays away from
 * an allreduce; the others time out and their message names it as the member not heard from
 * (in the shared segment: no message is awaited).
 *
 * Where the segment lives, read from /proc/self/maps once the world's is set up: by default a
 * block of group rank 0's arena (mem/arena.h), so every rank maps its own arena, the others
 * rank 0's too, and no file of /dev/shm; with COHORT_SHM_ARENA=off a file of /dev/shm. Where
 * the kernel lets no process take another's descriptor, the arena is off and the test says so.
 * SHM_REUSE=K: K groups of two made, used once and freed one after the other, all on their
 * segments (no message): their blocks are taken again once both members let go; without that,
 * K blocks of 260 KiB outgrow the 256 MiB arena and the later groups fall back to messages.
 * COHORT_FAULT=shm_view:1@1: rank 1 cannot map rank 0's arena (as if pidfd_getfd were refused)
 * at the world's first call: that call and the world's later ones run on messages, and rank 1
 * says why once, naming the block of rank 0's arena (no /dev/shm name: nothing is named). A second group with rank 0 as its group rank 0 is not tried again (the answer
 * would be the same, at a system call's cost): it runs on messages too, and its first call logs
 * no second error line.
 * SHM_UNUSED=1: the same, but only the last group is used: group rank 0 makes each group's
 * block when it creates the group, and a group freed without any call must give its block back
 * as well, or the last one finds the arena full and runs on messages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

#define CALLS 50
#define NB    6
#define CNT   37 /* int32s: not a multiple of anything */

static uint64_t sent(cohort_context_t *ctx)
{
    cohort_stats_t st;

    CHECK_OK(cohort_stats(ctx, &st));
    return st.messages_sent;
}

static int32_t val(int r, int i, int c)
{
    return (int32_t)(r * 1000 + i * 7 + c);
}

/* One of each kind, blocking, call number c, checked. */
static void round_of_all(cohort_group_t *g, int c)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int32_t s[64 * CNT], r[64 * CNT];

    for (int i = 0; i < CNT; i++) {
        s[i] = val(me, i, c);
    }
    CHECK_OK(cohort_allreduce(g, s, r, CNT, COHORT_INT32, COHORT_SUM));
    for (int i = 0; i < CNT; i++) {
        int32_t want = 0;
        for (int k = 0; k < n; k++) {
            want += val(k, i, c);
        }
        CHECK(r[i] == want);
    }
    CHECK_OK(cohort_allgather(g, s, r, CNT, COHORT_INT32));
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < CNT; i++) {
            CHECK(r[k * CNT + i] == val(k, i, c));
        }
    }
    for (int i = 0; i < n * CNT; i++) {
        s[i] = val(me, i, c);
    }
    CHECK_OK(cohort_alltoall(g, s, r, CNT, COHORT_INT32));
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < CNT; i++) {
            CHECK(r[k * CNT + i] == val(k, me * CNT + i, c));
        }
    }
    CHECK_OK(cohort_reduce_scatter(g, s, r, CNT, COHORT_INT32, COHORT_MAX));
    for (int i = 0; i < CNT; i++) {
        CHECK(r[i] == val(n - 1, me * CNT + i, c));
    }
    for (int i = 0; i < CNT; i++) {
        r[i] = me == c % n ? val(me, i, c) : -1;
    }
    CHECK_OK(cohort_bcast(g, r, CNT, COHORT_INT32, c % n));
    for (int i = 0; i < CNT; i++) {
        CHECK(r[i] == val(c % n, i, c));
    }
    CHECK_OK(cohort_reduce(g, s, r, CNT, COHORT_INT32, COHORT_MIN, (c + 1) % n));
    if (me == (c + 1) % n) {
        for (int i = 0; i < CNT; i++) {
            CHECK(r[i] == val(0, i, c));
        }
    }
    CHECK_OK(cohort_barrier(g));
}

/* NB nonblocking allreduces and bcasts posted together, waited in reverse order. */
static void nonblocking(cohort_group_t *g, int c)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int32_t s[NB][CNT], r[NB][CNT];
    cohort_request_t *req[NB];

    for (int j = 0; j < NB; j++) {
        for (int i = 0; i < CNT; i++) {
            s[j][i] = val(me, i, c + j);
            r[j][i] = me == 0 ? val(0, i, c + j) : -1;
        }
        if (j % 2 == 0) {
            CHECK_OK(cohort_iallreduce(g, s[j], r[j], CNT, COHORT_INT32, COHORT_SUM, &req[j]));
        } else {
            CHECK_OK(cohort_ibcast(g, r[j], CNT, COHORT_INT32, 0, &req[j]));
        }
    }
    for (int j = NB - 1; j >= 0; j--) {
        CHECK_OK(cohort_wait(req[j]));
        cohort_request_free(req[j]);
    }
    for (int j = 0; j < NB; j++) {
        for (int i = 0; i < CNT; i++) {
            int32_t want = 0;
            for (int k = 0; k < n && j % 2 == 0; k++) {
                want += val(k, i, c + j);
            }
            CHECK(r[j][i] == (j % 2 == 0 ? want : val(0, i, c + j)));
        }
    }
}

/* This process's mappings of arenas and of named segments. */
static void mappings(int *arenas, int *named)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];

    *arenas = *named = 0;
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f) != NULL) {
        *arenas += strstr(line, "memfd:cohort-arena") != NULL;
        *named += strstr(line, "/dev/shm/cohort-") != NULL;
    }
    fclose(f);
}

/* After the world's segment is set up: where it lives, as COHORT_SHM_ARENA says. */
static void check_where(int me)
{
    const char *v = getenv("COHORT_SHM_ARENA");
    int arenas, named;

    mappings(&arenas, &named);
    if (v != NULL && strcmp(v, "off") == 0) {
        CHECK(arenas == 0 && named == 1);
    } else if (arenas == 0) {
        fprintf(stderr,
                "rank %d: NOTE: no arena here (no pidfd_getfd, or kernel.yama."
                "ptrace_scope above 0): the segments are files of /dev/shm\n",
                me);
        CHECK(named == 1);
    } else {
        CHECK(named == 0 && arenas == (me == 0 ? 1 : 2));
    }
}

/* K groups of two, one after the other, each used once on its segment and freed. */
static void reuse(cohort_context_t *ctx, long k, int unused)
{
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    int pair[2] = {me - me % 2, me - me % 2 + 1};
    uint64_t before = sent(ctx);

    if (pair[1] >= n) {
        return; /* alone */
    }
    for (long i = 0; i < k; i++) {
        cohort_group_t *g;
        int v = me + 1, sum = 0;
        CHECK_OK(cohort_group_create(ctx, "pair", pair, 2, &g));
        if (!unused || i == k - 1) {
            CHECK_OK(cohort_allreduce(g, &v, &sum, 1, COHORT_INT32, COHORT_SUM));
            CHECK(sum == pair[0] + pair[1] + 2);
        }
        CHECK_OK(cohort_group_free(g));
    }
    CHECK(sent(ctx) == before);
}

static int one_configuration(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx), *half;
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    const char *cma = getenv("COHORT_CMA");
    int off = cma != NULL && strcmp(cma, "off") == 0;
    int members[64], m = 0;
    uint64_t before;

    CHECK(n <= 64);
    if (getenv("COHORT_FAULT") != NULL && strncmp(getenv("COHORT_FAULT"), "shm_view", 8) == 0) {
        int pair[2] = {0, 1};
        cohort_group_info_t info;
        cohort_group_t *again;
        cohort_status_t st;
        const char *log;

        CHECK(n == 2);
        log = test_captured(test_one_allreduce, w, &st);
        CHECK_STATUS(st, COHORT_OK);
        CHECK(me == 0 || strstr(log, "cannot reach group rank 0's shared segment") != NULL);
        /* named as what it is, a block of rank 0's arena, not a /dev/shm name it never had */
        CHECK(me == 0 || (strstr(log, "'s arena") != NULL && strstr(log, "/cohort-") == NULL));
        CHECK_OK(cohort_group_info(w, &info));
        CHECK(info.segment == COHORT_SEGMENT_FAILED);
        CHECK_OK(cohort_group_create(ctx, "again", pair, 2, &again));
        before = sent(ctx);
        log = test_captured(test_one_allreduce, again, &st);
        CHECK_STATUS(st, COHORT_OK);
        CHECK(strstr(log, "cannot reach") == NULL);
        CHECK(sent(ctx) > before);
        CHECK_OK(cohort_group_info(again, &info));
        CHECK(info.segment == COHORT_SEGMENT_FAILED);
        CHECK_OK(cohort_group_free(again));
        test_finish(ctx, "shm");
        return 0;
    }
    if (getenv("COHORT_FAULT") != NULL) {
        cohort_status_t st;
        cohort_group_info_t info;
        int v = me + 1, sum = 0;
        before = sent(ctx);
        if (strncmp(getenv("COHORT_FAULT"), "shm_pid", 7) == 0 && me != 0) {
            const char *log = test_captured(test_one_allreduce, w, &st);
            CHECK(strstr(log, "not the one group rank 0 published") != NULL);
            CHECK(strstr(log, "runs on messages") != NULL);
        } else if (strncmp(getenv("COHORT_FAULT"), "shm_pid", 7) == 0) {
            st = test_one_allreduce(w); /* the same call as the others' */
        } else {
            st = cohort_allreduce(w, &v, &sum, 1, COHORT_INT32, COHORT_SUM);
            CHECK(sum == n * (n + 1) / 2);
        }
        CHECK_STATUS(st, COHORT_OK);
        CHECK(sent(ctx) > before); /* that call ran on messages */
        CHECK_OK(cohort_group_info(w, &info));
        CHECK(info.segment == COHORT_SEGMENT_FAILED && info.last_algorithm != NULL &&
              strcmp(info.last_algorithm, "shm") != 0);
        before = sent(ctx);
        round_of_all(w, 0);
        nonblocking(w, 1);
        CHECK(sent(ctx) > before); /* the group no longer takes the segment */
        test_finish(ctx, "shm");
        return 0;
    }
    if (getenv("SHM_ABSENT") != NULL) {
        cohort_status_t st;
        char who[32];
        round_of_all(w, 0);
        if (me == n - 1) {
            sleep(3); /* the others gave up and said so */
            CHECK_STATUS(test_one_allreduce(w), COHORT_ERR_TIMEOUT);
        } else {
            const char *log = test_captured(test_one_allreduce, w, &st);
            CHECK_STATUS(st, COHORT_ERR_TIMEOUT);
            snprintf(who, sizeof(who), "(world %d)", n - 1);
            CHECK(strstr(log, "shm") != NULL && strstr(log, "not yet heard from") != NULL);
            CHECK(strstr(log, who) != NULL);
        }
        test_finish(ctx, "shm");
        return 0;
    }
    if (getenv("SHM_REUSE") != NULL) {
        reuse(ctx, strtol(getenv("SHM_REUSE"), NULL, 10), getenv("SHM_UNUSED") != NULL);
        test_finish(ctx, "shm");
        return 0;
    }
    /* The first call makes the segment (two rounds of messages); none after. */
    round_of_all(w, 0);
    if (!off) {
        check_where(me);
    }
    before = sent(ctx);
    for (int c = 1; c < CALLS; c++) {
        round_of_all(w, c);
    }
    nonblocking(w, CALLS);
    CHECK(off ? sent(ctx) > before : sent(ctx) == before);
    for (int r = me % 2; r < n; r += 2) {
        members[m++] = r;
    }
    CHECK_OK(cohort_group_create(ctx, me % 2 ? "odds" : "evens", members, m, &half));
    for (int c = 0; c < 10; c++) {
        if (m > 1) {
            round_of_all(half, c);
        }
        round_of_all(w, c); /* between two calls on the other segment */
        if (m > 1) {
            nonblocking(half, c);
        }
    }
    CHECK_OK(cohort_group_free(half));
    test_finish(ctx, "shm");
    return 0;
}

int main(void)
{
    return test_configs(one_configuration);
}
