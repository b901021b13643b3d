#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/config.h"

const char *cohort_progress_mode_name(cohort_progress_mode_t mode)
{
    switch (mode) {
    case COHORT_PROGRESS_YIELD:
        return "yield";
    case COHORT_PROGRESS_SPIN:
        return "spin";
    case COHORT_PROGRESS_BLOCK:
        return "block";
    }
    return "unknown";
}

/* What cohort_config_parse accepts, for people (cohort_bench config, README). The unit test
 * check_config holds the parser to this list: every name here is known to it. */
static const cohort_setting_t cohort_settings[] = {
    {"COHORT_PMIX_PLUGIN", "dmodex | fence | global | group", "dmodex",
     "how worker addresses are exchanged through PMIx"},
    {"COHORT_PLUGIN_PATH", "directories, ':'-separated", "",
     "where exchange plugins are looked up first"},
    {"COHORT_PROGRESS", "yield | spin | block", "yield",
     "how a wait waits: poll and yield (naps after 1 ms idle), poll only, or sleep on the "
     "worker's event fd"},
    {"COHORT_TIMEOUT", "seconds, 0 = none", "0",
     "every wait returns COHORT_ERR_TIMEOUT after this long, naming what it waited for"},
    {"COHORT_KEEPALIVE_S", "seconds, 0 = UCX's own (20 s)", "1",
     "UCX keepalive on every endpoint: a dead peer's endpoint fails within about twice this"},
    {"COHORT_WATCH_S", "seconds, 0 = never", "1",
     "a receive (or rendezvous fetch) that waited this long on a peer with no endpoint wires "
     "one, so its death shows"},
    {"COHORT_CMA", "auto | on | off", "auto",
     "single-copy same-node transfers (process_vm_readv) for large messages; auto: unless the "
     "kernel's ptrace scope forbids it"},
    {"COHORT_CMA_MIN", "bytes (K, M, G allowed)", "65536",
     "the smallest same-node message sent by single copy"},
    {"COHORT_CMA_CHUNK", "bytes (K, M, G allowed), > 0", "1048576",
     "a single-copy receive reads its message this much at a time, one piece per progress "
     "call (cohort_test, cohort_wait), so no call holds the caller longer than one piece"},
    {"COHORT_CHECK", "0 | 1", "0",
     "collectives carry a fingerprint; a mismatch between members is COHORT_ERR_MISMATCH"},
    {"COHORT_LOG", "error | warn | info | debug", "warn", "log level (stderr, per context)"},
    {"COHORT_ORPHAN_LIMIT", "bytes (K, M, G allowed)", "67108864",
     "messages kept for groups not created yet; past it they are dropped and counted"},
    {"COHORT_FAULT",
     "<point>:<n>[@<rank>], point group_create | send | msg_keep | cma | shm | stall | write_gap "
     "| post | pid | shm_pid | ep_drop | shm_late | shm_view",
     "",
     "testing: the n-th pass through the point fails as if memory ran out (stall: a same-node "
     "collective's n-th write into another member waits 2 s first; write_gap: it is announced, "
     "then made 3 s later; post: the n-th collective's post fails; pid: the n-th direct "
     "collective's or single-copy send's descriptor names another process; shm_pid: likewise "
     "the n-th shared segment's setup descriptor; ep_drop: the n-th send to a wired peer "
     "first closes its endpoint by force, as UCX does when it loses a connection; shm_late: at "
     "the n-th pass, the group's calls deferred by COHORT_SHM_DEFER stop setting its segment up "
     "here, its setup call does it; shm_view: the n-th mapping of a peer's arena fails)"},
    {"COHORT_CUDA", "auto | off", "auto",
     "auto: device buffers are detected per call (the CUDA module is loaded the first time a "
     "call needs it); off: every buffer is taken for host memory and CUDA is never loaded"},
    {"COHORT_CUDA_IPC", "auto | off | on", "auto",
     "auto: on a node with a CUDA driver, a same-node collective of COHORT_CUDA_IPC_MIN bytes per "
     "member or more starts with a vote, and goes through CUDA IPC (the members reading each "
     "other's device buffers) when every member's buffers are on the device; on: same-node "
     "collectives always go through CUDA IPC (host buffers copied to the device); off: never. "
     "Set it alike on every rank"},
    {"COHORT_CUDA_IPC_MIN", "bytes (K, M, G allowed)", "1048576",
     "COHORT_CUDA_IPC=auto: the smallest collective (bytes per member: count times the dtype's "
     "size) that votes on CUDA IPC; set it alike on every rank"},
    {"COHORT_SHM_ARENA", "on | off", "on",
     "on: a group's shared segment is a block of group rank 0's arena, one memory file per "
     "process that the other members of the node map once (pidfd_getfd) and find blocks in, "
     "with no file in /dev/shm and no system call per group; it needs pidfd_getfd and "
     "kernel.yama.ptrace_scope 0, else segments are named files as with off. off: each "
     "segment is a file in /dev/shm, made and opened per group"},
    {"COHORT_SHM_DEFER", "calls, 0 = none", "0",
     "a group's first N collectives that would run on its shared segment run on messages "
     "instead, while the segment is set up beside them; the segment takes the next one. Set "
     "it alike on every rank (the first collective checks)"},
    {"COHORT_CUDA_IPC_CACHE", "mappings, 0 = none", "64",
     "how many of the other members' device allocations stay mapped (CUDA IPC) between calls "
     "when no call uses them; 0: mapped and unmapped in every call"},
    {"COHORT_CUDA_PIPELINE_MIN", "bytes (K, M, G allowed), or off", "4194304",
     "from this size a collective on device buffers runs on them, each transfer staged on its "
     "own (copies overlap the other transfers), when its algorithm allows; below, or off: the "
     "buffers are copied whole to host memory and back"},
    {"COHORT_ALGO_<COLL>", "an algorithm, or lo-hi:name,... size ranges", "",
     "the algorithm of a collective (cohort_bench algorithms lists the names)"},
    {"COHORT_ALGO_<COLL>_<ALGO>_<PARAM>", "bytes (k/m/g) or a count", "",
     "an algorithm's tuning parameter (cohort_bench algorithms lists them)"},
};

