/* clang-format off */
/* run: 8 COHORT_WATCH_S=0 */
/* run: 8 COHORT_WATCH_S=0 COHORT_ALGO_ALLREDUCE=shm */
/* run: 8 COHORT_WATCH_S=0 COHORT_ALGO_ALLREDUCE=direct */
/* run: 8 COHORT_WATCH_S=0 COHORT_ALGO_ALLREDUCE=ring */
/* run: 4 FIRST_CASE=race */
/* run: 4 COHORT_SHM_ARENA=off FIRST_CASE=race */
/* run: 4 --enable-recovery --expect-passed=3 FIRST_CASE=death DEATH_RANK=3 */
/* run: 4 --enable-recovery --expect-passed=3 FIRST_CASE=death DEATH_RANK=0 */
/* run: 4 --enable-recovery --expect-passed=3 FIRST_CASE=death DEATH_RANK=0 DEATH_SUB=1 */
/* run: 4 --enable-recovery --expect-passed=3 COHORT_SHM_ARENA=off FIRST_CASE=death DEATH_RANK=0 */
/* run: 4 --enable-recovery --expect-passed=3 COHORT_SHM_DEFER=1 FIRST_CASE=death DEATH_RANK=3 */
/* run: 4 --enable-recovery --expect-passed=3 COHORT_SHM_ARENA=off COHORT_SHM_DEFER=1 FIRST_CASE=death DEATH_RANK=3 */
/* run: 4 --enable-recovery --expect-passed=3 COHORT_SHM_DEFER=1 FIRST_CASE=death DEATH_RANK=0 */
/* run: 4 COHORT_TIMEOUT=20 COHORT_SHM_DEFER=2 FIRST_CASE=defer */
/* run: 4 COHORT_TIMEOUT=20 COHORT_SHM_DEFER=2 COHORT_FAULT=shm_late:1@3 FIRST_CASE=defer */
/* run: 3 COHORT_TIMEOUT=20 COHORT_SHM_DEFER=1 COHORT_FAULT=shm_late:1@0 FIRST_CASE=defer */
/* clang-format on */
/*
 * A group's first collective costs no endpoint beyond what its messages need (issue 37).
 *
 * Default case: every group of the layout tp=2,pp=2,ep=2,etp=1, all on this node, runs its
 * first allreduce (one float), kinds in order. With shm or direct (the default for this size,
 * or forced), the call runs on the group's shared segment, which is reached and on which the
 * members agree on their settings without any message: no rank holds any endpoint afterwards,
 * and a second allreduce in every group sends nothing either. Before, the segment's setup sent
 * descriptors between group rank 0 and every member, the first collective's settings went round
 * a dissemination (group rank r to r + 2^k), and direct announced every member at post. With
 * ring forced, every endpoint a rank holds must be to a peer a message went to: the agreement's
 * partners (r + 2^k) and the ring's next member. COHORT_WATCH_S=0: under load a receive waiting
 * over a second wires its source to watch it, which is not what this counts.
 *
 * This program never loads CUDA, so no buffer of it can be device memory: the first calls must
 * not load CUDA either (the CUDA module and runtime, about 2 ms a rank at W=2): nothing named
 * libcudart or libcuda is mapped after them.
 *
 * FIRST_CASE=race: two groups with the same members and tag, created back to back (different
 * ids), run their first allreduces posted together and waited in reverse order, three times:
 * their segments' setups race and must not mix. Afterwards nothing of theirs is in /dev/shm.
 * Both in group rank 0's arena (the default: two blocks, found by id) and as files of /dev/shm
 * (COHORT_SHM_ARENA=off, the way where the kernel lets no process take another's descriptor).
 *
 * Group rank 0 of each same-node group made its segment when it created the group (no message,
 * no lookup: creation asks PMIx nothing), and the others fetch group rank 0's card of every
 * such group at their first call on a segment, all at once: after the first allreduce of the
 * first group, a rank has looked up group rank 0 of each of its groups.
 *
 * FIRST_CASE=death: the world runs a barrier by messages (the group's first collective, its
 * agreement done), then DEATH_RANK dies (SIGKILL) instead of the first allreduce, which sets up
 * the segment: rank 3 dies before it attaches (the segment exists, the others attached and wait
 * for it), rank 0 before it makes it (the others look for it in rank 0's arena, or poll for its
 * name under COHORT_SHM_ARENA=off). The others get
 * COHORT_ERR_PEER_FAILED (found by watching the members their setup waits on: some hold no
 * endpoint to the dead rank) and no name of the group is left in /dev/shm. Under
 * COHORT_SHM_DEFER=1 the allreduce runs on messages while rank 0 makes the segment beside it and
 * the others attach: the dead rank never does, and the name must go when the call fails, not
 * wait for the group's free (a name exists only under COHORT_SHM_ARENA=off: in the arena
 * nothing is named, which the arena's line of this case checks as well). DEATH_SUB=1: the group
 * is a subgroup of every rank, made after init, with no call before the allreduce: group rank 0
 * made its block at the group's creation and dies before it says it is in; the others, who find
 * the block (or cannot take rank 0's arena any more), get COHORT_ERR_PEER_FAILED too.
 *
 * FIRST_CASE=defer (COHORT_SHM_DEFER=K): a group of every rank runs K + 3 small allreduces,
 * blocking, then a second group the same number posted together and waited in reverse order.
 * The first K run on messages (cohort_group_info names a message algorithm, messages were
 * sent, the segment is not ready), call K + 1 on the segment, which is then ready, and from
 * call K + 2 on nothing is sent; every sum is right. Every member must count the same calls as
 * deferred: one that took the segment for a call another runs on messages waits there for a
 * contribution that never comes (a TIMEOUT under COHORT_TIMEOUT). COHORT_FAULT=shm_late:1@R:
 * world rank R does not set the segment up beside its deferred calls (a member slow to attach,
 * or for rank 0 slow to make it): the others have it early, R only in the setup call, and the
 * calls still pair alike.
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define MAX_KINDS 32

static int in_list(const int *l, int n, int v)
{
    for (int i = 0; i < n; i++) {
        if (l[i] == v) {
            return 1;
        }
    }
    return 0;
}

/* The pid of @a g's group rank 0, told over a group of its own (@a g's first call must stay
 * the one the case is about). */
