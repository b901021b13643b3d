/*
 * Selection: which row of a collective's table (src/coll/<collective>/table.c) runs a call, by
 * rules written in COHORT_ALGO_<COLLECTIVE>'s syntax, the user's first, then the defaults
 * below; the tuning knobs (COHORT_ALGO_<COLL>_<ALGO>_<PARAM>); the public list of rows
 * (cohort_algo_info). It names the tables, never a row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll/coll.h"
#include "coll/shm_seg.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "proto/cma.h"

/* Every collective's table, indexed by cohort_coll_type_t: selection, the names' check and the
 * public list ask these, and none of them names a row. */
static const cohort_coll_table_t *const cohort_coll_tables[COHORT_COLL_LAST] = {
    &cohort_barrier_table,   &cohort_bcast_table,     &cohort_reduce_table,
    &cohort_allreduce_table, &cohort_allgather_table, &cohort_reduce_scatter_table,
    &cohort_alltoall_table,
};

static const cohort_coll_algo_t *cohort_coll_find(cohort_coll_type_t coll, const char *name)
{
    const cohort_coll_table_t *t = cohort_coll_tables[coll];

    for (int i = 0; i < t->nrows; i++) {
        if (strcmp(t->rows[i]->name, name) == 0) {
            return t->rows[i];
        }
    }
    return NULL;
}

/* The row whose public id is @a id, NULL when none is. */
static const cohort_coll_algo_t *cohort_algo_by_id(int id)
{
    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        for (int i = 0; i < cohort_coll_tables[c]->nrows; i++) {
            if (cohort_coll_tables[c]->rows[i]->id == id) {
                return cohort_coll_tables[c]->rows[i];
            }
        }
    }
    return NULL;
}

/*
 * Selection is data: for each collective, rules in order, the first that matches the case and
 * whose algorithm neither declines it nor is unusable here wins. A rule matches a group size
 * range, optionally power-of-two sizes only (or only others), and a byte range lo <= bytes < hi,
 * where bytes is count x dtype size as the call counts it (per rank for
 * allgather/reduce_scatter, per pair for alltoall) or, for "total" rules, that times the group
 * size. A rule whose algorithm asks for a vote (CUDA IPC under COHORT_CUDA_IPC=auto) is noted
 * and passed by: the rules after it choose what runs if the members vote no. COHORT_ALGO_<COLL>
 * rules come first; the defaults below, written in the same syntax and read by the same parser,
 * catch every case they leave out.
 *
 * The syntax, one setting per collective: rules separated by commas, each "cond:...:name" with
 * any of these conditions (none: every case):
 *   lo-hi     bytes from lo to below hi: 0, 4096, 64k, 4m, 1g, inf, and 4k+1 for "past 4 KiB"
 *   total     the byte range is of bytes x group size
 *   n=A, n=A-B, n=A-inf   group sizes from A to B inclusive
 *   pow2, notpow2         group sizes that are (are not) powers of two
 */
#define KIB      ((size_t)1024)
#define MIB      (KIB * KIB)
#define ANY_SIZE SIZE_MAX

#define COHORT_RULES_MAX 16

/* What COHORT_ALGO_* said and the defaults, per context. */
typedef struct {
    cohort_coll_knobs_t knobs; /* first: the rows read it (cohort_coll_knob, coll.h) */
    int nrules[COHORT_COLL_LAST];
    cohort_coll_rule_t rules[COHORT_COLL_LAST][COHORT_RULES_MAX];
    int ndefaults[COHORT_COLL_LAST];
    cohort_coll_rule_t defaults[COHORT_COLL_LAST][COHORT_RULES_MAX];
    int told[COHORT_COLL_LAST]; /* a user's rule was unusable here, and the log said so */
} cohort_coll_selection_t;

