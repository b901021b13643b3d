/*
 * cohort_bench setup --layout SPEC [--iters N] [--no-mpi]: what it costs to set up a layout.
 *
 * cohort: cohort_layout_create (the rank's own groups, member-only, no message), then one
 * 1-element allreduce in each own group (which wires the peers it sends to). With MPI, the
 * same layout through Open MPI in the same run: the classic way (every rank calls
 * MPI_Comm_create over MPI_COMM_WORLD for every group of every kind, as
 * torch.distributed.new_group makes every rank do) and members only (MPI_Comm_create_group for
 * the rank's own groups), each followed by one MPI_Allreduce per own communicator.
 *
 * The exchange plugin is read from COHORT_PMIX_PLUGIN at cohort_init, once per process: one
 * run measures one plugin (tools/bench/setup_all.sh runs one per plugin and merges them).
 * Figures are the largest over ranks, reduced once at the end, so that nothing but the layout's
 * own traffic is wired while cohort is measured.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BENCH_WITH_MPI
#include <mpi.h>
#endif
#include "../../layout_text.h"
#include "../bench.h"

#define SETUP_MAX_KINDS 32

/* Per iteration and rank, reduced with MAX over ranks. */
enum {
    M_CREATE,    /* cohort_layout_create, us */
    M_FIRST,     /* first allreduce in every own group, us */
    M_GROUPS,    /* own groups */
    M_ENDPOINTS, /* endpoints held after the first allreduces */
    M_LOOKUPS,   /* PMIx lookups made so far */
    M_WIRE,      /* wiring time of every peer held (lookup + ucp_ep_create), us */
    /* ... and where it went, summed over the rank's peers (cohort_peer_info_t), us: */
    M_W_RETRY,     /* lookups' earlier tries and waits to ask again */
    M_W_SERVER,    /* lookups' last requests, until the exchange answered */
    M_W_POLL,      /* from the answers until progress took them */
    M_W_CARD,      /* reading the cards */
    M_W_EP,        /* ucp_ep_create */
    M_W_FIRST,     /* endpoint made until its first send completed (not in M_WIRE) */
    M_W_TRIES,     /* lookup requests, all peers */
    M_CREATE_MSGS, /* messages sent by cohort_layout_create: must be 0 */
    M_CREATE_EPS,  /* endpoints wired by cohort_layout_create: must be 0 */
    M_CL_CREATE,   /* MPI classic: MPI_Comm_create for every group, us */
    M_CL_FIRST,
    M_MO_CREATE, /* MPI members only: MPI_Comm_create_group for own groups, us */
    M_MO_FIRST,
    /* CPU time of this rank's process (every thread) over create + first allreduces, us: on an
     * oversubscribed node the others wait for this, whoever runs it. */
    M_CPU,
    M_CL_CPU,
    M_MO_CPU,
    /* A second allreduce in every own group right after the first ones: what a call costs once
     * set up, so first - second is the setup's own cost, us. */
    M_AGAIN,
    M_MO_AGAIN,
    /* Per kind k of the spec (index + k), what its group's first allreduce cost this rank: */
    M_K_SIZE = M_MO_AGAIN + 1,              /* the group's size (0: not a member) */
    M_K_EPS = M_K_SIZE + SETUP_MAX_KINDS,   /* endpoints it added */
    M_K_MSGS = M_K_EPS + SETUP_MAX_KINDS,   /* messages it sent */
    M_K_AGAIN = M_K_MSGS + SETUP_MAX_KINDS, /* messages a second allreduce sent (0: the group
                                             * runs on its shared segment, nothing is sent) */
    M_K_US = M_K_AGAIN + SETUP_MAX_KINDS,   /* how long its first allreduce took, us */
    M_COUNT = M_K_US + SETUP_MAX_KINDS
};

