"""torch.distributed backend "cohort", registered by `import cohort.torch`.

    import torch.distributed as dist, cohort.torch
    cohort.torch.init_process_group()        # = dist.init_process_group("cohort"), env filled in
    tp = dist.new_group([0, 1])              # classic: every rank calls it
    tp = cohort.torch.new_group([0, 1])      # member-only: only ranks 0 and 1 call it; no store,
                                             # no barrier, no message
    dist.all_reduce(t, group=tp)

Under mpirun/srun the ranks come from the launcher's PMIx server: torch's rank must be the PMIx
rank.

Two implementations, one at a time (`info()` says which runs):
- "c++" (cohort._cohort_torch, built by configure --with-torch): ProcessGroupCohort in C++ with
  its own cohort context on one progress thread that owns every libcohort call; a Work per
  operation whose Future completes from that thread, so communication overlaps compute and
  torch's C++ clients (DistributedDataParallel, FSDP, ZeroRedundancyOptimizer, comm hooks) work.
  CPU tensors only (this torch is CPU-only: no device path could be tested). Also bool tensors
  (as uint8), AVG on integers (a truncating division), all_gather_coalesced, recv from any
  source. Errors are
  RuntimeErrors whose text ends in the cohort status name, "[COHORT_ERR_REVOKED]".
- "python" (below, over ctypes), the fallback where the extension was not built: CPU or CUDA
  tensors (CUDA ones staged by libcohort, docs/cuda.md); its Work is not seen by torch's C++
  clients (DDP hangs at construction). Implemented:
all_reduce (SUM, PRODUCT, MIN, MAX, AVG), broadcast, reduce, all_gather (list and into one
tensor), reduce_scatter (list and tensor), all_to_all / all_to_all_single (even and uneven
splits), gather, scatter, barrier, send/recv/isend/irecv, all_reduce_coalesced; async_op=True
returns a Work whose wait() raises the cohort error.

Written against Debian's torch 1.13, where distributed_c10d calls the process group's methods
from Python and creators registered with extended_api=True receive global_ranks_in_group.
"""
import datetime
import os
import socket

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
from torch._C._distributed_c10d import ProcessGroup, Work

import cohort
from . import _status

__all__ = ["ProcessGroupCohort", "context", "init_process_group", "new_group", "cohort_group",
           "BACKEND"]

BACKEND = "cohort"
# Point-to-point tags cohort.torch uses itself (uneven all_to_all, gather, scatter); user
# send/recv tags below this never meet them.
_TAG_A2A = 0x7FFF0001
_TAG_GATHER = 0x7FFF0002
_TAG_SCATTER = 0x7FFF0003

_ctx = None


