/*
 * cohort_peers: what a layout costs each rank. Run under a launcher:
 *
 *   mpirun -np 8 cohort_peers --layout tp=2,pp=2 [--no-traffic] [--json]
 *
 * Every rank builds the layout, runs one small allreduce in each of its groups (unless
 * --no-traffic), then takes a snapshot of what it holds: its groups, the peers it wired (with
 * the UCX transports of each endpoint, the wiring time and the PMIx lookups made) and its
 * counters. Only then are the snapshots gathered to rank 0, which prints them in rank order.
 * The gather itself wires every rank to rank 0; since it runs after the snapshot, it never
 * shows in the output.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cohort.h>
#include "layout_text.h"

#define PEERS_EXIT_FAIL  1
#define PEERS_EXIT_USAGE 2
#define PEERS_MAX_GROUPS 48 /* per rank: one per kind (16 named, up to 10 from keys) + --kind */
#define PEERS_MAX_EXTRA  16 /* --kind options */

/* Tags of the gather to rank 0: a header, the group ids, the text. */
enum { TAG_HEADER = 1, TAG_IDS = 2, TAG_TEXT = 3 };
enum { HDR_TEXTLEN, HDR_NGROUPS, HDR_NWIRED, HDR_LOOKUPS, HDR_COUNT };

typedef struct {
    const char *spec;
    int traffic;
    int json;
    const char *extra[PEERS_MAX_EXTRA]; /* --kind: tokens or derived kinds beyond the spec's */
    int nextra;
} peers_opts_t;

/* A growing text buffer; on allocation failure it stays truncated and says so. */
typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} peers_text_t;

static void peers_text_printf(peers_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void peers_text_printf(peers_text_t *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->failed) {
        return;
    }
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if (t->buf != NULL && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap <= t->len + (size_t)n) {
            cap *= 2;
        }
        char *nb = realloc(t->buf, cap);
        if (nb == NULL) {
            t->failed = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
}

/* JSON string contents: UCX names are plain, but a string is escaped wherever it comes from. */
static void peers_text_json_string(peers_text_t *t, const char *s)
{
    peers_text_printf(t, "\"");
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            peers_text_printf(t, "\\%c", c);
        } else if (c < 0x20) {
            peers_text_printf(t, "\\u%04x", c);
        } else {
            peers_text_printf(t, "%c", c);
        }
    }
    peers_text_printf(t, "\"");
}

static double peers_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Before cohort_init the rank is unknown: the launcher's variable tells which rank speaks. */
static int peers_is_first(void)
{
    const char *r = getenv("PMIX_RANK");

    return r == NULL || strcmp(r, "0") == 0;
}

static void peers_usage(FILE *f)
{
    fprintf(f,
            "usage: cohort_peers [--layout SPEC] [--kind K]... [--no-traffic] [--json] [--help]\n"
            "  Run under a launcher, e.g. mpirun -np 8 cohort_peers --layout tp=2,pp=2\n"
            "  --layout SPEC  Megatron-style layout: tp=,pp=,cp=,ep=,etp=,order= (all optional;\n"
            "                 dp is derived from the world size; default: all 1, dp = world;\n"
            "                 hcp=AxB, dopt=N, embd=first+last+K add kinds, docs/layouts.md)\n"
            "  --kind K       also build kind K after the layout, e.g. expert:tp-ep, dense:dp-cp,\n"
            "                 intra-edp (repeatable; a token equal to a built kind is that kind)\n"
            "  --no-traffic   build the groups only: no allreduce, so nothing is wired\n"
            "  --json         one JSON document instead of the table\n"
            "  Each rank runs one 1-element float32 SUM allreduce in each of its groups (in\n"
            "  the same kind order on every rank), then reports its groups, its wired peers\n"
            "  with their UCX transports, wiring times and PMIx lookups. Rank 0 prints all.\n"
            "  Exit status: 0 ok, 1 a cohort call failed, 2 bad option or layout.\n");
}