typedef struct {
    const char *spec_text;
    long iters;
    int no_mpi;
    bench_run_t run; /* cohort, and MPI beside it unless --no-mpi */
    cohort_layout_spec_t *spec;
    long long total_groups;
    double *m; /* [iters][M_COUNT] */
} setup_t;

/* Microseconds, the unit of every figure here. */
static double setup_now_us(void)
{
    return bench_now() * 1e6;
}

/* This process's CPU time so far (all its threads), us. */
static double setup_cpu_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void setup_usage(FILE *f)
{
    fprintf(f,
            "usage: cohort_bench setup --layout SPEC [--iters N] [--no-mpi]\n"
            "  Run under a launcher. Times, as the largest over ranks:\n"
            "    cohort: cohort_layout_create (own groups, member-only), then one 1-element\n"
            "            float32 allreduce in each own group (wiring included);\n"
            "    MPI classic: MPI_Comm_create over MPI_COMM_WORLD for EVERY group of every\n"
            "            kind, then MPI_Allreduce in each own communicator;\n"
            "    MPI members only: MPI_Comm_create_group for own groups, then MPI_Allreduce.\n"
            "  Also endpoints, PMIx lookups and groups per rank, and the messages sent and\n"
            "  endpoints wired by cohort_layout_create (both must be 0).\n"
            "  --layout SPEC  tp=,pp=,cp=,ep=,etp=,order= (dp derived; etp defaults to tp)\n"
            "  --iters N      repeat N times (default 1); iteration 1 is cold (it wires), the\n"
            "                 best of the others is shown as warm\n"
            "  --no-mpi       cohort only, even in a build with MPI\n"
            "  The exchange plugin comes from COHORT_PMIX_PLUGIN (dmodex, fence, global, group),\n"
            "  read once at cohort_init: one run measures one plugin. tools/bench/setup_all.sh\n"
            "  runs one per plugin and prints them side by side.\n"
            "  The last line, 'setup: key=value ...', is for scripts.\n");
}

static int setup_parse(setup_t *s, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (bench_is_first_rank()) {
                setup_usage(stdout);
            }
            return 1;
        } else if (strcmp(a, "--layout") == 0 && v != NULL) {
            s->spec_text = v;
            i++;
        } else if (strcmp(a, "--iters") == 0 && v != NULL) {
            if (bench_parse_long(v, 1, 100000, &s->iters) != 0) {
                if (bench_is_first_rank()) {
                    fprintf(stderr, "cohort_bench setup: --iters '%s' is not a count >= 1\n", v);
                }
                return 2;
            }
            i++;
        } else if (strcmp(a, "--no-mpi") == 0) {
            s->no_mpi = 1;
        } else {
            if (bench_is_first_rank()) {
                fprintf(stderr, "cohort_bench setup: unknown option or missing value: '%s'\n", a);
                setup_usage(stderr);
            }
            return 2;
        }
    }
    if (s->spec_text == NULL) {
        if (bench_is_first_rank()) {
            fprintf(stderr, "cohort_bench setup: --layout SPEC is required\n");
            setup_usage(stderr);
        }
        return 2;
    }
    return 0;
}

/* Said, and (bench_run_abort) the job ended where peers may wait. */
static int setup_fail(const setup_t *s, const char *what, cohort_status_t st)
{
    fprintf(stderr, "cohort_bench setup: rank %d: %s failed: %s\n", s->run.rank, what,
            cohort_strerror(st));
    return bench_run_abort(&s->run);
}

/* Sums over the peers this rank holds of their wiring times (the part of the first allreduces
 * spent looking addresses up and creating endpoints) and of where each went, into m[M_WIRE]
 * and m[M_W_*]. */