def _load_extension():
    """The C++ backend: $COHORT_TORCH_EXTENSION (a path; "none" forces the Python backend), the
    installed module beside this package, or the build tree's (<tree>/python/cohort/.libs).
    Returns (module or None, where or why not)."""
    import importlib.machinery
    import importlib.util
    from . import _lib  # noqa: F401 - libcohort loaded first: the extension's NEEDED entry
    #                     (libcohort.so.0) then resolves to the same library, build tree or not
    where = os.environ.get("COHORT_TORCH_EXTENSION", "")
    if where == "none":
        return None, "COHORT_TORCH_EXTENSION=none"
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [where] if where else [
        os.path.join(here, n) for n in os.listdir(here) if n.startswith("_cohort_torch.")
        and n.endswith(".so")] + [os.path.join(here, ".libs", "_cohort_torch.so")]
    for path in candidates:
        if not os.path.exists(path):
            continue
        loader = importlib.machinery.ExtensionFileLoader("cohort._cohort_torch", path)
        spec = importlib.util.spec_from_file_location("cohort._cohort_torch", path,
                                                      loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod, path
    return None, ("not built (configure --with-torch; needs libtorch-dev pybind11-dev "
                  "python3-dev)" if not where else "%s does not exist" % where)


_ext, _ext_where = _load_extension()


def info():
    """Which implementation the "cohort" backend runs: {"backend": "c++" | "python", "where":
    the extension's path, or why the Python fallback runs}."""
    return {"backend": "c++" if _ext is not None else "python", "where": _ext_where}


def context():
    """The process's cohort context behind the backend (created on first use)."""
    global _ctx
    if _ctx is None or _ctx._h is None:
        _ctx = cohort.init()
    return _ctx


def _unsupported(msg):
    return _status.Unsupported(_status.ERR_UNSUPPORTED, "cohort backend: " + msg)


def _bad(msg):
    return _status.InvalidArgument(_status.ERR_INVALID_ARG, "cohort backend: " + msg)


def _op(reduce_op):
    R = dist.ReduceOp
    for torch_op, op in ((R.SUM, cohort.SUM), (R.PRODUCT, cohort.PROD), (R.MIN, cohort.MIN),
                         (R.MAX, cohort.MAX)):
        if reduce_op == torch_op:
            return op
    if hasattr(R, "AVG") and reduce_op == R.AVG:
        return cohort.AVG
    raise _unsupported("reduction %s is not supported (SUM, PRODUCT, MIN, MAX, AVG are)"
                       % (getattr(reduce_op, "op", reduce_op),))


def _check_cpu(t, what):
    """CPU and CUDA tensors (CUDA ones when libcohort sees a device: checked where the buffer
    is taken, cohort._buffers)."""
    if t.device.type not in ("cpu", "cuda"):
        raise _status.Unsupported(
            _status.ERR_UNSUPPORTED, "cohort backend: %s is a %s tensor: cohort takes CPU and "
            "CUDA tensors" % (what, t.device.type))


def _dense(t, what):
    """A contiguous tensor with t's data, and whether results must be copied back into t."""
    _check_cpu(t, what)
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.is_contiguous():
        return t, False
    return t.contiguous(), True


def _one(tensors, what):
    if len(tensors) != 1:
        raise _unsupported("%s takes one tensor per process (got %d)" % (what, len(tensors)))
    return tensors[0]


class _Work(Work):
    """A Work over cohort requests; wait() raises the CohortError the operation failed with."""

    def __init__(self, reqs, on_done=None, result=None):
        super().__init__()
        self._reqs = list(reqs)
        self._on_done = on_done
        self._result = result if result is not None else []
        self._exc = None
        self._finished = False

    def _complete(self):
        if self._finished:
            return
        try:
            for r in self._reqs:
                r.wait()
            if self._on_done is not None:
                self._on_done()
        except Exception as e:
            self._exc = e
        finally:
            self._finished = True
            for r in self._reqs:
                r.free()
            self._reqs = []
            self._on_done = None

    def is_completed(self):
        if self._finished:
            return True
        try:
            if all(r.test() for r in self._reqs):
                self._complete()
        except Exception as e:
            self._exc = e
            self._finished = True
        return self._finished

    def is_success(self):
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout=None):
        self._complete()
        if self._exc is not None:
            raise self._exc
        return True

    def result(self):
        self.wait()
        return self._result

    def synchronize(self):
        pass

    def get_future(self):
        fut = torch.futures.Future()
        try:
            fut.set_result(self.result())
        except Exception as e:
            fut.set_exception(e)
        return fut


def _done_work(result=None):
    return _Work([], None, result)


