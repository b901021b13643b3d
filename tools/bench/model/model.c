/*
 * cohort_bench --model: what a layout costs each rank at a given world size, computed from the
 * layout arithmetic alone (no cohort_init, no MPI, nothing launched).
 *
 * Groups: the classic way (every rank takes part in creating every group) costs each rank the
 * layout's total number of groups; member-only costs it the groups it is in. Endpoints: cohort
 * wires a peer on the first send to it, so a rank's endpoints are the union, over its groups,
 * of the peers its algorithms send to. The model counts that for a few algorithms, and also the
 * peers each algorithm receives from (what a stack that wires both ways, or a failure detector
 * that wires the peers a wait depends on, would hold). Address lookups: one per endpoint under
 * dmodex; under global every rank gets every address at init.
 *
 * Group counts are exact. Peer unions are per rank: every rank when the world is small enough,
 * else a sample (every rank of the first and the last pipeline stage, plus a spread of others).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../layout_text.h"
#include "../bench.h"

/* Work above which a world is sampled rather than examined rank by rank. */
#define MODEL_EXACT_WORK 60000000.0
#define MODEL_SPREAD     4096
#define MODEL_MAX_PEERS  64 /* per group and algorithm, for the logarithmic ones */

typedef enum { ALGO_RING, ALGO_RD, ALGO_KNOMIAL4, ALGO_DISSEM, ALGO_PAIRWISE, ALGO_COUNT } algo_t;

static const struct {
    const char *name;
    const char *description;
} model_algos[ALGO_COUNT] = {
    {"ring", "ring allreduce: sends to the next rank, receives from the previous"},
    {"rd", "recursive doubling allreduce (non-powers of two fold the extra ranks in first)"},
    {"knomial4", "k-nomial tree, radix 4, rooted at group rank 0 (reduce up, broadcast down)"},
    {"dissem", "dissemination barrier: sends to rank + 2^k, receives from rank - 2^k"},
    {"pairwise", "pairwise alltoall: every other member, both ways"},
};

typedef struct {
    int world;
    const char *spec;
    int sweep;
    int exact;
    algo_t algo; /* the one the dmodex lookup count and the sweep follow */
} model_opts_t;

/* Peers (group ranks) member @a me of a group of @a n sends to and receives from. A list may
 * hold a peer twice; the unions deduplicate. Returns how many were written to each list. */
static void model_algo_peers(algo_t a, int n, int me, int *send, int *nsend, int *recv, int *nrecv)
{
    *nsend = *nrecv = 0;
    if (n <= 1) {
        return;
    }
    switch (a) {
    case ALGO_RING:
        send[(*nsend)++] = (me + 1) % n;
        recv[(*nrecv)++] = (me - 1 + n) % n;
        break;
    case ALGO_RD: {
        int pof2 = 1, rem, newrank;
        while (pof2 * 2 <= n) {
            pof2 *= 2;
        }
        rem = n - pof2;
        if (me < 2 * rem) {
            /* even ranks hand their data to the odd one above and get the result back */
            int partner = (me % 2 == 0) ? me + 1 : me - 1;
            send[(*nsend)++] = partner;
            recv[(*nrecv)++] = partner;
            newrank = (me % 2 == 0) ? -1 : me / 2;
        } else {
            newrank = me - rem;
        }
        for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
            int nd = newrank ^ mask;
            int dst = nd < rem ? nd * 2 + 1 : nd + rem;
            send[(*nsend)++] = dst;
            recv[(*nrecv)++] = dst;
        }
        break;
    }
    case ALGO_KNOMIAL4:
        for (long long mask = 1; mask < n; mask *= 4) {
            int digit = (int)((me / mask) % 4);
            if (digit != 0) {
                send[(*nsend)++] = me - digit * (int)mask; /* parent */
                recv[(*nrecv)++] = me - digit * (int)mask;
                break;
            }
            for (int j = 1; j < 4 && me + j * mask < n; j++) {
                send[(*nsend)++] = me + j * (int)mask; /* children */
                recv[(*nrecv)++] = me + j * (int)mask;
            }
        }
        break;
    case ALGO_DISSEM:
        for (int d = 1; d < n; d *= 2) {
            send[(*nsend)++] = (me + d) % n;
            recv[(*nrecv)++] = (me - d % n + n) % n;
        }
        break;
    case ALGO_PAIRWISE:
    default:
        break; /* every member: counted without lists */
    }
}

