"""torch.distributed backend "cohort", registered by `import cohort.torch`.

    # torchrun --nproc-per-node 4 train.py
    import torch.distributed as dist, cohort.torch
    dist.init_process_group("cohort")
    tp = dist.new_group([0, 1], use_local_synchronization=True)  # called by ranks 0 and 1 only
    dist.all_reduce(t, group=tp)

The backend is C++ (cohort._cohort_torch, python/cohort/csrc): a c10d::Backend for torch 2.x
(built and tested against torch 2.15.0 from PyPI; torch 1.13 is not supported), registered with
extended_api=True for devices "cpu" and "cuda". One cohort context per process, made by the
first group's creator on a progress thread of its own that makes every libcohort call but
group creation (made on the caller's thread: it sends nothing); each operation returns a Work
whose Future that thread completes, so communication overlaps
compute and torch's C++ clients (DistributedDataParallel, comm hooks,
ZeroRedundancyOptimizer) work. Errors are RuntimeErrors whose text ends in the cohort status
name, "[COHORT_ERR_TIMEOUT]"; a timed-out operation says " Timed out " (torch's wording) and
revokes its group.

Bootstrap (how the context finds its world):
- under mpirun, srun or prterun (PMIX_NAMESPACE set): PMIx, cohort_init; torch's rank must be
  the launcher's (init_process_group() below fills RANK, WORLD_SIZE and MASTER_* in from it);
- otherwise (torchrun, any init_method): through the c10d Store the creator is given,
  cohort_init_exchange: one put of this rank's card, and a peer's card read on first use of
  that peer, never waited on, never an allgather. World rank and size come from torch.
COHORT_BOOTSTRAP=pmix|store chooses.

Groups: `dist.new_group(ranks, use_local_synchronization=True)` called by the members only
makes the cohort group from the members' ranks alone, with no message; `dist.new_group(ranks)`
called by every rank works too (non-members get no cohort group). new_group() below is that
call for members, the non-member handle for the others.
"""
import datetime
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from .bench import _free_port

__all__ = ["BACKEND", "info", "init_process_group", "new_group", "cohort_group"]

BACKEND = "cohort"


def _load_extension():
    """The backend's module: $COHORT_TORCH_EXTENSION (a path), the installed module beside this
    package, or the build tree's (<tree>/python/cohort/.libs). Returns (module, path); raises
    ImportError saying why there is none."""
    import importlib.machinery
    import importlib.util
    from . import _lib  # noqa: F401 - libcohort loaded first: the extension's NEEDED entry
    #                     (libcohort.so.0) then resolves to the same library, build tree or not
    where = os.environ.get("COHORT_TORCH_EXTENSION", "")
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [where] if where else [
        os.path.join(here, n) for n in os.listdir(here) if n.startswith("_cohort_torch.")
        and n.endswith(".so")] + [os.path.join(here, ".libs", "_cohort_torch.so")]
    for path in candidates:
        if not os.path.exists(path):
            continue
        _check_built_for(path)
        loader = importlib.machinery.ExtensionFileLoader("cohort._cohort_torch", path)
        spec = importlib.util.spec_from_file_location("cohort._cohort_torch", path,
                                                      loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod, path
    raise ImportError(
        "cohort.torch: the torch backend (_cohort_torch.so) was not built for torch %s: "
        "configure PYTHON=<a python with torch 2.x> (scripts/python-env.sh makes one), and see "
        "configure's 'the torch backend is skipped' line" % torch.__version__
        if not where else "cohort.torch: COHORT_TORCH_EXTENSION=%s does not exist" % where)


def _check_built_for(path):
    """ImportError unless the module at path was built for this torch (its version and
    directory, written into it by configure): a module built for another torch would load a
    second libtorch into the process, which crashes."""
    marker = b"cohort-torch-built-for="
    with open(path, "rb") as f:
        data = f.read()
    i = data.find(marker)
    built = data[i + len(marker):data.index(b"\0", i)].decode() if i >= 0 else "unknown"
    here = "%s@%s" % (torch.__version__, os.path.dirname(torch.__file__))
    version, _, where = built.partition("@")
    if built != "unknown" and (version != torch.__version__ or os.path.realpath(where) !=
                               os.path.realpath(os.path.dirname(torch.__file__))):
        raise ImportError("cohort.torch: %s was built for torch %s, not this torch %s: "
                          "configure PYTHON=%s and build again" % (path, built, here,
                                                                   sys.executable))


_ext, _ext_where = _load_extension()


def info():
    """{"backend": "c++", "where": the extension's path, "bootstrap": "pmix" | "store" | None
    (not started yet)}."""
    return {"backend": "c++", "where": _ext_where,
            "bootstrap": _ext.bootstrap() if _ext.running() else None}


def _create(opts, backend_options=None):
    """torch's creator (extended_api): one group's backend for this member. The default group
    (global_ranks_in_group empty) carries the world's rank and size, and its creator starts the
    process's cohort context."""
    ranks = [int(r) for r in opts.global_ranks_in_group]
    if ranks:
        world_rank, world_size = dist.get_rank(), dist.get_world_size()
    else:
        world_rank, world_size = opts.group_rank, opts.group_size
    return _ext.create(opts.store, opts.group_rank, opts.group_size, ranks, world_rank,
                       world_size, opts.timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])


