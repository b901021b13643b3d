/*
 * cohort_init_exchange: cohort with no PMIx server, its world rank and size given by the caller
 * and addresses going through the caller's key-value store. The store here is a directory of
 * files (put: write a file beside the key's, then rename it into place, so a get never sees half
 * a value; get: the file's bytes, or COHORT_INPROGRESS while there is none), and the ranks are
 * plain processes that tests/mpi/exchange.sh starts itself: no mpirun, no PMIx.
 *
 *   exchange MODE RANK SIZE DIR
 *
 * main (3 or 4 ranks): every collective on a pair, on the ranks 1.., and on the world, checked
 *   against values computed here; p2p, small and 1 MiB by single copy (COHORT_CMA=on), the
 *   reads counted; cohort_node_info says the peers share this node. Every get the library makes
 *   is counted per key: nothing is read at init, and after each phase a rank has asked for the
 *   keys of the members of its groups only (rank 0 never for rank 3's key while its groups are
 *   {0,1} alone), each found once and never asked again.
 * pid (2 ranks): rank 0's first single-copy send names its parent process (COHORT_FAULT=pid):
 *   rank 1 must refuse it with COHORT_ERR_MISMATCH, by the pid rank 0 put in its card through
 *   this store; the sends after it arrive whole by single copy.
 * missing (SIZE-1 ranks started, COHORT_TIMEOUT=3): the absent rank's key never comes. A send to
 *   it fails with COHORT_ERR_TIMEOUT within the bound, saying which key was missing; a world
 *   barrier fails on every rank that was started, never hangs.
 * late (3 ranks): rank 2 calls cohort_init_exchange only once rank 0 has posted a send to it
 *   and tested it for 0.5 s: that send is not done meanwhile, its post and every test return
 *   at once (the lookup is polled from progress, never waited on inside a call), and it
 *   completes once rank 2 comes; rank 1's world allreduce, posted at once, is right.
 * coexist (under mpirun, RANK and SIZE -1): a PMIx context first (cohort_init), then one over
 *   the store with the rank and size the first one gives, in the same processes: both worlds'
 *   collectives right, the store's keys those of the second context ("cohort/1/...").
 * bad (1 process): bad input refused with COHORT_ERR_INVALID_ARG and a log line naming the
 *   argument; a put that fails fails init with its status; a get that fails, or that gives
 *   bytes cohort did not put, fails the lookup with that status (or MISMATCH) at once, not
 *   after the timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include "harness.h"

/* ------------------------------------------------------------------------------------------ */
/* The store: a directory, and every get counted by key.                                        */

#define MAX_KEYS 64

typedef struct {
    const char *dir;
    int puts;
    cohort_status_t put_status; /* what put returns (COHORT_OK: it stores) */
    cohort_status_t get_status; /* what get returns (COHORT_OK: it reads the file) */
    int garbage;                /* get gives 3 bytes nobody put */
    struct {
        char key[128];
        int asks, found, late; /* late: asked again after it was found */
    } keys[MAX_KEYS];
    int nkeys;
} store_t;

static store_t store;

static void store_path(const store_t *s, const char *key, char *path, size_t len)
{
    int n = snprintf(path, len, "%s/", s->dir);

    /* The key's slashes are cohort's namespace, not directories. */
    for (const char *k = key; *k != '\0' && (size_t)n + 1 < len; k++) {
        path[n++] = *k == '/' ? '#' : *k;
    }
    path[n] = '\0';
}