int cohort_setting_count(void)
{
    return (int)(sizeof(cohort_settings) / sizeof(cohort_settings[0]));
}

cohort_status_t cohort_setting_info(int index, cohort_setting_t *info)
{
    if (info == NULL || index < 0 || index >= cohort_setting_count()) {
        return COHORT_ERR_INVALID_ARG;
    }
    *info = cohort_settings[index];
    return COHORT_OK;
}

/* Match value against a NULL-terminated list; returns the index or -1. */
static int cohort_config_choice(const char *value, const char *const *choices)
{
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcmp(value, choices[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* One of @a choices: its index, or -1 with "NAME=value: expected <expected>" in err. */
static int cohort_config_pick(const char *name, const char *value, const char *const *choices,
                              const char *expected, char *err, size_t errlen)
{
    int idx = cohort_config_choice(value, choices);

    if (idx < 0) {
        snprintf(err, errlen, "%s=%s: expected %s", name, value, expected);
    }
    return idx;
}

/* A count from 0 to 2^20 (COHORT_CUDA_IPC_CACHE, COHORT_SHM_DEFER). */
static cohort_status_t cohort_config_count(const char *name, const char *value, int *out, char *err,
                                           size_t errlen)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < 0 || v > 1 << 20) {
        snprintf(err, errlen, "%s=%s: expected a count from 0 to %d", name, value, 1 << 20);
        return COHORT_ERR_INVALID_ARG;
    }
    *out = (int)v;
    return COHORT_OK;
}

static cohort_status_t cohort_config_seconds(const char *name, const char *value, const char *zero,
                                             double *out, char *err, size_t errlen)
{
    char *end;
    double t;

    errno = 0;
    t = strtod(value, &end);
    /* Past a year it is a typo, and large values overflow the time arithmetic downstream. */
    if (errno != 0 || end == value || *end != '\0' || !isfinite(t) || t < 0 || t > 3.2e7) {
        snprintf(err, errlen, "%s=%s: expected seconds from 0 to 3.2e7 (0: %s)", name, value, zero);
        return COHORT_ERR_INVALID_ARG;
    }
    *out = t;
    return COHORT_OK;
}

/* Bytes, with an optional binary suffix (K, M, G, either case) as COHORT_ALGO_* sizes take. */
static cohort_status_t cohort_config_bytes(const char *name, const char *value, size_t *out,
                                           char *err, size_t errlen)
{
    char *end;
    unsigned long long v, mult = 1;

    errno = 0;
    v = strtoull(value, &end, 10);
    switch (end != value ? *end : '\0') {
    case 'k':
    case 'K':
        mult = 1ull << 10;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        break;
    default:
        break;
    }
    if (mult != 1) {
        end++;
    }
    if (errno != 0 || end == value || *end != '\0' || value[0] < '0' || value[0] > '9' ||
        v > SIZE_MAX / mult) {
        snprintf(err, errlen, "%s=%s: expected bytes >= 0, optionally with K, M or G", name, value);
        return COHORT_ERR_INVALID_ARG;
    }
    *out = (size_t)(v * mult);
    return COHORT_OK;
}

static cohort_status_t cohort_config_one(cohort_config_t *cfg, const char *name, const char *value,
                                         char *err, size_t errlen, int *known)
{
    static const char *const plugins[] = {"dmodex", "fence", "global", "group", NULL};
    static const char *const modes[] = {"yield", "spin", "block", NULL};
    static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
    static const char *const ipc_modes[] = {"auto", "off", "on", NULL}; /* cohort_cuda_ipc_mode_t */
    static const char *const cma[] = {"off", "auto", "on", NULL};       /* cohort_cma_mode_t */
    static const char *const bools[] = {"0", "1", NULL};
    static const char *const cuda[] = {"auto", "off", NULL};
    static const char *const on_off[] = {"on", "off", NULL};
    char *end;
    int idx;

    *known = 1;
    if (strcmp(name, "COHORT_PMIX_PLUGIN") == 0) {
        if (cohort_config_pick(name, value, plugins, "dmodex, fence, global or group", err,
                               errlen) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        snprintf(cfg->pmix_plugin, sizeof(cfg->pmix_plugin), "%s", value);
    } else if (strcmp(name, "COHORT_PLUGIN_PATH") == 0) {
        if (strlen(value) >= sizeof(cfg->plugin_path)) {
            snprintf(err, errlen, "COHORT_PLUGIN_PATH is longer than %zu characters",
                     sizeof(cfg->plugin_path) - 1);
            return COHORT_ERR_INVALID_ARG;
        }
        snprintf(cfg->plugin_path, sizeof(cfg->plugin_path), "%s", value);
    } else if (strcmp(name, "COHORT_PROGRESS") == 0) {
        if ((idx = cohort_config_pick(name, value, modes, "yield, spin or block", err, errlen)) <
            0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->progress = (cohort_progress_mode_t)idx;
    } else if (strcmp(name, "COHORT_TIMEOUT") == 0) {
        return cohort_config_seconds(name, value, "no timeout", &cfg->timeout_s, err, errlen);
    } else if (strcmp(name, "COHORT_KEEPALIVE_S") == 0) {
        return cohort_config_seconds(name, value, "UCX's own", &cfg->keepalive_s, err, errlen);
    } else if (strcmp(name, "COHORT_WATCH_S") == 0) {
        return cohort_config_seconds(name, value, "never", &cfg->watch_s, err, errlen);
    } else if (strcmp(name, "COHORT_CHECK") == 0) {
        if ((idx = cohort_config_pick(name, value, bools, "0 or 1", err, errlen)) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->check = idx;
    } else if (strcmp(name, "COHORT_CUDA") == 0) {
        if ((idx = cohort_config_pick(name, value, cuda, "auto or off", err, errlen)) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->cuda_off = idx;
    } else if (strcmp(name, "COHORT_CUDA_IPC") == 0) {
        if ((idx = cohort_config_pick(name, value, ipc_modes, "auto, off or on", err, errlen)) <
            0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->cuda_ipc = idx;
    } else if (strcmp(name, "COHORT_SHM_ARENA") == 0) {
        if ((idx = cohort_config_pick(name, value, on_off, "on or off", err, errlen)) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->shm_arena = idx == 0;
    } else if (strcmp(name, "COHORT_SHM_DEFER") == 0) {
        return cohort_config_count(name, value, &cfg->shm_defer, err, errlen);
    } else if (strcmp(name, "COHORT_CUDA_IPC_CACHE") == 0) {
        return cohort_config_count(name, value, &cfg->cuda_ipc_cache, err, errlen);
    } else if (strcmp(name, "COHORT_LOG") == 0) {
        if ((idx = cohort_config_pick(name, value, levels, "error, warn, info or debug", err,
                                      errlen)) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->log_level = idx;
    } else if (strcmp(name, "COHORT_CMA") == 0) {
        if ((idx = cohort_config_pick(name, value, cma, "auto, on or off", err, errlen)) < 0) {
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->cma = (cohort_cma_mode_t)idx;
    } else if (strcmp(name, "COHORT_CMA_MIN") == 0) {
        return cohort_config_bytes(name, value, &cfg->cma_min, err, errlen);
    } else if (strcmp(name, "COHORT_CMA_CHUNK") == 0) {
        if (cohort_config_bytes(name, value, &cfg->cma_chunk, err, errlen) != COHORT_OK) {
            return COHORT_ERR_INVALID_ARG;
        }
        if (cfg->cma_chunk == 0) {
            snprintf(err, errlen, "%s=%s: expected bytes > 0", name, value);
            return COHORT_ERR_INVALID_ARG;
        }
    } else if (strcmp(name, "COHORT_CUDA_IPC_MIN") == 0) {
        return cohort_config_bytes(name, value, &cfg->cuda_ipc_min, err, errlen);
    } else if (strcmp(name, "COHORT_CUDA_PIPELINE_MIN") == 0) {
        if (strcmp(value, "off") == 0) {
            cfg->cuda_pipeline_min = SIZE_MAX;
            return COHORT_OK;
        }
        return cohort_config_bytes(name, value, &cfg->cuda_pipeline_min, err, errlen);
    } else if (strcmp(name, "COHORT_ORPHAN_LIMIT") == 0) {
        return cohort_config_bytes(name, value, &cfg->orphan_bytes, err, errlen);
    } else if (strcmp(name, "COHORT_FAULT") == 0) {
        static const char *const points[] = {"none",     "group_create", "send",    "msg_keep",
                                             "cma",      "shm",          "stall",   "write_gap",
                                             "post",     "pid",          "shm_pid", "ep_drop",
                                             "shm_late", "shm_view",     NULL};
        const char *colon = strchr(value, ':'), *at = strchr(value, '@');
        char point[32];
        long n = 0, rank = -1;
        int bad = 0;

        snprintf(point, sizeof(point), "%.*s", colon ? (int)(colon - value) : 31, value);
        idx = cohort_config_choice(point, points);
        if (colon != NULL) {
            errno = 0;
            n = strtol(colon + 1, &end, 10);
            /* n and rank are ints downstream: a larger one would wrap into another value */
            bad = errno != 0 || end == colon + 1 || (*end != '\0' && end != at) || n > INT_MAX;
            if (!bad && at != NULL) {
                rank = strtol(at + 1, &end, 10);
                bad = errno != 0 || end == at + 1 || *end != '\0' || rank < 0 || rank > INT_MAX;
            }
        }
        if (idx <= 0 || colon == NULL || bad || n < 1) {
            snprintf(err, errlen,
                     "COHORT_FAULT=%s: expected <point>:<n>[@<rank>] (1 <= n <= %d, 0 <= rank <= "
                     "%d), point one of group_create, send, msg_keep, cma, shm, stall, write_gap, "
                     "post, pid, shm_pid, ep_drop, shm_late, shm_view",
                     value, INT_MAX, INT_MAX);
            return COHORT_ERR_INVALID_ARG;
        }
        cfg->fault_point = idx;
        cfg->fault_nth = (int)n;
        cfg->fault_rank = (int)rank;
    } else if (strncmp(name, "COHORT_ALGO_", 12) == 0) {
        cohort_config_algo_t *a;

        if (cfg->nalgo == COHORT_CONFIG_ALGO_MAX) {
            snprintf(err, errlen, "%s: more than %d COHORT_ALGO_ settings", name,
                     COHORT_CONFIG_ALGO_MAX);
            return COHORT_ERR_INVALID_ARG;
        }
        a = &cfg->algo[cfg->nalgo];
        if (name[12] == '\0' || strlen(name + 12) >= sizeof(a->name) || value[0] == '\0' ||
            strlen(value) >= sizeof(a->value)) {
            snprintf(err, errlen, "%s=%s: expected an algorithm or size ranges of algorithms", name,
                     value);
            return COHORT_ERR_INVALID_ARG;
        }
        snprintf(a->name, sizeof(a->name), "%s", name + 12);
        snprintf(a->value, sizeof(a->value), "%s", value);
        cfg->nalgo++;
    } else if (strcmp(name, "COHORT_LIBRARY") != 0) {
        /* COHORT_LIBRARY is the Python package's (where to find libcohort): known, not ours. */
        *known = 0;
    }
    return COHORT_OK;
}

cohort_status_t cohort_config_parse(cohort_config_t *cfg, char *const *envp, char *err,
                                    size_t errlen, char *warn, size_t warnlen)
{
    char name[256];
    cohort_status_t status;
    size_t used = 0;
    int known;

    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->pmix_plugin, sizeof(cfg->pmix_plugin), "dmodex");
    cfg->progress = COHORT_PROGRESS_YIELD;
    cfg->shm_arena = 1;
    cfg->log_level = 1; /* warn */
    /* UCX's 20 s default let survivors wait 20-40 s for a dead peer (measured); at 1 s an
     * endpoint's keepalive costs a few messages a second. */
    cfg->keepalive_s = 1.0;
    cfg->cma = COHORT_CMA_AUTO;
    /* Measured (cohort_bench p2p, 2 ranks): single copy 7.1 GB/s against 4.9 at 64 KiB and
     * 8.2-8.9 against 4.5-5.2 from 1 to 16 MiB; scripts/bench-table.sh at 1 MiB, against 1 MiB
     * as the threshold: alltoall 1.04x Open MPI instead of 0.57x, allgather 0.93x instead of
     * 0.67x (2 ranks). Below 64 KiB UCX's copies need no round trip. */
    cfg->cma_min = 64u << 10;
    /* A piece of a single-copy receive per progress call. At 1 MiB one piece took about
     * 0.2 ms warm here (64 MiB in 10-11 ms either way, 5.8-6.7 GB/s: the per-call cost is
     * lost in the noise), so a cohort_test holds its caller well under the 5 ms of issue 20;
     * 256 KiB read no faster, 4 and 16 MiB held single calls 1-20 ms (2 ranks, a loaded 2-core
     * machine, tests/mpi/cma_chunks). */
    cfg->cma_chunk = 1u << 20;
    cfg->watch_s = 1.0;
    /* Messages for a group this rank has not created yet are normal for a moment (a peer
     * created it first); kept without bound they are a leak: 64 MiB holds thousands. */
    cfg->orphan_bytes = 64u << 20;
    cfg->cuda_ipc_cache = 64;
    /* From it a call on host buffers on a GPU node pays the vote (ceil(log2 n) rounds of one
     * small message): measured here (4 ranks on 2 cores, a fake driver, host allreduce,
     * medians of 5) 1.40x at 256 KiB, 1.17x at 1 MiB, lost in the noise at 4 MiB. Below it a
     * device call is staged whole (two copies around the host algorithm); how much IPC gains
     * there is unmeasured on a GPU so far (the device check compares). */
    cfg->cuda_ipc_min = 1u << 20;
    /* Unmeasured on a GPU so far (the device check compares): a whole copy of 4 MiB over a
     * PCIe link takes 100-300 us, tens of transfers' per-copy cost. */
    cfg->cuda_pipeline_min = 4u << 20;
    err[0] = '\0';
    warn[0] = '\0';

    for (; envp != NULL && *envp != NULL; envp++) {
        const char *eq = strchr(*envp, '=');
        size_t len;

        if (strncmp(*envp, "COHORT_", 7) != 0 || eq == NULL) {
            continue;
        }
        len = (size_t)(eq - *envp);
        if (len >= sizeof(name)) {
            continue;
        }
        memcpy(name, *envp, len);
        name[len] = '\0';
        status = cohort_config_one(cfg, name, eq + 1, err, errlen, &known);
        if (status != COHORT_OK) {
            return status;
        }
        if (!known && used < warnlen) {
            used += (size_t)snprintf(warn + used, warnlen - used, "%s%s", used ? ", " : "", name);
        }
    }
    return COHORT_OK;
}
