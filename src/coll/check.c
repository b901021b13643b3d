/*
 * COHORT_CHECK=1: before a collective moves any data its members agree on what it is. Each
 * contributes (collective, dtype, op, count, root); a dissemination exchange (ceil(log2 n)
 * rounds to rank + 2^k, any n) spreads the lowest and highest value of each field, so every
 * member ends with the same two vectors. Where they differ, every member returns
 * COHORT_ERR_MISMATCH naming the field, and no member runs the algorithm: the group stays in
 * step for the next collective. Checking per message instead (the fingerprint in each header)
 * tells only the members that happen to receive an odd message; the others would return
 * success or hang.
 *
 * The same exchange carries the CUDA IPC vote (COHORT_CUDA_IPC=auto, cuda_ipc.c): one more
 * field, 1 where every buffer of the member's call is on the device; its lowest value says
 * whether all are. Under COHORT_CHECK=1 both ride in one agreement.
 *
 * A group's first collective always has an agreement, whatever the settings, and it carries the
 * settings every member must share (settings.c): a member whose COHORT_CHECK or COHORT_CUDA_IPC
 * differs would otherwise run a round the others never join.
 */
#include <stdio.h>
#include <string.h>
#include "coll/coll.h"
#include "core/am.h"
#include "core/comm.h"
#include "base/dtype.h"
#include "core/endpoint.h"
#include "core/log.h"

static const char *const cohort_check_fields[COHORT_CHECK_FIELDS] = {"collective", "dtype", "op",
                                                                     "count", "root"};

static cohort_status_t cohort_check_post(cohort_request_t *req, cohort_coll_check_t *c)
{
    const cohort_comm_t *g = req->comm;
    int n = g->size, me = g->rank;
    cohort_status_t status;

    /* Negative steps: never those of an algorithm. */
    status = cohort_coll_recv(req, &c->x[1], (me - c->dist + n) % n, -1 - c->round, &c->in,
                              sizeof(c->in));
    if (status == COHORT_OK) {
        c->out = c->acc;
        status = cohort_coll_send(req, &c->x[0], (me + c->dist) % n, -1 - c->round, &c->out,
                                  sizeof(c->out));
    }
    return status;
}

size_t cohort_coll_check_size(void)
{
    return sizeof(cohort_coll_check_t);
}

static cohort_status_t cohort_check_verdict(cohort_request_t *req, cohort_coll_check_t *c);

/* The agreement's state as its first round finds it: this rank's values in acc and mine. */
static void cohort_check_init(cohort_request_t *req, cohort_coll_check_t *c)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    const cohort_coll_args_t *a = &b->args;
    int has_op = cohort_coll_has_op(a->coll), has_root = cohort_coll_has_root(a->coll);
    int64_t mine[COHORT_AGREE_FIELDS] = {a->coll,
                                         a->coll == COHORT_COLL_BARRIER ? -1 : (int64_t)a->dt,
                                         has_op ? (int64_t)a->op : -1,
                                         a->coll == COHORT_COLL_BARRIER ? 0 : (int64_t)a->count,
                                         has_root ? a->root : -1,
                                         b->vote_algo != NULL && cohort_coll_stage_all_device(req)};

    memset(c, 0, sizeof(*c));
    c->settings = cohort_coll_carries_settings(b->seq);
    if (c->settings) {
        cohort_coll_settings(req->ctx, req->comm->node_local > 0, mine + COHORT_CHECK_SETTINGS);
    }
    memcpy(c->acc.lo, mine, sizeof(mine));
    memcpy(c->acc.hi, mine, sizeof(mine));
    memcpy(c->mine, mine, sizeof(mine));
    c->active = 1;
    c->dist = 1;
    c->fingerprint = b->fingerprint;
}

cohort_status_t cohort_coll_check_start(cohort_request_t *req, cohort_coll_check_t *c)
{
    cohort_coll_base_t *b = cohort_coll_base(req);

    cohort_check_init(req, c);
    /* The agreement's messages carry no fingerprint: they must match whatever was called. */
    b->fingerprint = 0;
    b->xfers = c->x;
    b->nxfers = 2;
    if (req->comm->size == 1) {
        return COHORT_OK;
    }
    return cohort_check_post(req, c);
}

/* The algorithm runs on the segment (ident: its messages go with fingerprint 0, as the
 * agreement's do) and keeps its own transfers in b->xfers. */
cohort_status_t cohort_coll_check_arm(cohort_request_t *req, cohort_coll_check_t *c)
{
    int n = req->comm->size, me = req->comm->rank;

    cohort_check_init(req, c);
    return cohort_coll_recv(req, &c->x[1], (me - 1 + n) % n, -1, &c->in, sizeof(c->in));
}

