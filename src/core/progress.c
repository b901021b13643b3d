#include <poll.h>
#include <sched.h>
#include <time.h>
#include "coll/coll.h"
#include "core/am.h"
#include "core/progress.h"
#include "core/request.h"

void cohort_progress_activate(cohort_request_t *req)
{
    req->active = 1;
    cohort_list_push(&req->ctx->active, &req->link);
}

int cohort_progress(cohort_context_t *ctx)
{
    cohort_list_t *pos, *tmp;
    int n;

    if (ctx->in_progress) {
        return 0;
    }
    ctx->in_progress = 1;
    n = (int)ucp_worker_progress(ctx->worker);
    n += cohort_am_start_rndv(ctx);
    cohort_list_for_each(pos, tmp, &ctx->active)
    {
        cohort_request_t *req = cohort_container_of(pos, cohort_request_t, link);
        if (cohort_coll_progress(req)) {
            n++;
        }
    }
    ctx->in_progress = 0;
    return n;
}

/* A yielding wait that has seen nothing for this long sleeps in short naps instead: ranks that
 * only yield stay runnable and starve whoever they wait for when cores are oversubscribed,
 * the PMIx server answering address lookups among them. A nap costs ~60 us, small next to a
 * wait that has already lasted this long. */
#define COHORT_YIELD_NAP_AFTER_S 0.001

void cohort_progress_idle(cohort_context_t *ctx, double idle_s, double max_s)
{
    struct timespec nap = {0, 10000};

    struct pollfd pfd;
    ucs_status_t ucs;

    switch (ctx->cfg.progress) {
    case COHORT_PROGRESS_SPIN:
        break;
    case COHORT_PROGRESS_YIELD:
        /* Oversubscribed ranks share cores: let the peer we wait for run. */
        if (idle_s < COHORT_YIELD_NAP_AFTER_S) {
            sched_yield();
        } else {
            nanosleep(&nap, NULL);
        }
        break;
    case COHORT_PROGRESS_BLOCK:
        ucs = ucp_worker_arm(ctx->worker);
        if (ucs == UCS_OK) {
            pfd.fd = ctx->event_fd;
            pfd.events = POLLIN;
            pfd.revents = 0;
            poll(&pfd, 1, max_s < 0.1 ? (int)(max_s * 1000) + 1 : 100);
        }
        break;
    }
}
