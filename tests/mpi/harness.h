/* Shared by the multi-rank test programs: each checks its own results and exits non-zero on the
 * first failure, naming the rank and the check. */
#ifndef COHORT_TEST_HARNESS_H
#define COHORT_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cohort.h"

static int test_rank = -1;
/* The configuration being run when several share one process (test_configs), for messages. */
static char test_config[1024];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s%s%s\n", test_rank, __FILE__,         \
                    __LINE__, #cond, test_config[0] ? " under " : "", test_config);                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_STATUS(call, expected)                                                               \
    do {                                                                                           \
        cohort_status_t st_ = (call);                                                              \
        if (st_ != (expected)) {                                                                   \
            fprintf(stderr, "rank %d: %s:%d: %s returned %d (%s), expected %s%s%s\n", test_rank,   \
                    __FILE__, __LINE__, #call, (int)st_, cohort_strerror(st_), #expected,          \
                    test_config[0] ? " under " : "", test_config);                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, COHORT_OK)

/* Seconds on the monotonic clock, for the deadlines and durations tests measure. */
static inline double test_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Full mode (TEST_FULL=1: scripts/test.sh --full, launch.sh hands it to every rank): a test's
 * whole matrix. Quick mode (the default) covers every value of each dimension and every pair
 * of values of two dimensions once, not the whole cross product: see the tests that ask.
 */
static inline int test_full(void)
{
    const char *v = getenv("TEST_FULL");

    return v != NULL && strcmp(v, "1") == 0;
}

static inline cohort_context_t *test_init(void)
{
    cohort_context_t *ctx = NULL;

    CHECK_OK(cohort_init(&ctx));
    test_rank = cohort_world_rank(ctx);
    return ctx;
}

/* A barrier that may outlast COHORT_TIMEOUT: the same request is waited on again. */
static inline void test_patient_barrier(cohort_group_t *g)
{
    cohort_request_t *r;
    cohort_status_t st;
    int timeouts = 0;

    CHECK_OK(cohort_ibarrier(g, &r));
    while ((st = cohort_wait(r)) == COHORT_ERR_TIMEOUT) {
        CHECK(++timeouts < 30);
    }
    CHECK_OK(st);
    cohort_request_free(r);
}

/* One small allreduce: what a test calls to see whether a group still works. */
static inline cohort_status_t test_one_allreduce(cohort_group_t *g)
{
    int v = 1, sum = 0;

    return cohort_allreduce(g, &v, &sum, 1, COHORT_INT32, COHORT_SUM);
}

/* stderr into a file from test_capture_begin() to test_capture_end(), which returns what was
 * written (static buffer) and writes it to stderr too. */
static FILE *test_cap_file;
static int test_cap_saved = -1;

static inline void test_capture_begin(void)
{
    test_cap_file = tmpfile();
    test_cap_saved = dup(2);
    CHECK(test_cap_file != NULL && test_cap_saved >= 0);
    fflush(stderr);
    CHECK(dup2(fileno(test_cap_file), 2) == 2);
}

static inline const char *test_capture_end(void)
{
    static char text[16384];
    size_t n;

    fflush(stderr);
    CHECK(dup2(test_cap_saved, 2) == 2);
    close(test_cap_saved);
    rewind(test_cap_file);
    n = fread(text, 1, sizeof(text) - 1, test_cap_file);
    text[n] = '\0';
    fclose(test_cap_file);
    fputs(text, stderr);
    return text;
}

/* Run @a fn with stderr going to a file, and return what it wrote (static buffer). */
static inline const char *test_captured(cohort_status_t (*fn)(cohort_group_t *), cohort_group_t *g,
                                        cohort_status_t *st)
{
    test_capture_begin();
    *st = fn(g);
    return test_capture_end();
}

static inline void test_finish(cohort_context_t *ctx, const char *name)
{
    int rank = cohort_world_rank(ctx);

    CHECK_OK(cohort_finalize(ctx));
    if (rank == 0) {
        printf("%s: passed\n", name);
    }
}