int cohort_coll_check_tripped(const cohort_coll_check_t *c)
{
    return c->x[1].req != NULL && c->x[1].done;
}

cohort_status_t cohort_coll_check_join(cohort_request_t *req, cohort_coll_check_t *c)
{
    int n = req->comm->size, me = req->comm->rank;

    c->out = c->acc;
    return cohort_coll_send(req, &c->x[0], (me + 1) % n, -1, &c->out, sizeof(c->out));
}

cohort_status_t cohort_coll_check_settle(cohort_request_t *req, cohort_coll_check_t *c,
                                         const int64_t *vals)
{
    if (c->x[1].req != NULL && !c->x[1].done) {
        cohort_xfer_cancel(&c->x[1], COHORT_OK); /* nobody took the message path */
    }
    for (int k = 0; k < req->comm->size; k++) {
        for (int f = 0; f < COHORT_SETTINGS_FIELDS; f++) {
            int64_t v = vals[(size_t)k * COHORT_SETTINGS_FIELDS + f];
            int i = COHORT_CHECK_SETTINGS + f;
            c->acc.lo[i] = v < c->acc.lo[i] ? v : c->acc.lo[i];
            c->acc.hi[i] = v > c->acc.hi[i] ? v : c->acc.hi[i];
        }
    }
    c->active = 0;
    return cohort_check_verdict(req, c);
}

/* A field's value as people read it: names for the collective, the dtype and the op. */
static const char *cohort_check_value(int f, int64_t v, char *buf, size_t len)
{
    if (v < 0) {
        return "none";
    }
    if (f == 0) {
        return v < COHORT_COLL_LAST ? cohort_coll_names[v] : "unknown";
    }
    if (f == 1) {
        return cohort_dtype_name((cohort_dtype_t)v);
    }
    if (f == 2) {
        return cohort_op_name((cohort_op_t)v);
    }
    snprintf(buf, len, "%lld", (long long)v);
    return buf;
}

/* Members whose settings differ take different paths for every later call too: the group is
 * revoked with MISMATCH, which each member decides alone from the same two vectors. */
static cohort_status_t cohort_check_settings(cohort_request_t *req, const cohort_coll_check_t *c)
{
    cohort_comm_t *g = req->comm;
    int differ = 0;

    for (int f = 0; f < COHORT_SETTINGS_FIELDS; f++) {
        char here[512];
        if (c->acc.lo[COHORT_CHECK_SETTINGS + f] == c->acc.hi[COHORT_CHECK_SETTINGS + f]) {
            continue;
        }
        cohort_coll_settings_describe(req->ctx, f, here, sizeof(here));
        cohort_error(req->ctx,
                     "group '%s' 0x%016llx: its members run with different %s (here %s); it "
                     "must be alike on every rank, or the same call takes different paths: "
                     "COHORT_ERR_MISMATCH on every member, for this collective and every later "
                     "one on the group",
                     g->label, (unsigned long long)g->id, cohort_coll_settings_name(f), here);
        differ = 1;
    }
    if (!differ) {
        return COHORT_OK;
    }
    cohort_comm_revoke_local(g, COHORT_ERR_MISMATCH, "its members' settings differ");
    return COHORT_ERR_MISMATCH;
}

static cohort_status_t cohort_check_verdict(cohort_request_t *req, cohort_coll_check_t *c)
{
    cohort_coll_base_t *b = cohort_coll_base(req);
    const cohort_comm_t *g = req->comm;

    if (c->settings && cohort_check_settings(req, c) != COHORT_OK) {
        return COHORT_ERR_MISMATCH;
    }
    for (int f = 0; f < COHORT_CHECK_FIELDS && req->ctx->cfg.check; f++) {
        if (c->acc.lo[f] != c->acc.hi[f]) {
            char lo[24], hi[24], mine[24];
            cohort_error(req->ctx,
                         "group '%s' 0x%016llx, collective #%u: members called it with different "
                         "%s (%s on some, %s on others; %s here, in cohort_%s): "
                         "COHORT_ERR_MISMATCH on every member",
                         g->label, (unsigned long long)g->id, b->seq, cohort_check_fields[f],
                         cohort_check_value(f, c->acc.lo[f], lo, sizeof(lo)),
                         cohort_check_value(f, c->acc.hi[f], hi, sizeof(hi)),
                         cohort_check_value(f, c->mine[f], mine, sizeof(mine)),
                         cohort_coll_names[b->args.coll]);
            return COHORT_ERR_MISMATCH;
        }
    }
    b->fingerprint = c->fingerprint;
    return COHORT_OK;
}