/* A set of world ranks, cleared in O(1) by moving to a new stamp. */
typedef struct {
    unsigned *stamp;
    unsigned now;
    int count;
} model_set_t;

static void model_set_clear(model_set_t *s)
{
    s->now++;
    s->count = 0;
}

static void model_set_add(model_set_t *s, int r)
{
    if (s->stamp[r] != s->now) {
        s->stamp[r] = s->now;
        s->count++;
    }
}

/* Per rank figures: the max over the ranks examined, the mean over an unbiased subset. */
typedef struct {
    double sum, max;
} model_stat_t;

static void model_stat_add(model_stat_t *st, double v, int in_mean)
{
    st->sum += in_mean ? v : 0;
    if (v > st->max) {
        st->max = v;
    }
}

typedef struct {
    const cohort_layout_spec_t *spec;
    long long total_groups; /* the layout's groups: what each rank creates the classic way */
    long long megatron;     /* new_group calls of Megatron-LM's initialize_model_parallel */
    long long megatron_gloo, megatron_single; /* of which Gloo twins, GTP singletons */
    int groups_max;                           /* member-only groups per rank, exact */
    double groups_mean;
    int examined; /* ranks examined for the peer unions (the max) */
    int mean_n;   /* of which the mean counts the last mean_n */
    int sampled;
    model_stat_t members; /* distinct peers over all kinds (every member of every group) */
    model_stat_t send[ALGO_COUNT], talk[ALGO_COUNT];
} model_result_t;

/* Ranks whose peers are counted: all; or every rank of the first and the last stage (where
 * the embedding groups add peers), then a spread over the world, which alone makes the mean. */
static int *model_pick_ranks(const cohort_layout_spec_t *s, int exact, int *n_out, int *mean_n,
                             int *sampled)
{
    int world = cohort_layout_spec_size(s, "world");
    double work = 0;
    int *pick, *pp = malloc((size_t)cohort_layout_spec_size(s, "pp") * sizeof(int)), n = 0;
    char *taken;

    for (int k = 0; k < cohort_layout_spec_kind_count(s); k++) {
        work += (double)cohort_layout_group_size(s, cohort_layout_spec_kind_name(s, k));
    }
    work *= world;
    *sampled = !exact && work > MODEL_EXACT_WORK;
    pick = malloc(((size_t)world + MODEL_SPREAD) * sizeof(int));
    taken = calloc((size_t)world, 1);
    if (pick == NULL || taken == NULL || pp == NULL) {
        free(pick);
        free(taken);
        free(pp);
        return NULL;
    }
    for (int r = 0; r < world; r++) {
        int m;
        if (!*sampled) {
            pick[n++] = r;
            continue;
        }
        m = cohort_tools_rank_group(s, "pp", r, pp);
        if (m > 0 && (pp[0] == r || pp[m - 1] == r)) {
            pick[n++] = r;
        }
    }
    *mean_n = *sampled ? 0 : n;
    /* Golden-ratio steps land on every coordinate, unlike a stride aligned with the layout. */
    for (int i = 0; *sampled && i < MODEL_SPREAD; i++) {
        int r = (int)((((uint64_t)i + 1) * 0x9E3779B97F4A7C15ull >> 33) % (uint64_t)world);
        if (!taken[r]) {
            taken[r] = 1;
            pick[n++] = r;
            (*mean_n)++;
        }
    }
    free(taken);
    free(pp);
    *n_out = n;
    return pick;
}

/* The most groups one rank is in: every kind has a group for every rank, except embd and
 * pos-embd, which only some stages are in; so look at one pipeline's stages. */
static int model_groups_max(const cohort_layout_spec_t *s)
{
    int pp = cohort_layout_spec_size(s, "pp"), *stages = malloc((size_t)pp * sizeof(int));
    int base = 0, best = 0, n, index;

    if (stages == NULL || cohort_layout_group_members(s, "pp", 0, stages, pp, &n) != COHORT_OK) {
        free(stages);
        return -1;
    }
    for (int k = 0; k < cohort_layout_spec_kind_count(s); k++) {
        const char *kind = cohort_layout_spec_kind_name(s, k);
        base += strcmp(kind, "embd") != 0 && strcmp(kind, "pos-embd") != 0;
    }
    for (int i = 0; i < n; i++) {
        int here = 0;

        here += cohort_layout_rank_group(s, "embd", stages[i], &index) == COHORT_OK && index >= 0;
        here +=
            cohort_layout_rank_group(s, "pos-embd", stages[i], &index) == COHORT_OK && index >= 0;
        best = here > best ? here : best;
    }
    free(stages);
    return base + best;
}