/* Thresholds measured on a 2-core machine with 2-16 oversubscribed ranks over shared memory
 * (min of two quiet runs); there, ranks share cores, so total copy work decides more than
 * per-link bandwidth does.
 *
 * bcast: the tree won or tied at every size up to 16 ranks here (16 MiB at np=8: 9.2 ms against
 * 13.5 ms). Scatter + ring keeps the root's link to ~1x the message where the tree root sends it
 * 3 log4(n) times, which pays on machines with a core per rank and big groups: not measurable
 * here, hence the conservative bound.
 * allgather (bytes per rank): crossover at ~64-256 KiB per rank for np=4 and 8; at n=2 both send
 * one message each way, and the ring needs no scratch.
 * alltoall (bytes per pair): pairwise (4 steps in flight) matched Bruck even at 8 B up to np=8;
 * Bruck won 2x at np=16 up to 1 KiB per pair and lost from 4 KiB.
 * allreduce (float32 SUM): whole-vector recursive doubling wins while steps cost more than
 * bytes: up to 128 KiB on 2-4 ranks, 8 KiB on 8, where its log2(n) whole-vector rounds lose to
 * halving. A group that is not a power of two pays two extra whole-vector transfers in either
 * log-step algorithm's fold; recursive doubling still wins there up to 512 KiB, then the ring.
 * From 4 MiB the ring's pipeline wins (and keeps its scratch to a few segments, where
 * rabenseifner's is half the vector).
 * reduce_scatter (bytes per rank): halving moves as many bytes as the ring in log2(n) steps,
 * but its scratch is twice the whole input; a fold (not a power of two) costs a whole input.
 * shm (every member on this node only, and only what fits its 64 KiB buffers: path/shm.c declines
 * the rest): no message per call, so it wins wherever per-call costs dominate. Measured at 2
 * ranks pinned and 4 oversubscribed against the rules below it (cohort_bench, median of 2
 * runs): allreduce 512 B 0.66 us against 1.46 (2 ranks), 2.9 against 6.4 (4); it keeps winning
 * to 32 KiB on 2 ranks and 64 KiB on 4 (15.4 us against 10.6 at 64 KiB on 2 ranks: the others
 * take over there); allgather to 4 KiB per rank on 2 ranks (8 KiB per rank: 3.1 us against 2.9)
 * and to 16 KiB per rank on 4 (7.5 against 15.0); alltoall to 8 KiB per pair on 2 ranks, all
 * that fits on 4; reduce_scatter and bcast all that fits (bcast 16 KiB on 4 ranks: 4.4 us
 * against 10.0).
 * direct (every member on this node only; the others never see these rules): its rounds
 * through the segment cost it ~1 us, so it takes over where shm stops. Measured at 2 ranks
 * pinned and 4 oversubscribed, against the other rules (cohort_bench, 2 runs): allreduce from
 * 64 KiB (2 ranks 128 KiB: 17 us against 22-24 for recursive doubling; 4 ranks 64 KiB: 50
 * against 66-82); allgather from 4 KiB per rank (2 ranks, 8 KiB per rank: 2.7-3.0 us against
 * 4.2-5.0 for the ring); reduce_scatter from 16 KiB per rank (4 ranks 32 KiB per rank: 41
 * against 58 for halving; 2 ranks 32 KiB: 7.1-7.7 against 8.8); bcast from 64 KiB (on 2
 * ranks even where shm would take it: 5.3 us against 6.5 at 64 KiB), its root writing a share
 * into every member while they read the rest (1 MiB: 36 us against 104 on 2 ranks, 251
 * against 296 on 4); alltoall from 16 KiB to 256 KiB per pair (4 ranks, 32 KiB per pair: 39 us
 * against 55), past which pairwise was as good or better.
 * Measured with descriptors and signals through the group's segment (shm_seg.c); under
 * COHORT_CHECK=1 they are messages, ~3 us more a call, and only the reading ones (reduce_scatter,
 * alltoall) run: allreduce, allgather and bcast write into the others' buffers, fenced by the
 * segment's words. */
/* The first row of every collective but barrier is CUDA IPC, which takes itself out where
 * the settings, the node or the call leave it out (path/cuda_ipc.c): it used to be asked before the
 * table, and stays ahead of every other rule. "4k+1" bounds read "up to 4 KiB inclusive". */