class ProcessGroupCohort(ProcessGroup):
    """A torch ProcessGroup over one cohort group (group rank i = global_ranks[i])."""

    def __init__(self, rank, size, group, global_ranks):
        super().__init__(rank, size)
        if group.size != size or group.rank != rank:
            raise _bad("cohort group %r does not match torch's rank %d of %d"
                       % (group, rank, size))
        self._g = group
        self.global_ranks = list(global_ranks)

    @property
    def cohort_group(self):
        return self._g

    def getBackendName(self):
        return BACKEND

    def __repr__(self):
        return "<ProcessGroupCohort rank %d of %d, ranks %s>" % (self.rank(), self.size(),
                                                                 self.global_ranks)

    # -- collectives ---------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        t = _one(tensors, "all_reduce")
        op = _op(opts.reduceOp) if opts is not None else cohort.SUM
        d, back = _dense(t, "all_reduce tensor")
        req = self._g.iallreduce(d, op=op)
        return _Work([req], (lambda: t.copy_(d)) if back else None, [t])

    def allreduce_coalesced(self, tensors, opts=None):
        op = _op(opts.reduceOp) if opts is not None else cohort.SUM
        for t in tensors:
            _check_cpu(t, "all_reduce_coalesced tensor")
        flat = torch.cat([t.reshape(-1) for t in tensors])
        req = self._g.iallreduce(flat, op=op)

        def unpack():
            off = 0
            for t in tensors:
                n = t.numel()
                t.copy_(flat[off:off + n].view_as(t))
                off += n
        return _Work([req], unpack, list(tensors))

    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        root = opts.rootRank if opts is not None else 0
        d, back = _dense(t, "broadcast tensor")
        req = self._g.ibcast(d, root)
        return _Work([req], (lambda: t.copy_(d)) if back else None, [t])

    def reduce(self, tensors, opts=None):
        t = _one(tensors, "reduce")
        root = opts.rootRank if opts is not None else 0
        op = _op(opts.reduceOp) if opts is not None else cohort.SUM
        d, back = _dense(t, "reduce tensor")
        req = self._g.ireduce(d, None, op=op, root=root)
        mine = back and self.rank() == root
        return _Work([req], (lambda: t.copy_(d)) if mine else None, [t])

    def allgather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "all_gather")
        outs = _one(output_tensors, "all_gather")
        if len(outs) != self.size():
            raise _bad("all_gather needs %d output tensors, got %d" % (self.size(), len(outs)))
        d, _ = _dense(inp, "all_gather input")
        for o in outs:
            _check_cpu(o, "all_gather output")
            if o.numel() != inp.numel() or o.dtype != inp.dtype:
                raise _bad("all_gather outputs must match the input's size and dtype")
        flat = torch.empty(self.size() * d.numel(), dtype=d.dtype, device=d.device)
        req = self._g.iallgather(d, flat)
        n = d.numel()

        def unpack():
            for i, o in enumerate(outs):
                o.copy_(flat[i * n:(i + 1) * n].view_as(o))
        return _Work([req], unpack, outs)

    def _allgather_base(self, output, input, opts=None):
        d, _ = _dense(input, "all_gather_into_tensor input")
        o, back = _dense(output, "all_gather_into_tensor output")
        if o.numel() != self.size() * d.numel():
            raise _bad("all_gather_into_tensor output has %d elements, needs %d x %d"
                       % (o.numel(), self.size(), d.numel()))
        req = self._g.iallgather(d, o)
        return _Work([req], (lambda: output.copy_(o)) if back else None, [output])

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        raise _unsupported("all_gather_coalesced is not implemented")

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "reduce_scatter")
        ins = _one(input_tensors, "reduce_scatter")
        op = _op(opts.reduceOp) if opts is not None else cohort.SUM
        if len(ins) != self.size():
            raise _bad("reduce_scatter needs %d input tensors, got %d" % (self.size(), len(ins)))
        for x in ins:
            _check_cpu(x, "reduce_scatter input")
            if x.numel() != out.numel() or x.dtype != out.dtype:
                raise _bad("reduce_scatter inputs must match the output's size and dtype")
        flat = torch.cat([x.reshape(-1) for x in ins])
        o, back = _dense(out, "reduce_scatter output")
        req = self._g.ireduce_scatter(flat, o, op=op)
        return _Work([req], (lambda: out.copy_(o)) if back else None, [out])

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op(opts.reduceOp) if opts is not None else cohort.SUM
        d, _ = _dense(input, "reduce_scatter_tensor input")
        o, back = _dense(output, "reduce_scatter_tensor output")
        req = self._g.ireduce_scatter(d, o, op=op)
        return _Work([req], (lambda: output.copy_(o)) if back else None, [output])

    def _pairwise(self, sends, recvs, tag):
        """Uneven exchange over point-to-point: sends[j] to rank j, recvs[i] from rank i (flat
        contiguous tensors; None to skip); my own block is copied locally."""
        me = self.rank()
        reqs = []
        if recvs[me] is not None and sends[me] is not None:
            recvs[me].copy_(sends[me])
        for j in range(self.size()):
            if j != me and recvs[j] is not None:
                reqs.append(self._g.irecv(recvs[j], j, tag))
        for j in range(self.size()):
            if j != me and sends[j] is not None:
                reqs.append(self._g.isend(sends[j], j, tag))
        return reqs

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        d, _ = _dense(input, "all_to_all_single input")
        o, back = _dense(output, "all_to_all_single output")
        size = self.size()
        copy_back = (lambda: output.copy_(o)) if back else None
        if not output_split_sizes and not input_split_sizes:
            if d.numel() != o.numel() or d.numel() % size:
                raise _bad("all_to_all_single: input and output need the same size, a multiple"
                           " of the group size")
            return _Work([self._g.ialltoall(d, o)], copy_back, [output])

        def split(t, sizes):
            if not sizes:
                if t.shape[0] % size:
                    raise _bad("all_to_all_single: dim 0 (%d) is not a multiple of the group "
                               "size %d" % (t.shape[0], size))
                sizes = [t.shape[0] // size] * size
            if len(sizes) != size or sum(sizes) != t.shape[0]:
                raise _bad("all_to_all_single: split sizes %s do not cover dim 0 (%d) in %d "
                           "parts" % (list(sizes), t.shape[0], size))
            row = t.numel() // t.shape[0] if t.shape[0] else 0
            flat, parts, off = t.reshape(-1), [], 0
            for s in sizes:
                parts.append(flat[off * row:(off + s) * row])
                off += s
            return parts
        sends = split(d, input_split_sizes)
        recvs = split(o, output_split_sizes)
        return _Work(self._pairwise(sends, recvs, _TAG_A2A), copy_back, [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        size = self.size()
        if len(output_tensors) != size or len(input_tensors) != size:
            raise _bad("all_to_all needs %d input and %d output tensors" % (size, size))
        for t in list(output_tensors) + list(input_tensors):
            _check_cpu(t, "all_to_all tensor")
        n = input_tensors[0].numel()
        dt = input_tensors[0].dtype
        even = all(t.numel() == n and t.dtype == dt
                   for t in list(output_tensors) + list(input_tensors))
        if even:
            flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
            flat_out = torch.empty_like(flat_in)
            req = self._g.ialltoall(flat_in, flat_out)

            def unpack():
                for i, t in enumerate(output_tensors):
                    t.copy_(flat_out[i * n:(i + 1) * n].view_as(t))
            return _Work([req], unpack, list(output_tensors))
        sends = [t.contiguous().reshape(-1) for t in input_tensors]
        recvs = [torch.empty(t.numel(), dtype=t.dtype, device=t.device) for t in output_tensors]

        def unpack_uneven():
            for t, r in zip(output_tensors, recvs):
                t.copy_(r.view_as(t))
        return _Work(self._pairwise(sends, recvs, _TAG_A2A), unpack_uneven,
                     list(output_tensors))

    def gather(self, output_tensors, input_tensors, opts=None):
        inp = _one(input_tensors, "gather")
        root = opts.rootRank if opts is not None else 0
        d, _ = _dense(inp, "gather input")
        size, me = self.size(), self.rank()
        if me != root:
            return _Work([self._g.isend(d, root, _TAG_GATHER)])
        outs = _one(output_tensors, "gather")
        if len(outs) != size:
            raise _bad("gather needs %d output tensors at the root" % size)
        recvs = [torch.empty(d.numel(), dtype=d.dtype, device=d.device) for _ in range(size)]
        reqs = [self._g.irecv(recvs[i], i, _TAG_GATHER) for i in range(size) if i != me]
        recvs[me].copy_(d.reshape(-1))

        def unpack():
            for o, r in zip(outs, recvs):
                o.copy_(r.view_as(o))
        return _Work(reqs, unpack, outs)

    def scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "scatter")
        root = opts.rootRank if opts is not None else 0
        o, back = _dense(out, "scatter output")
        size, me = self.size(), self.rank()
        copy_back = (lambda: out.copy_(o)) if back else None
        if me != root:
            return _Work([self._g.irecv(o, root, _TAG_SCATTER)], copy_back, [out])
        ins = _one(input_tensors, "scatter")
        if len(ins) != size:
            raise _bad("scatter needs %d input tensors at the root" % size)
        sends = [x.contiguous() for x in ins]
        reqs = [self._g.isend(sends[i], i, _TAG_SCATTER) for i in range(size) if i != me]
        o.copy_(sends[me].view_as(o))
        return _Work(reqs, copy_back, [out])

    def barrier(self, opts=None):
        return _Work([self._g.ibarrier()])

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        self._g.barrier()

    # -- point-to-point --------------------------------------------------------------------
    def send(self, tensors, dstRank, tag=0):
        t = _one(tensors, "send")
        d, _ = _dense(t, "send tensor")
        return _Work([self._g.isend(d, dstRank, tag)])

    def recv(self, tensors, srcRank, tag=0):
        t = _one(tensors, "recv")
        d, back = _dense(t, "recv tensor")
        return _Work([self._g.irecv(d, srcRank, tag)], (lambda: t.copy_(d)) if back else None,
                     [t])

    def recv_anysource(self, tensors, tag=0):
        raise _unsupported("recv from any source is not supported: name the source rank")


# ---------------------------------------------------------------------------------------------
# Creation: the registered backend (classic dist.new_group) and member-only new_group


def _timeout_s(timeout):
    if timeout is None:
        return float(c10d.default_pg_timeout.total_seconds())
    if isinstance(timeout, datetime.timedelta):
        return float(timeout.total_seconds())
    return float(timeout)


def _make_pg(ctx, rank, size, ranks, timeout=None):
    if _ext is not None:
        return _ext.ProcessGroupCohort(rank, size, list(ranks), _timeout_s(timeout))
    if not ranks or list(ranks) == list(range(ctx.size)):
        if size != ctx.size or rank != ctx.rank:
            raise _bad("torch's world (rank %d of %d) is not the launcher's (PMIx rank %d of "
                       "%d): run under mpirun/srun with RANK/WORLD_SIZE unset or equal to the "
                       "launcher's" % (rank, size, ctx.rank, ctx.size))
        if not ranks:  # the default group
            return ProcessGroupCohort(rank, size, ctx.world, list(range(size)))
    g = ctx.group(ranks, tag="torch")
    if g is None:
        raise _status.NotMember(_status.ERR_NOT_MEMBER, "cohort backend: rank %d is not in %s"
                                % (ctx.rank, list(ranks)))
    return ProcessGroupCohort(rank, size, g, ranks)


def _create_extended(dist_backend_opts, pg_options=None):
    o = dist_backend_opts
    ctx = context() if _ext is None else None
    return _make_pg(ctx, o.group_rank, o.group_size, list(o.global_ranks_in_group), o.timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    try:
        dist.Backend.register_backend(BACKEND, _create_extended, extended_api=True)
    except TypeError:  # a torch without extended_api: not supported by this module
        raise ImportError("cohort.torch needs a torch whose Backend.register_backend takes "
                          "extended_api (torch >= 1.13)")


_register()


def _registry():
    """torch's group tables: module globals in 1.13, fields of _world in later releases."""
    w = getattr(c10d, "_world", None)
    if w is not None and hasattr(w, "pg_map"):
        return w.pg_map, w.pg_names, w.pg_group_ranks
    return c10d._pg_map, c10d._pg_names, c10d._pg_group_ranks


def new_group(ranks, timeout=None, backend=None, pg_options=None):
    """Member-only torch.distributed group: called by the members alone, in the same order on
    each, with no store round trip, no barrier and no message (cohort_group_create). A caller
    not in ranks gets torch's non-member handle (GroupMember.NON_GROUP_MEMBER), as from
    dist.new_group. The result works with every torch.distributed collective. Needs
    dist.init_process_group (any backend; the ranks must be the launcher's)."""
    if backend not in (None, BACKEND):
        raise _bad("cohort.torch.new_group makes cohort groups only (backend=%r)" % backend)
    if not dist.is_initialized():
        raise RuntimeError("cohort.torch.new_group: call init_process_group first")
    ctx = context()
    ranks = sorted(int(r) for r in ranks)  # as dist.new_group: group rank = sorted position
    if len(set(ranks)) != len(ranks) or not ranks or ranks[0] < 0 or ranks[-1] >= ctx.size:
        raise _bad("new_group ranks %s must be distinct world ranks" % ranks)
    if ctx.rank not in ranks:
        return c10d.GroupMember.NON_GROUP_MEMBER
    if timeout is None:
        timeout = getattr(c10d._get_default_group(), "timeout_s", None)
    pg = _make_pg(ctx, ranks.index(ctx.rank), len(ranks), ranks, timeout)
    pg_map, pg_names, pg_group_ranks = _registry()
    pg_map[pg] = (BACKEND, None)
    pg_names[pg] = "cohort:%016x" % cohort_group(pg).id
    pg_group_ranks[pg] = {g: i for i, g in enumerate(ranks)}
    return pg


def cohort_group(pg=None):
    """The cohort.Group behind a cohort-backend process group (None: the default group)."""
    pg = pg if pg is not None else c10d._get_default_group()
    if _ext is not None and isinstance(pg, _ext.ProcessGroupCohort):
        return _GroupView(pg)
    if not isinstance(pg, ProcessGroupCohort):
        raise _bad("%r is not a cohort process group" % (pg,))
    return pg.cohort_group


class _GroupView:
    """What the C++ backend shows of its cohort group: the group lives in the extension's own
    context, on its progress thread, so it is not a cohort.Group of context()."""

    def __init__(self, pg):
        self._pg = pg

    id = property(lambda self: self._pg.cohort_group_id)
    rank = property(lambda self: self._pg.rank())
    size = property(lambda self: self._pg.size())
    ranks = property(lambda self: list(self._pg.global_ranks))

    def abort(self):
        """cohort_group_abort: pending and later operations fail with COHORT_ERR_REVOKED."""
        self._pg.abort_group()

    def __repr__(self):
        return "<cohort group 0x%016x (C++ backend) rank %d of %d>" % (self.id, self.rank,
                                                                      self.size)


def init_process_group(backend=BACKEND, timeout=None, **kwargs):
    """dist.init_process_group with env:// filled in from the launcher: RANK and WORLD_SIZE
    from PMIx, MASTER_ADDR/MASTER_PORT chosen by rank 0 (its host name, a free port) and
    broadcast over cohort, where not already set. Any torch backend may be named."""
    ctx = context()
    os.environ.setdefault("RANK", str(ctx.rank))
    os.environ.setdefault("WORLD_SIZE", str(ctx.size))
    if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
        buf = bytearray(256)
        if ctx.rank == 0:
            s = socket.socket()
            s.bind(("", 0))
            port = s.getsockname()[1]
            s.close()
            addr = os.environ.get("MASTER_ADDR") or socket.gethostname()
            text = ("%s %s" % (addr, os.environ.get("MASTER_PORT", port))).encode()
            buf[:len(text)] = text
        ctx.world.bcast(buf, 0)
        addr, port = bytes(buf).rstrip(b"\0").decode().split()
        os.environ.setdefault("MASTER_ADDR", addr)
        os.environ.setdefault("MASTER_PORT", port)
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=timeout)
    if timeout is not None:
        kwargs["timeout"] = timeout
    dist.init_process_group(backend, **kwargs)


if _ext is not None:
    import atexit
    # Before the interpreter tears down: finish the progress thread and cohort_finalize the
    # extension's context (a std::thread still running at exit would abort the process).
    atexit.register(_ext.shutdown)
