/* run: singleton COHORT_ORPHAN_LIMIT=4096 */
/*
 * Hostile input. Messages are sent straight into a context's UCX worker from an endpoint of
 * the test's own, with cohort's active-message id and headers cohort never writes: a wrong
 * magic, a short header, an unknown kind, non-zero padding, a sender rank outside the world or
 * the group, a revoke with a payload or a bad root. Each is dropped and counted
 * (cohort_stats.messages_rejected), none makes the context wire or look anyone up, and the
 * context keeps working. Messages for a group this rank never creates are kept only up to
 * COHORT_ORPHAN_LIMIT, then dropped and counted (messages_dropped).
 */
#include <string.h>
#include "harness.h"
#include "core/am_header.h"
#include "core/context.h"

static void raw_send(cohort_context_t *ctx, ucp_ep_h ep, const uint8_t *hdr, size_t hlen,
                     const void *data, size_t len)
{
    ucp_request_param_t param;
    void *r;

    memset(&param, 0, sizeof(param));
    r = ucp_am_send_nbx(ep, COHORT_AM_ID, hdr, hlen, data, len, &param);
    CHECK(!UCS_PTR_IS_ERR(r));
    while (r != NULL && ucp_request_check_status(r) == UCS_INPROGRESS) {
        ucp_worker_progress(ctx->worker);
    }
    if (r != NULL) {
        ucp_request_free(r);
    }
    for (int i = 0; i < 100; i++) {
        ucp_worker_progress(ctx->worker); /* the handler runs here */
    }
}

static void encoded(uint8_t *buf, uint8_t kind, uint64_t gid, int src, int wsrc, uint32_t seq)
{
    cohort_am_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.kind = kind;
    h.gid = gid;
    h.src = src;
    h.wsrc = wsrc;
    h.seq = seq;
    h.tag = -1;
    cohort_am_hdr_encode(&h, buf);
}

int main(void)
{
    cohort_context_t *ctx = test_init();
    cohort_group_t *w = cohort_world(ctx);
    uint64_t wid = cohort_group_id(w);
    uint8_t hdr[COHORT_AM_HDR_BYTES + 1], payload[1000];
    cohort_stats_t before, after;
    ucp_ep_params_t params;
    ucp_ep_h ep;
    int expect = 0, peers[4], wired;
    float one = 1, sum = 0;

    CHECK_OK(cohort_barrier(w));
    CHECK_OK(cohort_stats(ctx, &before));
    wired = cohort_wired_peers(ctx, peers, 4);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = ctx->address;
    CHECK(ucp_ep_create(ctx->worker, &params, &ep) == UCS_OK);
    memset(payload, 0x5a, sizeof(payload));

    encoded(hdr, COHORT_MSG_COLL, wid, 0, 0, 0);
    hdr[0] ^= 0xff; /* magic */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, NULL, 0), expect++;
    encoded(hdr, COHORT_MSG_COLL, wid, 0, 0, 0);
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES - 1, NULL, 0), expect++; /* short */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES + 1, NULL, 0), expect++; /* long */
    hdr[1] = 0;                                                         /* kind */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, NULL, 0), expect++;
    encoded(hdr, COHORT_MSG_COLL, wid, 0, 0, 0);
    hdr[3] = 1; /* padding */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, NULL, 0), expect++;
    encoded(hdr, COHORT_MSG_COLL, wid, 0, 7, 0); /* world rank 7 of a world of one */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, payload, 8), expect++;
    encoded(hdr, COHORT_MSG_COLL, wid, 3, 0, 0); /* group rank 3 of a group of one */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, payload, 8), expect++;
    encoded(hdr, COHORT_MSG_REVOKE, wid, 0, 0, 0);
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, payload, 8), expect++; /* a revoke has no data */
    encoded(hdr, COHORT_MSG_REVOKE, wid, 0, 0, 5); /* its tree's root is no member */
    raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, NULL, 0), expect++;

    CHECK_OK(cohort_stats(ctx, &after));
    if (after.messages_rejected - before.messages_rejected != (uint64_t)expect) {
        fprintf(stderr, "hostile: %llu messages rejected, expected %d\n",
                (unsigned long long)(after.messages_rejected - before.messages_rejected), expect);
        exit(1);
    }
    /* Nothing of it was believed: the world is not revoked and still works... */
    CHECK_OK(cohort_allreduce(w, &one, &sum, 1, COHORT_FLOAT32, COHORT_SUM));
    CHECK(sum == 1);
    /* ...and nobody was looked up or wired because of it. */
    CHECK(after.pmix_lookups == before.pmix_lookups);
    CHECK(cohort_wired_peers(ctx, peers, 4) == wired);

    /* Twenty 1000-byte messages for a group never created: about four fit under the limit. */
    for (int i = 0; i < 20; i++) {
        encoded(hdr, COHORT_MSG_COLL, 0x1234567890abcdefULL, 0, 0, (uint32_t)i);
        raw_send(ctx, ep, hdr, COHORT_AM_HDR_BYTES, payload, sizeof(payload));
    }
    CHECK_OK(cohort_stats(ctx, &after));
    CHECK(after.messages_dropped - before.messages_dropped >= 16);
    CHECK(ctx->orphan_bytes <= 4096);
    CHECK_OK(cohort_barrier(w));

    {
        ucp_request_param_t p;
        void *r;
        memset(&p, 0, sizeof(p));
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        r = ucp_ep_close_nbx(ep, &p);
        while (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS) {
            ucp_worker_progress(ctx->worker);
        }
        if (UCS_PTR_IS_PTR(r)) {
            ucp_request_free(r);
        }
    }
    test_finish(ctx, "hostile");
    return 0;
}