static const cohort_config_algo_t cohort_default_settings[] = {
    {"BARRIER", "shm,dissemination"},
    {"BCAST", "cuda_ipc,n=2:64k-inf:direct,shm,64k-inf:direct,n=17-inf:1m-inf:scatter_allgather,"
              "knomial"},
    {"REDUCE", "cuda_ipc,0-64k:shm,knomial"},
    {"ALLREDUCE", "cuda_ipc,0-64k:shm,64k-inf:direct,n=1-4:0-128k+1:recursive_doubling,"
                  "n=5-inf:0-8k+1:recursive_doubling,notpow2:0-512k+1:recursive_doubling,"
                  "pow2:0-4m:rabenseifner,ring"},
    {"ALLGATHER", "cuda_ipc,n=2:0-4k+1:shm,n=3-inf:0-16k+1:shm,4k+1-inf:direct,n=2:ring,"
                  "total:1m-inf:ring,bruck"},
    {"REDUCE_SCATTER", "cuda_ipc,shm,16k-inf:direct,pow2:total:0-1m+1:recursive_halving,"
                       "notpow2:total:0-16k+1:recursive_halving,ring"},
    {"ALLTOALL", "cuda_ipc,n=2:0-8k+1:shm,n=3-inf:shm,16k-256k+1:direct,"
                 "n=5-inf:total:0-16k+1:bruck,pairwise"},
};

static int cohort_rule_matches(const cohort_coll_rule_t *r, const cohort_coll_args_t *a, int gsize)
{
    int pow2 = (gsize & (gsize - 1)) == 0;
    size_t bytes = a->count * a->esize;

    if (r->total && gsize > 0 && bytes > SIZE_MAX / (size_t)gsize) {
        bytes = SIZE_MAX;
    } else if (r->total) {
        bytes *= (size_t)gsize;
    }
    return (r->min_n == 0 || gsize >= r->min_n) && (r->max_n == 0 || gsize <= r->max_n) &&
           (r->pow2 < 0 || r->pow2 == pow2) && bytes >= r->lo &&
           (bytes < r->hi || r->hi == ANY_SIZE);
}

/* The first of @a n rules that picks an algorithm for this case; @a forced: they are the
 * user's. A rule whose algorithm asks for a vote goes into *vote (the first such) and the search
 * goes on. */
static const cohort_coll_algo_t *cohort_rules_pick(cohort_context_t *ctx,
                                                   const cohort_coll_rule_t *rules, int n,
                                                   const cohort_coll_args_t *a, int gsize, int node,
                                                   int forced, const cohort_coll_algo_t **vote)
{
    for (int i = 0; i < n; i++) {
        const cohort_coll_algo_t *algo = rules[i].algo;
        const char *why = NULL;
        int use = COHORT_COLL_TAKE;

        if (rules[i].coll != a->coll || !cohort_rule_matches(&rules[i], a, gsize) ||
            (algo->node & ~node) != 0 || (algo->decline != NULL && algo->decline(algo, a, gsize))) {
            continue;
        }
        if (algo->usable != NULL) {
            use = algo->usable(ctx, a, gsize, forced, &why);
        }
        if (use == COHORT_COLL_NO && forced && why != NULL) {
            cohort_coll_selection_t *sel = ctx->coll;
            /* a setting of the user's that cannot be followed here is said once, not per call */
            cohort_log(cohort_ctx_log(ctx),
                       sel->told[a->coll]++ ? COHORT_LOG_DEBUG : COHORT_LOG_WARN,
                       "COHORT_ALGO_%s: %s is not usable here (%s); the next rule chooses",
                       cohort_coll_env_names[a->coll], algo->name, why);
        }
        if (use == COHORT_COLL_VOTE && *vote == NULL) {
            *vote = algo;
        }
        if (use == COHORT_COLL_TAKE) {
            return algo;
        }
    }
    return NULL;
}

