"""The cohort package on numpy arrays and other buffer-protocol objects: every collective and
send/recv, blocking and nonblocking, on every dtype cohort has (bfloat16 as uint16 bits with
dtype=cohort.BFLOAT16), in world, reversed-world and member-only subgroups, against
references computed locally (each rank's input is a function of (group rank, index, call), so
every rank can compute every other's; values are small integers, or 1 and 2 for PROD, so
every combination order gives the exact result); errors raise with the cohort status; layouts
agree with the pure-Python Megatron arithmetic. Run under mpirun with any number of ranks, or
alone."""
import array
import sys

from harness import Checks, need

need("numpy")
import numpy as np  # noqa: E402

import cohort  # noqa: E402

NP_DTYPES = [(np.int8, cohort.INT8), (np.uint8, cohort.UINT8), (np.int32, cohort.INT32),
             (np.uint32, cohort.UINT32), (np.int64, cohort.INT64), (np.uint64, cohort.UINT64),
             (np.float16, cohort.FLOAT16), (np.float32, cohort.FLOAT32),
             (np.float64, cohort.FLOAT64), ("bf16", cohort.BFLOAT16)]
COUNTS = [0, 1, 7, 1000]


def bf16_bits(f32):
    return (np.ascontiguousarray(f32, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_float(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def values(grank, n, call, op=cohort.SUM):
    i = np.arange(n, dtype=np.int64)
    if op == cohort.PROD:
        return ((grank + i + call) % 2 + 1).astype(np.float64)
    return ((grank * 7 + i * 3 + call) % 5 + 1).astype(np.float64)


def make(vals, npdt):
    """(array passed to cohort, dtype= argument) for float64 values."""
    if npdt == "bf16":
        return bf16_bits(vals.astype(np.float32)), cohort.BFLOAT16
    return vals.astype(npdt), None


def as_f64(arr, npdt):
    if npdt == "bf16":
        return bf16_float(arr).astype(np.float64)
    return arr.astype(np.float64)


def reduce_ref(size, n, call, op):
    vs = [values(r, n, call, op) for r in range(size)]
    if op in (cohort.SUM, cohort.AVG):
        out = np.sum(vs, axis=0) if n else np.zeros(0)
        return out / size if op == cohort.AVG else out
    if op == cohort.PROD:
        return np.prod(vs, axis=0) if n else np.zeros(0)
    if op == cohort.MIN:
        return np.min(vs, axis=0) if n else np.zeros(0)
    return np.max(vs, axis=0) if n else np.zeros(0)


def close(got, want, npdt, op):
    if op == cohort.AVG:
        tol = {np.float16: 1e-2, "bf16": 2e-2}.get(npdt, 1e-6)
        return got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol)
    return got.shape == want.shape and np.array_equal(got, want)


def ops_for(npdt):
    ops = [cohort.SUM, cohort.PROD, cohort.MIN, cohort.MAX]
    if npdt in (np.float16, np.float32, np.float64, "bf16"):
        ops.append(cohort.AVG)
    return ops


def name(npdt):
    return npdt if isinstance(npdt, str) else np.dtype(npdt).name


def check_group(ok, g, label):
    size, me = g.size, g.rank
    call = 0
    for npdt, _ in NP_DTYPES:
        dn = name(npdt)
        for n in COUNTS:
            # allreduce: out of place, in place, nonblocking (three different calls)
            for op in ops_for(npdt):
                call += 1
                src, dt = make(values(me, n, call, op), npdt)
                keep = src.copy()
                out = np.zeros_like(src)
                g.allreduce(src, out, op=op, dtype=dt)
                ok(close(as_f64(out, npdt), reduce_ref(size, n, call, op), npdt, op),
                   "%s allreduce %s n=%d op=%s" % (label, dn, n, cohort.OP_NAMES[op]))
                ok(np.array_equal(src, keep), "%s allreduce left sbuf alone" % label)
                call += 1
                buf, dt = make(values(me, n, call, op), npdt)
                g.allreduce(buf, op=op, dtype=dt)
                ok(close(as_f64(buf, npdt), reduce_ref(size, n, call, op), npdt, op),
                   "%s allreduce in place %s n=%d op=%s" % (label, dn, n, cohort.OP_NAMES[op]))
                call += 1
                buf, dt = make(values(me, n, call, op), npdt)
                req = g.iallreduce(buf, np.empty_like(buf), op=op, dtype=dt)
                while not req.test():
                    pass
                res = req.wait()
                ok(close(as_f64(res, npdt), reduce_ref(size, n, call, op), npdt, op),
                   "%s iallreduce %s n=%d op=%s" % (label, dn, n, cohort.OP_NAMES[op]))
            # reduce, to a root that moves
            for op in (cohort.SUM, cohort.MAX):
                call += 1
                root = call % size
                src, dt = make(values(me, n, call, op), npdt)
                out = np.zeros_like(src) if me == root else None
                r = g.ireduce(src, out, op=op, root=root, dtype=dt).wait()
                if me == root:
                    ok(close(as_f64(r, npdt), reduce_ref(size, n, call, op), npdt, op),
                       "%s reduce %s n=%d root=%d" % (label, dn, n, root))
                call += 1
                buf, dt = make(values(me, n, call, op), npdt)
                g.reduce(buf, None, op=op, root=root, dtype=dt)
                if me == root:
                    ok(close(as_f64(buf, npdt), reduce_ref(size, n, call, op), npdt, op),
                       "%s reduce in place %s n=%d root=%d" % (label, dn, n, root))
            # bcast
            call += 1
            root = call % size
            buf, dt = make(values(root, n, call) if me == root else np.zeros(n), npdt)
            (g.ibcast(buf, root, dtype=dt).wait() if call % 2 else g.bcast(buf, root, dtype=dt))
            ok(np.array_equal(as_f64(buf, npdt), values(root, n, call)),
               "%s bcast %s n=%d root=%d" % (label, dn, n, root))
            # allgather
            call += 1
            src, dt = make(values(me, n, call), npdt)
            out = np.zeros(size * n, dtype=src.dtype)
            (g.iallgather(src, out, dtype=dt).wait() if call % 2
             else g.allgather(src, out, dtype=dt))
            want = np.concatenate([values(r, n, call) for r in range(size)])
            ok(np.array_equal(as_f64(out, npdt), want), "%s allgather %s n=%d" % (label, dn, n))
            # reduce_scatter, out of place and in place
            call += 1
            src, dt = make(values(me, size * n, call), npdt)
            out = np.zeros(n, dtype=src.dtype)
            g.reduce_scatter(src, out, dtype=dt)
            want = reduce_ref(size, size * n, call, cohort.SUM)[me * n:(me + 1) * n]
            ok(np.array_equal(as_f64(out, npdt), want), "%s reduce_scatter %s n=%d"
               % (label, dn, n))
            call += 1
            buf, dt = make(values(me, size * n, call), npdt)
            g.ireduce_scatter(None, buf, dtype=dt).wait()
            want = reduce_ref(size, size * n, call, cohort.SUM)[me * n:(me + 1) * n]
            ok(np.array_equal(as_f64(buf[:n], npdt), want), "%s reduce_scatter in place %s "
               "n=%d" % (label, dn, n))
            # alltoall: block j of rank r is values(r, ...)[j*n:(j+1)*n]
            call += 1
            src, dt = make(values(me, size * n, call), npdt)
            out = np.zeros_like(src)
            (g.ialltoall(src, out, dtype=dt).wait() if call % 2
             else g.alltoall(src, out, dtype=dt))
            want = np.concatenate([values(r, size * n, call)[me * n:(me + 1) * n]
                                   for r in range(size)])
            ok(np.array_equal(as_f64(out, npdt), want), "%s alltoall %s n=%d" % (label, dn, n))
            # send/recv around a ring, blocking and nonblocking, two tags
            if size > 1:
                call += 1
                right, left = (me + 1) % size, (me - 1) % size
                src, dt = make(values(me, n, call), npdt)
                src2, _ = make(values(me, n, call + 1000), npdt)
                got = np.zeros_like(src)
                got2 = np.zeros_like(src)
                r2 = g.irecv(got2, left, tag=5, dtype=dt)
                r1 = g.irecv(got, left, tag=3, dtype=dt)
                s1 = g.isend(src, right, tag=3, dtype=dt)
                g.send(src2, right, tag=5, dtype=dt)
                for r in (s1, r1, r2):
                    r.wait()
                ok(np.array_equal(as_f64(got, npdt), values(left, n, call)),
                   "%s isend/irecv %s n=%d" % (label, dn, n))
                ok(np.array_equal(as_f64(got2, npdt), values(left, n, call + 1000)),
                   "%s send/irecv by tag %s n=%d" % (label, dn, n))
                if me % 2 == 0:
                    g.send(src, right, tag=9, dtype=dt)
                    g.recv(got, left, tag=9, dtype=dt)
                else:
                    g.recv(got, left, tag=9, dtype=dt)
                    g.send(src, right, tag=9, dtype=dt)
                ok(np.array_equal(as_f64(got, npdt), values(left, n, call)),
                   "%s send/recv %s n=%d" % (label, dn, n))
    g.barrier()
    g.ibarrier().wait()
    # a large float32 allreduce (past any eager threshold) and requests waited in reverse
    big = values(me, 300000, 1).astype(np.float32)
    g.allreduce(big)
    ok(np.array_equal(big.astype(np.float64), reduce_ref(size, 300000, 1, cohort.SUM)),
       "%s allreduce 300000 float32" % label)
    bufs = [values(me, 64, 100 + k).astype(np.int32) for k in range(4)]
    reqs = [g.iallreduce(b) for b in bufs]
    for k in reversed(range(4)):
        reqs[k].wait()
    ok(all(np.array_equal(bufs[k], reduce_ref(size, 64, 100 + k, cohort.SUM)) for k in
           range(4)), "%s four outstanding iallreduces waited in reverse" % label)


def check_buffers(ok, g):
    size = g.size
    b = bytearray([g.rank + 1] * 8)
    g.allreduce(b)
    ok(list(b) == [size * (size + 1) // 2 % 256] * 8, "bytearray allreduce (uint8)")
    a = array.array("d", [1.5] * 3)
    g.allreduce(memoryview(a))
    ok(list(a) == [1.5 * size] * 3, "array.array through memoryview")
    out = bytearray(4 * size)
    g.allgather(b"\x01\x02\x03\x04", out)  # bytes are fine to send
    ok(bytes(out) == b"\x01\x02\x03\x04" * size, "bytes as a send buffer")
    f = np.zeros(4, np.float32)
    g.allreduce(np.ones(4, np.float32), f)
    ok(np.all(f == size), "numpy out of place")
    h = np.ones(4, np.float16).view(np.uint16)  # float16 bits, dtype named by a numpy type
    g.allreduce(h, dtype=np.float16)
    ok(np.all(h.view(np.float16) == size), "dtype=np.float16 on uint16 bits")


def check_errors(ok, ctx):
    w = ctx.world
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros(3, np.int16)),
              "int16 has no cohort dtype", cohort._status.ERR_INVALID_ARG)
    ok.raises(cohort.CohortError, lambda: w.allreduce(np.zeros(3, np.int32), op=cohort.AVG),
              "AVG on int32 rejected by the library", cohort._status.ERR_INVALID_ARG)
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros(3, np.float32),
                                                         np.zeros(4, np.float32)),
              "allreduce size mismatch")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros(3, np.float32),
                                                         np.zeros(3, np.float64)),
              "allreduce dtype mismatch")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(b"abcd"), "read-only receive buffer")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros((4, 4), np.float32)[:, 1]),
              "non-contiguous array")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce([1.0, 2.0]), "a list is no buffer")
    ok.raises(cohort.InvalidArgument, lambda: w.bcast(np.zeros(2), w.size), "root out of range")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros(2), op="xor"), "unknown op")
    ok.raises(cohort.InvalidArgument, lambda: w.allgather(np.zeros(2), np.zeros(2 * w.size + 1)),
              "allgather receive size")
    ok.raises(cohort.InvalidArgument, lambda: w.allreduce(np.zeros(3, np.uint8),
                                                         dtype=cohort.FLOAT32),
              "3 bytes are no whole float32")
    ok.raises(cohort.InvalidArgument, lambda: ctx.layout("tp=3,pp=1000"), "bad layout spec",
              cohort._status.ERR_INVALID_ARG)
    lay = ctx.layout("tp=1")
    ok.raises(cohort.InvalidArgument, lambda: lay.group("nope"), "unknown layout kind")
    lay.free()
    ok.raises(cohort.InvalidArgument, lambda: lay.group("tp"), "layout used after free")
    ok.raises(cohort.InvalidArgument, lambda: ctx.group([ctx.size]), "rank out of range",
              cohort._status.ERR_INVALID_ARG)
    g = ctx.group([ctx.rank], tag="alone")
    g.free()
    ok.raises(cohort.InvalidArgument, lambda: g.allreduce(np.zeros(1)), "group used after free")
    ok(cohort.strerror(-3) != "" and "COHORT_ERR_NOT_MEMBER" == cohort.STATUS_NAMES[-3],
       "strerror and status names")
    # an aborted group fails its pending and later operations with COHORT_ERR_REVOKED
    mine = ctx.group([ctx.rank], tag="abort")
    pending = mine.irecv(np.zeros(1), 0, tag=1)
    mine.abort()
    ok.raises(cohort.Revoked, pending.wait, "pending request on an aborted group",
              cohort._status.ERR_REVOKED)
    ok.raises(cohort.Revoked, lambda: mine.allreduce(np.zeros(1)),
              "later op on an aborted group", cohort._status.ERR_REVOKED)
    mine.free()
    # a CUDA stream needs a device: refused without one; None is always fine
    alone = ctx.group([ctx.rank], tag="stream")
    alone.set_stream(None)
    if ctx.cuda_info()["devices"] == 0:
        ok.raises(cohort.Unsupported, lambda: alone.set_stream(1), "a stream without a device",
                  cohort._status.ERR_UNSUPPORTED)
    alone.free()