static int pid_of_rank0(cohort_context_t *ctx, cohort_group_t *g)
{
    int n = cohort_group_size(g), members[64];
    int32_t pid = (int32_t)getpid();
    cohort_group_t *p;

    CHECK(n <= 64);
    for (int k = 0; k < n; k++) {
        members[k] = cohort_group_world_rank(g, k);
    }
    CHECK_OK(cohort_group_create(ctx, "pids", members, n, &p));
    CHECK_OK(cohort_bcast(p, &pid, 1, COHORT_INT32, 0));
    CHECK_OK(cohort_group_free(p));
    return pid;
}

/* How many names in /dev/shm are @a g's segment (shm_seg.c names them
 * /cohort-PID-INSTANCE-ID, PID group rank 0's): other jobs on the machine have groups of the
 * same id, made by other processes. */
static int names_left(cohort_group_t *g, int pid0)
{
    char id[32], pre[32];
    struct dirent *e;
    DIR *d = opendir("/dev/shm");
    int n = 0;

    snprintf(id, sizeof(id), "-%016llx", (unsigned long long)cohort_group_id(g));
    snprintf(pre, sizeof(pre), "cohort-%d-", pid0);
    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, pre, strlen(pre)) == 0 && strstr(e->d_name, id) != NULL) {
            fprintf(stderr, "rank %d: /dev/shm/%s is left\n", test_rank, e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static float first_sum(cohort_group_t *g)
{
    float v = (float)(cohort_group_world_rank(g, cohort_group_rank(g)) + 1), sum = 0, want = 0;

    for (int k = 0; k < cohort_group_size(g); k++) {
        want += (float)(cohort_group_world_rank(g, k) + 1);
    }
    CHECK_OK(cohort_allreduce(g, &v, &sum, 1, COHORT_FLOAT32, COHORT_SUM));
    CHECK(sum == want);
    return sum;
}

/* Whether a CUDA runtime or driver is mapped into this process. */
static int cuda_mapped(void)
{
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;

    CHECK(f != NULL);
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        found = strstr(line, "/libcudart.so") != NULL || strstr(line, "/libcuda.so") != NULL;
    }
    fclose(f);
    return found;
}

static void layout_case(cohort_context_t *ctx)
{
    const char *spec_s = "tp=2,pp=2,ep=2,etp=1", *algo = getenv("COHORT_ALGO_ALLREDUCE");
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx);
    int allowed[64], nallowed = 0, wired[64], nwired, ng = 0, quiet;
    cohort_group_t *gs[MAX_KINDS];
    cohort_layout_spec_t *spec;
    cohort_layout_t *layout;
    cohort_stats_t st0, st1;
    char err[256];

    /* shm and direct on a segment send nothing once it is there */
    quiet = algo == NULL || strcmp(algo, "shm") == 0 || strcmp(algo, "direct") == 0;
    CHECK(n <= 64);
    CHECK_OK(cohort_layout_spec_parse(spec_s, n, &spec, err, sizeof(err)));
    CHECK_OK(cohort_layout_create(ctx, spec_s, &layout));
    for (int k = 0; k < cohort_layout_spec_kind_count(spec) && ng < MAX_KINDS; k++) {
        cohort_group_t *g = cohort_layout_group(layout, cohort_layout_spec_kind_name(spec, k));
        int m, r;
        if (g == NULL) {
            continue;
        }
        gs[ng++] = g;
        m = cohort_group_size(g);
        r = cohort_group_rank(g);
        for (int dist = 1; dist < m; dist *= 2) {
            int w = cohort_group_world_rank(g, (r + dist) % m);
            if (!in_list(allowed, nallowed, w)) {
                allowed[nallowed++] = w;
            }
        }
        if (algo != NULL && strcmp(algo, "ring") == 0 && m > 1) {
            int w = cohort_group_world_rank(g, (r + 1) % m);
            if (!in_list(allowed, nallowed, w)) {
                allowed[nallowed++] = w;
            }
        }
    }
    CHECK_OK(cohort_stats(ctx, &st0));
    CHECK(st0.pmix_lookups == 0); /* creating asks PMIx nothing */
    for (int i = 0; i < ng; i++) {
        first_sum(gs[i]);
        /* After the first call on a segment: group rank 0 of every group with a segment. */
        if (i == 0 && quiet && cohort_group_size(gs[0]) > 1) {
            int rank0s[MAX_KINDS], n0 = 0;
            for (int j = 0; j < ng; j++) {
                int w0 = cohort_group_world_rank(gs[j], 0);
                if (cohort_group_size(gs[j]) > 1 && w0 != me && !in_list(rank0s, n0, w0)) {
                    rank0s[n0++] = w0;
                }
            }
            CHECK_OK(cohort_stats(ctx, &st1));
            if (st1.pmix_lookups < (uint64_t)n0) {
                fprintf(stderr,
                        "rank %d: %llu lookups after the first group's first call, %d groups' "
                        "rank 0 to look up\n",
                        me, (unsigned long long)st1.pmix_lookups, n0);
                exit(1);
            }
        }
    }
    if (cuda_mapped()) {
        fprintf(stderr,
                "rank %d: a CUDA library is mapped after the first calls of a program "
                "that never loaded CUDA\n",
                me);
        exit(1);
    }
    nwired = cohort_wired_peers(ctx, wired, 64);
    for (int i = 0; i < nwired && i < 64; i++) {
        if (!in_list(allowed, nallowed, wired[i])) {
            fprintf(stderr,
                    "rank %d: an endpoint to world rank %d, to which no message of the first "
                    "calls goes (%d endpoints)\n",
                    me, wired[i], nwired);
            exit(1);
        }
    }
    /* On the segment the settings are agreed there too: nothing is sent, nobody is wired. */
    if (quiet && nwired != 0) {
        fprintf(stderr, "rank %d: %d endpoints after the first calls, all on shared segments\n", me,
                nwired);
        exit(1);
    }
    /* What cohort_group_info (and so cohort_peers) says of each group's path: a group of one
     * member has no segment; the others, all on this node, ran on theirs unless a message
     * algorithm was forced, and the algorithm named is the one asked for. */
    for (int i = 0; i < ng; i++) {
        cohort_group_info_t info;
        int solo = cohort_group_size(gs[i]) == 1;
        CHECK_OK(cohort_group_info(gs[i], &info));
        CHECK(info.node_local == 1 && info.collectives == 1 && info.last_algorithm != NULL);
        if (!solo && (algo == NULL || strcmp(algo, "shm") == 0)) {
            CHECK(info.segment == COHORT_SEGMENT_READY && strcmp(info.last_algorithm, "shm") == 0);
        } else if (!solo && strcmp(algo, "direct") == 0) {
            CHECK(info.segment == COHORT_SEGMENT_READY &&
                  strcmp(info.last_algorithm, "direct") == 0);
        } else if (!solo) {
            CHECK(info.segment == COHORT_SEGMENT_NONE && strcmp(info.last_algorithm, algo) == 0);
        } else {
            CHECK(info.segment == COHORT_SEGMENT_NONE);
        }
    }
    CHECK_STATUS(cohort_group_info(NULL, NULL), COHORT_ERR_INVALID_ARG);
    CHECK_STATUS(cohort_group_info(gs[0], NULL), COHORT_ERR_INVALID_ARG);
    printf("rank %d: %d groups, %d endpoints after their first allreduce (%d allowed)\n", me, ng,
           nwired, nallowed);
    CHECK_OK(cohort_stats(ctx, &st0));
    for (int i = 0; i < ng; i++) {
        first_sum(gs[i]);
    }
    CHECK_OK(cohort_stats(ctx, &st1));
    CHECK(!quiet || st1.messages_sent == st0.messages_sent);
    CHECK(cohort_wired_peers(ctx, wired, 64) == nwired);
    CHECK_OK(cohort_layout_free(layout));
    cohort_layout_spec_free(spec);
}