static cohort_status_t store_put(void *arg, const char *key, const void *value, size_t len)
{
    store_t *s = arg;
    char path[4096], tmp[4200];
    FILE *f;

    CHECK(s == &store && key != NULL && value != NULL && len > 0);
    if (s->put_status != COHORT_OK) {
        return s->put_status;
    }
    store_path(s, key, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    f = fopen(tmp, "w");
    CHECK(f != NULL);
    CHECK(fwrite(value, 1, len, f) == len);
    CHECK(fclose(f) == 0);
    CHECK(rename(tmp, path) == 0);
    s->puts++;
    return COHORT_OK;
}

static cohort_status_t store_get(void *arg, const char *key, void **value, size_t *len)
{
    store_t *s = arg;
    char path[4096];
    struct stat st;
    int fd, i;

    CHECK(s == &store && key != NULL && value != NULL && len != NULL);
    for (i = 0; i < s->nkeys && strcmp(s->keys[i].key, key) != 0; i++) {
    }
    if (i == s->nkeys) {
        CHECK(s->nkeys < MAX_KEYS && strlen(key) < sizeof(s->keys[0].key));
        snprintf(s->keys[s->nkeys++].key, sizeof(s->keys[0].key), "%s", key);
    }
    s->keys[i].asks++;
    s->keys[i].late += s->keys[i].found > 0;
    if (s->get_status != COHORT_OK) {
        return s->get_status;
    }
    if (s->garbage) {
        *value = strdup("xyz");
        CHECK(*value != NULL);
        *len = 3;
        return COHORT_OK;
    }
    store_path(s, key, path, sizeof(path));
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        CHECK(errno == ENOENT);
        return COHORT_INPROGRESS;
    }
    CHECK(fstat(fd, &st) == 0 && st.st_size > 0);
    *value = malloc((size_t)st.st_size);
    CHECK(*value != NULL);
    CHECK(read(fd, *value, (size_t)st.st_size) == st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    s->keys[i].found++;
    return COHORT_OK;
}

static cohort_exchange_t exchange_of(int rank, int size)
{
    cohort_exchange_t ex = {
        .rank = rank, .size = size, .put = store_put, .get = store_get, .arg = &store};

    return ex;
}

/* The world rank whose card @a key names ("cohort/<instance>/<rank>/card"), -1 otherwise. */
static int key_rank(const char *key)
{
    int inst, rank, end = 0;

    if (sscanf(key, "cohort/%d/%d/card%n", &inst, &rank, &end) != 2 || key[end] != '\0') {
        return -1;
    }
    return rank;
}

/* Every key asked for is the card of a rank in @a allowed (never this rank's own), and none
 * was asked for again once found: cohort keeps what it read. */
static void check_reads(const char *phase, int me, const int *allowed, int nallowed)
{
    for (int i = 0; i < store.nkeys; i++) {
        int r = key_rank(store.keys[i].key), ok = 0;

        for (int k = 0; k < nallowed; k++) {
            ok |= allowed[k] == r;
        }
        if (!ok || r == me || store.keys[i].late > 0) {
            fprintf(stderr,
                    "rank %d: after %s: key '%s' asked %d times, found %d times, asked %d times "
                    "after it was found\n",
                    me, phase, store.keys[i].key, store.keys[i].asks, store.keys[i].found,
                    store.keys[i].late);
            exit(1);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Collectives, checked against values computed here.                                          */

#define BIG (1 << 16) /* int32s: 256 KiB, past COHORT_CMA_MIN, so same-node paths run */

static int32_t val(int wr, size_t i)
{
    return (int32_t)((wr + 1) * 1000 + (int)(i % 977));
}

static void check_int(const char *what, size_t i, int32_t got, int32_t want)
{
    if (got != want) {
        fprintf(stderr, "rank %d: %s: element %zu is %d, expected %d\n", test_rank, what, i, got,
                want);
        exit(1);
    }
}

static void collectives(cohort_group_t *g, const char *name)
{
    int n = cohort_group_size(g), me = cohort_group_rank(g);
    int wr = cohort_group_world_rank(g, me);
    int32_t *in = malloc(BIG * sizeof(int32_t) * (size_t)n);
    int32_t *out = malloc(BIG * sizeof(int32_t) * (size_t)n);
    char what[128];

    CHECK(in != NULL && out != NULL && n > 0);
    CHECK_OK(cohort_barrier(g));

    for (size_t count = 1; count <= BIG; count *= BIG) {
        /* allreduce, reduce at the last member */
        for (size_t i = 0; i < count; i++) {
            in[i] = val(wr, i);
        }
        CHECK_OK(cohort_allreduce(g, in, out, count, COHORT_INT32, COHORT_SUM));
        for (size_t i = 0; i < count; i++) {
            int32_t want = 0;
            for (int k = 0; k < n; k++) {
                want += val(cohort_group_world_rank(g, k), i);
            }
            snprintf(what, sizeof(what), "%s allreduce of %zu", name, count);
            check_int(what, i, out[i], want);
        }
        memset(out, 0, count * sizeof(int32_t));
        CHECK_OK(cohort_reduce(g, in, out, count, COHORT_INT32, COHORT_MAX, n - 1));
        for (size_t i = 0; me == n - 1 && i < count; i++) {
            int32_t want = INT32_MIN;
            for (int k = 0; k < n; k++) {
                int32_t v = val(cohort_group_world_rank(g, k), i);
                want = v > want ? v : want;
            }
            snprintf(what, sizeof(what), "%s reduce of %zu", name, count);
            check_int(what, i, out[i], want);
        }

        /* bcast from the last member */
        for (size_t i = 0; i < count; i++) {
            out[i] = me == n - 1 ? val(wr, i) : -1;
        }
        CHECK_OK(cohort_bcast(g, out, count, COHORT_INT32, n - 1));
        for (size_t i = 0; i < count; i++) {
            snprintf(what, sizeof(what), "%s bcast of %zu", name, count);
            check_int(what, i, out[i], val(cohort_group_world_rank(g, n - 1), i));
        }

        /* allgather */
        CHECK_OK(cohort_allgather(g, in, out, count, COHORT_INT32));
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < count; i++) {
                snprintf(what, sizeof(what), "%s allgather of %zu (block %d)", name, count, k);
                check_int(what, i, out[(size_t)k * count + i],
                          val(cohort_group_world_rank(g, k), i));
            }
        }

        /* reduce_scatter and alltoall: block k of member m is val(m, k * count + i) */
        for (size_t i = 0; i < (size_t)n * count; i++) {
            in[i] = val(wr, i);
        }
        CHECK_OK(cohort_reduce_scatter(g, in, out, count, COHORT_INT32, COHORT_SUM));
        for (size_t i = 0; i < count; i++) {
            int32_t want = 0;
            for (int k = 0; k < n; k++) {
                want += val(cohort_group_world_rank(g, k), (size_t)me * count + i);
            }
            snprintf(what, sizeof(what), "%s reduce_scatter of %zu", name, count);
            check_int(what, i, out[i], want);
        }
        CHECK_OK(cohort_alltoall(g, in, out, count, COHORT_INT32));
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < count; i++) {
                snprintf(what, sizeof(what), "%s alltoall of %zu (from %d)", name, count, k);
                check_int(what, i, out[(size_t)k * count + i],
                          val(cohort_group_world_rank(g, k), (size_t)me * count + i));
            }
        }
        if (count == BIG) {
            break;
        }
    }
    free(in);
    free(out);
}