/*
 * How many times Megatron-LM's initialize_model_parallel() (main, August 2026; gtp_remat sizes
 * 1, Gloo groups on, the default) calls torch.distributed.new_group for this layout. Every
 * rank makes every call, each a collective over the world: Gloo twins of dp-cp, dp, edp and of
 * the partial data-parallel groups; the GTP weight-rematerialisation groups, one singleton per
 * rank in each generator even at size 1; the expert tp-ep-pp groups a second time (the one
 * "with EGTP"); hierarchical cp levels without Gloo; one group per optimizer instance. This
 * count reproduces the 69,041 of DESIGN.md for 16,384 ranks, tp=8, pp=16, cp=2, ep=8, etp=1.
 */
static long long model_megatron_new_groups(const cohort_layout_spec_t *s, long long *gloo,
                                           long long *single)
{
    static const char *const once[] = {
        "cp",    "tp-pp", "tp",  "pp",     "embd",      "pos-embd",  "tp-dp-cp",     "tp-dp",
        "tp-cp", "ep",    "etp", "etp-ep", "etp-ep-pp", "etp-ep-pp", "dopt-instance"};
    static const char *const twice[] = {"dp-cp", "dp", "edp"};
    static const char *const partial[] = {"intra-dp-cp", "intra-edp", "inter-edp"};
    int world = cohort_layout_spec_size(s, "world");
    long long total = 0;
    char hcp[16];

    *gloo = 0;
    for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
        total += cohort_layout_ngroups(s, once[i]);
    }
    for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
        *gloo += cohort_layout_ngroups(s, twice[i]);
    }
    for (size_t i = 0; cohort_layout_spec_size(s, "dopt") > 1 && i < 3; i++) {
        total += cohort_layout_ngroups(s, partial[i]);
        *gloo += cohort_layout_ngroups(s, partial[i]);
    }
    for (int l = 0; l < cohort_layout_spec_size(s, "hcp"); l++) {
        snprintf(hcp, sizeof(hcp), "hcp%d", l);
        total += cohort_layout_ngroups(s, hcp);
    }
    *single = 2LL * world;
    return total + 2 * *gloo + *single;
}

static int model_compute(const cohort_layout_spec_t *spec, int exact, model_result_t *res)
{
    int world = cohort_layout_spec_size(spec, "world"),
        *members = malloc((size_t)world * sizeof(int)), *pick, npick;
    int send[MODEL_MAX_PEERS], recv[MODEL_MAX_PEERS];
    model_set_t all = {0}, snd[ALGO_COUNT], tlk[ALGO_COUNT];
    double member_slots = 0;
    int rc = -1;

    memset(res, 0, sizeof(*res));
    memset(snd, 0, sizeof(snd));
    memset(tlk, 0, sizeof(tlk));
    res->spec = spec;
    res->total_groups = cohort_tools_layout_total(spec);
    pick = model_pick_ranks(spec, exact, &npick, &res->mean_n, &res->sampled);
    all.stamp = calloc((size_t)world, sizeof(unsigned));
    for (int a = 0; a < ALGO_COUNT; a++) {
        snd[a].stamp = calloc((size_t)world, sizeof(unsigned));
        tlk[a].stamp = calloc((size_t)world, sizeof(unsigned));
        if (snd[a].stamp == NULL || tlk[a].stamp == NULL) {
            goto out;
        }
    }
    if (members == NULL || pick == NULL || all.stamp == NULL) {
        goto out;
    }

    /* Exact group counts: a kind's groups hold ngroups * size member slots. */
    for (int k = 0; k < cohort_layout_spec_kind_count(spec); k++) {
        const char *kind = cohort_layout_spec_kind_name(spec, k);
        member_slots +=
            (double)cohort_layout_ngroups(spec, kind) * cohort_layout_group_size(spec, kind);
    }
    res->groups_mean = member_slots / world;
    res->groups_max = model_groups_max(spec);
    res->megatron = model_megatron_new_groups(spec, &res->megatron_gloo, &res->megatron_single);
    if (res->groups_max < 0) {
        goto out;
    }

    res->examined = npick;
    for (int i = 0; i < npick; i++) {
        int r = pick[i], in_mean;

        model_set_clear(&all);
        for (int a = 0; a < ALGO_COUNT; a++) {
            model_set_clear(&snd[a]);
            model_set_clear(&tlk[a]);
        }
        for (int k = 0; k < cohort_layout_spec_kind_count(spec); k++) {
            int n = cohort_tools_rank_group(spec, cohort_layout_spec_kind_name(spec, k), r,
                                            members),
                me = 0;

            if (n <= 0) {
                continue;
            }
            while (members[me] != r) {
                me++;
            }
            for (int m = 0; m < n; m++) {
                model_set_add(&all, members[m]);
            }
            for (int a = 0; a < ALGO_COUNT; a++) {
                int ns, nr;
                if (a == ALGO_PAIRWISE) {
                    for (int m = 0; m < n; m++) {
                        model_set_add(&snd[a], members[m]);
                        model_set_add(&tlk[a], members[m]);
                    }
                    continue;
                }
                model_algo_peers((algo_t)a, n, me, send, &ns, recv, &nr);
                for (int j = 0; j < ns; j++) {
                    model_set_add(&snd[a], members[send[j]]);
                    model_set_add(&tlk[a], members[send[j]]);
                }
                for (int j = 0; j < nr; j++) {
                    model_set_add(&tlk[a], members[recv[j]]);
                }
            }
        }
        /* Peers are other ranks: a rank needs no lookup to reach itself. */
        in_mean = i >= npick - res->mean_n;
        model_stat_add(&res->members, all.count - 1, in_mean);
        for (int a = 0; a < ALGO_COUNT; a++) {
            model_stat_add(&res->send[a], snd[a].count - (snd[a].stamp[r] == snd[a].now), in_mean);
            model_stat_add(&res->talk[a], tlk[a].count - (tlk[a].stamp[r] == tlk[a].now), in_mean);
        }
    }
    rc = 0;

out:
    for (int a = 0; a < ALGO_COUNT; a++) {
        free(snd[a].stamp);
        free(tlk[a].stamp);
    }
    free(all.stamp);
    free(pick);
    free(members);
    return rc;
}

