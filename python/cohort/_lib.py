"""Loading libcohort and declaring its C signatures (ctypes; no compiler needed).

The library is looked up, first match wins:
  1. $COHORT_LIBRARY (a path to libcohort.so);
  2. the build tree the package sits in (<tree>/python/cohort -> <tree>/.libs/libcohort.so);
     plugins are then taken from <tree>/.libs unless COHORT_PLUGIN_PATH says otherwise;
  3. the library directory recorded by `make install` (cohort/_install.py);
  4. the dynamic linker's search path (libcohort.so.0).
"""
import ctypes
import ctypes.util
import os

from . import _status

c_int_p = ctypes.POINTER(ctypes.c_int)
c_req_p = ctypes.c_void_p  # cohort_request_t *
c_group_p = ctypes.c_void_p
c_ctx_p = ctypes.c_void_p
c_layout_p = ctypes.c_void_p

# COHORT_IN_PLACE is ((const void *)1)
IN_PLACE = ctypes.c_void_p(1)


class Stats(ctypes.Structure):
    _fields_ = [
        ("groups_created", ctypes.c_uint64),
        ("pmix_lookups", ctypes.c_uint64),
        ("endpoints", ctypes.c_uint64),
        ("messages_sent", ctypes.c_uint64),
        ("messages_dropped", ctypes.c_uint64),
        ("pmix_plugin", ctypes.c_char_p),
        ("progress", ctypes.c_char_p),
        ("messages_rejected", ctypes.c_uint64),
        ("peers_failed", ctypes.c_uint64),
        ("single_copies", ctypes.c_uint64),
        ("single_copy_bytes", ctypes.c_uint64),
        ("cuda_ipc_opens", ctypes.c_uint64),
        ("cuda_ipc_reuses", ctypes.c_uint64),
        ("cuda_staged_calls", ctypes.c_uint64),
        ("cuda_staged_xfers", ctypes.c_uint64),
        ("cuda_ipc_calls", ctypes.c_uint64),
        ("cuda_ipc_votes", ctypes.c_uint64),
    ]


class PeerInfo(ctypes.Structure):
    _fields_ = [
        ("world_rank", ctypes.c_int),
        ("wire_us", ctypes.c_double),
        ("pmix_lookups", ctypes.c_int),
        ("transports", ctypes.c_char * 128),
        ("same_node", ctypes.c_int),
        ("lookup_retry_us", ctypes.c_double),
        ("lookup_server_us", ctypes.c_double),
        ("lookup_poll_us", ctypes.c_double),
        ("lookup_tries", ctypes.c_int),
        ("card_us", ctypes.c_double),
        ("ep_create_us", ctypes.c_double),
        ("first_send_us", ctypes.c_double),
    ]


class CudaInfo(ctypes.Structure):
    _fields_ = [
        ("built", ctypes.c_int),
        ("devices", ctypes.c_int),
        ("ucx_cuda", ctypes.c_int),
        ("ipc", ctypes.c_int),
        ("reason", ctypes.c_char * 192),
    ]


def _candidates():
    env = os.environ.get("COHORT_LIBRARY")
    if env:
        yield env, None
        return
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.dirname(os.path.dirname(here))
    built = os.path.join(tree, ".libs", "libcohort.so")
    if os.path.exists(built) and os.path.exists(os.path.join(tree, "include", "cohort.h")):
        yield built, os.path.join(tree, ".libs")
    try:
        from . import _install  # written by `make install`

        yield os.path.join(_install.LIBDIR, "libcohort.so.0"), None
    except ImportError:
        pass
    found = ctypes.util.find_library("cohort")
    yield (found or "libcohort.so.0"), None


def _load():
    errors = []
    for path, plugin_dir in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
            continue
        # A build tree has its plugins beside the library, not in the installed directory.
        # This is the Python process's own environment, set before any context exists.
        if plugin_dir is not None and "COHORT_PLUGIN_PATH" not in os.environ:
            os.environ["COHORT_PLUGIN_PATH"] = plugin_dir
        return lib, path
    raise ImportError(
        "cohort: libcohort not found (set COHORT_LIBRARY to its path); tried: " + "; ".join(errors)
    )


