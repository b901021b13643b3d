#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "pmix_plugins/common.h"

void cohort_pmix_log(const cohort_pmix_ctx_t *p, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (p != NULL && p->opts.log != NULL) {
        p->opts.log(p->opts.log_arg, level, fmt, ap);
    } else if (level == 0) {
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}

cohort_status_t cohort_pmix_status(pmix_status_t rc)
{
    switch (rc) {
    case PMIX_SUCCESS:
        return COHORT_OK;
    case PMIX_ERR_TIMEOUT:
        return COHORT_ERR_TIMEOUT;
    case PMIX_ERR_NOT_SUPPORTED:
        return COHORT_ERR_UNSUPPORTED;
    case PMIX_ERR_NOMEM:
        return COHORT_ERR_NO_MEMORY;
    case PMIX_ERR_BAD_PARAM:
        return COHORT_ERR_INVALID_ARG;
    default:
        return COHORT_ERR_PMIX;
    }
}

void cohort_pmix_info_timeout(pmix_info_t *info, const cohort_pmix_ctx_t *p)
{
    int secs = (int)(p->opts.timeout_s + 0.999);

    PMIX_INFO_LOAD(info, PMIX_TIMEOUT, &secs, PMIX_INT);
}

static void cohort_pmix_local_peers(cohort_pmix_ctx_t *p);
static void cohort_pmix_lookups_orphan(cohort_pmix_ctx_t *p);

cohort_status_t cohort_pmix_connect(const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                                    cohort_pmix_job_t *job)
{
    cohort_pmix_ctx_t *p;
    pmix_value_t *val = NULL;
    pmix_proc_t wildcard;
    pmix_status_t rc;

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    p->opts = *opts;
    p->nlocal = -1;
    p->wake_fd = -1;
    /* The first context keeps the plain key, so peers on older builds still find it. */
    if (opts->instance == 0) {
        snprintf(p->key, sizeof(p->key), "%s", COHORT_PMIX_ADDR_KEY);
    } else {
        snprintf(p->key, sizeof(p->key), "%s.%d", COHORT_PMIX_ADDR_KEY, opts->instance);
    }

    /* A launcher leaves its namespace in the environment; without one there is no server to
     * reach and we are a singleton. Asking PMIx_Init anyway would also tell us so, but only
     * after it has searched for rendezvous files. */
    if (getenv("PMIX_NAMESPACE") == NULL && getenv("PMIX_SERVER_URI41") == NULL &&
        getenv("PMIX_SERVER_URI4") == NULL && getenv("PMIX_SERVER_URI3") == NULL &&
        getenv("PMIX_SERVER_URI21") == NULL && getenv("PMIX_SERVER_URI2") == NULL) {
        p->singleton = 1;
    } else {
        rc = PMIx_Init(&p->me, NULL, 0);
        if (rc == PMIX_ERR_UNREACH) {
            cohort_pmix_log(p, 2, "no PMIx server reachable: running as a singleton");
            p->singleton = 1;
        } else if (rc != PMIX_SUCCESS) {
            cohort_pmix_log(p, 0, "PMIx_Init failed: %s", PMIx_Error_string(rc));
            free(p);
            return cohort_pmix_status(rc);
        }
    }

    if (p->singleton) {
        job->rank = 0;
        job->size = 1;
        job->singleton = 1;
        *pctx = p;
        return COHORT_OK;
    }

    PMIX_LOAD_PROCID(&wildcard, p->me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        cohort_pmix_log(p, 0, "PMIx_Get(PMIX_JOB_SIZE) failed: %s", PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        free(p);
        return COHORT_ERR_PMIX;
    }
    job->size = (int)val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    /* Without it a wait polls its lookups as before: nothing is lost but the early wake. */
    p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    /* Which ranks share this node, read here where blocking is expected: the first collective
     * asks it (shared segment or messages), and this blocking PMIx_Get, answered through PMIx's
     * thread, took 0.1-3.5 ms inside that call (issue 37, 16 ranks on 2 cores). */
    cohort_pmix_local_peers(p);
    job->rank = (int)p->me.rank;
    job->singleton = 0;
    *pctx = p;
    return COHORT_OK;
}

cohort_status_t cohort_pmix_disconnect(cohort_pmix_ctx_t *p)
{
    if (p == NULL) {
        return COHORT_OK;
    }
    if (!p->singleton) {
        PMIx_Finalize(NULL, 0);
    }
    cohort_pmix_lookups_orphan(p);
    free(p->local);
    free(p);
    return COHORT_OK;
}

cohort_status_t cohort_pmix_put_commit(cohort_pmix_ctx_t *p, const void *addr, size_t len)
{
    pmix_value_t val;
    pmix_status_t rc;

    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)addr;
    val.data.bo.size = len;
    /* PMIX_GLOBAL: the address must reach peers on other nodes through their servers. */
    rc = PMIx_Put(PMIX_GLOBAL, p->key, &val);
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(p, 0, "PMIx_Put(%s) failed: %s", p->key, PMIx_Error_string(rc));
        return cohort_pmix_status(rc);
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(p, 0, "PMIx_Commit failed: %s", PMIx_Error_string(rc));
        return cohort_pmix_status(rc);
    }
    return COHORT_OK;
}