cohort_status_t cohort_coll_check_progress(cohort_request_t *req, cohort_coll_check_t *c)
{
    int n = req->comm->size;
    cohort_status_t status;

    while (c->dist < n) {
        status = cohort_coll_xfers_status(c->x, 2);
        if (status != COHORT_OK) {
            return status;
        }
        for (int f = 0; f < COHORT_AGREE_FIELDS; f++) {
            c->acc.lo[f] = c->in.lo[f] < c->acc.lo[f] ? c->in.lo[f] : c->acc.lo[f];
            c->acc.hi[f] = c->in.hi[f] > c->acc.hi[f] ? c->in.hi[f] : c->acc.hi[f];
        }
        c->round++;
        c->dist *= 2;
        if (c->dist < n) {
            status = cohort_check_post(req, c);
            if (status != COHORT_OK) {
                return status;
            }
        }
    }
    c->active = 0;
    return cohort_check_verdict(req, c);
}

void cohort_coll_ident(const cohort_request_t *req, cohort_coll_ident_t *id)
{
    const cohort_coll_base_t *b = (const cohort_coll_base_t *)req->state;
    const cohort_coll_args_t *a = &b->args;
    uint64_t one = (uint64_t)a->count * a->esize, all = one * (uint64_t)req->comm->size;

    id->in_len =
        a->coll == COHORT_COLL_REDUCE_SCATTER || a->coll == COHORT_COLL_ALLTOALL ? all : one;
    id->out_len = a->coll == COHORT_COLL_ALLGATHER || a->coll == COHORT_COLL_ALLTOALL ? all : one;
    id->seq = b->seq;
    id->fingerprint = b->fingerprint;
}

int cohort_coll_ident_same(cohort_request_t *req, const cohort_coll_ident_t *mine,
                           const cohort_coll_ident_t *its, int k)
{
    if (its->seq == mine->seq && its->fingerprint == mine->fingerprint &&
        its->in_len == mine->in_len && its->out_len == mine->out_len) {
        return 1;
    }
    cohort_error(req->ctx,
                 "%s %s: group rank %d called collective #%u (fingerprint 0x%08x) with %llu/%llu "
                 "bytes in/out, this rank #%u (0x%08x) with %llu/%llu: a different count, root, "
                 "type or operation; COHORT_ERR_MISMATCH on every member, nothing copied",
                 req->comm->label, cohort_coll_names[cohort_coll_base(req)->args.coll], k, its->seq,
                 its->fingerprint, (unsigned long long)its->in_len,
                 (unsigned long long)its->out_len, mine->seq, mine->fingerprint,
                 (unsigned long long)mine->in_len, (unsigned long long)mine->out_len);
    return 0;
}

int cohort_coll_ident_check(cohort_request_t *req, const cohort_coll_ident_t *mine,
                            const void *descs, size_t stride, size_t off)
{
    for (int k = 0; k < req->comm->size; k++) {
        const cohort_coll_ident_t *its =
            (const cohort_coll_ident_t *)((const char *)descs + (size_t)k * stride + off);
        if (k != req->comm->rank && !cohort_coll_ident_same(req, mine, its, k)) {
            return 0;
        }
    }
    return 1;
}

void cohort_coll_pids_know(cohort_request_t *req)
{
    for (int k = 0; k < req->comm->size; k++) {
        cohort_peer_t *peer = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, k));
        if (k != req->comm->rank && peer != NULL) {
            cohort_peer_know(peer);
        }
    }
}

cohort_status_t cohort_coll_pid_check(cohort_request_t *req, int k, int32_t pid)
{
    cohort_peer_t *peer = cohort_peer_get(req->ctx, cohort_comm_world_rank(req->comm, k));

    return peer == NULL ? COHORT_ERR_NO_MEMORY : cohort_peer_pid_check(peer, pid);
}

cohort_status_t cohort_coll_pids_check(cohort_request_t *req, const void *descs, size_t stride,
                                       size_t off)
{
    cohort_status_t status = COHORT_OK;

    for (int k = 0; k < req->comm->size; k++) {
        int world = cohort_comm_world_rank(req->comm, k);
        cohort_status_t st;
        int32_t pid;

        if (k == req->comm->rank) {
            continue;
        }
        memcpy(&pid, (const char *)descs + (size_t)k * stride + off, sizeof(pid));
        st = cohort_coll_pid_check(req, k, pid);
        if (st == COHORT_INPROGRESS) {
            status = st; /* the others' cards are fetched meanwhile */
        } else if (st == COHORT_ERR_MISMATCH) {
            cohort_error(req->ctx,
                         "%s %s: group rank %d's descriptor names process %d, but world rank %d "
                         "published process %d: COHORT_ERR_MISMATCH on every member, no byte "
                         "copied from or to it",
                         req->comm->label, cohort_coll_names[cohort_coll_base(req)->args.coll], k,
                         (int)pid, world, (int)cohort_peer_get(req->ctx, world)->pid);
            return st;
        } else if (st != COHORT_OK) {
            return st;
        }
    }
    return status;
}
