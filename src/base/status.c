#include "cohort.h"

const char *cohort_strerror(cohort_status_t status)
{
    switch (status) {
    case COHORT_OK:
        return "success";
    case COHORT_INPROGRESS:
        return "operation in progress";
    case COHORT_ERR_INVALID_ARG:
        return "invalid argument";
    case COHORT_ERR_NO_MEMORY:
        return "out of memory";
    case COHORT_ERR_NOT_MEMBER:
        return "caller is not a member of the group";
    case COHORT_ERR_UNSUPPORTED:
        return "not supported";
    case COHORT_ERR_PMIX:
        return "PMIx error";
    case COHORT_ERR_UCX:
        return "UCX error";
    case COHORT_ERR_TIMEOUT:
        return "timed out";
    case COHORT_ERR_PEER_FAILED:
        return "peer failed";
    case COHORT_ERR_MISMATCH:
        return "operation mismatch between ranks";
    case COHORT_ERR_CUDA:
        return "CUDA error";
    case COHORT_ERR_REVOKED:
        return "group revoked";
    case COHORT_ERR_CANCELED:
        return "cancelled by its sender";
    }
    return "unknown status";
}
