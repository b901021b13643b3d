/*
 * The settings every member of a group must share. Each decides, on each member alone, which
 * path a collective takes: whether there is an agreement round (COHORT_CHECK, the CUDA IPC vote
 * and its threshold), which algorithm the table picks (COHORT_ALGO_*, and whether same-node
 * single copy and shared segments are usable at all, COHORT_CMA). Members that differ take
 * different paths for the same call: one waits in a shared segment for a message another sends,
 * and the group hangs or, worse, reads one member's data as another's descriptor. Their values
 * ride, hashed, in the agreement of every group's first collective (check.c), before any
 * algorithm starts; a difference is COHORT_ERR_MISMATCH on every member, naming the setting.
 * COHORT_CMA_MIN and COHORT_CUDA_PIPELINE_MIN are not here: the first is the sender's choice,
 * which a receiver takes either way, and the second only changes how this rank stages its own
 * buffers.
 */
#include <stdio.h>
#include <string.h>
#include "coll/coll.h"
#include "proto/cma.h"

static const char *const cohort_settings_names[COHORT_SETTINGS_FIELDS] = {
    "COHORT_CHECK",        "COHORT_CMA or COHORT_SHM_DEFER",
    "COHORT_CUDA",         "COHORT_CUDA_IPC",
    "COHORT_CUDA_IPC_MIN", "COHORT_ALGO_*"};

static uint64_t cohort_settings_fnv(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    }
    return (h ^ 0xff) * 0x100000001b3ull; /* an end mark: "AB","C" is not "A","BC" */
}

/* The COHORT_ALGO_* settings in name order: the environment's order is not the members'. */
static int cohort_settings_algo_order(const cohort_config_t *cfg, int order[])
{
    int n = cfg->nalgo;

    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && strcmp(cfg->algo[order[j - 1]].name, cfg->algo[i].name) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return n;
}

void cohort_coll_settings(const cohort_context_t *ctx, int same_node,
                          int64_t vals[COHORT_SETTINGS_FIELDS])
{
    const cohort_config_t *cfg = &ctx->cfg;
    uint64_t algo = 0xcbf29ce484222325ull;
    int order[COHORT_CONFIG_ALGO_MAX];
    int n = cohort_settings_algo_order(cfg, order);

    for (int i = 0; i < n; i++) {
        algo = cohort_settings_fnv(algo, cfg->algo[order[i]].name);
        algo = cohort_settings_fnv(algo, cfg->algo[order[i]].value);
    }
    vals[0] = cfg->check;
    /* What is in effect, not only what was asked, in a group of one node: auto on a rank that
     * may not read its peers' memory takes other algorithms as surely as off. Across nodes the
     * kernels' policies may differ and change nothing. */
    vals[1] = (int64_t)cfg->cma;
    if (same_node) {
        vals[1] |= (int64_t)(cohort_cma_direct(ctx) != 0) << 4 |
                   (int64_t)(cohort_cma_fd_share(ctx) != 0) << 5;
        /* COHORT_SHM_DEFER rides with them: it says which calls take the segment. */
        vals[1] |= (int64_t)cfg->shm_defer << 8;
    }
    vals[2] = cfg->cuda_off;
    vals[3] = cfg->cuda_ipc;
    vals[4] = (int64_t)cfg->cuda_ipc_min;
    vals[5] = (int64_t)(algo & INT64_MAX);
}

const char *cohort_coll_settings_name(int f)
{
    return f >= 0 && f < COHORT_SETTINGS_FIELDS ? cohort_settings_names[f] : "unknown";
}

void cohort_coll_settings_describe(const cohort_context_t *ctx, int f, char *buf, size_t len)
{
    static const char *const cma[] = {"off", "auto", "on"}, *const ipc[] = {"auto", "off", "on"};
    const cohort_config_t *cfg = &ctx->cfg;
    int order[COHORT_CONFIG_ALGO_MAX], n;
    size_t used = 0;

    buf[0] = '\0';
    switch (f) {
    case 0:
        snprintf(buf, len, "%d", cfg->check);
        break;
    case 1:
        snprintf(buf, len, "%s (single copy %s, shared segments %s, COHORT_SHM_DEFER=%d)",
                 cma[cfg->cma], cohort_cma_direct(ctx) ? "usable" : "not usable",
                 cohort_cma_fd_share(ctx) ? "usable" : "not usable", cfg->shm_defer);
        break;
    case 2:
        snprintf(buf, len, "%s", cfg->cuda_off ? "off" : "auto");
        break;
    case 3:
        snprintf(buf, len, "%s", ipc[cfg->cuda_ipc]);
        break;
    case 4:
        snprintf(buf, len, "%zu", cfg->cuda_ipc_min);
        break;
    default:
        n = cohort_settings_algo_order(cfg, order);
        if (n == 0) {
            snprintf(buf, len, "none set");
        }
        for (int i = 0; i < n && used < len; i++) {
            used += (size_t)snprintf(buf + used, len - used, "%sCOHORT_ALGO_%s=%s", i ? " " : "",
                                     cfg->algo[order[i]].name, cfg->algo[order[i]].value);
        }
        break;
    }
}
