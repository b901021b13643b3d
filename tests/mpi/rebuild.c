/* run: 22 --enable-recovery --expect-passed=2 COHORT_WATCH_S=0.2 */
/*
 * Kill and rebuild, 20 times in one job. Each round the ranks still alive make a group of all
 * of them and run allreduces in it; one of them (world rank round + 1) is SIGKILLed in the loop;
 * the others get COHORT_ERR_PEER_FAILED, free the group and make the next one without it. What
 * a survivor holds must not grow with the deaths: no endpoint to a dead rank survives its
 * round, and file descriptors and resident memory stay where they were after the first rounds.
 * World ranks 0 and 21 live to the end.
 * COHORT_WATCH_S=0.2: the survivors hear of each death when a receive has waited that long
 * (the watch wires and checks the peer); at the default 1 s the job spent 20 s waiting for 20
 * deaths (22 s a run, 6 s so). How soon a death is heard is peer_death's, at the default.
 */
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

#define WORLD    22
#define ROUNDS   20
#define RUN_S    0.1 /* allreduces before each kill, which lands mid-call (0.3: 4 s more) */
#define DETECT_S 60.0 /* waited for: the survivors hearing of the death (how soon: a benchmark) */
#define COUNT    256

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the directory's own */
}

static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    CHECK(f != NULL);
    CHECK(fscanf(f, "%ld %ld", &pages, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    int me = cohort_world_rank(ctx), members[WORLD], wired[WORLD], failed[WORLD];
    float sbuf[COUNT], rbuf[COUNT];
    int fds_base = 0;
    long rss_base = 0;

    CHECK(cohort_world_size(ctx) == WORLD);
    CHECK_OK(cohort_barrier(cohort_world(ctx)));
    for (int round = 0; round < ROUNDS; round++) {
        int victim = round + 1, n = 0, nw, nf, myrank;
        cohort_group_t *g;
        char tag[32];
        double t_death;
        cohort_status_t st = COHORT_OK;

        for (int r = 0; r < WORLD; r++) {
            if (r == 0 || r > round) {
                members[n++] = r;
            }
        }
        snprintf(tag, sizeof(tag), "round%d", round);
        CHECK_OK(cohort_group_create(ctx, tag, members, n, &g));
        myrank = cohort_group_rank(g);
        /* Start together: the previous round's survivors all reached here. */
        CHECK_OK(cohort_barrier(g));
        t_death = test_now() + RUN_S;
        for (int iter = 0; st == COHORT_OK; iter++) {
            if (me == victim && test_now() >= t_death) {
                kill(getpid(), SIGKILL);
            }
            for (int i = 0; i < COUNT; i++) {
                sbuf[i] = (float)(myrank + iter);
            }
            st = cohort_allreduce(g, sbuf, rbuf, COUNT, COHORT_FLOAT32, COHORT_SUM);
            CHECK(st != COHORT_OK || rbuf[COUNT - 1] == (float)(n * (n - 1) / 2 + n * iter));
        }
        CHECK_STATUS(st, COHORT_ERR_PEER_FAILED);
        CHECK(test_now() - t_death < DETECT_S);
        CHECK_OK(cohort_group_free(g));

        /* The dead rank is known, and no endpoint to any dead rank is left. */
        nf = cohort_failed_ranks(ctx, failed, WORLD);
        CHECK(nf >= 1 && nf <= round + 1);
        for (int i = 0; i < nf; i++) {
            CHECK(failed[i] >= 1 && failed[i] <= round + 1);
        }
        nw = cohort_wired_peers(ctx, wired, WORLD);
        for (int i = 0; i < nw && i < WORLD; i++) {
            CHECK(wired[i] == 0 || wired[i] > round + 1 || wired[i] == me);
        }
        if (round == 4) {
            fds_base = open_fds();
            rss_base = rss_kib();
        }
        if (round == ROUNDS - 1) {
            int fds = open_fds();
            long rss = rss_kib();
            printf("rank %d: after %d deaths: %d endpoints, %d fds (%d after 5), %ld KiB "
                   "resident (%ld after 5)\n",
                   me, ROUNDS, nw, fds, fds_base, rss, rss_base);
            CHECK(fds <= fds_base);
            CHECK(rss <= rss_base + 8 * 1024);
        }
    }
    CHECK_OK(cohort_finalize(ctx));
    printf("rank %d: rank passed\n", me);
    return 0;
}