const cohort_coll_algo_t *cohort_coll_select(cohort_context_t *ctx, const cohort_coll_args_t *args,
                                             int gsize, int node, const cohort_coll_algo_t **vote)
{
    const cohort_coll_selection_t *sel = ctx->coll;
    const cohort_coll_algo_t *algo = NULL;
    int c = (int)args->coll;

    *vote = NULL;
    if (sel == NULL || c < 0 || c >= COHORT_COLL_LAST) {
        return NULL;
    }
    algo = cohort_rules_pick(ctx, sel->rules[c], sel->nrules[c], args, gsize, node, 1, vote);
    if (algo == NULL) {
        algo =
            cohort_rules_pick(ctx, sel->defaults[c], sel->ndefaults[c], args, gsize, node, 0, vote);
    }
    return algo;
}

int cohort_coll_node_local(cohort_comm_t *g)
{
    cohort_context_t *ctx = g->ctx;

    if (g->node_local == 0) {
        g->node_local = 1;
        for (int k = 0; k < g->size && g->node_local > 0; k++) {
            cohort_peer_t *peer = cohort_peer_get(ctx, cohort_comm_world_rank(g, k));
            if (peer == NULL || (peer->rank != ctx->rank && !cohort_peer_same_node(peer))) {
                g->node_local = -1;
            }
        }
    }
    if (g->node_local < 0 || g->node_off || !cohort_cma_direct(ctx)) {
        return 0;
    }
    return COHORT_NODE_DIRECT | (ctx->cfg.check || !cohort_cma_fd_share(ctx) ? 0 : COHORT_NODE_SHM);
}

const cohort_coll_algo_t *cohort_coll_pick(cohort_comm_t *g, const cohort_coll_args_t *args,
                                           const cohort_coll_algo_t **vote)
{
    int node = cohort_coll_node_local(g);

    /* every member on this node, whether or not single copy may be tried (CUDA IPC's need) */
    const cohort_coll_algo_t *algo, *again;

    if (g->node_local > 0) {
        node |= COHORT_NODE_SAME;
    }
    algo = cohort_coll_select(g->ctx, args, g->size, node, vote);
    /* A call on the group's shared segment takes its number there at post (shm_seg.h), and one
     * that votes may yet end on the other algorithm, leaving a number nobody uses: it is
     * chosen as if the group had no segment. */
    if (*vote != NULL && algo != NULL && algo->segment && (node & COHORT_NODE_SHM)) {
        algo = cohort_coll_select(g->ctx, args, g->size, node & ~COHORT_NODE_SHM, &again);
    }
    return algo;
}

const cohort_coll_algo_t *cohort_coll_pick_messages(cohort_comm_t *g,
                                                    const cohort_coll_args_t *args)
{
    const cohort_coll_algo_t *unused, *algo;

    algo = cohort_coll_select(g->ctx, args, g->size, g->node_local > 0 ? COHORT_NODE_SAME : 0,
                              &unused);
    return algo != NULL && !algo->segment ? algo : NULL;
}

const cohort_coll_rule_t *cohort_coll_default_rules(const cohort_context_t *ctx,
                                                    cohort_coll_type_t coll, int *n)
{
    const cohort_coll_selection_t *sel = ctx->coll;

    *n = sel != NULL && coll < COHORT_COLL_LAST ? sel->ndefaults[coll] : 0;
    return *n > 0 ? sel->defaults[coll] : NULL;
}

/* "64k", "1m", "0", "inf" -> bytes; -1 on a bad size. */
static int cohort_parse_size(const char *s, size_t len, size_t *out)
{
    char buf[32], *end;
    unsigned long long v;
    size_t mult = 1;

    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (strcmp(buf, "inf") == 0) {
        *out = ANY_SIZE;
        return 0;
    }
    if (buf[0] < '0' || buf[0] > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno == ERANGE) {
        return -1; /* past 2^64: strtoull says so only through errno (and gives ULLONG_MAX) */
    }
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        mult = KIB;
        end++;
        break;
    case 'm':
    case 'M':
        mult = MIB;
        end++;
        break;
    case 'g':
    case 'G':
        mult = MIB * KIB;
        end++;
        break;
    default:
        return -1;
    }
    if (*end != '\0' || v > SIZE_MAX / mult) {
        return -1;
    }
    *out = (size_t)v * mult;
    return 0;
}

