/*
 * The exchange over the caller's key-value store (cohort_init_exchange, cohort.h): no PMIx, no
 * module to load. A rank puts one key at init, "cohort/<instance>/<rank>/card", holding its host
 * identity and then its card (address_card.h: pid, UCX address); a peer's key is read the first
 * time something asks about that peer (its address, or whether it shares this node) and kept,
 * so each member's key is read once and a non-member's never.
 *
 * The value put is "<host name>|<boot id>|<pid namespace>" NUL, then the card. Two ranks share a
 * node when the three match: the same host name alone is not enough (containers often share
 * one), and single copy (process_vm_readv, pidfd_getfd) needs both processes in one kernel and
 * one PID namespace, which is what the boot id and the namespace name.
 */
#define _GNU_SOURCE /* gethostname's HOST_NAME_MAX, nanosleep */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/list.h"
#include "base/map.h"
#include "base/time.h"
#include "core/exchange_user.h"
#include "core/log.h"

#define COHORT_XU_IDENT_MAX 256
#define COHORT_XU_KEY_MAX   64
/* Asking again for a key nobody has put yet: from 1 ms, doubling, to 32 ms between asks. A
 * store across the network (torch's TCPStore) answers in about 0.1 ms a question, so this costs
 * it little while a peer is late, and a late peer is seen within 32 ms of its put. */
#define COHORT_XU_BACKOFF_MIN_S 0.001
#define COHORT_XU_BACKOFF_MAX_S 0.032
/* A late key is given up on this much before COHORT_TIMEOUT (a tenth of it when shorter): the
 * call that waits for the lookup was posted a moment before it and times out at COHORT_TIMEOUT,
 * and should fail with the lookup's reason, which names the key that never came, not with a
 * bare "timed out" (seen: a send to a rank never started, COHORT_TIMEOUT=3). */
#define COHORT_XU_EARLY_S 0.5

/* What this rank learnt of one peer: kept for the context's life (members only). */
typedef struct {
    char *ident; /* its host identity; NULL until its key was read */
    void *card;  /* its card */
    size_t len;
    int missing; /* its key never came within the bound: asked again, it fails at once */
} cohort_xu_peer_t;

struct cohort_pmix_ctx {
    cohort_exchange_t ex;
    cohort_pmix_opts_t opts;
    double bound_s;                  /* how long a key is waited for (COHORT_XU_EARLY_S) */
    char ident[COHORT_XU_IDENT_MAX]; /* this rank's host identity */
    cohort_map_t peers;              /* world rank + 1 -> cohort_xu_peer_t* */
    cohort_list_t lookups;           /* cohort_pmix_lookup_t in flight, freed at finalize */
};

struct cohort_pmix_lookup {
    cohort_pmix_ctx_t *p;
    int rank;
    double start;
    double retry_at; /* not before then: the key was not there last time */
    double backoff;
    double asked; /* when the store was last asked */
    int tries;
    cohort_list_t link;
};

static void cohort_xu_log(const cohort_pmix_ctx_t *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cohort_xu_log(const cohort_pmix_ctx_t *p, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    p->opts.log(p->opts.log_arg, level, fmt, ap);
    va_end(ap);
}

static void cohort_xu_key(const cohort_pmix_ctx_t *p, int rank, char *key)
{
    snprintf(key, COHORT_XU_KEY_MAX, "cohort/%d/%d/card", p->opts.instance, rank);
}

/* The first line of @a path, without its newline ("" when it cannot be read). */
static void cohort_xu_read_line(const char *path, char *out, size_t outlen)
{
    FILE *f = fopen(path, "r");

    out[0] = '\0';
    if (f == NULL) {
        return;
    }
    if (fgets(out, (int)outlen, f) == NULL) {
        out[0] = '\0';
    }
    out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static void cohort_xu_ident_make(char *ident, size_t len)
{
    char host[HOST_NAME_MAX + 1] = "", boot[64], ns[64] = "";
    ssize_t n;

    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    host[strcspn(host, "|")] = '\0';
    cohort_xu_read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));
    n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    ns[n > 0 ? n : 0] = '\0';
    snprintf(ident, len, "%s|%s|%s", host, boot, ns);
}