int cohort_pmix_wake_fd(cohort_pmix_ctx_t *p)
{
    return p->wake_fd;
}

double cohort_pmix_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One address lookup in flight: PMIx answers from its own progress thread, the caller polls
 * done from its thread, so the caller's UCX worker keeps answering its peers' wireup meanwhile
 * (a rank asleep in a blocking PMIx_Get would stall every peer wiring to it). */
struct cohort_pmix_lookup {
    cohort_pmix_ctx_t *p; /* NULL once orphaned: its context was disconnected while PMIx held it */
    struct cohort_pmix_lookup *prev, *next; /* in p->asked while PMIx holds it */
    int held;                               /* PMIx holds it: issued, its answer not come */
    pmix_proc_t peer;
    pmix_info_t info;
    int done; /* set by the PMIx thread, last */
    pmix_status_t rc;
    void *data; /* our copy of the address */
    size_t len;
    double start;
    double retry_at; /* NOT-FOUND: when to ask again */
    double backoff;
    double asked;    /* when the last try was issued */
    double answered; /* when PMIx's thread delivered the last answer */
    int tries;
};

/* Guards every context's list of lookups PMIx holds, and their p: a lookup can outlive its
 * context. When the core finalizes with a lookup in flight (a peer still being looked up) the
 * answer may still come afterwards: PMIx_Finalize does not always take back what it was asked,
 * and a process that inits again (a new context) gets the old request's answer on the new
 * connection. The sanitizer pass caught that answer writing into the freed context
 * (tests/mpi/count_mismatch, which makes one context after another). Such a lookup is
 * orphaned at disconnect and freed by its answer, if one ever comes. Static: it must outlive
 * every context. Never held across a call into PMIx, which may answer inside the call. */
static pthread_mutex_t cohort_pmix_lookup_lock = PTHREAD_MUTEX_INITIALIZER;

static void cohort_pmix_lookup_unlink(cohort_pmix_lookup_t *op)
{
    if (!op->held) {
        return;
    }
    if (op->prev != NULL) {
        op->prev->next = op->next;
    } else if (op->p != NULL) {
        op->p->asked = op->next;
    }
    if (op->next != NULL) {
        op->next->prev = op->prev;
    }
    op->prev = op->next = NULL;
    op->held = 0;
}

/* At disconnect: what PMIx still holds is orphaned (its answer frees it, if one comes), and
 * the wake fd closed. An answer being delivered now finishes first, so neither p nor its fd is
 * touched once the lock is let go. */
static void cohort_pmix_lookups_orphan(cohort_pmix_ctx_t *p)
{
    pthread_mutex_lock(&cohort_pmix_lookup_lock);
    for (cohort_pmix_lookup_t *op = p->asked, *next; op != NULL; op = next) {
        next = op->next;
        op->prev = op->next = NULL;
        op->held = 0;
        op->p = NULL;
    }
    p->asked = NULL;
    if (p->wake_fd >= 0) {
        close(p->wake_fd);
        p->wake_fd = -1;
    }
    pthread_mutex_unlock(&cohort_pmix_lookup_lock);
}

