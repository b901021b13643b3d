/*
 * linkcut: collectives spanning two hosts while one host's data link is cut (run by
 * tests/launch/linkcut.sh, which cuts it).
 *
 *   linkcut HOSTMAP      HOSTMAP: the host of each world rank, "cohl-h0,cohl-h0,cohl-h1,..."
 *   env: LINKCUT_READY (a file rank 0 creates once world traffic flows), LINKCUT_CUT (a file
 *        the script creates once the link is down), COHORT_TIMEOUT (must be set: it bounds
 *        every wait)
 *
 * Every rank alternates allreduces in the world group and in its host's group; once the link
 * is cut the world's allreduces must fail. The failure must be
 * COHORT_ERR_PEER_FAILED or COHORT_ERR_TIMEOUT; the host's group, which has no member
 * behind the cut link, must then still work. Each rank prints one line:
 *   linkcut: rank R (HOST): world: STATUS after S s past the cut; host group of N: ok
 * and exits 0, or 1 naming what went wrong. World allreduces that keep succeeding for 60 s
 * after the cut (the cut did not reach UCX) are a failure too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cohort.h"

#define LINKCUT_MAX_RANKS   64
#define LINKCUT_AFTER_CUT_S 60.0 /* longest a world allreduce may keep working after the cut */
#define LINKCUT_HOST_OPS    20   /* host-group allreduces that must work after the failure */

static double linkcut_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts); /* wall clock: compared with the script's cut time */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int linkcut_exists(const char *path)
{
    return path != NULL && access(path, F_OK) == 0;
}

/* The file's first number (the script writes the cut's wall time in it), or -1. */
static double linkcut_read_time(const char *path)
{
    double t = -1.0;
    FILE *f = fopen(path, "r");

    if (f != NULL) {
        if (fscanf(f, "%lf", &t) != 1) {
            t = -1.0;
        }
        fclose(f);
    }
    return t;
}

/* One allreduce of v, nonblocking so that a failed one is freed (and cancelled) explicitly.
 * With patient != 0 the wait is a cohort_test loop bounded by our own deadline instead of
 * cohort_wait: a host-group allreduce may have to outwait a member that is itself inside a
 * world allreduce waiting COHORT_TIMEOUT for the cut-off host. */
static cohort_status_t linkcut_allreduce(cohort_group_t *g, int v, int *out, cohort_op_t op,
                                         double patience)
{
    int32_t in = v, res = 0;
    cohort_request_t *req = NULL;
    cohort_status_t st = cohort_iallreduce(g, &in, &res, 1, COHORT_INT32, op, &req);
    double deadline = linkcut_now() + patience;
    int done = 0;

    if (st != COHORT_OK) {
        return st;
    }
    if (patience <= 0) {
        st = cohort_wait(req);
    } else {
        while ((st = cohort_test(req, &done)) == COHORT_OK && !done) {
            if (linkcut_now() > deadline) {
                st = COHORT_ERR_TIMEOUT;
                break;
            }
        }
    }
    cohort_request_free(req);
    if (st == COHORT_OK) {
        *out = res;
    }
    return st;
}