static void race_case(cohort_context_t *ctx)
{
    int n = cohort_world_size(ctx), members[64], pid0;
    cohort_group_t *a, *b;

    CHECK(n <= 64);
    for (int k = 0; k < n; k++) {
        members[k] = n - 1 - k; /* not the world's order: a group of its own */
    }
    CHECK_OK(cohort_group_create(ctx, "twin", members, n, &a));
    CHECK_OK(cohort_group_create(ctx, "twin", members, n, &b));
    pid0 = pid_of_rank0(ctx, a);
    CHECK(cohort_group_id(a) != cohort_group_id(b));
    for (int it = 0; it < 3; it++) {
        int32_t va = cohort_group_rank(a) + 1, vb = 100 * (cohort_group_rank(b) + 1), ra = 0,
                rb = 0;
        cohort_request_t *qa, *qb;
        CHECK_OK(cohort_iallreduce(a, &va, &ra, 1, COHORT_INT32, COHORT_SUM, &qa));
        CHECK_OK(cohort_iallreduce(b, &vb, &rb, 1, COHORT_INT32, COHORT_SUM, &qb));
        CHECK_OK(cohort_wait(qb));
        CHECK_OK(cohort_wait(qa));
        cohort_request_free(qa);
        cohort_request_free(qb);
        CHECK(ra == n * (n + 1) / 2);
        CHECK(rb == 100 * n * (n + 1) / 2);
    }
    CHECK(names_left(a, pid0) == 0 && names_left(b, pid0) == 0);
    CHECK_OK(cohort_group_free(a));
    CHECK_OK(cohort_group_free(b));
}

