#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"

int cohort_ring_pipe_sent(const cohort_ring_pipe_t *p, size_t u)
{
    if (p->next_send <= u) {
        return 0;
    }
    return p->next_send > u + p->window || cohort_coll_xfer_idle(&p->x[u % p->window]);
}

cohort_status_t cohort_ring_pipe_progress(cohort_request_t *req, cohort_ring_pipe_t *p,
                                          const cohort_ring_pipe_ops_t *ops)
{
    cohort_status_t status;
    int progressed;

    do {
        status = cohort_coll_xfers_error(p->x, 2 * (int)p->window);
        if (status != COHORT_OK) {
            return status;
        }
        progressed = 0;
        while (p->next_recv < p->nunits && p->next_recv < p->next_proc + p->window) {
            status = ops->post_recv(req, p->next_recv, &p->x[p->window + p->next_recv % p->window]);
            if (status != COHORT_OK) {
                return status;
            }
            p->next_recv++;
            progressed = 1;
        }
        while (p->next_send < p->nunits && cohort_coll_xfer_idle(&p->x[p->next_send % p->window]) &&
               (p->next_send < p->nseg || p->next_send - p->nseg < p->next_proc)) {
            status = ops->post_send(req, p->next_send, &p->x[p->next_send % p->window]);
            if (status != COHORT_OK) {
                return status;
            }
            p->next_send++;
            progressed = 1;
        }
        while (p->next_proc < p->next_recv) {
            cohort_xfer_t *x = &p->x[p->window + p->next_proc % p->window];
            if (!x->done || (ops->can_process != NULL && !ops->can_process(req, p->next_proc))) {
                break;
            }
            if (x->status != COHORT_OK) {
                return x->status;
            }
            ops->process(req, p->next_proc);
            p->next_proc++;
            progressed = 1;
        }
    } while (progressed);
    if (p->next_proc < p->nunits || p->next_send < p->nunits) {
        return COHORT_INPROGRESS;
    }
    return cohort_coll_xfers_wait(p->x, 2 * (int)p->window);
}