static void cohort_pmix_lookup_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    cohort_pmix_lookup_t *op = cbdata;

    pthread_mutex_lock(&cohort_pmix_lookup_lock);
    if (op->p == NULL) {
        /* orphaned: nobody will test it */
        pthread_mutex_unlock(&cohort_pmix_lookup_lock);
        PMIX_INFO_DESTRUCT(&op->info);
        free(op);
        return;
    }
    cohort_pmix_lookup_unlink(op);
    op->rc = status;
    if (status == PMIX_SUCCESS) {
        if (kv == NULL || kv->type != PMIX_BYTE_OBJECT || kv->data.bo.size == 0) {
            op->rc = PMIX_ERR_BAD_PARAM;
        } else if ((op->data = malloc(kv->data.bo.size)) == NULL) {
            op->rc = PMIX_ERR_NOMEM;
        } else {
            memcpy(op->data, kv->data.bo.bytes, kv->data.bo.size);
            op->len = kv->data.bo.size;
        }
    }
    /* kv stays PMIx's: it releases it when we return. When it came tells the core how much
     * of the lookup was the server and how much its own polling (cohort_peer_info). */
    op->answered = cohort_pmix_now();
    /* The wake goes before the answer is published: once done is seen, the core may free op
     * and, at finalize, close the fd (the sanitizer pass caught this thread reading op->p
     * after that: 'misaligned address 0x771'). A wake that comes first costs the waiter one
     * short nap at most. */
    if (op->p->wake_fd >= 0) {
        uint64_t one = 1;
        /* Full only after 2^64 - 2 unread answers; a failed write loses only the early wake. */
        (void)!write(op->p->wake_fd, &one, sizeof(one));
    }
    __atomic_store_n(&op->done, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cohort_pmix_lookup_lock);
}

/* The longest one Get may wait at the server. Under load (a 2-core machine running 8 ranks
 * and other jobs) PMIx 4.2's server now and then keeps a direct-modex request for a local
 * peer's key that peer has already committed, until the request's own timeout (seen: rank 6's
 * Get of rank 7's address answered TIMEOUT after 300 s while rank 7 sat in a collective with
 * it; openpmix#3259 fixed races in how the server resolves such cached requests). A fresh
 * request finds the key, so each try is bounded and the lookup asks again until its own
 * bound. */
#define COHORT_PMIX_TRY_S 5

static pmix_status_t cohort_pmix_lookup_issue(cohort_pmix_lookup_t *op)
{
    cohort_pmix_ctx_t *p = op->p;
    double left = p->opts.timeout_s - (cohort_pmix_now() - op->start);
    int secs = left < COHORT_PMIX_TRY_S ? (int)(left + 0.999) : COHORT_PMIX_TRY_S;
    pmix_status_t rc;

    if (secs < 1) {
        secs = 1;
    }
    op->tries++;
    op->asked = cohort_pmix_now();
    op->done = 0;
    PMIX_INFO_DESTRUCT(&op->info);
    PMIX_INFO_LOAD(&op->info, PMIX_TIMEOUT, &secs, PMIX_INT);
    /* Listed before PMIx has it: its answer may come before PMIx_Get_nb returns. */
    pthread_mutex_lock(&cohort_pmix_lookup_lock);
    op->held = 1;
    op->prev = NULL;
    op->next = p->asked;
    if (p->asked != NULL) {
        p->asked->prev = op;
    }
    p->asked = op;
    pthread_mutex_unlock(&cohort_pmix_lookup_lock);
    rc = PMIx_Get_nb(&op->peer, p->key, &op->info, 1, cohort_pmix_lookup_cb, op);
    if (rc != PMIX_SUCCESS) {
        pthread_mutex_lock(&cohort_pmix_lookup_lock);
        cohort_pmix_lookup_unlink(op); /* PMIx never took it: no answer will come */
        pthread_mutex_unlock(&cohort_pmix_lookup_lock);
    }
    return rc;
}

cohort_status_t cohort_pmix_lookup_start(cohort_pmix_ctx_t *p, int rank,
                                         cohort_pmix_lookup_t **op_p)
{
    cohort_pmix_lookup_t *op = calloc(1, sizeof(*op));
    pmix_status_t rc;

    if (op == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    op->p = p;
    op->start = cohort_pmix_now();
    op->backoff = 0.001;
    PMIX_LOAD_PROCID(&op->peer, p->me.nspace, (pmix_rank_t)rank);
    PMIX_INFO_CONSTRUCT(&op->info);
    rc = cohort_pmix_lookup_issue(op);
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(p, 0, "PMIx_Get_nb of rank %d's address failed: %s", rank,
                        PMIx_Error_string(rc));
        PMIX_INFO_DESTRUCT(&op->info);
        free(op);
        return cohort_pmix_status(rc);
    }
    *op_p = op;
    return COHORT_OK;
}