static void death_case(cohort_context_t *ctx)
{
    int me = cohort_world_rank(ctx), victim = atoi(getenv("DEATH_RANK"));
    int sub = getenv("DEATH_SUB") != NULL, all[64];
    cohort_group_t *w = cohort_world(ctx);
    float v = 1, sum = 0;
    double t0;
    cohort_status_t st;
    int pid0;

    if (sub) {
        CHECK(cohort_world_size(ctx) <= 64);
        for (int k = 0; k < cohort_world_size(ctx); k++) {
            all[k] = k;
        }
        CHECK_OK(cohort_group_create(ctx, "death-sub", all, cohort_world_size(ctx), &w));
    }
    pid0 = pid_of_rank0(ctx, w);
    /* The world's first collective, by messages: its agreement is behind it. */
    if (!sub) {
        CHECK_OK(cohort_barrier(w));
    }
    if (me == victim) {
        kill(getpid(), SIGKILL);
    }
    t0 = test_now();
    st = cohort_allreduce(w, &v, &sum, 1, COHORT_FLOAT32, COHORT_SUM);
    if (st != COHORT_ERR_PEER_FAILED) {
        fprintf(stderr, "rank %d: allreduce returned %s, expected COHORT_ERR_PEER_FAILED\n", me,
                cohort_strerror(st));
        exit(1);
    }
    printf("rank %d: PEER_FAILED after %.2f s\n", me, test_now() - t0);
    CHECK(names_left(w, pid0) == 0);
    CHECK_OK(cohort_finalize(ctx));
    printf("rank %d: rank passed\n", me);
}