/* A small send and a 1 MiB one each way between the two members of @a g; the large ones by
 * single copy (the receiver's count of single copies grows), which needs the peer on this node
 * and its pid from its card. */
static void p2p(cohort_context_t *ctx, cohort_group_t *g, int tag)
{
    int me = cohort_group_rank(g);
    size_t big = 1u << 18;
    int32_t *buf = malloc(big * sizeof(int32_t));
    cohort_stats_t before, after;

    CHECK(buf != NULL && cohort_group_size(g) == 2);
    for (int from = 0; from < 2; from++) {
        for (size_t count = 1; count <= big; count *= big) {
            if (me == from) {
                for (size_t i = 0; i < count; i++) {
                    buf[i] = val(from, i) + tag;
                }
                CHECK_OK(cohort_send(g, buf, count, COHORT_INT32, 1 - me, tag));
            } else {
                CHECK_OK(cohort_stats(ctx, &before));
                memset(buf, 0, count * sizeof(int32_t));
                CHECK_OK(cohort_recv(g, buf, count, COHORT_INT32, 1 - me, tag));
                for (size_t i = 0; i < count; i++) {
                    check_int("p2p", i, buf[i], val(from, i) + tag);
                }
                CHECK_OK(cohort_stats(ctx, &after));
                if (count == big) {
                    CHECK(after.single_copies > before.single_copies);
                }
            }
            if (count == big) {
                break;
            }
        }
    }
    free(buf);
}