cohort_status_t cohort_pmix_lookup_test(cohort_pmix_lookup_t *op, void **addr, size_t *len,
                                        cohort_pmix_lookup_times_t *times)
{
    cohort_pmix_ctx_t *p = op->p;
    double now;
    pmix_status_t rc;

    if (op->retry_at > 0) {
        if (cohort_pmix_now() < op->retry_at) {
            return COHORT_INPROGRESS;
        }
        op->retry_at = 0;
        rc = cohort_pmix_lookup_issue(op);
        if (rc != PMIX_SUCCESS) {
            op->rc = rc;
            op->done = 1;
        }
    }
    if (!__atomic_load_n(&op->done, __ATOMIC_ACQUIRE)) {
        return COHORT_INPROGRESS;
    }
    now = cohort_pmix_now();
    /* A direct-modex Get should wait at the server until the peer commits. With several
     * ranks per node, PMIx 4.2's server sometimes answers NOT-FOUND at once instead (seen
     * here under Open MPI 4.1's mpirun; openpmix/prrte#1243 reports the same race). Ask again,
     * backing off, until the timeout: the key is put exactly once, so it will appear. */
    if (op->rc == PMIX_ERR_NOT_FOUND && now - op->start < p->opts.timeout_s) {
        op->retry_at = now + op->backoff;
        op->backoff = op->backoff < 0.032 ? op->backoff * 2 : op->backoff;
        return COHORT_INPROGRESS;
    }
    if (op->rc == PMIX_ERR_TIMEOUT && now - op->start < p->opts.timeout_s) {
        if (op->tries == 1) {
            cohort_pmix_log(p, 1, "PMIx_Get of rank %u's address: no answer in %d s; asking "
                                  "again (up to %.0f s in all)",
                            (unsigned)op->peer.rank, COHORT_PMIX_TRY_S, p->opts.timeout_s);
        }
        op->retry_at = now;
        return COHORT_INPROGRESS;
    }
    if (op->tries > 1) {
        cohort_pmix_log(p, 3, "PMIx_Get of rank %u's address took %d tries",
                        (unsigned)op->peer.rank, op->tries);
    }
    if (op->rc != PMIX_SUCCESS) {
        cohort_status_t status = cohort_pmix_status(op->rc);
        cohort_pmix_log(p, 0, "PMIx_Get of rank %u's address failed after %.1f s (%d tries): %s",
                        (unsigned)op->peer.rank, now - op->start, op->tries,
                        PMIx_Error_string(op->rc));
        free(op->data);
        PMIX_INFO_DESTRUCT(&op->info);
        free(op);
        return status == COHORT_OK || status == COHORT_ERR_INVALID_ARG ? COHORT_ERR_PMIX : status;
    }
    *addr = op->data;
    *len = op->len;
    times->answered = op->answered;
    times->retry_s = op->asked - op->start;
    times->tries = op->tries;
    PMIX_INFO_DESTRUCT(&op->info);
    free(op);
    return COHORT_OK;
}