static void setup_wire(const cohort_context_t *ctx, double *m)
{
    int n = cohort_wired_peers(ctx, NULL, 0), *ranks = malloc(((size_t)n + 1) * sizeof(int));

    for (int i = M_WIRE; i <= M_W_TRIES; i++) {
        m[i] = 0;
    }
    if (ranks == NULL) {
        m[M_WIRE] = -1;
        return;
    }
    cohort_wired_peers(ctx, ranks, n);
    for (int i = 0; i < n; i++) {
        cohort_peer_info_t info;
        if (cohort_peer_info(ctx, ranks[i], &info) != COHORT_OK) {
            continue;
        }
        m[M_WIRE] += info.wire_us;
        m[M_W_RETRY] += info.lookup_retry_us;
        m[M_W_SERVER] += info.lookup_server_us;
        m[M_W_POLL] += info.lookup_poll_us;
        m[M_W_CARD] += info.card_us;
        m[M_W_EP] += info.ep_create_us;
        m[M_W_FIRST] += info.first_send_us > 0 ? info.first_send_us : 0;
        m[M_W_TRIES] += info.lookup_tries;
    }
    free(ranks);
}

static int setup_cohort(setup_t *s, double *m)
{
    cohort_layout_t *layout = NULL;
    cohort_stats_t before, after, kb, ka;
    cohort_status_t st;
    double t0, t1, t2, tk, c0;
    int ngroups = 0;

    bench_run_sync(&s->run);
    cohort_stats(s->run.ctx, &before);
    c0 = setup_cpu_us();
    t0 = setup_now_us();
    st = cohort_layout_create(s->run.ctx, s->spec_text, &layout);
    t1 = setup_now_us();
    if (st != COHORT_OK) {
        return setup_fail(s, "cohort_layout_create", st);
    }
    cohort_stats(s->run.ctx, &after);
    m[M_CREATE_MSGS] = (double)(after.messages_sent - before.messages_sent);
    m[M_CREATE_EPS] = (double)(after.endpoints - before.endpoints);

    for (int k = 0; k < cohort_layout_spec_kind_count(s->spec); k++) {
        cohort_group_t *g = cohort_layout_group(layout, cohort_layout_spec_kind_name(s->spec, k));
        float one = 1.0f, sum = 0.0f;

        if (g == NULL) {
            continue;
        }
        ngroups++;
        if (k < SETUP_MAX_KINDS) {
            cohort_stats(s->run.ctx, &kb);
        }
        tk = setup_now_us();
        st = cohort_allreduce(g, &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM);
        if (k < SETUP_MAX_KINDS) {
            m[M_K_US + k] = setup_now_us() - tk;
            cohort_stats(s->run.ctx, &ka);
            m[M_K_SIZE + k] = cohort_group_size(g);
            m[M_K_EPS + k] = (double)(ka.endpoints - kb.endpoints);
            m[M_K_MSGS + k] = (double)(ka.messages_sent - kb.messages_sent);
        }
        if (st != COHORT_OK) {
            cohort_layout_free(layout);
            return setup_fail(s, "cohort_allreduce", st);
        }
        if (sum != (float)cohort_group_size(g)) {
            fprintf(stderr, "cohort_bench setup: rank %d: %s allreduce gave %g, not %d\n",
                    s->run.rank, cohort_layout_spec_kind_name(s->spec, k), sum,
                    cohort_group_size(g));
            cohort_layout_free(layout);
            return setup_fail(s, "checking the allreduce", COHORT_ERR_MISMATCH);
        }
    }
    t2 = setup_now_us();
    m[M_CPU] = setup_cpu_us() - c0;
    cohort_stats(s->run.ctx, &after);
    m[M_CREATE] = t1 - t0;
    m[M_FIRST] = t2 - t1;
    m[M_GROUPS] = ngroups;
    m[M_ENDPOINTS] = (double)after.endpoints;
    m[M_LOOKUPS] = (double)after.pmix_lookups;
    setup_wire(s->run.ctx, m);
    /* Which path each group takes once set up (a second call that sends nothing ran on the
     * group's shared segment), and what the second calls take. */
    tk = setup_now_us();
    for (int k = 0; k < cohort_layout_spec_kind_count(s->spec) && k < SETUP_MAX_KINDS; k++) {
        cohort_group_t *g = cohort_layout_group(layout, cohort_layout_spec_kind_name(s->spec, k));
        float one = 1.0f, sum = 0.0f;

        if (g == NULL) {
            continue;
        }
        cohort_stats(s->run.ctx, &kb);
        st = cohort_allreduce(g, &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM);
        cohort_stats(s->run.ctx, &ka);
        if (st != COHORT_OK) {
            cohort_layout_free(layout);
            return setup_fail(s, "the second cohort_allreduce", st);
        }
        m[M_K_AGAIN + k] = (double)(ka.messages_sent - kb.messages_sent);
    }
    m[M_AGAIN] = setup_now_us() - tk;
    cohort_layout_free(layout);
    return 0;
}

