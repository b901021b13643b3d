#include <poll.h>
#include <sched.h>
#include <time.h>
#include "core/comm.h"
#include "core/am.h"
#include "core/endpoint.h"
#include "core/guard.h"
#include "core/notify.h"
#include "core/progress.h"
#include "core/request.h"

int cohort_progress(cohort_context_t *ctx)
{
    int n;

    if (ctx->in_progress) {
        return 0;
    }
    /* Between two passes of a wait: a call of another thread that asked for the context comes
     * in now (core/guard.h), and this wait takes it back after. */
    cohort_guard_pass(ctx);
    ctx->in_progress = 1;
    n = (int)ucp_worker_progress(ctx->worker);
    if (!cohort_list_empty(&ctx->resets)) {
        n += cohort_peer_apply_resets(ctx);
    }
    if (!cohort_list_empty(&ctx->looking_up)) {
        n += cohort_peer_progress(ctx);
    }
    if (ctx->suspects > 0) {
        n += cohort_peer_suspects_check(ctx);
    }
    if (!cohort_list_empty(&ctx->preparing)) {
        n += cohort_comm_progress(ctx);
    }
    n += cohort_notify_progress(ctx);
    /* the protocols' own queues, then the staging copies that are over (core/proto_ops.h) */
    n += ctx->proto_ops->progress(ctx);
    if (!cohort_list_empty(&ctx->to_close)) {
        n += cohort_peer_close_failed(ctx);
    }
    /* Only what a completion woke; a request progressed here may wake itself again (a send
     * that completed at once), and is then taken again in this pass. */
    while (!cohort_list_empty(&ctx->ready)) {
        cohort_request_t *req = cohort_container_of(ctx->ready.next, cohort_request_t, ready_link);
        cohort_list_del(&req->ready_link);
        req->queued = 0;
        cohort_request_progress(req);
        n++;
    }
    /* Counted only when one finished: a poll that found nothing is no progress, so a wait
     * still yields to the ranks it waits for. */
    if (!cohort_list_empty(&ctx->polling)) {
        n += cohort_request_poll_all(ctx);
    }
    ctx->in_progress = 0;
    return n;
}

/* A yielding wait that has seen nothing for this long sleeps in short naps instead: ranks that
 * only yield stay runnable and starve whoever they wait for when cores are oversubscribed,
 * the PMIx server answering address lookups among them. A nap costs ~60 us, small next to a
 * wait that has already lasted this long. */
#define COHORT_YIELD_NAP_AFTER_S 0.001
/* Naps grow with the wait, each at most this share of the time waited so far (so a wake-up
 * comes at most 1% late), from 10 us up to 1 ms: a rank that waits seconds (on a slow peer, a
 * timeout, a dead rank's detection) wakes 1,000 times a second instead of ~16,000, each wake a
 * system call and a UCX poll that the ranks doing the work, on the same cores, lose. */
#define COHORT_YIELD_NAP_SHARE 0.01
#define COHORT_YIELD_NAP_MIN_S 10e-6
#define COHORT_YIELD_NAP_MAX_S 1e-3

void cohort_progress_idle(cohort_context_t *ctx, double idle_s, double max_s)
{
    struct timespec nap = {0, 0};
    struct pollfd pfd;
    ucs_status_t ucs;
    double nap_s;
    int held;

    switch (ctx->cfg.progress) {
    case COHORT_PROGRESS_SPIN:
        break;
    case COHORT_PROGRESS_YIELD:
        /* An address lookup in flight: sleep until PMIx answers it (endpoint.c), instead of
         * yielding the core to a neighbour that may keep it for a whole slice. Not while a copy
         * to or from the device runs, which wakes nothing. */
        if (cohort_list_empty(&ctx->copying) && cohort_peer_lookup_nap(ctx, max_s)) {
            break;
        }
        /* Oversubscribed ranks share cores: let the peer we wait for run. */
        if (idle_s < COHORT_YIELD_NAP_AFTER_S) {
            sched_yield();
            break;
        }
        /* Another thread's call may come in and progress while this one sleeps (guard.h). */
        held = cohort_guard_suspend(ctx);
        nap_s = idle_s * COHORT_YIELD_NAP_SHARE;
        nap_s = nap_s < COHORT_YIELD_NAP_MIN_S   ? COHORT_YIELD_NAP_MIN_S
                : nap_s > COHORT_YIELD_NAP_MAX_S ? COHORT_YIELD_NAP_MAX_S
                                                 : nap_s;
        if (max_s > 0 && nap_s > max_s) {
            nap_s = max_s; /* not past the caller's deadline */
        }
        nap.tv_nsec = (long)(nap_s * 1e9);
        nanosleep(&nap, NULL);
        cohort_guard_resume(ctx, held);
        break;
    case COHORT_PROGRESS_BLOCK:
        /* A request waiting on shared memory, or a transfer on a copy to or from the device,
         * has no event to sleep on: yield, as above. */
        if (!cohort_list_empty(&ctx->polling) || !cohort_list_empty(&ctx->copying)) {
            sched_yield();
            break;
        }
        /* Lookups and first-use steps are answered by PMIx's thread, not through the worker's
         * event fd: poll them at least every millisecond while any is in flight. */
        ucs = ucp_worker_arm(ctx->worker);
        if (ucs == UCS_OK) {
            int ms = max_s < 0.1 ? (int)(max_s * 1000) + 1 : 100;
            if (!cohort_list_empty(&ctx->looking_up) || !cohort_list_empty(&ctx->preparing)) {
                ms = 1;
            }
            /* With another thread inside a call on the context, it is let go for the sleep:
             * that thread's progress may take the event meant to wake this one, so sleep
             * short. (A thread that only used the context before, as a program that made it on
             * one thread and calls it from another, costs nothing here.) */
            if (ctx->guard_inside > 1) {
                ms = 1;
            }
            pfd.fd = ctx->event_fd;
            pfd.events = POLLIN;
            pfd.revents = 0;
            held = cohort_guard_suspend(ctx);
            poll(&pfd, 1, ms);
            cohort_guard_resume(ctx, held);
        }
        break;
    }
}