/* ------------------------------------------------------------------------------------------ */
/* The modes.                                                                                   */

static cohort_context_t *init(int me, int n)
{
    cohort_exchange_t ex = exchange_of(me, n);
    cohort_context_t *ctx = NULL;
    cohort_stats_t st;

    CHECK_OK(cohort_init_exchange(&ex, &ctx));
    CHECK(cohort_world_rank(ctx) == me && cohort_world_size(ctx) == n);
    CHECK_OK(cohort_stats(ctx, &st));
    CHECK(strcmp(st.pmix_plugin, "user") == 0);
    return ctx;
}

/* Peer @a k shares this node, and cohort_node_info names this host. */
static void check_node(cohort_context_t *ctx, int k)
{
    cohort_node_info_t node;
    char host[256] = "";

    CHECK(gethostname(host, sizeof(host)) == 0);
    CHECK_OK(cohort_node_info(ctx, k, &node));
    CHECK(node.world_rank == k && node.same_node == 1 && node.node_id == UINT32_MAX);
    CHECK(strncmp(node.hostname, host, sizeof(node.hostname) - 1) == 0);
}

static void mode_main(int me, int n)
{
    int partner = me ^ 1, pair[2] = {me & ~1, me | 1}, rest[8], all[8], nrest = 0;
    cohort_context_t *ctx;
    cohort_group_t *g;

    CHECK(n >= 3 && n <= 8);
    setenv("COHORT_CMA", "on", 1);
    ctx = init(me, n);
    /* One put (this rank's card), and not one read, at init. */
    CHECK(store.puts == 1 && store.nkeys == 0);

    /* Pairs {0,1}, {2,3}: a rank reads its partner's key and no other. */
    if (partner < n) {
        CHECK_OK(cohort_group_create(ctx, "pair", pair, 2, &g));
        collectives(g, "pair");
        p2p(ctx, g, 5);
        check_node(ctx, partner);
        CHECK_OK(cohort_group_free(g));
        check_reads("the pair", me, &partner, 1);
    } else {
        check_reads("no group", me, NULL, 0);
    }

    /* Ranks 1..n-1 (3 at 4 ranks): rank 0 is not a member and still knows rank 1 only. */
    for (int r = 1; r < n; r++) {
        rest[nrest++] = r;
    }
    if (me == 0) {
        CHECK_STATUS(cohort_group_create(ctx, "rest", rest, nrest, &g), COHORT_ERR_NOT_MEMBER);
        check_reads("the pair, not a member of the rest", me, &partner, 1);
    } else {
        CHECK_OK(cohort_group_create(ctx, "rest", rest, nrest, &g));
        collectives(g, "rest");
        CHECK_OK(cohort_group_free(g));
        rest[nrest] = partner < n ? partner : rest[0];
        check_reads("the pair and the rest", me, rest, nrest + 1);
    }

    /* The world. */
    collectives(cohort_world(ctx), "world");
    for (int r = 0; r < n; r++) {
        all[r] = r;
        check_node(ctx, r);
    }
    check_reads("the world", me, all, n);
    CHECK_OK(cohort_finalize(ctx));
}

