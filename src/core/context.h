/* The context: one UCX worker, the exchange plugin, the endpoint table and the group map. */
#ifndef COHORT_CONTEXT_H
#define COHORT_CONTEXT_H

#include <ucp/api/ucp.h>
#include "cohort.h"
#include "core/config.h"
#include "core/list.h"
#include "core/map.h"
#include "core/scratch.h"
#include "pmix_plugins/plugin.h"

typedef enum {
    COHORT_PEER_NONE = 0, /* never wired */
    COHORT_PEER_WIRED,    /* endpoint usable */
    COHORT_PEER_FAILED    /* UCX reported the peer unreachable */
} cohort_peer_state_t;

typedef struct {
    ucp_ep_h ep;
    uint8_t state;   /* cohort_peer_state_t */
    uint8_t lookups; /* PMIx lookups made for this peer */
    float wire_us;
} cohort_peer_t;

struct cohort_context {
    cohort_config_t cfg;
    int rank;
    int size;
    int singleton;

    const cohort_pmix_plugin_t *plugin;
    void *plugin_dl;
    cohort_pmix_ctx_t *pmix;

    ucp_context_h ucp;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int event_fd; /* COHORT_PROGRESS=block only */

    cohort_peer_t *peers; /* [size], indexed by world rank */
    cohort_group_t *world;
    cohort_map_t groups;    /* gid -> cohort_group_t* (live groups) */
    cohort_map_t instances; /* (tag, members) hash -> groups created so far */
    cohort_list_t group_list;
    cohort_list_t orphans;    /* messages for groups not created yet (cohort_msg_t) */
    cohort_list_t active;     /* collective requests to progress, in posting order */
    cohort_list_t rndv_ready; /* receives matched to a rendezvous message, to start */
    cohort_list_t zombies;    /* requests freed by the user with UCX operations in flight */
    cohort_list_t layouts;
    cohort_scratch_cache_t scratch;

    uint64_t stat_groups;
    uint64_t stat_lookups;
    uint64_t stat_endpoints;
    uint64_t stat_msgs;
    int in_progress; /* guards against re-entering progress from a callback */
};

#endif
