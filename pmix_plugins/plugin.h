/*
 * The interface between the core and the address-exchange plugins. The core includes this
 * header and no PMIx header; each plugin is a loadable module that exports one symbol,
 * `cohort_pmix_plugin`, of type cohort_pmix_plugin_t.
 */
#ifndef COHORT_PMIX_PLUGIN_H
#define COHORT_PMIX_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "cohort.h"

#define COHORT_PMIX_PLUGIN_ABI    5
#define COHORT_PMIX_PLUGIN_SYMBOL "cohort_pmix_plugin"

typedef struct cohort_pmix_ctx cohort_pmix_ctx_t;         /* the plugin's own state */
typedef struct cohort_pmix_lookup cohort_pmix_lookup_t;   /* one lookup in flight */
typedef struct cohort_pmix_prepare cohort_pmix_prepare_t; /* one first-use step in flight */

/* Where a lookup's time went, for cohort_peer_info (wiring's split, issue 37). Times are
 * CLOCK_MONOTONIC seconds, the clock of base/time.h. */
typedef struct {
    double answered; /* when the answer arrived (on PMIx's thread, or in the test that found it) */
    double retry_s;  /* from the lookup's start to its last request (earlier tries, backoff) */
    int tries;       /* requests made (1 unless it was asked again) */
} cohort_pmix_lookup_times_t;

/* What the core hands a plugin at init. */
typedef struct {
    double timeout_s; /* bound for every blocking PMIx call the plugin makes (> 0) */
    void (*log)(void *arg, int level, const char *fmt, va_list ap); /* 0 error .. 3 debug */
    void *log_arg;
    /* Contexts this process made before this one: two contexts publish under two keys. */
    int instance;
} cohort_pmix_opts_t;

/* What a plugin tells the core about the job. */
typedef struct {
    int rank;
    int size;
    int singleton; /* no PMIx server: a world of one; publish/lookup are never called */
} cohort_pmix_job_t;

typedef struct {
    int abi;
    const char *name;
    const char *description;
    /* Connect to the PMIx server. With no server reachable, succeed with job->singleton = 1. */
    cohort_status_t (*init)(const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                            cohort_pmix_job_t *job);
    /* Publish this rank's worker address; called once, right after init. */
    cohort_status_t (*publish)(cohort_pmix_ctx_t *pctx, const void *addr, size_t len);
    /* Start fetching a peer's address, bounded by opts.timeout_s. */
    cohort_status_t (*lookup_start)(cohort_pmix_ctx_t *pctx, int rank, cohort_pmix_lookup_t **op);
    /* COHORT_INPROGRESS while the lookup runs (the core progresses UCX meanwhile). Otherwise the
     * lookup is over and freed: COHORT_OK with the address in a malloc'ed buffer the caller
     * frees with free(), and @a times filled in, or an error (logged). */
    cohort_status_t (*lookup_test)(cohort_pmix_lookup_t *op, void **addr, size_t *len,
                                   cohort_pmix_lookup_times_t *times);
    /* A file descriptor that turns readable when a lookup in flight has its answer (written
     * from PMIx's thread): a wait with lookups in flight sleeps on it instead of yielding, and
     * reads it empty. -1, or NULL: the plugin has none (its answers come inside lookup_test). */
    int (*wake_fd)(cohort_pmix_ctx_t *pctx);
    /* Start the step every member makes at a group's first use (ranks NULL: the whole job),
     * bounded by opts.timeout_s; NULL when there is nothing to do. */
    cohort_status_t (*group_prepare_start)(cohort_pmix_ctx_t *pctx, uint64_t gid, const int *ranks,
                                           int nranks, cohort_pmix_prepare_t **op);
    /* COHORT_INPROGRESS while it runs; otherwise it is over and freed (errors logged). */
    cohort_status_t (*group_prepare_test)(cohort_pmix_prepare_t *op);
    /* Give up on a step in flight (finalize): it frees itself when PMIx answers. */
    void (*group_prepare_abandon)(cohort_pmix_prepare_t *op);
    /* A group whose first-use step succeeded is gone (freed, or finalize): undo what the step
     * made, without blocking (the plugin finishes it by finalize). NULL: nothing to undo. */
    void (*group_release)(cohort_pmix_ctx_t *pctx, uint64_t gid);
    /* Where a rank runs (job-level data, answered by the local server): whether it shares this
     * rank's node, the launcher's node id (UINT32_MAX when the launcher does not say) and host
     * name ("" likewise). With node_id NULL only same_node is asked, which never leaves this
     * node (the engine's send path asks it). NULL: the core takes every rank for one node. */
    cohort_status_t (*node_info)(cohort_pmix_ctx_t *pctx, int rank, int *same_node,
                                 uint32_t *node_id, char *host, size_t hostlen);
    /* Disconnect. An error (logged) says that something the plugin finished here failed, such
     * as a group_release; the plugin is finalized either way. */
    cohort_status_t (*finalize)(cohort_pmix_ctx_t *pctx);
} cohort_pmix_plugin_t;

#endif