cohort_status_t cohort_pmix_fence_ranks(cohort_pmix_ctx_t *p, const int *ranks, int nranks)
{
    pmix_proc_t *procs;
    pmix_info_t info[2];
    pmix_status_t rc;
    bool collect = true;
    size_t nprocs = ranks == NULL ? 1 : (size_t)nranks;

    procs = calloc(nprocs, sizeof(*procs));
    if (procs == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    if (ranks == NULL) {
        PMIX_LOAD_PROCID(&procs[0], p->me.nspace, PMIX_RANK_WILDCARD);
    } else {
        for (size_t i = 0; i < nprocs; i++) {
            PMIX_LOAD_PROCID(&procs[i], p->me.nspace, (pmix_rank_t)ranks[i]);
        }
    }
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    cohort_pmix_info_timeout(&info[1], p);
    rc = PMIx_Fence(procs, nprocs, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    free(procs);
    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(p, 0, "PMIx_Fence over %s failed: %s",
                        ranks == NULL ? "the whole job" : "the group's members",
                        PMIx_Error_string(rc));
        return cohort_pmix_status(rc);
    }
    return COHORT_OK;
}

/* A first-use step in flight. PMIx answers from its own thread; who frees the step depends on
 * who comes second: the answer (the core gave up on it) or the core's test (it was answered). */
static void cohort_pmix_prepare_free(cohort_pmix_prepare_t *op)
{
    for (size_t i = 0; i < op->ninfo; i++) {
        PMIX_INFO_DESTRUCT(&op->info[i]);
    }
    free(op->procs);
    free(op->set);
    free(op);
}

cohort_status_t cohort_pmix_prepare_new(cohort_pmix_ctx_t *p, const int *ranks, int nranks,
                                        int collect, cohort_pmix_prepare_t **op_p)
{
    cohort_pmix_prepare_t *op = calloc(1, sizeof(*op));
    bool yes = true;

    if (op == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    op->p = p;
    op->nprocs = ranks == NULL ? 1 : (size_t)nranks;
    op->procs = calloc(op->nprocs, sizeof(*op->procs));
    if (op->procs == NULL) {
        free(op);
        return COHORT_ERR_NO_MEMORY;
    }
    if (ranks == NULL) {
        PMIX_LOAD_PROCID(&op->procs[0], p->me.nspace, PMIX_RANK_WILDCARD);
    } else {
        for (size_t i = 0; i < op->nprocs; i++) {
            PMIX_LOAD_PROCID(&op->procs[i], p->me.nspace, (pmix_rank_t)ranks[i]);
        }
    }
    PMIX_INFO_CONSTRUCT(&op->info[0]);
    cohort_pmix_info_timeout(&op->info[0], p);
    op->ninfo = 1;
    if (collect) {
        PMIX_INFO_CONSTRUCT(&op->info[1]);
        PMIX_INFO_LOAD(&op->info[1], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
        op->ninfo = 2;
    }
    *op_p = op;
    return COHORT_OK;
}

void cohort_pmix_prepare_answer(cohort_pmix_prepare_t *op, pmix_status_t rc)
{
    op->rc = rc;
    if (__atomic_exchange_n(&op->state, COHORT_PREP_ANSWERED, __ATOMIC_ACQ_REL) ==
        COHORT_PREP_ABANDONED) {
        cohort_pmix_prepare_free(op);
    }
}

static int cohort_pmix_int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/*
 * Fences of this process in flight or waiting, oldest first. The PMIx server pairs a fence's
 * contributions by its set of members alone: a second fence over the same set, from the same
 * process, issued before the first was answered, joins the first one's tracker, which then
 * completes on this process's two contributions without another member's (or is handed to the
 * host twice: openpmix/openpmix PR #4252), and a member waits out PMIX_TIMEOUT. That happens
 * when two contexts' worlds, or two groups with the same members, are first used together. So
 * one fence at a time per set: every member makes its first uses in the same order (fence.c),
 * so the n-th fence over a set of one member meets the n-th of the others. The PMIx client is
 * one per process, hence a process-wide list.
 */
static pthread_mutex_t cohort_pmix_fence_lock = PTHREAD_MUTEX_INITIALIZER;
static cohort_pmix_prepare_t *cohort_pmix_fences;

static int cohort_pmix_same_set(const cohort_pmix_prepare_t *a, const cohort_pmix_prepare_t *b)
{
    if (a->nprocs != b->nprocs || strcmp(a->procs[0].nspace, b->procs[0].nspace) != 0 ||
        (a->set == NULL) != (b->set == NULL)) {
        return 0;
    }
    return a->set == NULL || memcmp(a->set, b->set, a->nprocs * sizeof(int)) == 0;
}

/* Whether an earlier fence of this process over op's set is still unanswered. Under the lock. */
static int cohort_pmix_fence_waits(const cohort_pmix_prepare_t *op)
{
    for (const cohort_pmix_prepare_t *f = cohort_pmix_fences; f != op; f = f->next_fence) {
        if (cohort_pmix_same_set(f, op)) {
            return 1;
        }
    }
    return 0;
}

static void cohort_pmix_fence_unlink(cohort_pmix_prepare_t *op)
{
    cohort_pmix_prepare_t **pp = &cohort_pmix_fences;

    pthread_mutex_lock(&cohort_pmix_fence_lock);
    while (*pp != NULL && *pp != op) {
        pp = &(*pp)->next_fence;
    }
    if (*pp == op) {
        *pp = op->next_fence;
    }
    pthread_mutex_unlock(&cohort_pmix_fence_lock);
}

static void cohort_pmix_fence_cb(pmix_status_t status, void *cbdata)
{
    /* Out of the list first: once answered, the op may be freed by its test. */
    cohort_pmix_fence_unlink(cbdata);
    cohort_pmix_prepare_answer(cbdata, status);
}

static cohort_status_t cohort_pmix_fence_issue(cohort_pmix_prepare_t *op)
{
    pmix_status_t rc =
        PMIx_Fence_nb(op->procs, op->nprocs, op->info, op->ninfo, cohort_pmix_fence_cb, op);

    if (rc != PMIX_SUCCESS) {
        cohort_pmix_log(op->p, 0, "%s failed: %s", op->what, PMIx_Error_string(rc));
        cohort_pmix_fence_unlink(op);
        return cohort_pmix_status(rc);
    }
    return COHORT_OK;
}

cohort_status_t cohort_pmix_fence_start(cohort_pmix_ctx_t *p, uint64_t gid, const int *ranks,
                                        int nranks, cohort_pmix_prepare_t **op_p)
{
    cohort_pmix_prepare_t *op, **tail;
    cohort_status_t status = cohort_pmix_prepare_new(p, ranks, nranks, 1, &op);

    if (status != COHORT_OK) {
        return status;
    }
    if (ranks != NULL) {
        op->set = malloc(op->nprocs * sizeof(int));
        if (op->set == NULL) {
            cohort_pmix_prepare_free(op);
            return COHORT_ERR_NO_MEMORY;
        }
        memcpy(op->set, ranks, op->nprocs * sizeof(int));
        qsort(op->set, op->nprocs, sizeof(int), cohort_pmix_int_cmp);
    }
    snprintf(op->what, sizeof(op->what), "PMIx_Fence over the %d members of group 0x%016llx",
             ranks == NULL ? -1 : nranks, (unsigned long long)gid);
    pthread_mutex_lock(&cohort_pmix_fence_lock);
    for (tail = &cohort_pmix_fences; *tail != NULL; tail = &(*tail)->next_fence) {
    }
    *tail = op;
    op->queued = cohort_pmix_fence_waits(op);
    pthread_mutex_unlock(&cohort_pmix_fence_lock);
    if (op->queued) {
        cohort_pmix_log(p, 3, "%s waits for this process's earlier fence over the same members",
                        op->what);
    } else {
        cohort_pmix_log(p, 3, "%s", op->what);
        status = cohort_pmix_fence_issue(op);
        if (status != COHORT_OK) {
            cohort_pmix_prepare_free(op);
            return status;
        }
    }
    *op_p = op;
    return COHORT_OK;
}

cohort_status_t cohort_pmix_fence_test(cohort_pmix_prepare_t *op)
{
    if (op->queued) {
        pthread_mutex_lock(&cohort_pmix_fence_lock);
        op->queued = cohort_pmix_fence_waits(op);
        pthread_mutex_unlock(&cohort_pmix_fence_lock);
        if (op->queued) {
            return COHORT_INPROGRESS;
        }
        cohort_pmix_log(op->p, 3, "%s, after the earlier one", op->what);
        cohort_status_t status = cohort_pmix_fence_issue(op);
        if (status != COHORT_OK) {
            cohort_pmix_prepare_free(op);
            return status;
        }
        return COHORT_INPROGRESS;
    }
    return cohort_pmix_prepare_test(op);
}

void cohort_pmix_fence_abandon(cohort_pmix_prepare_t *op)
{
    if (op->queued) {
        /* Never issued: PMIx holds nothing of it. */
        cohort_pmix_fence_unlink(op);
        cohort_pmix_prepare_free(op);
        return;
    }
    cohort_pmix_prepare_abandon(op);
}

cohort_status_t cohort_pmix_prepare_test(cohort_pmix_prepare_t *op)
{
    cohort_status_t status;

    if (__atomic_load_n(&op->state, __ATOMIC_ACQUIRE) != COHORT_PREP_ANSWERED) {
        return COHORT_INPROGRESS;
    }
    status = cohort_pmix_status(op->rc);
    if (op->rc != PMIX_SUCCESS) {
        cohort_pmix_log(op->p, 0, "%s failed: %s", op->what, PMIx_Error_string(op->rc));
        if (status == COHORT_OK || status == COHORT_ERR_INVALID_ARG) {
            status = COHORT_ERR_PMIX;
        }
    }
    cohort_pmix_prepare_free(op);
    return status;
}

void cohort_pmix_prepare_abandon(cohort_pmix_prepare_t *op)
{
    if (__atomic_exchange_n(&op->state, COHORT_PREP_ABANDONED, __ATOMIC_ACQ_REL) ==
        COHORT_PREP_ANSWERED) {
        cohort_pmix_prepare_free(op);
    }
}

/* PMIX_LOCAL_PEERS ("0,1,5"): the ranks of this node, sorted, once. Sized by the node, not the
 * job. */
static void cohort_pmix_local_peers(cohort_pmix_ctx_t *p)
{
    pmix_value_t *val = NULL;
    pmix_proc_t wildcard;
    const char *c;
    int n = 1;
    double t = cohort_pmix_now();

    if (p->nlocal >= 0) {
        return;
    }
    p->nlocal = 0;
    PMIX_LOAD_PROCID(&wildcard, p->me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&wildcard, PMIX_LOCAL_PEERS, NULL, 0, &val) != PMIX_SUCCESS || val == NULL ||
        val->type != PMIX_STRING || val->data.string == NULL) {
        cohort_pmix_log(p, 1, "PMIX_LOCAL_PEERS not given by the launcher: locality unknown");
        if (val != NULL) {
            PMIX_VALUE_RELEASE(val);
        }
        return;
    }
    for (c = val->data.string; *c != '\0'; c++) {
        n += *c == ',';
    }
    p->local = malloc((size_t)n * sizeof(int));
    if (p->local != NULL) {
        char *end;
        for (c = val->data.string; *c != '\0' && p->nlocal < n; c = *end ? end + 1 : end) {
            long r = strtol(c, &end, 10);
            if (end == c) {
                break;
            }
            p->local[p->nlocal++] = (int)r;
        }
        qsort(p->local, (size_t)p->nlocal, sizeof(int), cohort_pmix_int_cmp);
    }
    PMIX_VALUE_RELEASE(val);
    cohort_pmix_log(p, 3, "PMIX_LOCAL_PEERS: %d ranks on this node, read in %.1f us", p->nlocal,
                    (cohort_pmix_now() - t) * 1e6);
}

cohort_status_t cohort_pmix_node_info(cohort_pmix_ctx_t *p, int rank, int *same_node,
                                      uint32_t *node_id, char *host, size_t hostlen)
{
    pmix_value_t *val = NULL;
    pmix_proc_t proc;

    if (p->singleton) {
        *same_node = 1;
        if (node_id != NULL) {
            *node_id = 0;
            if (hostlen > 0 && gethostname(host, hostlen) != 0) {
                host[0] = '\0';
            }
        }
        return COHORT_OK;
    }
    cohort_pmix_local_peers(p);
    *same_node = rank == (int)p->me.rank ||
                 (p->nlocal > 0 && bsearch(&rank, p->local, (size_t)p->nlocal, sizeof(int),
                                           cohort_pmix_int_cmp) != NULL);
    if (node_id == NULL) {
        return COHORT_OK; /* locality only: a remote rank's node id may cost a round trip */
    }
    *node_id = UINT32_MAX;
    if (hostlen > 0) {
        host[0] = '\0';
    }
    /* Node id and host name: Open MPI 4.1's server gives them for this node's ranks only. */
    PMIX_LOAD_PROCID(&proc, p->me.nspace, (pmix_rank_t)rank);
    if (PMIx_Get(&proc, PMIX_NODEID, NULL, 0, &val) == PMIX_SUCCESS && val != NULL &&
        val->type == PMIX_UINT32) {
        *node_id = val->data.uint32;
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
        val = NULL;
    }
    if (PMIx_Get(&proc, PMIX_HOSTNAME, NULL, 0, &val) == PMIX_SUCCESS && val != NULL &&
        val->type == PMIX_STRING && val->data.string != NULL) {
        snprintf(host, hostlen, "%s", val->data.string);
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    return COHORT_OK;
}