static int peers_parse(int argc, char **argv, peers_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->spec = "";
    o->traffic = 1;
    o->json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (peers_is_first()) {
                peers_usage(stdout);
            }
            return 0;
        } else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
            o->spec = argv[++i];
        } else if (strncmp(argv[i], "--layout=", 9) == 0) {
            o->spec = argv[i] + 9;
        } else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc && o->nextra < PEERS_MAX_EXTRA) {
            o->extra[o->nextra++] = argv[++i];
        } else if (strcmp(argv[i], "--no-traffic") == 0) {
            o->traffic = 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            o->json = 1;
        } else {
            if (peers_is_first()) {
                fprintf(stderr, "cohort_peers: %s '%s'\n",
                        strcmp(argv[i], "--layout") == 0 || strcmp(argv[i], "--kind") == 0
                            ? "missing value for (or too many)"
                            : "unknown option",
                        argv[i]);
                peers_usage(stderr);
            }
            return PEERS_EXIT_USAGE;
        }
    }
    return -1; /* go on */
}

/* What one rank reports, taken before the gather. */
typedef struct {
    int ngroups;
    const char *kinds[PEERS_MAX_GROUPS];
    cohort_group_t *groups[PEERS_MAX_GROUPS];
    double first_us[PEERS_MAX_GROUPS]; /* first allreduce in the group; < 0 without traffic */
    /* ... the endpoints it made and the messages it sent (this rank's), and the path it took */
    long long first_eps[PEERS_MAX_GROUPS], first_msgs[PEERS_MAX_GROUPS];
    cohort_group_info_t info[PEERS_MAX_GROUPS];
    int nwired;
    cohort_peer_info_t *peers;
    cohort_stats_t stats;
    cohort_node_info_t node;          /* where this rank runs */
    int nlocal;                       /* wired peers on this rank's node */
    uint64_t create_msgs, create_eps; /* what cohort_layout_create sent and wired */
    long long extra_groups;           /* groups of the --kind kinds that are not aliases */
} peers_snap_t;

static int peers_traffic(cohort_context_t *ctx, peers_snap_t *snap)
{
    for (int k = 0; k < snap->ngroups; k++) {
        cohort_group_t *g = snap->groups[k];
        float one = 1.0f, sum = 0.0f;
        cohort_stats_t before, after;
        double t0;
        cohort_status_t st;

        cohort_stats(ctx, &before);
        t0 = peers_now_us();
        st = cohort_allreduce(g, &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM);
        snap->first_us[k] = peers_now_us() - t0;
        cohort_stats(ctx, &after);
        snap->first_eps[k] = (long long)after.endpoints - (long long)before.endpoints;
        snap->first_msgs[k] = (long long)(after.messages_sent - before.messages_sent);
        if (st != COHORT_OK) {
            fprintf(stderr, "cohort_peers: rank %d: allreduce in its %s group failed: %s\n",
                    cohort_group_world_rank(g, cohort_group_rank(g)), snap->kinds[k],
                    cohort_strerror(st));
            return PEERS_EXIT_FAIL;
        }
        if (sum != (float)cohort_group_size(g)) {
            fprintf(stderr, "cohort_peers: rank %d: allreduce in its %s group gave %g, not %d\n",
                    cohort_group_world_rank(g, cohort_group_rank(g)), snap->kinds[k], sum,
                    cohort_group_size(g));
            return PEERS_EXIT_FAIL;
        }
    }
    return 0;
}

static int peers_snapshot(cohort_context_t *ctx, peers_snap_t *snap)
{
    int *ranks;

    if (cohort_stats(ctx, &snap->stats) != COHORT_OK ||
        cohort_node_info(ctx, cohort_world_rank(ctx), &snap->node) != COHORT_OK) {
        return PEERS_EXIT_FAIL;
    }
    for (int k = 0; k < snap->ngroups; k++) {
        if (cohort_group_info(snap->groups[k], &snap->info[k]) != COHORT_OK) {
            return PEERS_EXIT_FAIL;
        }
    }
    snap->nwired = cohort_wired_peers(ctx, NULL, 0);
    ranks = malloc(((size_t)snap->nwired + 1) * sizeof(*ranks));
    snap->peers = calloc((size_t)snap->nwired + 1, sizeof(*snap->peers));
    if (ranks == NULL || snap->peers == NULL) {
        free(ranks);
        return PEERS_EXIT_FAIL;
    }
    cohort_wired_peers(ctx, ranks, snap->nwired);
    for (int i = 0; i < snap->nwired; i++) {
        if (cohort_peer_info(ctx, ranks[i], &snap->peers[i]) != COHORT_OK) {
            free(ranks);
            return PEERS_EXIT_FAIL;
        }
        snap->nlocal += snap->peers[i].same_node;
    }
    free(ranks);
    return 0;
}

