/* COHORT_* environment settings, parsed once at init. */
#ifndef COHORT_CONFIG_H
#define COHORT_CONFIG_H

#include <stddef.h>
#include "cohort.h"

typedef enum {
    COHORT_PROGRESS_YIELD, /* poll; sched_yield when nothing progressed (default) */
    COHORT_PROGRESS_SPIN,  /* poll only */
    COHORT_PROGRESS_BLOCK  /* sleep on the UCX worker's event fd */
} cohort_progress_mode_t;

/* Places where COHORT_FAULT can make an allocation fail, to test the error paths that
 * keep members in step. */
typedef enum {
    COHORT_FAULT_NONE = 0,
    COHORT_FAULT_GROUP_CREATE, /* group_create: the group's own allocations */
    COHORT_FAULT_SEND,         /* a transfer's send, after validation */
    COHORT_FAULT_MSG_KEEP,     /* keeping an unexpected message */
    COHORT_FAULT_CMA,          /* a single-copy read: refused as if by the kernel (EPERM) */
    COHORT_FAULT_SHM,          /* reaching a group's shared segment: refused likewise */
    COHORT_FAULT_STALL,        /* a same-node collective's write into another member: 2 s late */
    COHORT_FAULT_WRITE_GAP,    /* the same write, announced, then made 3 s later */
    COHORT_FAULT_POST,         /* a collective's post, after validation: as if staging failed */
    COHORT_FAULT_PID,          /* a same-node descriptor this rank publishes (direct, CMA send)
                                * names its parent */
    COHORT_FAULT_SHM_PID,      /* the shared segment's setup descriptor (group rank 0's) names
                                * its parent */
    COHORT_FAULT_EP_DROP,      /* a send to a wired peer: its endpoint closed by force first, as
                                * UCX does when it loses a connection (the peer sees a reset) */
    COHORT_FAULT_SHM_LATE,     /* a deferred call's setup of the segment (COHORT_SHM_DEFER) is
                                * skipped here: this rank makes or reaches it only in the setup
                                * call, as a slow member would */
    COHORT_FAULT_SHM_VIEW,     /* mapping group rank 0's arena (a member's first group with it as
                                * group rank 0) fails, as if pidfd_getfd were refused */
    COHORT_FAULT_LAST
} cohort_fault_point_t;

/* COHORT_CUDA_IPC. auto: large same-node calls vote on it (coll/path/cuda_ipc.c); on: same-node
 * collectives through CUDA IPC whatever the buffers; off: never. */
typedef enum {
    COHORT_CUDA_IPC_AUTO,
    COHORT_CUDA_IPC_OFF,
    COHORT_CUDA_IPC_ON
} cohort_cuda_ipc_mode_t;

#define COHORT_CONFIG_NAME_MAX 64
#define COHORT_CONFIG_PATH_MAX 4096
#define COHORT_CONFIG_ALGO_MAX 32

/* A COHORT_ALGO_* setting, kept as text: the collective layer owns its meaning. */
typedef struct {
    char name[COHORT_CONFIG_NAME_MAX]; /* after "COHORT_ALGO_": "ALLREDUCE", "RING_SEGMENT" */
    char value[256];
} cohort_config_algo_t;

typedef enum { COHORT_CMA_OFF, COHORT_CMA_AUTO, COHORT_CMA_ON } cohort_cma_mode_t;

typedef struct {
    char pmix_plugin[COHORT_CONFIG_NAME_MAX]; /* default "dmodex" */
    char plugin_path[COHORT_CONFIG_PATH_MAX]; /* colon-separated; "" when unset */
    cohort_progress_mode_t progress;
    double timeout_s;    /* 0: no timeout */
    double keepalive_s;  /* COHORT_KEEPALIVE_S: UCX keepalive interval; 0: UCX's own */
    double watch_s;      /* COHORT_WATCH_S: wire a peer a receive waited this long on; 0: never */
    int check;           /* COHORT_CHECK: 0 or 1 */
    int cuda_off;        /* COHORT_CUDA=off: every buffer is host memory, CUDA never loaded */
    int cuda_ipc;        /* COHORT_CUDA_IPC: cohort_cuda_ipc_mode_t */
    int cuda_ipc_cache;  /* COHORT_CUDA_IPC_CACHE: unused peers' mappings kept */
    int shm_arena;       /* COHORT_SHM_ARENA: segments in the process's arena (mem/arena.h) */
    int shm_defer;       /* COHORT_SHM_DEFER: a group's first segment calls run on messages */
    size_t cuda_ipc_min; /* COHORT_CUDA_IPC_MIN: bytes per member from which auto votes */
    size_t cuda_pipeline_min; /* COHORT_CUDA_PIPELINE_MIN: device calls staged per transfer */
    cohort_cma_mode_t cma;    /* COHORT_CMA */
    size_t cma_min;           /* COHORT_CMA_MIN: bytes from which a same-node send is single copy */
    size_t cma_chunk;         /* COHORT_CMA_CHUNK: bytes a single-copy receive reads per step */
    int log_level;            /* cohort_log_level_t */
    size_t orphan_bytes;      /* COHORT_ORPHAN_LIMIT: eager bytes kept for groups not created */
    int fault_point;          /* COHORT_FAULT=<point>:<n>[@<rank>]: the n-th pass through point */
    int fault_nth;            /* fails, on every rank or on that world rank only */
    int fault_rank;
    int nalgo;
    cohort_config_algo_t algo[COHORT_CONFIG_ALGO_MAX];
} cohort_config_t;

/**
 * Fill @a cfg from an environment block (NULL-terminated "NAME=value" strings). Every
 * COHORT_* variable is checked: a bad value is COHORT_ERR_INVALID_ARG with @a err naming the
 * variable and what it accepts; an unknown COHORT_* name is reported in @a warn (not an error,
 * so that a program may use its own COHORT_ variables) — both are "" when there is nothing to
 * say. COHORT_ALGO_* values are kept as text and checked by the collective layer.
 */
cohort_status_t cohort_config_parse(cohort_config_t *cfg, char *const *envp, char *err,
                                    size_t errlen, char *warn, size_t warnlen);

const char *cohort_progress_mode_name(cohort_progress_mode_t mode);

#endif
