/* PMIx plumbing shared by the exchange plugins (compiled into each module). */
#ifndef COHORT_PMIX_COMMON_H
#define COHORT_PMIX_COMMON_H

#include <stdlib.h>
#include <pmix.h>
#include "pmix_plugins/plugin.h"

struct cohort_pmix_ctx {
    pmix_proc_t me;
    cohort_pmix_opts_t opts;
    int singleton;
    char key[64]; /* where this context's address is published */
    int *local;   /* ranks on this node (PMIX_LOCAL_PEERS), sorted; read on first use */
    int nlocal;   /* -1 until read */
    void *own;    /* the plugin's own state, if it has any */
    int wake_fd;  /* eventfd written when a lookup is answered (plugin.h, wake_fd); -1: none */
    struct cohort_pmix_lookup *asked; /* lookups PMIx holds (issued, not answered): a list under
                                       * common.c's lookup lock */
};

#define COHORT_PMIX_ADDR_KEY "cohort.ucx.addr"

void cohort_pmix_log(const cohort_pmix_ctx_t *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cohort_status_t cohort_pmix_status(pmix_status_t rc);
/* PMIX_TIMEOUT (whole seconds, rounded up) of opts.timeout_s into @a info. */
void cohort_pmix_info_timeout(pmix_info_t *info, const cohort_pmix_ctx_t *p);
double cohort_pmix_now(void);
/* The eventfd PMIx's thread writes when it answers a lookup (plugin.h, wake_fd). */
int cohort_pmix_wake_fd(cohort_pmix_ctx_t *p);

/* PMIx_Init, or a singleton when no server can be reached. */
cohort_status_t cohort_pmix_connect(const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                                    cohort_pmix_job_t *job);
cohort_status_t cohort_pmix_disconnect(cohort_pmix_ctx_t *p);
cohort_status_t cohort_pmix_put_commit(cohort_pmix_ctx_t *p, const void *addr, size_t len);
cohort_status_t cohort_pmix_lookup_start(cohort_pmix_ctx_t *p, int rank, cohort_pmix_lookup_t **op);
cohort_status_t cohort_pmix_lookup_test(cohort_pmix_lookup_t *op, void **addr, size_t *len,
                                        cohort_pmix_lookup_times_t *times);
enum { COHORT_PREP_RUNNING, COHORT_PREP_ANSWERED, COHORT_PREP_ABANDONED };

struct cohort_pmix_prepare {
    cohort_pmix_ctx_t *p;
    int state;
    pmix_status_t rc;
    pmix_proc_t *procs;
    size_t nprocs;
    pmix_info_t info[2];
    size_t ninfo;
    char what[96];
    uint64_t gid;
    /* What the server answered besides the status (group plugin: PMIX_GROUP_CONTEXT_ID). */
    size_t context_id;
    int has_context_id;
    /* Fences only: the members as sorted ranks (NULL: the whole namespace), the next fence of
     * this process, and whether this one still waits for an earlier one over the same set. */
    int *set;
    struct cohort_pmix_prepare *next_fence;
    int queued;
};

/* First-use steps, nonblocking. new: the step's procs (ranks NULL: the whole namespace) and a
 * timeout info (+ PMIX_COLLECT_DATA when collect); answer: called from PMIx's callback. */
cohort_status_t cohort_pmix_prepare_new(cohort_pmix_ctx_t *p, const int *ranks, int nranks,
                                        int collect, cohort_pmix_prepare_t **op);
void cohort_pmix_prepare_answer(cohort_pmix_prepare_t *op, pmix_status_t rc);
cohort_status_t cohort_pmix_prepare_test(cohort_pmix_prepare_t *op);
void cohort_pmix_prepare_abandon(cohort_pmix_prepare_t *op);
/* PMIx_Fence_nb over a group's members, collecting their data; one at a time per set of members
 * in this process (a later one is issued from its test once the earlier is answered). */
cohort_status_t cohort_pmix_fence_start(cohort_pmix_ctx_t *p, uint64_t gid, const int *ranks,
                                        int nranks, cohort_pmix_prepare_t **op);
cohort_status_t cohort_pmix_fence_test(cohort_pmix_prepare_t *op);
void cohort_pmix_fence_abandon(cohort_pmix_prepare_t *op);
/* A rank's node id and host name (PMIX_NODEID, PMIX_HOSTNAME). */
cohort_status_t cohort_pmix_node_info(cohort_pmix_ctx_t *p, int rank, int *same_node,
                                      uint32_t *node_id, char *host, size_t hostlen);
/* PMIx_Fence over the given ranks (NULL: the whole namespace), collecting data. */
cohort_status_t cohort_pmix_fence_ranks(cohort_pmix_ctx_t *p, const int *ranks, int nranks);

#endif