static void mode_pid(int me, int n)
{
    size_t big = 1u << 18;
    int32_t *buf = malloc(big * sizeof(int32_t));
    cohort_context_t *ctx;
    cohort_request_t *r;

    CHECK(n == 2 && buf != NULL);
    setenv("COHORT_CMA", "on", 1);
    setenv("COHORT_FAULT", "pid:1@0", 1); /* rank 0's first single-copy send names its parent */
    ctx = init(me, n);
    if (me == 0) {
        for (size_t i = 0; i < big; i++) {
            buf[i] = 7;
        }
        CHECK_OK(cohort_isend(cohort_world(ctx), buf, big, COHORT_INT32, 1, 2, &r));
        (void)cohort_wait(r); /* answered, whatever it says: not a hang */
        cohort_request_free(r);
    } else {
        for (size_t i = 0; i < big; i++) {
            buf[i] = -5;
        }
        CHECK_STATUS(cohort_recv(cohort_world(ctx), buf, big, COHORT_INT32, 0, 2),
                     COHORT_ERR_MISMATCH);
        for (size_t i = 0; i < big; i++) {
            check_int("the refused receive", i, buf[i], -5);
        }
    }
    p2p(ctx, cohort_world(ctx), 9);
    free(buf);
    CHECK_OK(cohort_finalize(ctx));
}

static void mode_missing(int me, int n)
{
    int absent = n - 1, v = 1;
    char key[64], path[512];
    const char *log;
    cohort_context_t *ctx;
    cohort_status_t st;
    double t0;

    CHECK(n >= 2 && me < absent);
    setenv("COHORT_TIMEOUT", "3", 1);
    ctx = init(me, n);
    snprintf(key, sizeof(key), "'cohort/0/%d/card'", absent);
    if (me == 0) {
        t0 = test_now();
        test_capture_begin();
        st = cohort_send(cohort_world(ctx), &v, 1, COHORT_INT32, absent, 1);
        log = test_capture_end();
        CHECK_STATUS(st, COHORT_ERR_TIMEOUT);
        CHECK(strstr(log, "never put its card") != NULL && strstr(log, key) != NULL);
        CHECK(test_now() - t0 >= 2.5 && test_now() - t0 < 30);
    }
    /* The others call only once rank 0's send has returned: their barrier would wire the absent
     * rank too, and one that gave up on it first tells rank 0, whose send would then end on
     * that word (peer failed) rather than its own lookup's (seen under load). */
    snprintf(path, sizeof(path), "%s/missing-sent", store.dir);
    if (me == 0) {
        FILE *f;
        CHECK((f = fopen(path, "w")) != NULL && fclose(f) == 0);
    } else {
        t0 = test_now();
        while (access(path, F_OK) != 0) {
            struct timespec nap = {0, 10 * 1000 * 1000};
            CHECK(test_now() - t0 < 120);
            nanosleep(&nap, NULL);
        }
    }
    t0 = test_now();
    st = cohort_barrier(cohort_world(ctx));
    CHECK(st != COHORT_OK && test_now() - t0 < 60);
    CHECK_OK(cohort_finalize(ctx));
}

/* Rank 0's polling before it lets rank 2 start, and the longest one call may take. A call
 * that waited for rank 2 inside it would never return before rank 2 starts, which waits for
 * rank 0: it would take the lookup's whole bound (COHORT_TIMEOUT=20), not a scheduling delay. */
#define LATE_POLL_S 0.5
#define LATE_CALL_S 2.0

/* Rank 0 tells rank 2 to start: a file beside the store's keys. */
static void late_go_path(char *path, size_t len)
{
    snprintf(path, len, "%s/go", store.dir);
}

/* Rank 0's send to rank 2 before rank 2 exists: posted, and tested for LATE_POLL_S, never
 * done meanwhile and every call quick; then rank 2 may start, and the send completes. */