/* The most peers any member of a group of @a n sends to / talks with under @a a. */
static void model_kind_peers(algo_t a, int n, int *max_send, int *max_talk)
{
    int send[MODEL_MAX_PEERS], recv[MODEL_MAX_PEERS];

    *max_send = *max_talk = 0;
    if (a == ALGO_PAIRWISE) {
        *max_send = *max_talk = n - 1;
        return;
    }
    for (int me = 0; me < n; me++) {
        int ns, nr, cs = 0, ct = 0;
        model_algo_peers(a, n, me, send, &ns, recv, &nr);
        /* distinct counts: lists are short, a quadratic pass is fine */
        for (int j = 0; j < ns; j++) {
            int dup = 0;
            for (int i = 0; i < j; i++) {
                dup |= send[i] == send[j];
            }
            cs += !dup && send[j] != me;
        }
        for (int j = 0; j < ns + nr; j++) {
            int p = j < ns ? send[j] : recv[j - ns], dup = 0;
            for (int i = 0; i < j; i++) {
                dup |= (i < ns ? send[i] : recv[i - ns]) == p;
            }
            ct += !dup && p != me;
        }
        *max_send = cs > *max_send ? cs : *max_send;
        *max_talk = ct > *max_talk ? ct : *max_talk;
    }
}

