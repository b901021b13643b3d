"""Context, groups, layouts and requests over libcohort.

Lifetimes: a Group, Layout or Request keeps its Context alive. Context.finalize() (also called
by `with`, by the garbage collector and at interpreter exit) first frees every outstanding
request (which cancels it), then lets the library release groups and layouts; afterwards every
handle made from the context is dead and raises on use instead of touching freed memory.
"""
import atexit
import ctypes
import weakref

from . import _buffers as B
from . import _lib
from . import _status
from ._lib import lib

_live_contexts = weakref.WeakSet()


def _dead(what):
    return _status.InvalidArgument(_status.ERR_INVALID_ARG, "%s is no longer valid" % what)


class _Released:
    """`with` and garbage collection release the object: release() is free() or finalize()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._release()

    def __del__(self):
        try:
            self._release()
        except Exception:
            pass


class _Freed(_Released):
    def _release(self):
        self.free()


class Request(_Freed):
    """A nonblocking operation. wait() returns its result (the receive buffer, where there is
    one) or raises the CohortError it failed with; test() says whether it finished. Buffers
    stay held until the request finishes or is freed. Freeing (free(), `with`, or losing the
    last reference) an unfinished request cancels it."""

    def __init__(self, group, handle, bufs, result, what, on_done=None):
        self._group = group
        self._h = handle
        self._bufs = bufs
        self._result = result
        self._what = what
        self._on_done = on_done
        self._done = False
        self._error = None
        group._requests.add(self)

    def _finish(self, status):
        lib.cohort_request_free(self._h)
        self._h = None
        for b in self._bufs:
            b.release()
        self._bufs = ()
        self._done = True
        self._group._requests.discard(self)
        if status < 0:
            self._error = _status.error(status, "%s: %s" % (self._what, _lib.strerror(status)))
        elif self._on_done is not None:
            try:
                self._on_done()
            except Exception as e:  # reported by wait()
                self._error = e
        self._on_done = None

    def _check_handle(self):
        if self._h is None and not self._done:
            raise _dead("request (%s): it was freed or its context finalized" % self._what)

    def test(self):
        """Progress; True when finished (then wait() returns at once)."""
        if self._done:
            return True
        self._check_handle()
        done = ctypes.c_int(0)
        st = lib.cohort_test(self._h, ctypes.byref(done))
        if done.value:
            self._finish(st)
            return True
        if st < 0:
            raise _status.error(st, "%s: cohort_test: %s" % (self._what, _lib.strerror(st)))
        return False

    def wait(self):
        """Wait for completion; return the result or raise. A COHORT_ERR_TIMEOUT (raised as
        cohort.Timeout) leaves the request valid: wait again or free it. So does a refusal
        (cohort.InvalidArgument): the package's own handle is live, so the library refused the
        call itself, because another thread was inside a call on the context or this is a fork
        child of the process that made it (cohort.h), not because the request failed."""
        if not self._done:
            self._check_handle()
            st = lib.cohort_wait(self._h)
            if st in (_status.ERR_TIMEOUT, _status.ERR_INVALID_ARG):
                raise _status.error(st, "%s: %s" % (self._what, _lib.strerror(st)))
            self._finish(st)
        if self._error is not None:
            raise self._error
        return self._result

    @property
    def done(self):
        return self._done

    def free(self):
        """Release the request; an unfinished one is cancelled."""
        if self._h is not None:
            lib.cohort_request_free(self._h)
            self._h = None
            for b in self._bufs:
                b.release()
            self._bufs = ()
            self._group._requests.discard(self)
        self._on_done = None

    def _kill(self):  # the library is about to release it (finalize)
        self.free()



class Group(_Freed):
    """A cohort group. Made by Context.group() (member-only, no message), Context.world or
    Layout.group(). Collectives take buffer-protocol objects or torch CPU tensors; the element
    count and dtype come from the buffer (dtype= overrides, e.g. cohort.BFLOAT16 on a uint16
    array). Every method has a nonblocking twin prefixed with i returning a Request."""

    def __init__(self, ctx, handle, owner, tag):
        self._ctx = ctx
        self._h = handle
        self._owner = owner  # None: freed with free(); else the Context or Layout that owns it
        self.tag = tag
        self._requests = weakref.WeakSet()
        self._size = lib.cohort_group_size(handle)
        self._rank = lib.cohort_group_rank(handle)
        self._id = lib.cohort_group_id(handle)
        self._members = None

    # -- identity --------------------------------------------------------------------------
    def _handle(self):
        if self._h is None:
            raise _dead("group %s" % self.tag)
        return self._h

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def id(self):
        return self._id

    @property
    def members(self):
        """World ranks of the members, in group-rank order."""
        if self._members is None:
            h = self._handle()
            self._members = [lib.cohort_group_world_rank(h, i) for i in range(self._size)]
        return list(self._members)

    def world_rank(self, group_rank):
        r = lib.cohort_group_world_rank(self._handle(), int(group_rank))
        if r < 0:
            raise _status.InvalidArgument(_status.ERR_INVALID_ARG,
                                          "group rank %d out of range" % group_rank)
        return r

    def __repr__(self):
        return "<cohort.Group %s id=%#x rank %d of %d>" % (self.tag, self._id, self._rank,
                                                           self._size)

    # -- lifetime --------------------------------------------------------------------------
    def _kill_requests(self):
        for r in list(self._requests):
            r._kill()

    def _invalidate(self):
        self._kill_requests()
        self._h = None

    def free(self):
        """Free a group made by Context.group() (outstanding requests are cancelled). Groups of
        the world and of layouts belong to their context / layout: freeing them does nothing."""
        if self._h is None or self._owner is not None:
            return
        self._kill_requests()
        if self._ctx._h is not None:
            st = lib.cohort_group_free(self._h)
            self._h = None
            self._ctx._groups.discard(self)
            _lib.check(st, "cohort_group_free")
        self._h = None

    def abort(self):
        """Fail every pending and later operation on the group with COHORT_ERR_REVOKED."""
        _lib.check(lib.cohort_group_abort(self._handle()), "cohort_group_abort")

    def set_stream(self, stream):
        """Order the collectives posted from now on after the work of a CUDA stream (an int
        handle, e.g. torch.cuda.current_stream().cuda_stream; None or 0: none). Unsupported
        where libcohort sees no CUDA device (cohort_group_set_stream)."""
        _lib.check(lib.cohort_group_set_stream(self._handle(), ctypes.c_void_p(stream or None)),
                   "cohort_group_set_stream")


    # -- posting ---------------------------------------------------------------------------
    def _post(self, name, args, bufs, nonblocking, result, on_done=None):
        h = self._handle()
        if not nonblocking:
            try:
                st = getattr(lib, "cohort_" + name)(h, *args)
            finally:
                for b in bufs:
                    b.release()
            _lib.check(st, "cohort_%s on %s" % (name, self.tag))
            if on_done is not None:
                on_done()
            return result
        req = ctypes.c_void_p()
        st = getattr(lib, "cohort_i" + name)(h, *args, ctypes.byref(req))
        if st < 0:
            for b in bufs:
                b.release()
            _lib.check(st, "cohort_i%s on %s" % (name, self.tag))
        return Request(self, req.value, bufs, result, "cohort_i%s on %s" % (name, self.tag),
                       on_done)

    def _root(self, root, what="root"):
        root = int(root)
        if not 0 <= root < self._size:
            raise _status.InvalidArgument(_status.ERR_INVALID_ARG, "%s %d is not a rank of %r"
                                          % (what, root, self))
        return root

    @staticmethod
    def _same(a, b, what):
        if a.dtype != b.dtype:
            for x in (a, b):
                x.release()
            raise _status.InvalidArgument(
                _status.ERR_INVALID_ARG, "%s: send and receive dtypes differ (%s vs %s)"
                % (what, B.DTYPE_NAMES[a.dtype], B.DTYPE_NAMES[b.dtype]))

    @staticmethod
    def _fail(bufs, msg):
        for b in bufs:
            b.release()
        return _status.InvalidArgument(_status.ERR_INVALID_ARG, msg)

    # -- collectives -----------------------------------------------------------------------
    def barrier(self):
        return self._post("barrier", (), (), False, None)

    def ibarrier(self):
        return self._post("barrier", (), (), True, None)

    def bcast(self, buf, root=0, dtype=None, _nb=False):
        """Broadcast buf from group rank root into buf on every member."""
        root = self._root(root)
        b = B.get(buf, True, dtype, "bcast buffer")
        return self._post("bcast", (b.ptr, b.count, b.dtype, root), (b,), _nb, buf)

    def ibcast(self, buf, root=0, dtype=None):
        return self.bcast(buf, root, dtype, _nb=True)

    broadcast = bcast
    ibroadcast = ibcast

    def allreduce(self, sendbuf, recvbuf=None, op=B.SUM, dtype=None, _nb=False):
        """Reduce over members; every member gets the result in recvbuf (in place into
        sendbuf when recvbuf is None). Returns the buffer holding the result."""
        op = B.as_op(op)
        if recvbuf is None:
            r = B.get(sendbuf, True, dtype, "allreduce buffer")
            return self._post("allreduce", (_lib.IN_PLACE, r.ptr, r.count, r.dtype, op), (r,),
                              _nb, sendbuf)
        s = B.get(sendbuf, False, dtype, "allreduce send buffer")
        r = B.get(recvbuf, True, dtype, "allreduce receive buffer")
        self._same(s, r, "allreduce")
        if s.count != r.count:
            raise self._fail((s, r), "allreduce: send has %d elements, receive %d"
                             % (s.count, r.count))
        return self._post("allreduce", (s.ptr, r.ptr, s.count, s.dtype, op), (s, r), _nb,
                          recvbuf)

    def iallreduce(self, sendbuf, recvbuf=None, op=B.SUM, dtype=None):
        return self.allreduce(sendbuf, recvbuf, op, dtype, _nb=True)

    def reduce(self, sendbuf, recvbuf=None, op=B.SUM, root=0, dtype=None, _nb=False):
        """Reduce to group rank root. At the root, recvbuf None means in place (the result
        replaces sendbuf); elsewhere recvbuf is ignored and may be None."""
        op = B.as_op(op)
        root = self._root(root)
        if self._rank == root and recvbuf is None:
            r = B.get(sendbuf, True, dtype, "reduce buffer")
            return self._post("reduce", (_lib.IN_PLACE, r.ptr, r.count, r.dtype, op, root),
                              (r,), _nb, sendbuf)
        s = B.get(sendbuf, False, dtype, "reduce send buffer")
        bufs = [s]
        rptr = None
        if recvbuf is not None and self._rank == root:
            r = B.get(recvbuf, True, dtype, "reduce receive buffer")
            bufs.append(r)
            self._same(s, r, "reduce")
            if r.count != s.count:
                raise self._fail(bufs, "reduce: send has %d elements, receive %d"
                                 % (s.count, r.count))
            rptr = r.ptr
        return self._post("reduce", (s.ptr, rptr, s.count, s.dtype, op, root), bufs, _nb,
                          recvbuf if self._rank == root else None)

    def ireduce(self, sendbuf, recvbuf=None, op=B.SUM, root=0, dtype=None):
        return self.reduce(sendbuf, recvbuf, op, root, dtype, _nb=True)

    def allgather(self, sendbuf, recvbuf, dtype=None, _nb=False):
        """recvbuf (size x the send count) receives every member's sendbuf, in rank order."""
        s = B.get(sendbuf, False, dtype, "allgather send buffer")
        r = B.get(recvbuf, True, dtype, "allgather receive buffer")
        self._same(s, r, "allgather")
        if r.count != s.count * self._size:
            raise self._fail((s, r), "allgather: receive has %d elements, needs %d x %d"
                             % (r.count, self._size, s.count))
        return self._post("allgather", (s.ptr, r.ptr, s.count, s.dtype), (s, r), _nb, recvbuf)

    def iallgather(self, sendbuf, recvbuf, dtype=None):
        return self.allgather(sendbuf, recvbuf, dtype, _nb=True)

    def reduce_scatter(self, sendbuf, recvbuf, op=B.SUM, dtype=None, _nb=False):
        """sendbuf holds size x n elements, recvbuf n: rank i gets block i of the reduction.
        sendbuf None: in place, recvbuf holds size x n and its first n get the result."""
        op = B.as_op(op)
        if sendbuf is None:
            r = B.get(recvbuf, True, dtype, "reduce_scatter buffer")
            if r.count % self._size:
                raise self._fail((r,), "reduce_scatter in place: %d elements is not a multiple "
                                 "of the group size %d" % (r.count, self._size))
            return self._post("reduce_scatter", (_lib.IN_PLACE, r.ptr, r.count // self._size,
                                                 r.dtype, op), (r,), _nb, recvbuf)
        s = B.get(sendbuf, False, dtype, "reduce_scatter send buffer")
        r = B.get(recvbuf, True, dtype, "reduce_scatter receive buffer")
        self._same(s, r, "reduce_scatter")
        if s.count != r.count * self._size:
            raise self._fail((s, r), "reduce_scatter: send has %d elements, needs %d x %d"
                             % (s.count, self._size, r.count))
        return self._post("reduce_scatter", (s.ptr, r.ptr, r.count, r.dtype, op), (s, r), _nb,
                          recvbuf)

    def ireduce_scatter(self, sendbuf, recvbuf, op=B.SUM, dtype=None):
        return self.reduce_scatter(sendbuf, recvbuf, op, dtype, _nb=True)

    def alltoall(self, sendbuf, recvbuf, dtype=None, _nb=False):
        """Block j of sendbuf goes to rank j; block i of recvbuf comes from rank i (size equal
        blocks)."""
        s = B.get(sendbuf, False, dtype, "alltoall send buffer")
        r = B.get(recvbuf, True, dtype, "alltoall receive buffer")
        self._same(s, r, "alltoall")
        if s.count != r.count or s.count % self._size:
            raise self._fail((s, r), "alltoall: send and receive need the same count, a multiple"
                             " of the group size %d (got %d and %d)"
                             % (self._size, s.count, r.count))
        return self._post("alltoall", (s.ptr, r.ptr, s.count // self._size, s.dtype), (s, r),
                          _nb, recvbuf)

    def ialltoall(self, sendbuf, recvbuf, dtype=None):
        return self.alltoall(sendbuf, recvbuf, dtype, _nb=True)

    def send(self, buf, peer, tag=0, dtype=None, _nb=False):
        """Send buf to group rank peer; matched by (peer, tag) in send order. tag >= 0."""
        peer = self._root(peer, "peer")
        b = B.get(buf, False, dtype, "send buffer")
        return self._post("send", (b.ptr, b.count, b.dtype, peer, int(tag)), (b,), _nb, None)

    def isend(self, buf, peer, tag=0, dtype=None):
        return self.send(buf, peer, tag, dtype, _nb=True)

    def recv(self, buf, peer, tag=0, dtype=None, _nb=False):
        """Receive into buf from group rank peer (exactly buf's size)."""
        peer = self._root(peer, "peer")
        b = B.get(buf, True, dtype, "receive buffer")
        return self._post("recv", (b.ptr, b.count, b.dtype, peer, int(tag)), (b,), _nb, buf)

    def irecv(self, buf, peer, tag=0, dtype=None):
        return self.recv(buf, peer, tag, dtype, _nb=True)


class Layout(_Freed):
    """The caller's groups of a Megatron-style layout (member-only, no message)."""

    KINDS = ("tp", "pp", "dp", "cp", "dp-cp", "tp-pp", "tp-cp", "tp-dp", "tp-dp-cp", "embd",
             "pos-embd", "ep", "etp", "etp-ep", "etp-ep-pp", "edp")

    def __init__(self, ctx, spec):
        self._ctx = ctx
        self.spec = spec
        h = ctypes.c_void_p()
        _lib.check(lib.cohort_layout_create(ctx._handle(), spec.encode(), ctypes.byref(h)),
                   "cohort_layout_create(%r)" % spec)
        self._h = h.value
        self._groups = {}
        ctx._layouts.add(self)

    def group(self, kind):
        """This rank's group of kind ("tp", "dp-cp", ...), or None where it has none (embd,
        pos-embd). An unknown kind raises."""
        if self._h is None:
            raise _dead("layout %r" % self.spec)
        if kind in self._groups:
            return self._groups[kind]
        if kind not in self.KINDS:
            raise _status.InvalidArgument(_status.ERR_INVALID_ARG, "unknown layout kind %r "
                                          "(known: %s)" % (kind, " ".join(self.KINDS)))
        h = lib.cohort_layout_group(self._h, kind.encode())
        g = Group(self._ctx, h, self, "layout:" + kind) if h else None
        self._groups[kind] = g
        return g

    def groups(self):
        """{kind: Group} for every kind this rank has a group of."""
        return {k: g for k in self.KINDS for g in [self.group(k)] if g is not None}

    def _invalidate(self):
        for g in self._groups.values():
            if g is not None:
                g._invalidate()
        self._h = None

    def free(self):
        if self._h is None:
            return
        h = self._h
        self._invalidate()
        self._ctx._layouts.discard(self)
        if self._ctx._h is not None:
            _lib.check(lib.cohort_layout_free(h), "cohort_layout_free")



class Context(_Released):
    """A cohort context: cohort.init(). Use as a context manager, or call finalize(); it is
    also finalized when garbage-collected and at interpreter exit."""

    def __init__(self):
        h = ctypes.c_void_p()
        _lib.check(lib.cohort_init(ctypes.byref(h)), "cohort_init")
        self._h = h.value
        self._groups = weakref.WeakSet()
        self._layouts = weakref.WeakSet()
        self.rank = lib.cohort_world_rank(self._h)
        self.size = lib.cohort_world_size(self._h)
        self._world = Group(self, lib.cohort_world(self._h), self, "world")
        _live_contexts.add(self)
        B.cuda_probe = _cuda_probe

    def _handle(self):
        if self._h is None:
            raise _dead("context (finalized)")
        return self._h

    @property
    def world(self):
        self._handle()
        return self._world

    def group(self, ranks, tag="python"):
        """A group of these world ranks, in this order, created by its members alone with no
        message. Returns None on a rank not in ranks (COHORT_ERR_NOT_MEMBER in C), so a loop
        over every group of a layout is safe on every rank. Members must create identical
        (tag, ranks) groups in the same order."""
        ranks = [int(r) for r in ranks]
        arr = (ctypes.c_int * max(len(ranks), 1))(*ranks)
        h = ctypes.c_void_p()
        st = lib.cohort_group_create(self._handle(), str(tag).encode(), arr, len(ranks),
                                     ctypes.byref(h))
        if st == _status.ERR_NOT_MEMBER:
            return None
        _lib.check(st, "cohort_group_create(%r, %d ranks)" % (tag, len(ranks)))
        g = Group(self, h.value, None, str(tag))
        self._groups.add(g)
        return g

    group_create = group

    def layout(self, spec):
        """This rank's groups of a Megatron-style layout: ctx.layout("tp=2,pp=2").group("tp")."""
        return Layout(self, spec)

    def stats(self):
        s = _lib.Stats()
        _lib.check(lib.cohort_stats(self._handle(), ctypes.byref(s)), "cohort_stats")
        return {"groups_created": s.groups_created, "pmix_lookups": s.pmix_lookups,
                "endpoints": s.endpoints, "messages_sent": s.messages_sent,
                "messages_dropped": s.messages_dropped,
                "messages_rejected": s.messages_rejected, "peers_failed": s.peers_failed,
                "single_copies": s.single_copies, "single_copy_bytes": s.single_copy_bytes,
                "cuda_ipc_opens": s.cuda_ipc_opens, "cuda_ipc_reuses": s.cuda_ipc_reuses,
                "cuda_staged_calls": s.cuda_staged_calls,
                "cuda_staged_xfers": s.cuda_staged_xfers,
                "cuda_ipc_calls": s.cuda_ipc_calls, "cuda_ipc_votes": s.cuda_ipc_votes,
                "pmix_plugin": (s.pmix_plugin or b"").decode(),
                "progress": (s.progress or b"").decode()}

    def cuda_info(self):
        """What this context can do with CUDA buffers (loads the CUDA module the first time;
        never communicates): built, devices, ucx_cuda, ipc, reason (why devices is 0)."""
        i = _lib.CudaInfo()
        _lib.check(lib.cohort_cuda_info(self._handle(), ctypes.byref(i)), "cohort_cuda_info")
        return {"built": bool(i.built), "devices": i.devices, "ucx_cuda": bool(i.ucx_cuda),
                "ipc": bool(i.ipc), "reason": i.reason.decode()}

    def _ranks(self, fn):
        h = self._handle()
        while True:
            n = fn(h, None, 0)
            arr = (ctypes.c_int * max(n, 1))()
            m = fn(h, arr, n)
            if m <= n:
                return list(arr[:m])

    def wired_peers(self):
        """World ranks this process holds a UCX endpoint to, ascending (never communicates)."""
        return self._ranks(lib.cohort_wired_peers)

    def failed_ranks(self):
        """World ranks this process knows to have failed, ascending (never communicates)."""
        return self._ranks(lib.cohort_failed_ranks)

    def peer_info(self, world_rank):
        info = _lib.PeerInfo()
        _lib.check(lib.cohort_peer_info(self._handle(), int(world_rank), ctypes.byref(info)),
                   "cohort_peer_info(%d)" % world_rank)
        return {"world_rank": info.world_rank, "wire_us": info.wire_us,
                "pmix_lookups": info.pmix_lookups, "transports": info.transports.decode()}

    def finalize(self):
        """Cancel outstanding requests, release every group and layout, finalize. Idempotent."""
        if self._h is None:
            return
        for g in list(self._groups) + [self._world]:
            g._kill_requests()
        for lay in list(self._layouts):
            lay._invalidate()
        for g in list(self._groups):
            g._invalidate()
        self._world._invalidate()
        h, self._h = self._h, None
        _live_contexts.discard(self)
        _lib.check(lib.cohort_finalize(h), "cohort_finalize")


    def _release(self):
        self.finalize()

    def __repr__(self):
        return "<cohort.Context rank %d of %d%s>" % (self.rank, self.size,
                                                      "" if self._h else " (finalized)")


@atexit.register
def _finalize_all():
    for c in list(_live_contexts):
        try:
            c.finalize()
        except Exception:
            pass


def init():
    """Create a context: under a PMIx launcher (mpirun, srun, prterun), or a singleton."""
    return Context()


def _cuda_probe():
    """"" when a live context sees a CUDA device, else why not (for CUDA tensors)."""
    for ctx in list(_live_contexts):
        if ctx._h is not None:
            info = ctx.cuda_info()
            return "" if info["devices"] > 0 else info["reason"]
    return "no live cohort context"