static void late_send(cohort_context_t *ctx)
{
    cohort_request_t *r;
    cohort_status_t st;
    char path[4096];
    int v = 42, done = 0, go = 0;
    double t0 = test_now(), t, slowest;
    FILE *f;

    CHECK_OK(cohort_isend(cohort_world(ctx), &v, 1, COHORT_INT32, 2, 4, &r));
    slowest = test_now() - t0;
    do {
        t = test_now();
        st = cohort_test(r, &done);
        slowest = test_now() - t > slowest ? test_now() - t : slowest;
        if (!go && test_now() - t0 >= LATE_POLL_S) {
            CHECK(!done); /* rank 2 has not even started */
            late_go_path(path, sizeof(path));
            CHECK((f = fopen(path, "w")) != NULL && fclose(f) == 0);
            go = 1;
        }
    } while (st == COHORT_OK && !done);
    CHECK_OK(st);
    CHECK(go && slowest < LATE_CALL_S);
    cohort_request_free(r);
}

static void mode_late(int me, int n)
{
    cohort_context_t *ctx;
    char path[4096];
    int v = 0, sum = 0;

    CHECK(n == 3);
    setenv("COHORT_TIMEOUT", "20", 1);
    if (me == 2) {
        double t0 = test_now();
        late_go_path(path, sizeof(path));
        while (access(path, F_OK) != 0) {
            struct timespec nap = {0, 10 * 1000 * 1000};
            CHECK(test_now() - t0 < 60);
            nanosleep(&nap, NULL);
        }
    }
    ctx = init(me, n);
    if (me == 0) {
        late_send(ctx);
    } else if (me == 2) {
        CHECK_OK(cohort_recv(cohort_world(ctx), &v, 1, COHORT_INT32, 0, 4));
        CHECK(v == 42);
    }
    /* Rank 1 posts it at once: its algorithm pick waits for rank 2's host identity. */
    CHECK_OK(cohort_allreduce(cohort_world(ctx), &me, &sum, 1, COHORT_INT32, COHORT_SUM));
    CHECK(sum == 3);
    CHECK_OK(cohort_finalize(ctx));
}

static void mode_coexist(void)
{
    cohort_context_t *pmix = test_init(), *ctx;
    int me = cohort_world_rank(pmix), n = cohort_world_size(pmix), all[8];
    cohort_stats_t st;

    CHECK(n >= 2 && n <= 8);
    CHECK_OK(cohort_stats(pmix, &st));
    CHECK(strcmp(st.pmix_plugin, "user") != 0 && strcmp(st.pmix_plugin, "singleton") != 0);
    ctx = init(me, n);
    collectives(cohort_world(pmix), "PMIx world");
    collectives(cohort_world(ctx), "store world");
    for (int r = 0; r < n; r++) {
        all[r] = r;
    }
    check_reads("the store world", me, all, n);
    for (int i = 0; i < store.nkeys; i++) {
        CHECK(strncmp(store.keys[i].key, "cohort/1/", 9) == 0);
    }
    CHECK_OK(cohort_finalize(ctx));
    CHECK_OK(cohort_finalize(pmix));
}

/* cohort_init_exchange(ex) with stderr caught: it must fail with @a want, saying @a says. */
static void refused(const cohort_exchange_t *ex, cohort_context_t **ctx, cohort_status_t want,
                    const char *says)
{
    const char *log;
    cohort_status_t st;

    test_capture_begin();
    st = cohort_init_exchange(ex, ctx);
    log = test_capture_end();
    CHECK_STATUS(st, want);
    if (strstr(log, says) == NULL) {
        fprintf(stderr, "the refusal does not say '%s'\n", says);
        exit(1);
    }
}

/* A send from a world of 2 whose rank 1 the store cannot give (its get fails with
 * @a get_status, or gives @a garbage): fails with @a want, at once. */