static const char *peers_segment_name(cohort_segment_state_t state)
{
    switch (state) {
    case COHORT_SEGMENT_SETTING_UP:
        return "setting up";
    case COHORT_SEGMENT_READY:
        return "ready";
    case COHORT_SEGMENT_FAILED:
        return "failed";
    default:
        return "none";
    }
}

/* The path a group's first allreduce took, in a few words: "shm, segment" when it ran on the
 * group's shared segment, "ring, messages" otherwise; a one-member group has no path. */
static void peers_path(const cohort_group_t *g, const cohort_group_info_t *info, char *buf,
                       size_t len)
{
    if (cohort_group_size(g) == 1) {
        snprintf(buf, len, "alone, nothing moves");
        return;
    }
    snprintf(buf, len, "%s, %s", info->last_algorithm ? info->last_algorithm : "-",
             info->segment == COHORT_SEGMENT_READY ? "segment" : "messages");
}

static void peers_format_json(int me, const peers_snap_t *s, peers_text_t *t)
{
    peers_text_printf(t, "    {\"rank\": %d, \"node\": %lld, \"host\": ", me,
                      s->node.node_id == UINT32_MAX ? -1LL : (long long)s->node.node_id);
    peers_text_json_string(t, s->node.hostname);
    peers_text_printf(t, ", \"pmix_lookups\": %" PRIu64 ", \"plugin\": ", s->stats.pmix_lookups);
    peers_text_json_string(t, s->stats.pmix_plugin);
    peers_text_printf(t, ", \"local_endpoints\": %d, \"remote_endpoints\": %d", s->nlocal,
                      s->nwired - s->nlocal);
    peers_text_printf(t,
                      ", \"create_messages\": %" PRIu64 ", \"create_endpoints\": %" PRIu64
                      ",\n     \"groups\": [",
                      s->create_msgs, s->create_eps);
    for (int k = 0; k < s->ngroups; k++) {
        const cohort_group_t *g = s->groups[k];
        peers_text_printf(t, "%s\n       {\"kind\": \"%s\", \"id\": \"0x%016" PRIx64 "\"",
                          k ? "," : "", s->kinds[k], cohort_group_id(g));
        if (s->first_us[k] >= 0) {
            peers_text_printf(t,
                              ", \"first_allreduce_us\": %.1f, \"first_allreduce_endpoints\": "
                              "%lld, \"first_allreduce_messages\": %lld",
                              s->first_us[k], s->first_eps[k], s->first_msgs[k]);
        }
        peers_text_printf(t, ", \"algorithm\": ");
        if (s->info[k].last_algorithm != NULL) {
            peers_text_json_string(t, s->info[k].last_algorithm);
        } else {
            peers_text_printf(t, "null");
        }
        peers_text_printf(t, ", \"segment\": \"%s\", \"node_local\": %d",
                          peers_segment_name(s->info[k].segment), s->info[k].node_local);
        peers_text_printf(t, ", \"members\": [");
        for (int i = 0; i < cohort_group_size(g); i++) {
            peers_text_printf(t, "%s%d", i ? ", " : "", cohort_group_world_rank(g, i));
        }
        peers_text_printf(t, "]}");
    }
    peers_text_printf(t, "],\n     \"wired_peers\": [");
    for (int i = 0; i < s->nwired; i++) {
        const cohort_peer_info_t *p = &s->peers[i];
        peers_text_printf(t, "%s\n       {\"rank\": %d, \"transports\": ", i ? "," : "",
                          p->world_rank);
        peers_text_json_string(t, p->transports);
        peers_text_printf(t, ", \"same_node\": %s, \"wire_us\": %.1f, \"lookups\": %d}",
                          p->same_node ? "true" : "false", p->wire_us, p->pmix_lookups);
    }
    peers_text_printf(t, "]}");
}