static int cohort_coll_names_list(int c, char *err, size_t errlen, size_t used)
{
    const cohort_coll_table_t *t = cohort_coll_tables[c];

    for (int j = 0; j < t->nrows && used < errlen; j++) {
        used += (size_t)snprintf(err + used, errlen - used, " %s", t->rows[j]->name);
    }
    return (int)used;
}

/* A range's bound: a size, or "size+N" (4k+1: the first byte past 4 KiB); -1 when bad. */
static int cohort_parse_bound(const char *s, size_t len, size_t *out)
{
    const char *plus = memchr(s, '+', len);
    size_t add = 0;

    if (plus == NULL) {
        return cohort_parse_size(s, len, out);
    }
    if (cohort_parse_size(s, (size_t)(plus - s), out) != 0 || *out == ANY_SIZE ||
        memchr(plus + 1, '+', len - (size_t)(plus + 1 - s)) != NULL ||
        strspn(plus + 1, "0123456789") < len - (size_t)(plus + 1 - s) ||
        cohort_parse_size(plus + 1, len - (size_t)(plus + 1 - s), &add) != 0 ||
        add >= ANY_SIZE - *out) {
        return -1;
    }
    *out += add;
    return 0;
}

/* "A", "A-B" or "A-inf" (group sizes, inclusive) into @a r; -1 when bad. */
static int cohort_parse_gsizes(const char *s, size_t len, cohort_coll_rule_t *r)
{
    const char *dash = memchr(s, '-', len);
    size_t lo, hi;

    if (cohort_parse_size(s, dash ? (size_t)(dash - s) : len, &lo) != 0 ||
        strspn(s, "0123456789") < (dash ? (size_t)(dash - s) : len) || lo < 1 || lo > INT32_MAX) {
        return -1;
    }
    hi = lo;
    if (dash != NULL &&
        (cohort_parse_size(dash + 1, len - (size_t)(dash + 1 - s), &hi) != 0 ||
         (hi != ANY_SIZE && (hi > INT32_MAX || hi < lo ||
                             strspn(dash + 1, "0123456789") < len - (size_t)(dash + 1 - s))))) {
        return -1;
    }
    r->min_n = lo == 1 ? 0 : (int)lo; /* every group has a member: 1 is no bound */
    r->max_n = hi == ANY_SIZE ? 0 : (int)hi;
    return 0;
}

/* One condition of a rule (everything before its name) into @a r; -1 when bad. */
static int cohort_parse_cond(const char *s, size_t len, cohort_coll_rule_t *r)
{
    const char *dash;

#define COND_IS(word) (len == strlen(word) && memcmp(s, word, len) == 0)
    if (COND_IS("pow2") || COND_IS("notpow2")) {
        r->pow2 = COND_IS("pow2");
        return 0;
    }
    if (COND_IS("total")) {
        r->total = 1;
        return 0;
    }
#undef COND_IS
    if (len > 2 && memcmp(s, "n=", 2) == 0) {
        return cohort_parse_gsizes(s + 2, len - 2, r);
    }
    dash = memchr(s, '-', len);
    if (dash == NULL || cohort_parse_bound(s, (size_t)(dash - s), &r->lo) != 0 ||
        cohort_parse_bound(dash + 1, len - (size_t)(dash + 1 - s), &r->hi) != 0 || r->lo >= r->hi) {
        return -1;
    }
    return 0;
}

/* The rules of setting @a set (the syntax above) for collective c, appended to @a rules (*n of
 * them so far). The user's settings and the defaults both come through here. */