/* The sum of (world rank + 1) * (i + 1) over @a g's members. */
static int32_t defer_want(cohort_group_t *g, int i)
{
    int32_t want = 0;

    for (int k = 0; k < cohort_group_size(g); k++) {
        want += (cohort_group_world_rank(g, k) + 1) * (i + 1);
    }
    return want;
}

static void defer_case(cohort_context_t *ctx)
{
    int n = cohort_world_size(ctx), me = cohort_world_rank(ctx), members[64];
    int k = atoi(getenv("COHORT_SHM_DEFER")), calls = k + 3;
    cohort_request_t *q[64];
    int32_t v[64], r[64];
    cohort_group_t *g, *h;

    CHECK(n <= 64 && calls <= 64);
    for (int i = 0; i < n; i++) {
        members[i] = i;
    }
    CHECK_OK(cohort_group_create(ctx, "defer", members, n, &g));
    for (int i = 0; i < calls; i++) {
        cohort_group_info_t info;
        cohort_stats_t st0, st1;
        int32_t x = (me + 1) * (i + 1), sum = 0;
        CHECK_OK(cohort_stats(ctx, &st0));
        CHECK_OK(cohort_allreduce(g, &x, &sum, 1, COHORT_INT32, COHORT_SUM));
        CHECK_OK(cohort_stats(ctx, &st1));
        CHECK_OK(cohort_group_info(g, &info));
        if (sum != defer_want(g, i)) {
            fprintf(stderr, "rank %d: call %d: sum %d, expected %d\n", me, i, sum,
                    defer_want(g, i));
            exit(1);
        }
        if (i < k) {
            /* deferred: on messages, beside the segment's setup */
            CHECK(strcmp(info.last_algorithm, "shm") != 0);
            CHECK(info.segment != COHORT_SEGMENT_READY);
            CHECK(st1.messages_sent > st0.messages_sent);
        } else {
            CHECK(strcmp(info.last_algorithm, "shm") == 0);
            CHECK(info.segment == COHORT_SEGMENT_READY);
            CHECK(i == k || st1.messages_sent == st0.messages_sent);
        }
    }
    CHECK_OK(cohort_group_free(g));
    /* Posted together: the setup call waits beside the deferred calls still in flight. */
    CHECK_OK(cohort_group_create(ctx, "defer-nb", members, n, &h));
    for (int i = 0; i < calls; i++) {
        v[i] = (me + 1) * (i + 1);
        CHECK_OK(cohort_iallreduce(h, &v[i], &r[i], 1, COHORT_INT32, COHORT_SUM, &q[i]));
    }
    for (int i = calls - 1; i >= 0; i--) {
        CHECK_OK(cohort_wait(q[i]));
        cohort_request_free(q[i]);
    }
    for (int i = 0; i < calls; i++) {
        if (r[i] != defer_want(h, i)) {
            fprintf(stderr, "rank %d: posted together, call %d: sum %d, expected %d\n", me, i, r[i],
                    defer_want(h, i));
            exit(1);
        }
    }
    CHECK_OK(cohort_group_free(h));
    printf("rank %d: %d calls, the first %d on messages, then the segment\n", me, calls, k);
}

int main(void)
{
    const char *which = getenv("FIRST_CASE");
    cohort_context_t *ctx;

    if (which != NULL && strcmp(which, "death") == 0) {
        /* the barrier must not take the segment: the allreduce's call sets it up */
        setenv("COHORT_ALGO_BARRIER", "dissemination", 1);
    }
    ctx = test_init();
    if (which == NULL) {
        layout_case(ctx);
    } else if (strcmp(which, "race") == 0) {
        race_case(ctx);
    } else if (strcmp(which, "defer") == 0) {
        defer_case(ctx);
    } else if (strcmp(which, "death") == 0) {
        death_case(ctx);
        return 0;
    } else {
        fprintf(stderr, "FIRST_CASE=%s: unknown\n", which);
        return 1;
    }
    test_finish(ctx, "first_use");
    return 0;
}
