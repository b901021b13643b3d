"""cohort: process groups and collectives over UCX, bootstrapped through PMIx, where a group
costs only its own members anything. A pure-Python (ctypes) binding of libcohort.

    import numpy as np, cohort
    with cohort.init() as ctx:                   # under mpirun / srun / prterun, or alone
        lay = ctx.layout("tp=2,pp=2")            # this rank's groups, member-only
        a = np.ones(4, dtype=np.float32)
        lay.group("tp").allreduce(a)             # in place; or allreduce(a, out)
        req = ctx.world.iallgather(a, np.empty(4 * ctx.size, np.float32))
        out = req.wait()

`import cohort.torch` registers the torch.distributed backend "cohort".
"""
from ._status import (CohortError, InvalidArgument, NotMember, PeerFailed, Revoked, Timeout,
                      Unsupported)
from ._status import NAMES as STATUS_NAMES
from ._buffers import (INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32,
                       FLOAT64, SUM, PROD, MIN, MAX, AVG, DTYPE_NAMES, OP_NAMES, as_dtype)
from ._core import Context, Group, Layout, Request, init
from . import _lib
from . import megatron

__version__ = "0.1.0"
library_path = _lib.path


def strerror(status):
    """cohort_strerror()."""
    return _lib.strerror(status)


__all__ = ["init", "Context", "Group", "Layout", "Request", "CohortError", "InvalidArgument",
           "NotMember", "PeerFailed", "Revoked", "Timeout", "Unsupported", "strerror",
           "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16",
           "FLOAT32", "FLOAT64", "SUM", "PROD", "MIN", "MAX", "AVG", "as_dtype", "megatron"]