static cohort_status_t cohort_coll_parse_rules(cohort_coll_rule_t *rules, int *n, int c,
                                               const cohort_config_algo_t *set, char *err,
                                               size_t errlen)
{
    const char *p = set->value;

    while (*p != '\0') {
        const char *comma = strchr(p, ','), *name = p, *colon;
        size_t len = comma ? (size_t)(comma - p) : strlen(p), namelen;
        cohort_coll_rule_t r = {(cohort_coll_type_t)c, 0, 0, -1, 0, 0, ANY_SIZE, NULL};
        char algo[COHORT_CONFIG_NAME_MAX];

        while ((colon = memchr(name, ':', len - (size_t)(name - p))) != NULL) {
            if (cohort_parse_cond(name, (size_t)(colon - name), &r) != 0) {
                snprintf(err, errlen,
                         "COHORT_ALGO_%s=%s: bad size range or condition \"%.*s\" in \"%.*s\"; "
                         "expected cond:...:name with conditions lo-hi (sizes like 0, 64k, 4k+1, "
                         "4m, inf, under 2^64 bytes, lo < hi), total, n=A-B (group sizes), pow2 "
                         "or notpow2",
                         set->name, set->value, (int)(colon - name), name, (int)len, p);
                return COHORT_ERR_INVALID_ARG;
            }
            name = colon + 1;
        }
        namelen = len - (size_t)(name - p);
        snprintf(algo, sizeof(algo), "%.*s", (int)namelen, name);
        r.algo = cohort_coll_find((cohort_coll_type_t)c, algo);
        if (r.algo == NULL || *n == COHORT_RULES_MAX) {
            int used =
                snprintf(err, errlen, "COHORT_ALGO_%s=%s: %s \"%s\"; valid:", set->name, set->value,
                         r.algo == NULL ? "unknown algorithm" : "too many ranges at", algo);
            cohort_coll_names_list(c, err, errlen, (size_t)used);
            return COHORT_ERR_INVALID_ARG;
        }
        rules[(*n)++] = r;
        p += len + (comma ? 1 : 0);
    }
    return COHORT_OK;
}

/* The collective COHORT_ALGO_@a name is for; COHORT_COLL_LAST when none. */
static int cohort_coll_by_env_name(const char *name)
{
    int c;

    for (c = 0; c < COHORT_COLL_LAST; c++) {
        if (strcmp(name, cohort_coll_env_names[c]) == 0) {
            break;
        }
    }
    return c;
}

/* A tuning parameter's setting: 1 when @a set named one (and it was good), 0 when it names
 * none, -1 on a bad value (err says why). */
static int cohort_coll_parse_knob(cohort_coll_selection_t *sel, const cohort_config_algo_t *set,
                                  char *err, size_t errlen)
{
    for (int a = 0; a < cohort_algo_count(); a++) {
        const cohort_coll_algo_t *algo = cohort_algo_by_id(a);
        for (int k = 0; k < algo->nknobs; k++) {
            const cohort_coll_knob_t *kn = &algo->knobs[k];
            size_t v;

            if (strcmp(kn->env + strlen("COHORT_ALGO_"), set->name) != 0) {
                continue;
            }
            if (cohort_parse_size(set->value, strlen(set->value), &v) != 0 || v == ANY_SIZE ||
                (!kn->bytes && strpbrk(set->value, "kKmMgG") != NULL) || v < kn->min ||
                v > kn->max) {
                snprintf(err, errlen, "%s=%s: expected %s from %zu to %zu", kn->env, set->value,
                         kn->bytes ? "bytes (k/m suffixes accepted)" : "a count", kn->min, kn->max);
                return -1;
            }
            sel->knobs.value[a][k] = v;
            return 1;
        }
    }
    return 0;
}

/* Whether the tables give ids 0 to count - 1, each once, below COHORT_ALGOS_MAX (coll.h): a
 * row added with a taken or a skipped id is said at init, not a crash on a missing row. */
static cohort_status_t cohort_coll_tables_check(char *err, size_t errlen)
{
    int n = cohort_algo_count();

    for (int id = 0; id < n; id++) {
        if (cohort_algo_by_id(id) == NULL || n > COHORT_ALGOS_MAX) {
            snprintf(err, errlen,
                     "the algorithm tables (src/coll/<collective>/table.c) have %d rows but no "
                     "row with id %d: ids must run from 0 to %d, each once, below %d",
                     n, id, n - 1, COHORT_ALGOS_MAX);
            return COHORT_ERR_INVALID_ARG;
        }
    }
    return COHORT_OK;
}