cohort_status_t cohort_exchange_user_check(const cohort_exchange_t *ex)
{
    const char *bad = NULL;

    if (ex == NULL) {
        bad = "ex is NULL";
    } else if (ex->put == NULL) {
        bad = "ex->put is NULL";
    } else if (ex->get == NULL) {
        bad = "ex->get is NULL";
    } else if (ex->size <= 0) {
        bad = "ex->size must be > 0";
    } else if (ex->rank < 0 || ex->rank >= ex->size) {
        bad = "ex->rank out of range";
    }
    if (bad != NULL) {
        if (ex != NULL && ex->put != NULL && ex->get != NULL) {
            cohort_error(NULL, "cohort_init_exchange: %s (rank %d, size %d)", bad, ex->rank,
                         ex->size);
        } else {
            cohort_error(NULL, "cohort_init_exchange: %s", bad);
        }
        return COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

cohort_status_t cohort_exchange_user_init(const cohort_exchange_t *ex,
                                          const cohort_pmix_opts_t *opts, cohort_pmix_ctx_t **pctx,
                                          cohort_pmix_job_t *job)
{
    cohort_pmix_ctx_t *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    p->ex = *ex;
    p->opts = *opts;
    p->bound_s =
        opts->timeout_s -
        (opts->timeout_s * 0.1 < COHORT_XU_EARLY_S ? opts->timeout_s * 0.1 : COHORT_XU_EARLY_S);
    cohort_map_init(&p->peers);
    cohort_list_init(&p->lookups);
    cohort_xu_ident_make(p->ident, sizeof(p->ident));
    job->rank = ex->rank;
    job->size = ex->size;
    job->singleton = 0;
    *pctx = p;
    return COHORT_OK;
}

static cohort_status_t cohort_xu_publish(cohort_pmix_ctx_t *p, const void *card, size_t len)
{
    size_t ilen = strlen(p->ident) + 1;
    char key[COHORT_XU_KEY_MAX];
    uint8_t *value = malloc(ilen + len);
    cohort_status_t status;

    if (value == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(value, p->ident, ilen);
    memcpy(value + ilen, card, len);
    cohort_xu_key(p, p->ex.rank, key);
    status = p->ex.put(p->ex.arg, key, value, ilen + len);
    free(value);
    if (status != COHORT_OK) {
        cohort_xu_log(p, 0, "cohort_init_exchange: put of '%s' returned %d (%s)%s", key,
                      (int)status, cohort_strerror(status),
                      status > 0 ? ": put must have stored the value when it returns" : "");
        return status < 0 ? status : COHORT_ERR_INVALID_ARG;
    }
    return COHORT_OK;
}

static cohort_xu_peer_t *cohort_xu_peer(cohort_pmix_ctx_t *p, int rank)
{
    cohort_xu_peer_t *e = cohort_map_get(&p->peers, (uint64_t)rank + 1);

    if (e == NULL && (e = calloc(1, sizeof(*e))) != NULL &&
        cohort_map_put(&p->peers, (uint64_t)rank + 1, e) != COHORT_OK) {
        free(e);
        e = NULL;
    }
    return e;
}

/* Ask the store once for @a rank's key: COHORT_OK (its identity and card kept in @a e),
 * COHORT_INPROGRESS (not put yet), or why not (logged). */
static cohort_status_t cohort_xu_fetch(cohort_pmix_ctx_t *p, int rank, cohort_xu_peer_t *e)
{
    char key[COHORT_XU_KEY_MAX];
    void *value = NULL;
    size_t len = 0;
    const char *nul;
    cohort_status_t status;

    cohort_xu_key(p, rank, key);
    status = p->ex.get(p->ex.arg, key, &value, &len);
    if (status == COHORT_INPROGRESS) {
        free(value);
        return status;
    }
    if (status != COHORT_OK) {
        free(value);
        cohort_xu_log(p, 0, "get of '%s' (rank %d's card) failed: %s", key, rank,
                      cohort_strerror(status));
        return status < 0 ? status : COHORT_ERR_INVALID_ARG;
    }
    nul = value == NULL ? NULL : memchr(value, '\0', len);
    if (nul == NULL || (size_t)(nul - (const char *)value) + 1 >= len) {
        cohort_xu_log(p, 0,
                      "get of '%s' gave %zu bytes that are not what cohort put there (another "
                      "user of the store, or another version of cohort?)",
                      key, len);
        free(value);
        return COHORT_ERR_MISMATCH;
    }
    size_t ilen = (size_t)(nul - (const char *)value) + 1;
    e->ident = malloc(ilen);
    e->card = malloc(len - ilen);
    if (e->ident == NULL || e->card == NULL) {
        free(e->ident);
        free(e->card);
        e->ident = NULL;
        e->card = NULL;
        free(value);
        return COHORT_ERR_NO_MEMORY;
    }
    memcpy(e->ident, value, ilen);
    memcpy(e->card, (const char *)value + ilen, len - ilen);
    e->len = len - ilen;
    free(value);
    return COHORT_OK;
}

/* The key of @a rank never came: said once, and asked again it fails at once. */
static cohort_status_t cohort_xu_missing(cohort_pmix_ctx_t *p, int rank, cohort_xu_peer_t *e,
                                         double waited)
{
    char key[COHORT_XU_KEY_MAX];

    if (!e->missing) {
        cohort_xu_key(p, rank, key);
        cohort_xu_log(p, 0,
                      "rank %d never put its card ('%s' not in the store after %.1f s, "
                      "COHORT_TIMEOUT): was it started, with the same store and world size?",
                      rank, key, waited);
        e->missing = 1;
    }
    return COHORT_ERR_TIMEOUT;
}

static double cohort_xu_backoff_next(double backoff)
{
    return backoff * 2 < COHORT_XU_BACKOFF_MAX_S ? backoff * 2 : COHORT_XU_BACKOFF_MAX_S;
}

static void cohort_xu_nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    nanosleep(&ts, NULL);
}

/* @a rank's entry with its key read, waiting for it within the bound. Only node_info waits:
 * see cohort.h (cohort_init_exchange) for why. */
static cohort_status_t cohort_xu_known(cohort_pmix_ctx_t *p, int rank, cohort_xu_peer_t **ep)
{
    cohort_xu_peer_t *e = cohort_xu_peer(p, rank);
    double start = cohort_time_now(), backoff = COHORT_XU_BACKOFF_MIN_S;
    cohort_status_t status;

    if (e == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    *ep = e;
    if (e->ident != NULL) {
        return COHORT_OK;
    }
    if (e->missing) {
        return COHORT_ERR_TIMEOUT;
    }
    while ((status = cohort_xu_fetch(p, rank, e)) == COHORT_INPROGRESS) {
        double waited = cohort_time_now() - start;
        if (waited >= p->bound_s) {
            return cohort_xu_missing(p, rank, e, waited);
        }
        if (backoff == COHORT_XU_BACKOFF_MIN_S) {
            cohort_xu_log(p, 3,
                          "rank %d has not put its card yet: waiting for it (where it "
                          "runs decides the group's algorithms)",
                          rank);
        }
        cohort_xu_nap(backoff);
        backoff = cohort_xu_backoff_next(backoff);
    }
    return status;
}

static cohort_status_t cohort_xu_lookup_start(cohort_pmix_ctx_t *p, int rank,
                                              cohort_pmix_lookup_t **op_p)
{
    cohort_pmix_lookup_t *op = calloc(1, sizeof(*op));

    if (op == NULL) {
        return COHORT_ERR_NO_MEMORY;
    }
    op->p = p;
    op->rank = rank;
    op->start = cohort_time_now();
    op->backoff = COHORT_XU_BACKOFF_MIN_S;
    cohort_list_push(&p->lookups, &op->link);
    *op_p = op;
    return COHORT_OK;
}

static cohort_status_t cohort_xu_lookup_end(cohort_pmix_lookup_t *op, cohort_status_t status)
{
    cohort_list_del(&op->link);
    free(op);
    return status;
}

static cohort_status_t cohort_xu_lookup_test(cohort_pmix_lookup_t *op, void **addr, size_t *len,
                                             cohort_pmix_lookup_times_t *times)
{
    cohort_pmix_ctx_t *p = op->p;
    cohort_xu_peer_t *e = cohort_xu_peer(p, op->rank);
    cohort_status_t status;
    double now;

    if (e == NULL) {
        return cohort_xu_lookup_end(op, COHORT_ERR_NO_MEMORY);
    }
    if (e->missing) {
        return cohort_xu_lookup_end(op, COHORT_ERR_TIMEOUT);
    }
    if (e->card == NULL) {
        now = cohort_time_now();
        if (now < op->retry_at) {
            return COHORT_INPROGRESS;
        }
        op->asked = now;
        op->tries++;
        status = cohort_xu_fetch(p, op->rank, e);
        if (status == COHORT_INPROGRESS) {
            if (now - op->start >= p->bound_s) {
                return cohort_xu_lookup_end(op, cohort_xu_missing(p, op->rank, e, now - op->start));
            }
            /* The last ask at the bound itself, not up to a backoff after it. */
            op->retry_at = now + op->backoff < op->start + p->bound_s ? now + op->backoff
                                                                      : op->start + p->bound_s;
            op->backoff = cohort_xu_backoff_next(op->backoff);
            return COHORT_INPROGRESS;
        }
        if (status != COHORT_OK) {
            return cohort_xu_lookup_end(op, status);
        }
    }
    /* The core frees what it gets; the kept card answers a later lookup of the same peer (one
     * for its pid only, then one to wire it) without asking the store again. */
    *addr = malloc(e->len);
    if (*addr == NULL) {
        return cohort_xu_lookup_end(op, COHORT_ERR_NO_MEMORY);
    }
    memcpy(*addr, e->card, e->len);
    *len = e->len;
    /* The store answers inside the test that asks it: no thread between. A card already kept
     * took no try at all. */
    times->answered = cohort_time_now();
    times->retry_s = op->tries > 0 ? op->asked - op->start : 0;
    times->tries = op->tries;
    return cohort_xu_lookup_end(op, COHORT_OK);
}

static cohort_status_t cohort_xu_node_info(cohort_pmix_ctx_t *p, int rank, int *same_node,
                                           uint32_t *node_id, char *host, size_t hostlen)
{
    const char *ident = p->ident;
    cohort_xu_peer_t *e;

    if (rank != p->ex.rank) {
        cohort_status_t status = cohort_xu_known(p, rank, &e);
        if (status != COHORT_OK) {
            return status;
        }
        ident = e->ident;
    }
    *same_node = strcmp(ident, p->ident) == 0;
    if (node_id != NULL) {
        /* Nobody numbers the nodes here: a number would need every rank's identity. */
        *node_id = UINT32_MAX;
        if (hostlen > 0) {
            snprintf(host, hostlen, "%.*s", (int)strcspn(ident, "|"), ident);
        }
    }
    return COHORT_OK;
}

static cohort_status_t cohort_xu_finalize(cohort_pmix_ctx_t *p)
{
    cohort_list_t *pos, *tmp;

    if (p == NULL) {
        return COHORT_OK;
    }
    cohort_list_for_each(pos, tmp, &p->lookups)
    {
        cohort_xu_lookup_end(cohort_container_of(pos, cohort_pmix_lookup_t, link), COHORT_OK);
    }
    for (size_t i = 0; i < p->peers.cap; i++) {
        cohort_xu_peer_t *e = p->peers.keys[i] != 0 ? p->peers.vals[i] : NULL;
        if (e != NULL) {
            free(e->ident);
            free(e->card);
            free(e);
        }
    }
    cohort_map_cleanup(&p->peers);
    free(p);
    return COHORT_OK;
}

const cohort_pmix_plugin_t cohort_exchange_user = {
    .abi = COHORT_PMIX_PLUGIN_ABI,
    .name = "user",
    .description = "the caller's key-value store (cohort_init_exchange): one put at init, a "
                   "member's key read on first use",
    .init = NULL, /* the store comes in through cohort_exchange_user_init */
    .publish = cohort_xu_publish,
    .lookup_start = cohort_xu_lookup_start,
    .lookup_test = cohort_xu_lookup_test,
    .node_info = cohort_xu_node_info,
    .finalize = cohort_xu_finalize,
};
