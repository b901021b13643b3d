"""cohort status codes and the exceptions that carry them (no library needed)."""

OK = 0
INPROGRESS = 1
ERR_INVALID_ARG = -1
ERR_NO_MEMORY = -2
ERR_NOT_MEMBER = -3
ERR_UNSUPPORTED = -4
ERR_PMIX = -5
ERR_UCX = -6
ERR_TIMEOUT = -7
ERR_PEER_FAILED = -8
ERR_MISMATCH = -9
ERR_CUDA = -10
ERR_REVOKED = -11
ERR_CANCELED = -12

NAMES = {
    OK: "COHORT_OK",
    INPROGRESS: "COHORT_INPROGRESS",
    ERR_INVALID_ARG: "COHORT_ERR_INVALID_ARG",
    ERR_NO_MEMORY: "COHORT_ERR_NO_MEMORY",
    ERR_NOT_MEMBER: "COHORT_ERR_NOT_MEMBER",
    ERR_UNSUPPORTED: "COHORT_ERR_UNSUPPORTED",
    ERR_PMIX: "COHORT_ERR_PMIX",
    ERR_UCX: "COHORT_ERR_UCX",
    ERR_TIMEOUT: "COHORT_ERR_TIMEOUT",
    ERR_PEER_FAILED: "COHORT_ERR_PEER_FAILED",
    ERR_MISMATCH: "COHORT_ERR_MISMATCH",
    ERR_CUDA: "COHORT_ERR_CUDA",
    ERR_REVOKED: "COHORT_ERR_REVOKED",
    ERR_CANCELED: "COHORT_ERR_CANCELED",
}


class CohortError(RuntimeError):
    """A cohort call failed. `status` is the cohort_status_t (negative), `name` its C name."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = int(status)
        self.name = NAMES.get(self.status, "COHORT_STATUS_%d" % self.status)
        self.message = message

    def __str__(self):
        return "%s (%s)" % (self.message, self.name)


class InvalidArgument(CohortError, ValueError):
    """COHORT_ERR_INVALID_ARG: also a ValueError."""


class Unsupported(CohortError, NotImplementedError):
    """COHORT_ERR_UNSUPPORTED: also a NotImplementedError."""


class Timeout(CohortError, TimeoutError):
    """COHORT_ERR_TIMEOUT: also a TimeoutError. The request stays valid: wait again or free it."""


class NotMember(CohortError):
    """COHORT_ERR_NOT_MEMBER."""


class Revoked(CohortError):
    """COHORT_ERR_REVOKED: the group was aborted."""


class PeerFailed(CohortError):
    """COHORT_ERR_PEER_FAILED."""


_CLASSES = {
    ERR_INVALID_ARG: InvalidArgument,
    ERR_UNSUPPORTED: Unsupported,
    ERR_TIMEOUT: Timeout,
    ERR_NOT_MEMBER: NotMember,
    ERR_REVOKED: Revoked,
    ERR_PEER_FAILED: PeerFailed,
}


def error(status, message):
    return _CLASSES.get(int(status), CohortError)(status, message)