#ifdef BENCH_WITH_MPI
/* One MPI_Allreduce in each own communicator, kinds in order; returns the time in us. */
static double setup_mpi_first(const setup_t *s, MPI_Comm *own, int nkinds)
{
    double t0 = setup_now_us();

    for (int k = 0; k < nkinds; k++) {
        float one = 1.0f, sum = 0.0f;
        int size;

        if (own[k] == MPI_COMM_NULL) {
            continue;
        }
        MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, own[k]);
        MPI_Comm_size(own[k], &size);
        if (sum != (float)size) {
            fprintf(stderr, "cohort_bench setup: rank %d: MPI %s allreduce gave %g, not %d\n",
                    s->run.rank, cohort_layout_spec_kind_name(s->spec, k), sum, size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return setup_now_us() - t0;
}

/* Each own communicator must hold exactly the members the layout arithmetic gives. */
static void setup_mpi_check(const setup_t *s, MPI_Comm *own, int nkinds, int *members)
{
    for (int k = 0; k < nkinds; k++) {
        int n = cohort_tools_rank_group(s->spec, cohort_layout_spec_kind_name(s->spec, k),
                                        s->run.rank, members);
        int size = 0;

        if (own[k] != MPI_COMM_NULL) {
            MPI_Comm_size(own[k], &size);
        }
        if (size != n) {
            fprintf(stderr,
                    "cohort_bench setup: rank %d: MPI %s communicator has %d ranks, "
                    "the layout says %d\n",
                    s->run.rank, cohort_layout_spec_kind_name(s->spec, k), size, n);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void setup_mpi_free(MPI_Comm *own, int nkinds)
{
    for (int k = 0; k < nkinds; k++) {
        if (own[k] != MPI_COMM_NULL) {
            MPI_Comm_free(&own[k]);
        }
    }
}

static void setup_mpi(setup_t *s, double *m)
{
    MPI_Comm own[SETUP_MAX_KINDS];
    MPI_Group world_group, g;
    int *members = malloc((size_t)s->run.n * sizeof(int)), nkinds = 0;
    double t0, c0;

    if (members == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    while (nkinds < cohort_layout_spec_kind_count(s->spec) && nkinds < SETUP_MAX_KINDS) {
        nkinds++;
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);

    /* Classic: every rank, every group. */
    for (int k = 0; k < nkinds; k++) {
        own[k] = MPI_COMM_NULL;
    }
    bench_run_sync(&s->run);
    c0 = setup_cpu_us();
    t0 = setup_now_us();
    for (int k = 0; k < nkinds; k++) {
        int ng = cohort_layout_ngroups(s->spec, cohort_layout_spec_kind_name(s->spec, k));
        for (int i = 0; i < ng; i++) {
            int n = cohort_tools_group_members(s->spec, cohort_layout_spec_kind_name(s->spec, k), i,
                                               members);
            MPI_Comm c;
            MPI_Group_incl(world_group, n, members, &g);
            MPI_Comm_create(MPI_COMM_WORLD, g, &c);
            MPI_Group_free(&g);
            if (c != MPI_COMM_NULL) {
                own[k] = c; /* a rank is in one group per kind */
            }
        }
    }
    m[M_CL_CREATE] = setup_now_us() - t0;
    m[M_CL_FIRST] = setup_mpi_first(s, own, nkinds);
    m[M_CL_CPU] = setup_cpu_us() - c0;
    setup_mpi_check(s, own, nkinds, members);
    setup_mpi_free(own, nkinds);

    /* Members only: each rank creates its own groups, a tag per kind. */
    bench_run_sync(&s->run);
    c0 = setup_cpu_us();
    t0 = setup_now_us();
    for (int k = 0; k < nkinds; k++) {
        int n = cohort_tools_rank_group(s->spec, cohort_layout_spec_kind_name(s->spec, k),
                                        s->run.rank, members);
        own[k] = MPI_COMM_NULL;
        if (n <= 0) {
            continue;
        }
        MPI_Group_incl(world_group, n, members, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, k, &own[k]);
        MPI_Group_free(&g);
    }
    m[M_MO_CREATE] = setup_now_us() - t0;
    m[M_MO_FIRST] = setup_mpi_first(s, own, nkinds);
    m[M_MO_CPU] = setup_cpu_us() - c0;
    m[M_MO_AGAIN] = setup_mpi_first(s, own, nkinds);
    setup_mpi_check(s, own, nkinds, members);
    setup_mpi_free(own, nkinds);
    MPI_Group_free(&world_group);
    free(members);
}
#endif

/* The largest of every figure over the ranks, in place, after all measuring is done. */
static int setup_allmax(setup_t *s)
{
    const char *call;
    cohort_status_t st = bench_run_allmax(&s->run, s->m, (size_t)s->iters * M_COUNT, &call);

    return st == COHORT_OK ? 0 : setup_fail(s, call, st);
}

/* The best of iterations 2..N (each already the largest over ranks). */
static double setup_warm(const setup_t *s, int idx)
{
    double best = s->m[M_COUNT + idx];

    for (long i = 2; i < s->iters; i++) {
        double v = s->m[i * M_COUNT + idx];
        best = v < best ? v : best;
    }
    return best;
}

static void setup_row(const char *what, double c, double cl, double mo, int mpi)
{
    printf("  %-40s %14.1f", what, c);
    if (mpi) {
        printf(" %14.1f %14.1f", cl, mo);
    }
    printf("\n");
}

static void setup_table(const setup_t *s, const char *title, const double *m, int mpi)
{
    printf("%s\n  %-40s %14s", title, "", "cohort");
    if (mpi) {
        printf(" %14s %14s", "MPI classic", "MPI members");
    }
    printf("\n");
    setup_row("create own groups (us)", m[M_CREATE], m[M_CL_CREATE], m[M_MO_CREATE], mpi);
    setup_row("first allreduce in each group (us)", m[M_FIRST], m[M_CL_FIRST], m[M_MO_FIRST], mpi);
    setup_row("create + first allreduce (us)", m[M_CREATE] + m[M_FIRST],
              m[M_CL_CREATE] + m[M_CL_FIRST], m[M_MO_CREATE] + m[M_MO_FIRST], mpi);
    setup_row("second allreduce in each group (us)", m[M_AGAIN], 0, m[M_MO_AGAIN], mpi);
    setup_row("CPU in create + first (us, all threads)", m[M_CPU], m[M_CL_CPU], m[M_MO_CPU], mpi);
    setup_row("us per group created", m[M_CREATE] / m[M_GROUPS],
              m[M_CL_CREATE] / (double)s->total_groups, m[M_MO_CREATE] / m[M_GROUPS], mpi);
    if (mpi) {
        printf("  ratio MPI classic / cohort, create:               %10.1fx\n"
               "  ratio MPI members / cohort, create + first:       %10.1fx\n"
               "  ratio MPI classic / cohort, create + first:       %10.1fx\n",
               m[M_CL_CREATE] / m[M_CREATE],
               (m[M_MO_CREATE] + m[M_MO_FIRST]) / (m[M_CREATE] + m[M_FIRST]),
               (m[M_CL_CREATE] + m[M_CL_FIRST]) / (m[M_CREATE] + m[M_FIRST]));
    }
}

/* What each kind's first allreduce cost, and the path its group takes once set up. */
static void setup_kinds(const setup_t *s, const double *m)
{
    printf("first allreduce per kind (cold, largest over ranks):\n"
           "  %-16s %5s %10s %9s %9s  %s\n",
           "kind", "size", "endpoints", "messages", "us", "then (a second allreduce)");
    for (int k = 0; k < cohort_layout_spec_kind_count(s->spec) && k < SETUP_MAX_KINDS; k++) {
        if (m[M_K_SIZE + k] == 0) {
            continue;
        }
        printf("  %-16s %5.0f %10.0f %9.0f %9.1f  %s\n", cohort_layout_spec_kind_name(s->spec, k),
               m[M_K_SIZE + k], m[M_K_EPS + k], m[M_K_MSGS + k], m[M_K_US + k],
               m[M_K_SIZE + k] < 2     ? "alone"
               : m[M_K_AGAIN + k] == 0 ? "shared segment, no message"
                                       : "messages");
    }
}

static void setup_report(const setup_t *s, const char *plugin)
{
    const double *m = s->m; /* iteration 1: cold */
    double warm[M_COUNT];
    char full[160];

#ifdef BENCH_WITH_MPI
    const char *mpi_note = s->run.mpi ? "side by side (Open MPI, same run)" : "off (--no-mpi)";
#else
    const char *mpi_note = "off (built without MPI)";
#endif

    cohort_tools_layout_text(s->spec, full, sizeof(full));
    printf("cohort_bench setup: world %d, layout %s\n"
           "  exchange plugin %s, iterations %ld, MPI %s; figures are the largest over ranks\n",
           s->run.n, full, plugin, s->iters, mpi_note);
    printf("  groups per rank: %.0f own groups (cohort, MPI members only); the classic way "
           "creates all %lld\n",
           m[M_GROUPS], s->total_groups);
    setup_table(s, "iteration 1 (cold: wiring included)", m, s->run.mpi);
    if (s->iters > 1) {
        for (int i = 0; i < M_COUNT; i++) {
            warm[i] = setup_warm(s, i);
        }
        setup_table(s, "best of iterations 2..N (warm: peers already wired)", warm, s->run.mpi);
    }
    printf("cohort per rank: endpoints %.0f, PMIx lookups %.0f%s, wiring %.1f us in all\n"
           "  (wiring: address lookups + endpoint creation, inside the cold first allreduces)\n",
           m[M_ENDPOINTS], m[M_LOOKUPS],
           strcmp(plugin, "global") == 0 ? " (answered from the init-time global fence)" : "",
           m[M_WIRE]);
    printf("  where wiring went (us, each summed over a rank's peers, largest over ranks):\n"
           "    lookup: earlier tries %.1f, at the server %.1f, until progress took it %.1f "
           "(%.0f requests)\n"
           "    card %.1f, ucp_ep_create %.1f; then first send completed %.1f after the endpoint\n",
           m[M_W_RETRY], m[M_W_SERVER], m[M_W_POLL], m[M_W_TRIES], m[M_W_CARD], m[M_W_EP],
           m[M_W_FIRST]);
    printf("cohort_layout_create: %.0f messages sent, %.0f endpoints wired (both must be 0)\n",
           m[M_CREATE_MSGS], m[M_CREATE_EPS]);
    setup_kinds(s, m);
    printf("setup: plugin=%s world=%d groups=%.0f classic_groups=%lld create_us=%.1f "
           "first_us=%.1f again_us=%.1f cpu_us=%.1f endpoints=%.0f lookups=%.0f wire_us=%.1f "
           "create_msgs=%.0f "
           "create_eps=%.0f",
           plugin, s->run.n, m[M_GROUPS], s->total_groups, m[M_CREATE], m[M_FIRST], m[M_AGAIN],
           m[M_CPU], m[M_ENDPOINTS], m[M_LOOKUPS], m[M_WIRE], m[M_CREATE_MSGS], m[M_CREATE_EPS]);
    printf(" wire_retry_us=%.1f wire_server_us=%.1f wire_poll_us=%.1f wire_card_us=%.1f "
           "wire_ep_us=%.1f wire_first_send_us=%.1f wire_tries=%.0f",
           m[M_W_RETRY], m[M_W_SERVER], m[M_W_POLL], m[M_W_CARD], m[M_W_EP], m[M_W_FIRST],
           m[M_W_TRIES]);
    if (s->run.mpi) {
        printf(" mpi_classic_create_us=%.1f mpi_classic_first_us=%.1f mpi_members_create_us=%.1f "
               "mpi_members_first_us=%.1f mpi_classic_cpu_us=%.1f mpi_members_cpu_us=%.1f "
               "mpi_members_again_us=%.1f",
               m[M_CL_CREATE], m[M_CL_FIRST], m[M_MO_CREATE], m[M_MO_FIRST], m[M_CL_CPU],
               m[M_MO_CPU], m[M_MO_AGAIN]);
    }
    printf("\n");
}

int cohort_bench_setup(int argc, char **argv)
{
    setup_t s;
    cohort_stats_t stats;
    char err[256];
    int rc;

    memset(&s, 0, sizeof(s));
    s.iters = 1;
    rc = setup_parse(&s, argc, argv);
    if (rc != 0) {
        return rc == 1 ? 0 : 2;
    }
    if (bench_run_start(&s.run, "cohort_bench setup", !s.no_mpi) != 0) {
        return 1;
    }
    /* The same spec against the same world on every rank: all agree to stop. */
    if (cohort_layout_spec_parse(s.spec_text, s.run.n, &s.spec, err, sizeof(err)) != COHORT_OK) {
        if (s.run.rank == 0) {
            fprintf(stderr, "cohort_bench setup: bad --layout '%s' for a world of %d: %s\n",
                    s.spec_text, s.run.n, err);
        }
        rc = 2;
        goto out_cohort;
    }
    s.total_groups = cohort_tools_layout_total(s.spec);
    s.m = calloc((size_t)s.iters * M_COUNT, sizeof(*s.m));
    if (s.m == NULL) {
        rc = 1;
        goto out_cohort;
    }
    for (long i = 0; i < s.iters; i++) {
        rc = setup_cohort(&s, s.m + i * M_COUNT);
        if (rc != 0) {
            goto out_cohort;
        }
#ifdef BENCH_WITH_MPI
        if (s.run.mpi) {
            setup_mpi(&s, s.m + i * M_COUNT);
        }
#endif
    }
    rc = setup_allmax(&s);
    if (rc != 0) {
        goto out_cohort;
    }
    cohort_stats(s.run.ctx, &stats);
    if (s.run.rank == 0) {
        setup_report(&s, stats.pmix_plugin);
    }
    for (long i = 0; i < s.iters; i++) {
        if (s.m[i * M_COUNT + M_CREATE_MSGS] != 0 || s.m[i * M_COUNT + M_CREATE_EPS] != 0) {
            if (s.run.rank == 0) {
                fprintf(stderr,
                        "cohort_bench setup: cohort_layout_create communicated "
                        "(iteration %ld): it must send nothing and wire nothing\n",
                        i + 1);
            }
            rc = 1;
            break;
        }
    }

out_cohort:
    free(s.m);
    cohort_layout_spec_free(s.spec);
    bench_run_end(&s.run);
    return rc;
}