static void model_print(const model_opts_t *o, const model_result_t *r)
{
    const cohort_layout_spec_t *s = r->spec;
    int world = cohort_layout_spec_size(s, "world");
    char full[160];

    cohort_tools_layout_text(s, full, sizeof(full));
    printf("cohort_bench model: world %d, layout %s\n", world, full);
    if (strstr(o->spec, "etp=") == NULL && cohort_layout_spec_size(s, "etp") != 1) {
        printf("  (etp was not given: it defaults to tp = %d; with etp=1 the expert kinds have "
               "other group counts)\n",
               cohort_layout_spec_size(s, "tp"));
    }
    printf("  computed from the layout arithmetic; nothing launched\n\n");

    printf("%-13s %8s %6s %6s", "kind", "groups", "size", "peers");
    for (int a = 0; a < ALGO_COUNT; a++) {
        printf(" %9s", model_algos[a].name);
    }
    printf("\n%-13s %8s %6s %6s", "", "", "", "(all)");
    for (int a = 0; a < ALGO_COUNT; a++) {
        printf(" %9s", "send/talk");
    }
    printf("\n");
    for (int k = 0; k < cohort_layout_spec_kind_count(s); k++) {
        const char *kind = cohort_layout_spec_kind_name(s, k);
        int size = cohort_layout_group_size(s, kind);
        printf("%-13s %8d %6d %6d", kind, cohort_layout_ngroups(s, kind), size, size - 1);
        for (int a = 0; a < ALGO_COUNT; a++) {
            char cell[24];
            int ms, mt;
            model_kind_peers((algo_t)a, size, &ms, &mt);
            snprintf(cell, sizeof(cell), "%d/%d", ms, mt);
            printf(" %9s", cell);
        }
        printf("\n");
    }
    printf("%-13s %8lld\n", "total", r->total_groups);
    printf("  (per kind: the most peers one member sends to / sends to or receives from)\n\n");

    printf("per rank%s%41s %10s\n", r->sampled ? " (peers: sampled)" : "                 ", "max",
           "mean");
    printf("  %-52s %10lld %10lld\n", "new_group calls, Megatron-LM (every rank, all)", r->megatron,
           r->megatron);
    printf("  %-52s %10lld %10lld\n", "  of which Gloo twins", r->megatron_gloo, r->megatron_gloo);
    printf("  %-52s %10lld %10lld\n", "  of which GTP singletons (gtp_remat=1)", r->megatron_single,
           r->megatron_single);
    printf("  %-52s %10lld %10lld\n", "groups created, classic (every rank, every group)",
           r->total_groups, r->total_groups);
    printf("  %-52s %10d %10.2f\n", "groups created, member-only (own groups)", r->groups_max,
           r->groups_mean);
    printf("  %-52s %10.0f %10.2f\n", "distinct peers over all kinds (every member)",
           r->members.max, r->members.sum / r->mean_n);
    for (int a = 0; a < ALGO_COUNT; a++) {
        char what[64];
        snprintf(what, sizeof(what), "endpoints, %s (sends to)", model_algos[a].name);
        printf("  %-52s %10.0f %10.2f\n", what, r->send[a].max, r->send[a].sum / r->mean_n);
        snprintf(what, sizeof(what), "  peers, %s (sends to or receives from)",
                 model_algos[a].name);
        printf("  %-52s %10.0f %10.2f\n", what, r->talk[a].max, r->talk[a].sum / r->mean_n);
    }
    {
        char what[64];
        snprintf(what, sizeof(what), "PMIx lookups, dmodex (= endpoints, %s)",
                 model_algos[o->algo].name);
        printf("  %-52s %10.0f %10.2f\n", what, r->send[o->algo].max,
               r->send[o->algo].sum / r->mean_n);
        printf("  %-52s %10d %10d\n", "addresses fetched, global (all, by the init fence)",
               world - 1, world - 1);
    }
    if (r->sampled) {
        printf("ranks examined for peers: %d of %d (max: every rank of the first and last pp "
               "stage and a spread of %d; mean: the spread)\n",
               r->examined, world, r->mean_n);
    } else {
        printf("ranks examined for peers: all %d (exact)\n", world);
    }
    printf("classic / member-only groups per rank: %.0fx (Megatron-LM new_group calls / "
           "member-only: %.0fx)\n\n",
           (double)r->total_groups / r->groups_max, (double)r->megatron / r->groups_max);
    printf("algorithms:\n");
    for (int a = 0; a < ALGO_COUNT; a++) {
        printf("  %-9s %s\n", model_algos[a].name, model_algos[a].description);
    }
}

static int model_sweep(const model_opts_t *o)
{
    const char *an = model_algos[o->algo].name;
    char full[160] = "";
    int shown = 0;

    printf("cohort_bench model --sweep: layout %s; dmodex lookups follow %s\n", o->spec, an);
    printf("%8s %8s %12s %12s %12s %9s %9s %9s %9s %10s %10s\n", "world", "groups", "classic",
           "Megatron", "member-only", "max ep", "max ep", "max ep", "max ep", "lookups", "lookups");
    printf("%8s %8s %12s %12s %12s %9s %9s %9s %9s %10s %10s\n", "", "total", "groups/rank",
           "new_group", "groups/rank", "ring", "rd", "knomial4", "pairwise", "dmodex", "global");
    for (long long w = 1024; w <= 131072; w *= 2) {
        cohort_layout_spec_t *s = NULL;
        model_result_t r;
        char err[256];

        if (cohort_layout_spec_parse(o->spec, (int)w, &s, err, sizeof(err)) != COHORT_OK) {
            printf("%8lld  (skipped: %s)\n", w, err);
            continue;
        }
        if (model_compute(s, o->exact, &r) != 0) {
            fprintf(stderr, "cohort_bench model: out of memory at world %lld\n", w);
            cohort_layout_spec_free(s);
            return 1;
        }
        cohort_tools_layout_text(s, full, sizeof(full));
        cohort_layout_spec_free(s);
        printf("%8lld %8lld %12lld %12lld %12d %9.0f %9.0f %9.0f %9.0f %10.0f %10lld%s\n", w,
               r.total_groups, r.total_groups, r.megatron, r.groups_max, r.send[ALGO_RING].max,
               r.send[ALGO_RD].max, r.send[ALGO_KNOMIAL4].max, r.send[ALGO_PAIRWISE].max,
               r.send[o->algo].max, w - 1, r.sampled ? "  (peers sampled)" : "");
        shown++;
    }
    if (shown == 0) {
        fprintf(stderr, "cohort_bench model: the layout divides none of the worlds\n");
        return 2;
    }
    printf("layout in full (at the largest world shown): %s\n", full);
    printf("max ep: the most endpoints one rank holds (peers it sends to, union over its\n"
           "groups); lookups dmodex = max ep under %s; global fetches every address at init\n",
           an);
    return 0;
}