int main(int argc, char **argv)
{
    const char *ready = getenv("LINKCUT_READY"), *cut = getenv("LINKCUT_CUT");
    char *hosts[LINKCUT_MAX_RANKS], *map, host[256], *save = NULL;
    int nmap = 0, local[LINKCUT_MAX_RANKS], nlocal = 0, me, n, iter = 0;
    cohort_context_t *ctx;
    cohort_group_t *world, *hostg = NULL;
    cohort_status_t st, world_st = COHORT_OK;
    double cut_seen = -1.0, t_fail = 0.0, patience;

    if (argc != 2 || ready == NULL || cut == NULL || getenv("COHORT_TIMEOUT") == NULL) {
        fprintf(stderr, "usage: LINKCUT_READY=F LINKCUT_CUT=F COHORT_TIMEOUT=S linkcut HOSTMAP\n");
        return 2;
    }
    map = strdup(argv[1]);
    for (char *h = strtok_r(map, ",", &save); h != NULL && nmap < LINKCUT_MAX_RANKS;
         h = strtok_r(NULL, ",", &save)) {
        hosts[nmap++] = h;
    }
    if (cohort_init(&ctx) != COHORT_OK) {
        fprintf(stderr, "linkcut: cohort_init failed\n");
        return 1;
    }
    me = cohort_world_rank(ctx);
    n = cohort_world_size(ctx);
    world = cohort_world(ctx);
    gethostname(host, sizeof(host));
    if (n != nmap || strcmp(hosts[me], host) != 0) {
        fprintf(stderr, "linkcut: rank %d on %s: the map says %s for a world of %d (map of %d)\n",
                me, host, me < nmap ? hosts[me] : "nothing", n, nmap);
        return 1;
    }
    for (int r = 0; r < n; r++) {
        if (strcmp(hosts[r], host) == 0) {
            local[nlocal++] = r;
        }
    }
    if (cohort_group_create(ctx, "linkcut-host", local, nlocal, &hostg) != COHORT_OK) {
        fprintf(stderr, "linkcut: rank %d: creating its host group failed\n", me);
        return 1;
    }

    /* Each iteration: a world allreduce (until one has failed here), then a host-group
     * allreduce of "my world allreduce has failed" (MIN): when it says every member's has,
     * the whole host moves on together, so the host group's calls stay in step. */
    patience = 4.0 * atof(getenv("COHORT_TIMEOUT")) + 30.0;
    for (;;) {
        int sum, all_failed;
        if (world_st == COHORT_OK) {
            world_st = linkcut_allreduce(world, 1, &sum, COHORT_SUM, 0);
            if (world_st == COHORT_OK && sum != n) {
                fprintf(stderr, "linkcut: rank %d: world allreduce gave %d, not %d\n", me, sum, n);
                return 1;
            }
            if (world_st != COHORT_OK) {
                t_fail = linkcut_now();
                if (!linkcut_exists(cut)) {
                    fprintf(stderr,
                            "linkcut: rank %d: world allreduce %d failed before the cut: "
                            "%s\n",
                            me, iter, cohort_strerror(world_st));
                    return 1;
                }
            }
        }
        st = linkcut_allreduce(hostg, world_st != COHORT_OK, &all_failed, COHORT_MIN, patience);
        if (st != COHORT_OK) {
            fprintf(stderr, "linkcut: rank %d: host-group allreduce %d failed (%s): %s\n", me, iter,
                    world_st == COHORT_OK ? "world still fine" : "world failed",
                    cohort_strerror(st));
            return 1;
        }
        if (all_failed) {
            break;
        }
        if (++iter == 20 && me == 0) {
            FILE *f = fopen(ready, "w");
            if (f != NULL) {
                fclose(f);
            }
        }
        if (linkcut_exists(cut) && cut_seen < 0) {
            cut_seen = linkcut_now();
        }
        if (cut_seen > 0 && linkcut_now() - cut_seen > LINKCUT_AFTER_CUT_S) {
            fprintf(stderr, "linkcut: rank %d: world allreduces %s %.0f s after the cut\n", me,
                    world_st == COHORT_OK ? "still work" : "still work for a host peer",
                    LINKCUT_AFTER_CUT_S);
            return 1;
        }
    }
    if (world_st != COHORT_ERR_PEER_FAILED && world_st != COHORT_ERR_TIMEOUT) {
        fprintf(stderr,
                "linkcut: rank %d: world allreduce failed with %s (%d), expected "
                "PEER_FAILED or TIMEOUT\n",
                me, cohort_strerror(world_st), (int)world_st);
        return 1;
    }
    /* The host's group never crossed the cut link: it goes on. */
    for (int i = 0; i < LINKCUT_HOST_OPS; i++) {
        int sum;
        if ((st = linkcut_allreduce(hostg, 1, &sum, COHORT_SUM, patience)) != COHORT_OK ||
            sum != nlocal) {
            fprintf(stderr,
                    "linkcut: rank %d: its host group (%d ranks) failed after the cut: "
                    "%s\n",
                    me, nlocal, cohort_strerror(st));
            return 1;
        }
    }
    {
        double t_cut = linkcut_read_time(cut);
        printf("linkcut: rank %d (%s): world: %s (%d) after %.1f s past the cut; "
               "host group of %d: ok\n",
               me, host, cohort_strerror(world_st), (int)world_st,
               t_fail - (t_cut > 0 ? t_cut : cut_seen), nlocal);
        fflush(stdout);
    }
    cohort_group_free(hostg);
    st = cohort_finalize(ctx);
    free(map);
    /* Finalize with a peer behind a dead link may report it; it must return, not hang. */
    if (st != COHORT_OK && st != COHORT_ERR_PEER_FAILED && st != COHORT_ERR_TIMEOUT) {
        fprintf(stderr, "linkcut: rank %d: cohort_finalize: %s\n", me, cohort_strerror(st));
        return 1;
    }
    return 0;
}