cohort_status_t cohort_coll_config(cohort_context_t *ctx, char *err, size_t errlen)
{
    cohort_coll_selection_t *sel;

    if (cohort_coll_tables_check(err, errlen) != COHORT_OK) {
        return COHORT_ERR_INVALID_ARG;
    }
    sel = calloc(1, sizeof(*sel));
    if (sel == NULL) {
        snprintf(err, errlen, "out of memory");
        return COHORT_ERR_NO_MEMORY;
    }
    for (int a = 0; a < cohort_algo_count(); a++) {
        const cohort_coll_algo_t *algo = cohort_algo_by_id(a);
        for (int k = 0; k < algo->nknobs; k++) {
            sel->knobs.value[a][k] = algo->knobs[k].def;
        }
    }
    for (int i = 0; i < ctx->cfg.nalgo; i++) {
        const cohort_config_algo_t *set = &ctx->cfg.algo[i];
        int c, r;

        r = cohort_coll_parse_knob(sel, set, err, errlen);
        if (r < 0) {
            free(sel);
            return COHORT_ERR_INVALID_ARG;
        }
        if (r > 0) {
            continue;
        }
        c = cohort_coll_by_env_name(set->name);
        if (c == COHORT_COLL_LAST) {
            snprintf(err, errlen,
                     "COHORT_ALGO_%s: unknown collective; expected COHORT_ALGO_ followed by "
                     "BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, REDUCE_SCATTER or ALLTOALL",
                     set->name);
            free(sel);
            return COHORT_ERR_INVALID_ARG;
        }
        if (cohort_coll_parse_rules(sel->rules[c], &sel->nrules[c], c, set, err, errlen) !=
            COHORT_OK) {
            free(sel);
            return COHORT_ERR_INVALID_ARG;
        }
    }
    for (size_t i = 0; i < sizeof(cohort_default_settings) / sizeof(cohort_default_settings[0]);
         i++) {
        const cohort_config_algo_t *set = &cohort_default_settings[i];
        int c = cohort_coll_by_env_name(set->name);

        if (c == COHORT_COLL_LAST || cohort_coll_parse_rules(sel->defaults[c], &sel->ndefaults[c],
                                                             c, set, err, errlen) != COHORT_OK) {
            free(sel); /* the defaults' own test (check_select) keeps this from happening */
            return COHORT_ERR_INVALID_ARG;
        }
    }
    ctx->coll = sel;
    ctx->coll_free = free;
    ctx->comm_made = cohort_shm_created;
    return COHORT_OK;
}

/* The public table (cohort.h): every collective's rows, each under the id it carries
 * (coll.h: ids are 0 to count - 1, each once, never reused or moved; a retired row would keep
 * its id and decline every case). */
int cohort_algo_count(void)
{
    int n = 0;

    for (int c = 0; c < COHORT_COLL_LAST; c++) {
        n += cohort_coll_tables[c]->nrows;
    }
    return n;
}

cohort_status_t cohort_algo_info(int index, cohort_algo_info_t *info)
{
    const cohort_coll_algo_t *algo = cohort_algo_by_id(index);

    if (info == NULL || algo == NULL) {
        return COHORT_ERR_INVALID_ARG;
    }
    info->id = index;
    info->collective = cohort_coll_names[algo->coll];
    info->name = algo->name;
    info->description = algo->description;
    return COHORT_OK;
}

int cohort_algo_param_count(int index)
{
    const cohort_coll_algo_t *algo = cohort_algo_by_id(index);

    return algo != NULL ? algo->nknobs : 0;
}

cohort_status_t cohort_algo_param_info(int index, int param, cohort_algo_param_t *info)
{
    const cohort_coll_knob_t *kn;

    if (info == NULL || param < 0 || param >= cohort_algo_param_count(index)) {
        return COHORT_ERR_INVALID_ARG;
    }
    kn = &cohort_algo_by_id(index)->knobs[param];
    info->name = kn->name;
    info->env = kn->env;
    info->default_value = kn->def;
    info->min = kn->min;
    info->max = kn->max;
    info->is_bytes = kn->bytes;
    info->description = kn->description;
    return COHORT_OK;
}