static void model_usage(FILE *f)
{
    fprintf(f, "usage: cohort_bench --model --world N --layout SPEC [--algo A] [--exact]\n"
               "       cohort_bench --model --sweep --layout SPEC [--algo A] [--exact]\n"
               "  Per-rank setup cost of a layout, from the arithmetic alone (nothing launched).\n"
               "  --world N     the world size (> 0)\n"
               "  --layout SPEC tp=,pp=,cp=,ep=,etp=,order= (dp derived; etp defaults to tp),\n"
               "                hcp=AxB, dopt=N, embd=first+last+K (docs/layouts.md)\n"
               "  --sweep       worlds 1024, 2048, ..., 131072 that the layout divides\n"
               "  --algo A      the algorithm dmodex lookups follow: ring rd knomial4 dissem\n"
               "                pairwise (default rd, a small-message allreduce)\n"
               "  --exact       examine every rank even when the world is large (slow)\n");
}

int cohort_bench_model(int argc, char **argv)
{
    model_opts_t o = {.world = 0, .spec = NULL, .sweep = 0, .exact = 0, .algo = ALGO_RD};
    cohort_layout_spec_t *spec = NULL;
    model_result_t res;
    char err[256];
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            model_usage(stdout);
            return 0;
        } else if (strcmp(a, "--sweep") == 0) {
            o.sweep = 1;
        } else if (strcmp(a, "--exact") == 0) {
            o.exact = 1;
        } else if (strcmp(a, "--world") == 0 && v != NULL) {
            long world;
            if (bench_parse_long(v, 1, 1L << 30, &world) != 0) {
                fprintf(stderr, "cohort_bench model: --world '%s' is not a size > 0\n", v);
                return 2;
            }
            o.world = (int)world;
            i++;
        } else if (strcmp(a, "--layout") == 0 && v != NULL) {
            o.spec = v;
            i++;
        } else if (strcmp(a, "--algo") == 0 && v != NULL) {
            int found = 0;
            for (int k = 0; k < ALGO_COUNT; k++) {
                if (strcmp(v, model_algos[k].name) == 0) {
                    o.algo = (algo_t)k;
                    found = 1;
                }
            }
            if (!found) {
                fprintf(stderr, "cohort_bench model: unknown --algo '%s'\n", v);
                model_usage(stderr);
                return 2;
            }
            i++;
        } else {
            fprintf(stderr, "cohort_bench model: unknown option or missing value: '%s'\n", a);
            model_usage(stderr);
            return 2;
        }
    }
    if (o.spec == NULL) {
        fprintf(stderr, "cohort_bench model: --layout SPEC is required\n");
        model_usage(stderr);
        return 2;
    }
    if (o.sweep) {
        return model_sweep(&o);
    }
    if (o.world == 0) {
        fprintf(stderr, "cohort_bench model: --world N (or --sweep) is required\n");
        model_usage(stderr);
        return 2;
    }
    if (cohort_layout_spec_parse(o.spec, o.world, &spec, err, sizeof(err)) != COHORT_OK) {
        fprintf(stderr, "cohort_bench model: bad --layout '%s' for world %d: %s\n", o.spec, o.world,
                err);
        return 2;
    }
    rc = model_compute(spec, o.exact, &res);
    if (rc != 0) {
        fprintf(stderr, "cohort_bench model: out of memory\n");
    } else {
        model_print(&o, &res);
    }
    cohort_layout_spec_free(spec);
    return rc != 0;
}