/*
 * Between two configurations of test_configs: every rank waits until every rank has finished
 * the one before (its context finalized, so its PMIx client disconnected) before any starts the
 * next. Without this, a rank that re-initialized first asked the launcher's PMIx server for a
 * peer's address while that peer was still connected from the configuration before; Open MPI
 * 4.1's server (PMIx 4.2) held the request, lost it when the peer's old connection closed, and
 * never answered the peer's new commit: "PMIx_Get of rank 1's address failed after 300.1 s (1
 * tries)" in the third configuration of p2p at 2 ranks (load 20 on 2 cores), coll_reduce at 8.
 * The ranks meet through files in the launcher's session directory (PMIX_SERVER_TMPDIR, which
 * mpirun removes at exit): one per rank and configuration. Under anything but mpirun (no
 * OMPI_COMM_WORLD_SIZE) there is nothing to wait for. The wait is bounded (TEST_CONFIG_WAIT_S,
 * default 600 s; mpirun's own bound is usually first) and says what it waited for.
 */
static inline void test_configs_settle(int config)
{
    const char *dir = getenv("PMIX_SERVER_TMPDIR"), *size_s = getenv("OMPI_COMM_WORLD_SIZE");
    const char *rank_s = getenv("PMIX_RANK"), *bound_s = getenv("TEST_CONFIG_WAIT_S");
    double bound = bound_s != NULL ? atof(bound_s) : 600, start = test_now();
    char path[4096];
    int size, here = 0;
    FILE *f;

    if (dir == NULL || size_s == NULL || rank_s == NULL || (size = atoi(size_s)) <= 1) {
        return;
    }
    snprintf(path, sizeof(path), "%s/cohort-configs.%d.%s", dir, config, rank_s);
    f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fclose(f) == 0);
    for (;;) {
        struct timespec nap = {0, 10 * 1000 * 1000};

        here = 0;
        for (int r = 0; r < size; r++) {
            snprintf(path, sizeof(path), "%s/cohort-configs.%d.%d", dir, config, r);
            here += access(path, F_OK) == 0;
        }
        if (here == size) {
            return;
        }
        if (test_now() - start > bound) {
            fprintf(stderr,
                    "rank %s: waited %.0f s for every rank to finish configuration %d (%s): "
                    "%d of %d did\n",
                    rank_s, test_now() - start, config + 1, test_config, here, size);
            exit(1);
        }
        nanosleep(&nap, NULL);
    }
}

/*
 * Several configurations in one process, one after the other, each with its own context
 * (cohort_init reads the COHORT_* settings, and contexts are independent): launch.sh starts one
 * mpirun for all the "run:" lines of a rank count when the source says "runs: together", and
 * hands them over in TEST_CONFIGS, ';' between configurations, spaces between NAME=VALUE
 * settings (an empty one: the defaults). Each configuration's settings are in the environment
 * while @a body runs (its getenv() sees them) and gone before the next. Without TEST_CONFIGS,
 * @a body runs once in the environment as it is.
 */
static inline int test_configs(int (*body)(void))
{
    const char *all = getenv("TEST_CONFIGS");
    char *list, *rest, *cfg;
    int rc = 0;

    if (all == NULL || all[0] == '\0') {
        return body();
    }
    list = strdup(all);
    CHECK(list != NULL);
    rest = list;
    for (int i = 0; rc == 0 && (cfg = strsep(&rest, ";")) != NULL; i++) {
        char names[1024], *save = NULL;

        if (i > 0) {
            test_configs_settle(i - 1);
        }

        snprintf(test_config, sizeof(test_config), "%s", cfg);
        for (char *w = strtok_r(cfg, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(w, '=');

            CHECK(eq != NULL);
            *eq = '\0';
            CHECK(setenv(w, eq + 1, 1) == 0);
        }
        if (getenv("PMIX_RANK") == NULL || strcmp(getenv("PMIX_RANK"), "0") == 0) {
            printf("== configuration: %s\n", test_config[0] ? test_config : "(defaults)");
            fflush(stdout);
        }
        rc = body();
        /* The names again (strtok_r cut them out of the copy in test_config). */
        snprintf(names, sizeof(names), "%s", test_config);
        save = NULL;
        for (char *w = strtok_r(names, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
            *strchr(w, '=') = '\0';
            unsetenv(w);
        }
    }
    free(list);
    test_config[0] = '\0';
    return rc;
}

#endif