static void peers_format_table(int me, const peers_snap_t *s, peers_text_t *t)
{
    peers_text_printf(t,
                      "rank %d on %s (node %u): %d groups, %d wired peers (%d on this node, %d "
                      "remote), %" PRIu64 " PMIx lookups, %" PRIu64
                      " messages sent (layout creation: %" PRIu64 " messages, %" PRIu64
                      " endpoints)\n",
                      me, s->node.hostname[0] ? s->node.hostname : "?", s->node.node_id, s->ngroups,
                      s->nwired, s->nlocal, s->nwired - s->nlocal, s->stats.pmix_lookups,
                      s->stats.messages_sent, s->create_msgs, s->create_eps);
    peers_text_printf(t, "  %-14s %-18s %13s %-24s %4s %4s  %s\n", "kind", "group id",
                      "1st allreduce", "path", "eps", "msgs", "members");
    for (int k = 0; k < s->ngroups; k++) {
        const cohort_group_t *g = s->groups[k];
        char first[32] = "-", path[48] = "-", eps[24] = "-", msgs[24] = "-";
        if (s->first_us[k] >= 0) {
            snprintf(first, sizeof(first), "%.1f us", s->first_us[k]);
            peers_path(g, &s->info[k], path, sizeof(path));
            snprintf(eps, sizeof(eps), "%lld", s->first_eps[k]);
            snprintf(msgs, sizeof(msgs), "%lld", s->first_msgs[k]);
        }
        peers_text_printf(t, "  %-14s 0x%016" PRIx64 " %13s %-24s %4s %4s  [", s->kinds[k],
                          cohort_group_id(g), first, path, eps, msgs);
        for (int i = 0; i < cohort_group_size(g); i++) {
            peers_text_printf(t, "%s%d", i ? " " : "", cohort_group_world_rank(g, i));
        }
        peers_text_printf(t, "]\n");
    }
    if (s->nwired == 0) {
        peers_text_printf(t, "  no wired peers\n");
        return;
    }
    peers_text_printf(t, "  %-6s %-6s %10s %7s  %s\n", "peer", "where", "wire", "lookups",
                      "transports");
    for (int i = 0; i < s->nwired; i++) {
        const cohort_peer_info_t *p = &s->peers[i];
        peers_text_printf(t, "  %-6d %-6s %7.1f us %7d  %s%s\n", p->world_rank,
                          p->same_node ? "local" : "remote", p->wire_us, p->pmix_lookups,
                          p->transports[0] ? p->transports : "?",
                          p->world_rank == me ? " (self)" : "");
    }
}