static void unreadable(cohort_status_t get_status, int garbage, cohort_status_t want,
                       const char *says)
{
    cohort_context_t *ctx = init(0, 2);
    const char *log;
    cohort_status_t st;
    int v = 1;
    double t0 = test_now();

    store.get_status = get_status;
    store.garbage = garbage;
    test_capture_begin();
    st = cohort_send(cohort_world(ctx), &v, 1, COHORT_INT32, 1, 1);
    log = test_capture_end();
    CHECK_STATUS(st, want);
    CHECK(strstr(log, says) != NULL && test_now() - t0 < 10);
    store.get_status = COHORT_OK;
    store.garbage = 0;
    CHECK_OK(cohort_finalize(ctx));
}

static void mode_bad(void)
{
    cohort_exchange_t ex = exchange_of(0, 1), bad;
    cohort_context_t *ctx = NULL;
    int v = 3, sum = 0;

    refused(NULL, &ctx, COHORT_ERR_INVALID_ARG, "ex is NULL");
    refused(&ex, NULL, COHORT_ERR_INVALID_ARG, "ctx is NULL");
    bad = ex;
    bad.put = NULL;
    refused(&bad, &ctx, COHORT_ERR_INVALID_ARG, "ex->put is NULL");
    bad = ex;
    bad.get = NULL;
    refused(&bad, &ctx, COHORT_ERR_INVALID_ARG, "ex->get is NULL");
    bad = ex;
    bad.size = 0;
    refused(&bad, &ctx, COHORT_ERR_INVALID_ARG, "ex->size");
    bad = exchange_of(-1, 4);
    refused(&bad, &ctx, COHORT_ERR_INVALID_ARG, "ex->rank out of range");
    bad = exchange_of(4, 4);
    refused(&bad, &ctx, COHORT_ERR_INVALID_ARG, "ex->rank out of range");
    CHECK(ctx == NULL && store.puts == 0);

    /* put's own failure is init's; a put that says INPROGRESS has not stored anything. */
    store.put_status = COHORT_ERR_NO_MEMORY;
    refused(&ex, &ctx, COHORT_ERR_NO_MEMORY, "put of 'cohort/");
    store.put_status = COHORT_INPROGRESS;
    refused(&ex, &ctx, COHORT_ERR_INVALID_ARG, "put must have stored the value");
    store.put_status = COHORT_OK;
    CHECK(ctx == NULL);

    /* A world of one over a store. */
    ctx = init(0, 1);
    CHECK_OK(cohort_allreduce(cohort_world(ctx), &v, &sum, 1, COHORT_INT32, COHORT_SUM));
    CHECK(sum == 3 && store.nkeys == 0);
    CHECK_OK(cohort_finalize(ctx));

    /* The store failing a get, or giving bytes cohort did not put. */
    unreadable(COHORT_ERR_PMIX, 0, COHORT_ERR_PMIX, "get of 'cohort/");
    unreadable(COHORT_OK, 1, COHORT_ERR_MISMATCH, "not what cohort put there");
}

int main(int argc, char **argv)
{
    int me, n;

    if (argc != 5) {
        fprintf(stderr, "usage: %s main|pid|late|missing|coexist|bad RANK SIZE DIR\n", argv[0]);
        return 2;
    }
    me = atoi(argv[2]);
    n = atoi(argv[3]);
    store.dir = argv[4];
    test_rank = me;
    if (strcmp(argv[1], "main") == 0) {
        mode_main(me, n);
    } else if (strcmp(argv[1], "pid") == 0) {
        mode_pid(me, n);
    } else if (strcmp(argv[1], "missing") == 0) {
        mode_missing(me, n);
    } else if (strcmp(argv[1], "late") == 0) {
        mode_late(me, n);
    } else if (strcmp(argv[1], "coexist") == 0) {
        mode_coexist();
        me = test_rank;
    } else if (strcmp(argv[1], "bad") == 0) {
        mode_bad();
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    printf("exchange %s: rank %d passed\n", argv[1], me);
    return 0;
}
