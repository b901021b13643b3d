#include "coll/coll_reduce.h"
#include "coll/pattern/ring_pipeline.h"

/* The slot of unit u (of this task): units are numbered on from the task before's when it runs
 * alongside, so the two never take one slot for two transfers. */
static cohort_xfer_t *pipe_slot(const cohort_ring_pipe_t *p, size_t u, int recv)
{
    return &p->x[(recv ? p->window : 0) + (p->base + u) % p->window];
}

/* Whether unit g of the one pipeline is processed: the task before's units by its mark (done:
 * processed, and sent on), which has passed them all once it is done. */
static int pipe_processed(const cohort_ring_pipe_t *p, size_t g)
{
    if (g >= p->base) {
        return p->next_proc > g - p->base;
    }
    return p->before_mark == NULL || *p->before_mark > g;
}

int cohort_ring_pipe_sent(const cohort_ring_pipe_t *p, size_t u)
{
    if (p->next_send <= u) {
        return 0;
    }
    return p->next_send > u + p->window || cohort_coll_xfer_idle(pipe_slot(p, u, 0));
}

size_t cohort_ring_pipe_mark(const cohort_ring_pipe_t *p)
{
    return p->next_proc < p->next_send ? p->next_proc : p->next_send;
}

/* Whether send u may be posted: its slot idle; what it forwards (unit u - nseg, one step
 * earlier) processed; and, alongside the task before, every send of that task that took its
 * slot before it posted (a task's own sends go in order). */
static int pipe_may_send(const cohort_ring_pipe_t *p, size_t u)
{
    size_t g = p->base + u;

    if (!cohort_coll_xfer_idle(pipe_slot(p, u, 0))) {
        return 0;
    }
    if (g >= p->nseg && !pipe_processed(p, g - p->nseg)) {
        return 0;
    }
    return g < p->window || g - p->window >= p->base || pipe_processed(p, g - p->window);
}

cohort_status_t cohort_ring_pipe_progress(cohort_request_t *req, cohort_ring_pipe_t *p,
                                          const cohort_ring_pipe_ops_t *ops, void *self)
{
    cohort_status_t status;
    int progressed;

    do {
        status = cohort_coll_xfers_error(p->x, 2 * (int)p->window);
        if (status != COHORT_OK) {
            return status;
        }
        progressed = 0;
        /* A receive goes into its slot once the unit a window earlier, which had it, is
         * processed. */
        while (p->next_recv < p->nunits &&
               (p->base + p->next_recv < p->window ||
                pipe_processed(p, p->base + p->next_recv - p->window))) {
            status = ops->post_recv(req, self, p->next_recv, pipe_slot(p, p->next_recv, 1));
            if (status != COHORT_OK) {
                return status;
            }
            p->next_recv++;
            progressed = 1;
        }
        while (p->next_send < p->nunits && pipe_may_send(p, p->next_send)) {
            status = ops->post_send(req, self, p->next_send, pipe_slot(p, p->next_send, 0));
            if (status != COHORT_OK) {
                return status;
            }
            p->next_send++;
            progressed = 1;
        }
        while (p->next_proc < p->next_recv) {
            cohort_xfer_t *x = pipe_slot(p, p->next_proc, 1);
            if (!x->done ||
                (ops->can_process != NULL && !ops->can_process(req, self, p->next_proc))) {
                break;
            }
            if (x->status != COHORT_OK) {
                return x->status;
            }
            if (ops->process != NULL) {
                ops->process(req, self, p->next_proc);
            }
            p->next_proc++;
            progressed = 1;
        }
    } while (progressed);
    if (p->next_proc < p->nunits || p->next_send < p->nunits) {
        return COHORT_INPROGRESS;
    }
    if (p->hand_over) {
        return COHORT_OK;
    }
    return cohort_coll_xfers_wait(p->x, 2 * (int)p->window);
}

void cohort_ring_shape_start(cohort_request_t *req, cohort_ring_shape_t *sh, cohort_task_t *t)
{
    const cohort_coll_args_t *a = &cohort_coll_base(req)->args;
    int n = req->comm->size;
    size_t big = cohort_coll_block_len(sh->total, n, 0); /* block 0 is the largest */

    if (sh->seg_bytes == 0) {
        sh->nseg = 1;
    } else {
        sh->nseg = cohort_coll_nsegs(big, cohort_coll_seg_elems(sh->seg_bytes, a->esize));
    }
    /* The same number of segments, cut evenly: no runt segment at a block's end. */
    sh->seg_elems = (big + sh->nseg - 1) / sh->nseg;
    if (sh->seg_elems == 0) {
        sh->seg_elems = 1;
    }
    sh->pipe = (cohort_ring_pipe_t){0};
    sh->pipe.nseg = sh->nseg;
    sh->pipe.nunits = (size_t)(n - 1) * sh->nseg;
    sh->pipe.window = (size_t)sh->window;
    sh->pipe.x = sh->x;
    sh->pipe.hand_over = sh->hand_over;
    if (t->alongside) {
        sh->pipe.base = (size_t)t->before->nsteps;
        sh->pipe.before_mark = &t->before->mark;
    }
    t->nsteps = (int)sh->pipe.nunits;
}

void cohort_ring_shape_unit(const cohort_request_t *req, const cohort_ring_shape_t *sh, size_t u,
                            int back, size_t *boff, size_t *soff, size_t *len)
{
    int n = req->comm->size;
    size_t t = u / sh->nseg, j = u % sh->nseg;
    int b = (int)(((size_t)req->comm->rank + (size_t)sh->own + 2 * (size_t)n - t % (size_t)n -
                   (size_t)back) %
                  (size_t)n);
    size_t blen = cohort_coll_block_len(sh->total, n, b);

    *boff = cohort_coll_block_off(sh->total, n, b);
    *soff = cohort_coll_seg_off(blen, sh->seg_elems, j);
    *len = cohort_coll_seg_len(blen, sh->seg_elems, j);
}