def check_groups_and_layouts(ok, ctx):
    size, me = ctx.size, ctx.rank
    evens = list(range(0, size, 2))
    g = ctx.group(evens, tag="evens")
    ok((g is None) == (me % 2 == 1), "non-members get None from group()")
    if g is not None:
        ok(g.members == evens and g.rank == evens.index(me), "member list and rank")
        g.free()
    specs = ["tp=1"]
    if size % 2 == 0:
        specs.append("tp=2")
    if size % 4 == 0:
        specs += ["tp=2,pp=2", "tp=2,pp=2,ep=2,etp=1"]
    for spec in specs:
        ref = cohort.megatron.parse(spec, size)
        with ctx.layout(spec) as lay:
            for kind in cohort.Layout.KINDS:
                grp = lay.group(kind)
                want = ref.rank_group(kind, me)
                ok((grp.members if grp else None) == want,
                   "%s %s: cohort %s, megatron.py %s" % (spec, kind,
                                                        grp.members if grp else None, want))
                if grp is not None:
                    one = np.ones(1, np.float32)
                    grp.allreduce(one)
                    ok(one[0] == grp.size, "%s %s allreduce" % (spec, kind))
    st = ctx.stats()
    # strings read through the right offsets: the ctypes struct matches cohort_stats_t
    ok(st["pmix_plugin"] in ("dmodex", "fence", "global", "group", "singleton") and
       st["progress"] in ("yield", "spin", "block") and st["groups_created"] >= 1,
       "stats: %s" % st)
    # the counters after the strings, in cohort_stats_t's order: bytes are never fewer than
    # messages, and failures none in a healthy job
    ok(st["single_copy_bytes"] >= st["single_copies"] >= 0 and st["peers_failed"] == 0,
       "stats counters: %s" % st)
    # the last two fields read too: no CUDA IPC vote or call without a device
    ok(ctx.cuda_info()["devices"] > 0 or st["cuda_ipc_calls"] == st["cuda_ipc_votes"] == 0,
       "CUDA counters: %s" % st)
    peers = ctx.wired_peers()
    ok(peers == sorted(peers), "wired peers ascending")
    for p in peers[:2]:
        ok(ctx.peer_info(p)["world_rank"] == p, "peer_info")


def main():
    with cohort.init() as ctx:
        ok = Checks("test_core", ctx.rank)
        check_group(ok, ctx.world, "world")
        rev = ctx.group(list(reversed(range(ctx.size))), tag="reversed")
        check_group(ok, rev, "reversed")
        rev.free()
        if ctx.size >= 3:
            sub = ctx.group([2, 0], tag="sub")  # member-only: ranks 0 and 2 alone create it
            if sub is not None:
                check_group(ok, sub, "sub[2,0]")
                sub.free()
        check_buffers(ok, ctx.world)
        check_errors(ok, ctx)
        check_groups_and_layouts(ok, ctx)
        # An outstanding request at finalize is cancelled; using it after raises.
        left = ctx.world.irecv(np.zeros(1), 0, tag=77)
        status = ok.finish(ctx.world)
    ok.raises(cohort.InvalidArgument, left.wait, "request used after finalize")
    ok.raises(cohort.InvalidArgument, lambda: ctx.world, "context used after finalize")
    if ok.failed:
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