static int peers_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Rank 0 prints every rank's block in rank order, received one rank at a time. */
static int peers_gather(cohort_context_t *ctx, const peers_opts_t *o, const char *spec_full,
                        const cohort_layout_spec_t *spec, const peers_snap_t *snap,
                        const peers_text_t *mine)
{
    cohort_group_t *world = cohort_world(ctx);
    int me = cohort_world_rank(ctx), n = cohort_world_size(ctx);
    uint64_t hdr[HDR_COUNT], ids[PEERS_MAX_GROUPS], *all_ids = NULL, max_eps = 0, max_lookups = 0;
    size_t nids = 0, distinct = 0, layout_total = 0;
    int max_groups = 0, max_eps_rank = 0;
    char *text = NULL;

    hdr[HDR_TEXTLEN] = mine->len;
    hdr[HDR_NGROUPS] = (uint64_t)snap->ngroups;
    hdr[HDR_NWIRED] = (uint64_t)snap->nwired;
    hdr[HDR_LOOKUPS] = snap->stats.pmix_lookups;
    for (int k = 0; k < snap->ngroups; k++) {
        ids[k] = cohort_group_id(snap->groups[k]);
    }
    if (me != 0) {
        if (cohort_send(world, hdr, HDR_COUNT, COHORT_UINT64, 0, TAG_HEADER) != COHORT_OK ||
            cohort_send(world, ids, (size_t)snap->ngroups, COHORT_UINT64, 0, TAG_IDS) !=
                COHORT_OK ||
            cohort_send(world, mine->buf, mine->len, COHORT_UINT8, 0, TAG_TEXT) != COHORT_OK) {
            fprintf(stderr, "cohort_peers: rank %d: sending its report to rank 0 failed\n", me);
            return PEERS_EXIT_FAIL;
        }
        return 0;
    }

    all_ids = malloc((size_t)n * PEERS_MAX_GROUPS * sizeof(*all_ids));
    if (all_ids == NULL) {
        return PEERS_EXIT_FAIL;
    }
    if (o->json) {
        peers_text_t head = {0};

        /* The spec is the user's text: escaped like every other string. */
        peers_text_printf(&head, "{\"world\": %d, \"layout\": ", n);
        peers_text_json_string(&head, o->spec);
        peers_text_printf(&head, ", \"layout_full\": ");
        peers_text_json_string(&head, spec_full);
        peers_text_printf(&head,
                          ",\n \"snapshot\": \"each rank's groups, peers and counters were taken "
                          "before the gather to rank 0, which wires every rank to rank 0\",\n"
                          " \"traffic\": \"%s\",\n \"ranks\": [\n",
                          o->traffic ? "one 1-element float32 SUM allreduce per group" : "none");
        printf("%s", head.failed ? "" : head.buf);
        free(head.buf);
    } else {
        printf("cohort_peers: world %d, layout %s\n"
               "  traffic: %s\n"
               "  (each rank's groups, peers and counters were taken before the gather to rank "
               "0,\n   which wires every rank to rank 0)\n\n",
               n, spec_full,
               o->traffic ? "one 1-element float32 SUM allreduce per group, kinds in order"
                          : "none (--no-traffic)");
    }
    for (int r = 0; r < n; r++) {
        const char *body;

        if (r == 0) { /* hdr already holds rank 0's own header */
            memcpy(all_ids, ids, (size_t)snap->ngroups * sizeof(*ids));
            body = mine->buf;
        } else {
            if (cohort_recv(world, hdr, HDR_COUNT, COHORT_UINT64, r, TAG_HEADER) != COHORT_OK ||
                hdr[HDR_NGROUPS] > PEERS_MAX_GROUPS) {
                goto err_recv;
            }
            free(text);
            text = malloc(hdr[HDR_TEXTLEN] + 1);
            if (text == NULL ||
                cohort_recv(world, all_ids + nids, hdr[HDR_NGROUPS], COHORT_UINT64, r, TAG_IDS) !=
                    COHORT_OK ||
                cohort_recv(world, text, hdr[HDR_TEXTLEN], COHORT_UINT8, r, TAG_TEXT) !=
                    COHORT_OK) {
                goto err_recv;
            }
            body = text;
        }
        nids += hdr[HDR_NGROUPS];
        if ((int)hdr[HDR_NGROUPS] > max_groups) {
            max_groups = (int)hdr[HDR_NGROUPS];
        }
        if (hdr[HDR_NWIRED] > max_eps) {
            max_eps = hdr[HDR_NWIRED];
            max_eps_rank = r;
        }
        if (hdr[HDR_LOOKUPS] > max_lookups) {
            max_lookups = hdr[HDR_LOOKUPS];
        }
        printf("%.*s%s", (int)hdr[HDR_TEXTLEN], body, o->json ? (r + 1 < n ? ",\n" : "\n") : "\n");
    }

    /* Every group appears once per member: distinct ids are the layout's groups. */
    qsort(all_ids, nids, sizeof(*all_ids), peers_cmp_u64);
    for (size_t i = 0; i < nids; i++) {
        distinct += (i == 0 || all_ids[i] != all_ids[i - 1]);
    }
    layout_total = (size_t)(cohort_tools_layout_total(spec) + snap->extra_groups);
    if (o->json) {
        printf(" ],\n \"summary\": {\"max_endpoints\": %" PRIu64 ", \"max_endpoints_rank\": %d, "
               "\"max_pmix_lookups\": %" PRIu64 ", \"max_groups_per_rank\": %d, "
               "\"total_groups\": %zu, \"layout_groups\": %zu}}\n",
               max_eps, max_eps_rank, max_lookups, max_groups, distinct, layout_total);
    } else {
        printf("summary: max endpoints/rank %" PRIu64 " (rank %d), max PMIx lookups/rank %" PRIu64
               ", max groups/rank %d, total groups %zu (distinct ids; the layout has %zu)\n",
               max_eps, max_eps_rank, max_lookups, max_groups, distinct, layout_total);
    }
    free(text);
    free(all_ids);
    if (distinct != layout_total) {
        fprintf(stderr, "cohort_peers: %zu distinct group ids, but the layout has %zu groups\n",
                distinct, layout_total);
        return PEERS_EXIT_FAIL;
    }
    fflush(stdout);
    return 0;

err_recv:
    fprintf(stderr, "cohort_peers: rank 0: receiving the report of a rank failed\n");
    free(text);
    free(all_ids);
    return PEERS_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    peers_opts_t o;
    cohort_context_t *ctx = NULL;
    cohort_layout_t *layout = NULL;
    cohort_layout_spec_t *spec = NULL;
    cohort_stats_t before, after;
    peers_snap_t snap;
    peers_text_t text = {0};
    char err[256], spec_full[160];
    cohort_status_t st;
    int rc, me;

    rc = peers_parse(argc, argv, &o);
    if (rc >= 0) {
        return rc;
    }
    st = cohort_init(&ctx);
    if (st != COHORT_OK) {
        fprintf(stderr, "cohort_peers: cohort_init failed: %s\n", cohort_strerror(st));
        return PEERS_EXIT_FAIL;
    }
    me = cohort_world_rank(ctx);
    /* Every rank parses the same spec against the same world, so all agree to stop. */
    if (cohort_layout_spec_parse(o.spec, cohort_world_size(ctx), &spec, err, sizeof(err)) !=
        COHORT_OK) {
        if (me == 0) {
            fprintf(stderr, "cohort_peers: bad --layout '%s' for a world of %d: %s\n", o.spec,
                    cohort_world_size(ctx), err);
        }
        cohort_finalize(ctx);
        return PEERS_EXIT_USAGE;
    }
    cohort_tools_layout_text(spec, spec_full, sizeof(spec_full));

    memset(&snap, 0, sizeof(snap));
    rc = PEERS_EXIT_FAIL;
    if (cohort_stats(ctx, &before) != COHORT_OK) {
        goto out;
    }
    st = cohort_layout_create(ctx, o.spec, &layout);
    if (st != COHORT_OK || cohort_stats(ctx, &after) != COHORT_OK) {
        fprintf(stderr, "cohort_peers: rank %d: cohort_layout_create failed: %s\n", me,
                cohort_strerror(st));
        goto out;
    }
    snap.create_msgs = after.messages_sent - before.messages_sent;
    snap.create_eps = after.endpoints - before.endpoints;
    for (int k = 0; k < cohort_layout_spec_kind_count(spec) && snap.ngroups < PEERS_MAX_GROUPS;
         k++) {
        cohort_group_t *g = cohort_layout_group(layout, cohort_layout_spec_kind_name(spec, k));
        if (g != NULL) {
            snap.kinds[snap.ngroups] = cohort_layout_spec_kind_name(spec, k);
            snap.first_us[snap.ngroups] = -1.0;
            snap.groups[snap.ngroups++] = g;
        }
    }
    /* --kind: made on request, member-only like the others; every rank asks in one order */
    for (int e = 0; e < o.nextra; e++) {
        cohort_group_t *g;
        int alias = 0;

        if (cohort_layout_ngroups(spec, o.extra[e]) == 0) {
            if (me == 0) {
                fprintf(stderr, "cohort_peers: --kind '%s' is no kind of this layout\n",
                        o.extra[e]);
            }
            rc = PEERS_EXIT_USAGE;
            goto out;
        }
        g = cohort_layout_group(layout, o.extra[e]);
        for (int k = 0; k < snap.ngroups; k++) {
            alias |= g != NULL && snap.groups[k] == g;
        }
        if (alias) {
            continue; /* a spelling of a built kind: the same group */
        }
        snap.extra_groups += cohort_layout_ngroups(spec, o.extra[e]);
        if (g != NULL && snap.ngroups < PEERS_MAX_GROUPS) {
            snap.kinds[snap.ngroups] = o.extra[e];
            snap.first_us[snap.ngroups] = -1.0;
            snap.groups[snap.ngroups++] = g;
        }
    }
    if (o.traffic && (rc = peers_traffic(ctx, &snap)) != 0) {
        goto out;
    }
    if ((rc = peers_snapshot(ctx, &snap)) != 0) {
        goto out;
    }
    if (o.json) {
        peers_format_json(me, &snap, &text);
    } else {
        peers_format_table(me, &snap, &text);
    }
    if (text.failed) {
        fprintf(stderr, "cohort_peers: rank %d: out of memory formatting its report\n", me);
        rc = PEERS_EXIT_FAIL;
        goto out;
    }
    rc = peers_gather(ctx, &o, spec_full, spec, &snap, &text);

out:
    free(text.buf);
    free(snap.peers);
    cohort_layout_free(layout);
    cohort_layout_spec_free(spec);
    cohort_finalize(ctx);
    return rc;
}