_register()


def new_group(ranks, timeout=None, backend=BACKEND, pg_options=None):
    """A member-only group: `dist.new_group(ranks, use_local_synchronization=True)` for the
    members, torch's non-member handle (GroupMember.NON_GROUP_MEMBER) for every other rank,
    which need not call it at all. Members call it in the same order; no message on cohort."""
    ranks = sorted(int(r) for r in ranks)
    if dist.get_rank() not in ranks:
        return c10d.GroupMember.NON_GROUP_MEMBER
    return dist.new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                          use_local_synchronization=True)


def _backend(pg):
    pg = pg if pg is not None else c10d._get_default_group()
    return pg._get_backend(torch.device("cpu"))


class _GroupView:
    """What the backend shows of a group's cohort group (it lives on the progress thread)."""

    def __init__(self, backend):
        self._b = backend

    id = property(lambda self: _ext.cohort_group_id(self._b))
    rank = property(lambda self: self._b.rank())
    size = property(lambda self: self._b.size())
    ranks = property(lambda self: list(_ext.global_ranks(self._b)))
    timeout_s = property(lambda self: _ext.timeout_s(self._b))

    def abort(self):
        """cohort_group_abort: pending and later operations fail with COHORT_ERR_REVOKED."""
        _ext.abort_group(self._b)

    def __repr__(self):
        return "<cohort group 0x%016x rank %d of %d>" % (self.id, self.rank, self.size)


def cohort_group(pg=None):
    """The cohort group behind a process group of backend cohort (None: the default group)."""
    return _GroupView(_backend(pg))


def init_process_group(backend=BACKEND, timeout=None, **kwargs):
    """dist.init_process_group, with env:// filled in under mpirun/srun where not set already:
    RANK and WORLD_SIZE from PMIx, MASTER_ADDR/MASTER_PORT chosen by rank 0 (its host name, a
    free port) and broadcast over cohort (the backend's own context, started here through
    PMIx). A process started alone (no launcher) is a world of one. Under torchrun everything
    is set: it is dist.init_process_group."""
    env = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    if not all(k in os.environ for k in env) and _ext.use_store() and "RANK" not in os.environ:
        # started alone, no launcher: a world of one (as cohort_init's singleton)
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=os.environ.get("MASTER_PORT", str(_free_port())))
    if not all(k in os.environ for k in env):
        rank, size = _ext.start_pmix()
        os.environ.setdefault("RANK", str(rank))
        os.environ.setdefault("WORLD_SIZE", str(size))
        if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
            buf = torch.zeros(256, dtype=torch.uint8)
            if rank == 0:
                addr = os.environ.get("MASTER_ADDR") or socket.gethostname()
                port = os.environ.get("MASTER_PORT") or _free_port()
                text = ("%s %s" % (addr, port)).encode()
                buf[:len(text)] = torch.frombuffer(bytearray(text), dtype=torch.uint8)
            _ext.broadcast_world(buf, 0)
            addr, port = bytes(buf.tolist()).rstrip(b"\0").decode().split()
            os.environ.setdefault("MASTER_ADDR", addr)
            os.environ.setdefault("MASTER_PORT", port)
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=timeout)
    if timeout is not None:
        kwargs["timeout"] = timeout
    dist.init_process_group(backend, **kwargs)


import atexit  # noqa: E402

# Before the interpreter tears down: finish the progress thread and cohort_finalize the
# context (a std::thread still running at exit would abort the process).
atexit.register(_ext.shutdown)