lib, path = _load()


def _decl(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_st = ctypes.c_int
_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_i = ctypes.c_int
_reqpp = ctypes.POINTER(ctypes.c_void_p)

_decl("cohort_strerror", ctypes.c_char_p, _st)
_decl("cohort_init", _st, ctypes.POINTER(ctypes.c_void_p))
_decl("cohort_finalize", _st, _vp)
_decl("cohort_world_rank", _i, _vp)
_decl("cohort_world_size", _i, _vp)
_decl("cohort_world", _vp, _vp)
_decl("cohort_group_create", _st, _vp, ctypes.c_char_p, c_int_p, _i, ctypes.POINTER(ctypes.c_void_p))
_decl("cohort_group_free", _st, _vp)
_decl("cohort_group_rank", _i, _vp)
_decl("cohort_group_size", _i, _vp)
_decl("cohort_group_world_rank", _i, _vp, _i)
_decl("cohort_group_id", ctypes.c_uint64, _vp)
_decl("cohort_layout_create", _st, _vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
_decl("cohort_layout_group", _vp, _vp, ctypes.c_char_p)
_decl("cohort_layout_free", _st, _vp)

_decl("cohort_barrier", _st, _vp)
_decl("cohort_bcast", _st, _vp, _vp, _sz, _i, _i)
_decl("cohort_reduce", _st, _vp, _vp, _vp, _sz, _i, _i, _i)
_decl("cohort_allreduce", _st, _vp, _vp, _vp, _sz, _i, _i)
_decl("cohort_allgather", _st, _vp, _vp, _vp, _sz, _i)
_decl("cohort_reduce_scatter", _st, _vp, _vp, _vp, _sz, _i, _i)
_decl("cohort_alltoall", _st, _vp, _vp, _vp, _sz, _i)
_decl("cohort_send", _st, _vp, _vp, _sz, _i, _i, _i)
_decl("cohort_recv", _st, _vp, _vp, _sz, _i, _i, _i)

_decl("cohort_ibarrier", _st, _vp, _reqpp)
_decl("cohort_ibcast", _st, _vp, _vp, _sz, _i, _i, _reqpp)
_decl("cohort_ireduce", _st, _vp, _vp, _vp, _sz, _i, _i, _i, _reqpp)
_decl("cohort_iallreduce", _st, _vp, _vp, _vp, _sz, _i, _i, _reqpp)
_decl("cohort_iallgather", _st, _vp, _vp, _vp, _sz, _i, _reqpp)
_decl("cohort_ireduce_scatter", _st, _vp, _vp, _vp, _sz, _i, _i, _reqpp)
_decl("cohort_ialltoall", _st, _vp, _vp, _vp, _sz, _i, _reqpp)
_decl("cohort_isend", _st, _vp, _vp, _sz, _i, _i, _i, _reqpp)
_decl("cohort_irecv", _st, _vp, _vp, _sz, _i, _i, _i, _reqpp)

_decl("cohort_test", _st, _vp, c_int_p)
_decl("cohort_wait", _st, _vp)
_decl("cohort_request_free", None, _vp)
_decl("cohort_group_abort", _st, _vp)
_decl("cohort_group_set_stream", _st, _vp, _vp)

_decl("cohort_wired_peers", _i, _vp, c_int_p, _i)
_decl("cohort_failed_ranks", _i, _vp, c_int_p, _i)
_decl("cohort_peer_info", _st, _vp, _i, ctypes.POINTER(PeerInfo))
_decl("cohort_stats", _st, _vp, ctypes.POINTER(Stats))
_decl("cohort_cuda_info", _st, _vp, ctypes.POINTER(CudaInfo))


def strerror(status):
    s = lib.cohort_strerror(int(status))
    return s.decode() if s else "unknown status %d" % status


def check(status, what):
    """Raise the CohortError for a failed call; return the status otherwise."""
    if status < 0:
        raise _status.error(status, "%s: %s" % (what, strerror(status)))
    return status
