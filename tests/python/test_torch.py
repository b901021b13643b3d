"""torch CPU tensors through the cohort package (its own PMIx context, beside the backend's),
and the torch.distributed backend "cohort":
init_process_group("cohort"), every torch.distributed call Megatron-style code makes, async
Work objects, overlapping dist.new_group()s and torch's non-member handle, member-only
cohort.torch.new_group, Megatron's calling pattern (every rank calls new_group for every group
of a layout, then one all_reduce in each own group), and errors raising with the cohort status.
References are computed locally. Run under mpirun with 4 ranks (works with 2 or more)."""
import sys
import warnings

from harness import Checks, need_backend

ct = need_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cohort  # noqa: E402

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def vals(r, n, call, dtype=torch.float64):
    i = torch.arange(n, dtype=torch.int64)
    return ((r * 7 + i * 3 + call) % 5 + 1).to(dtype)


def check_tensors(ok, ctx):
    """Tensors straight through cohort.Group, every mapped dtype."""
    g, size, me = ctx.world, ctx.size, ctx.rank
    call = 0
    for dt in DTYPES:
        for n in (0, 1, 33, 5000):
            call += 1
            t = vals(me, n, call, dt)
            g.allreduce(t)
            want = sum(vals(r, n, call) for r in range(size))
            ok(torch.equal(t.double(), want), "tensor allreduce sum %s n=%d" % (dt, n))
            call += 1
            t = vals(me, n, call, dt)
            out = torch.empty_like(t)
            g.iallreduce(t, out, op=cohort.MAX).wait()
            want = torch.stack([vals(r, n, call) for r in range(size)]).max(0).values \
                if n else torch.zeros(0, dtype=torch.float64)
            ok(torch.equal(out.double(), want), "tensor iallreduce max %s n=%d" % (dt, n))
            if dt in FLOATS:
                call += 1
                t = vals(me, n, call, dt)
                g.allreduce(t, op="avg")
                want = sum(vals(r, n, call) for r in range(size)) / size
                tol = 2e-2 if dt in (torch.float16, torch.bfloat16) else 1e-6
                ok(torch.allclose(t.double(), want, rtol=tol, atol=tol),
                   "tensor allreduce avg %s n=%d" % (dt, n))
            call += 1
            t = vals(me, n, call, dt)
            out = torch.zeros(size * n, dtype=dt)
            g.allgather(t, out)
            want = torch.cat([vals(r, n, call) for r in range(size)])
            ok(torch.equal(out.double(), want), "tensor allgather %s n=%d" % (dt, n))
            call += 1
            t = vals(me, size * n, call, dt)
            out = torch.zeros(size * n, dtype=dt)
            g.alltoall(t, out)
            want = torch.cat([vals(r, size * n, call)[me * n:(me + 1) * n] for r in range(size)])
            ok(torch.equal(out.double(), want), "tensor alltoall %s n=%d" % (dt, n))
            call += 1
            t = vals(me, size * n, call, dt)
            out = torch.zeros(n, dtype=dt)
            g.reduce_scatter(t, out)
            want = sum(vals(r, size * n, call) for r in range(size))[me * n:(me + 1) * n]
            ok(torch.equal(out.double(), want), "tensor reduce_scatter %s n=%d" % (dt, n))
    ok.raises(cohort.Unsupported, lambda: g.allreduce(torch.zeros(4, device="meta")),
              "a device tensor is refused", cohort._status.ERR_UNSUPPORTED)
    try:
        g.allreduce(torch.zeros(4, device="meta"))
    except cohort.Unsupported as e:
        ok("cohort takes CPU and CUDA tensors" in str(e), "device error text: %s" % e)
    ok.raises(cohort.InvalidArgument, lambda: g.allreduce(torch.zeros(4, 4)[:, 0]),
              "non-contiguous tensor refused by the plain API")
    ok.raises(cohort.InvalidArgument, lambda: g.allreduce(torch.zeros(4, dtype=torch.bool)),
              "bool has no cohort dtype")
    # dtype override: a float32 tensor's bytes as uint8
    t = torch.ones(2, dtype=torch.float32)
    g.bcast(t, 0, dtype=cohort.UINT8)
    ok(torch.equal(t, torch.ones(2)), "dtype= override on a tensor")


def check_backend(ok, ctx):
    size, me = dist.get_world_size(), dist.get_rank()
    ok(dist.get_backend() == "cohort", "default backend is cohort")
    ok(size == ctx.size and me == ctx.rank, "torch ranks are the launcher's")
    R = dist.ReduceOp
    total = sum(range(1, size + 1))
    for op, want in ((R.SUM, total), (R.PRODUCT, float(torch.arange(1, size + 1).prod())),
                     (R.MIN, 1), (R.MAX, size), (R.AVG, total / size)):
        t = torch.full((5,), float(me + 1))
        dist.all_reduce(t, op=op)
        ok(torch.allclose(t, torch.full((5,), float(want))), "all_reduce %s" % op.op
           if hasattr(op, "op") else "all_reduce")
    for dt in DTYPES:
        t = (torch.arange(6) + me).to(dt)
        w = dist.all_reduce(t, async_op=True)
        ok(w.wait() is True and w.is_completed() and w.is_success(), "async Work completes")
        ok(torch.equal(t.double(), sum((torch.arange(6) + r).double() for r in range(size))),
           "async all_reduce %s" % dt)
    # a non-contiguous tensor: results copied back
    m = torch.zeros(3, 4)
    m[:, 1] = me + 1
    dist.all_reduce(m[:, 1])
    ok(torch.equal(m[:, 1], torch.full((3,), float(total))) and m[:, 0].abs().sum() == 0,
       "all_reduce on a non-contiguous view")
    for src in range(size):
        t = torch.arange(7, dtype=torch.float32) * (src + 1) if me == src else torch.zeros(7)
        dist.broadcast(t, src)
        ok(torch.equal(t, torch.arange(7, dtype=torch.float32) * (src + 1)), "broadcast %d" % src)
    for dst in range(size):
        t = torch.full((3,), float(me + 1))
        dist.reduce(t, dst)
        if me == dst:
            ok(torch.equal(t, torch.full((3,), float(total))), "reduce to %d" % dst)
    outs = [torch.zeros(2, 3) for _ in range(size)]
    dist.all_gather(outs, torch.full((2, 3), float(me)))
    ok(all(torch.equal(o, torch.full((2, 3), float(r))) for r, o in enumerate(outs)),
       "all_gather list")
    big = torch.zeros(size * 4, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(big, torch.full((4,), float(me), dtype=torch.bfloat16))
    ok(torch.equal(big, torch.arange(size).repeat_interleave(4).to(torch.bfloat16)),
       "all_gather_into_tensor bfloat16")
    out = torch.zeros(3)
    dist.reduce_scatter(out, [torch.full((3,), float(me * 10 + j)) for j in range(size)])
    ok(torch.equal(out, torch.full((3,), float(sum(r * 10 + me for r in range(size))))),
       "reduce_scatter list")
    out = torch.zeros(2, dtype=torch.float16)
    dist.reduce_scatter_tensor(out, torch.arange(2 * size, dtype=torch.float16) + me)
    want = sum(torch.arange(2 * size, dtype=torch.float64) + r for r in range(size))
    ok(torch.equal(out.double(), want[2 * me:2 * me + 2]), "reduce_scatter_tensor float16")
    inp = torch.arange(size * 2, dtype=torch.int64) + 100 * me
    out = torch.zeros(size * 2, dtype=torch.int64)
    dist.all_to_all_single(out, inp)
    want = torch.cat([torch.arange(2 * me, 2 * me + 2) + 100 * r for r in range(size)])
    ok(torch.equal(out, want), "all_to_all_single even")
    # uneven: rank r sends (j + 1) rows to rank j; rows of 3, value 1000 r + j
    in_splits = [j + 1 for j in range(size)]
    out_splits = [me + 1] * size
    inp = torch.cat([torch.full((j + 1, 3), 1000 * me + j) for j in range(size)])
    out = torch.zeros(sum(out_splits), 3, dtype=inp.dtype)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = torch.cat([torch.full((me + 1, 3), 1000 * r + me) for r in range(size)])
    ok(torch.equal(out, want), "all_to_all_single uneven")
    outs = [torch.zeros(2) for _ in range(size)]
    dist.all_to_all(outs, [torch.full((2,), float(10 * me + j)) for j in range(size)])
    ok(all(torch.equal(o, torch.full((2,), float(10 * r + me))) for r, o in enumerate(outs)),
       "all_to_all list")
    outs = [torch.zeros(r + 1) for r in range(size)]
    dist.all_to_all(outs, [torch.full((me + 1,), float(me)) for _ in range(size)])
    ok(all(torch.equal(o, torch.full((r + 1,), float(r))) for r, o in enumerate(outs)),
       "all_to_all uneven list")
    dist.barrier()
    dist.barrier(async_op=True).wait()
    # point-to-point: a ring, blocking and nonblocking
    right, left = (me + 1) % size, (me - 1) % size
    got = torch.zeros(4)
    rq = dist.irecv(got, left, tag=4)
    sq = dist.isend(torch.full((4,), float(me)), right, tag=4)
    sq.wait()
    rq.wait()
    ok(torch.equal(got, torch.full((4,), float(left))), "isend/irecv ring")
    if me % 2 == 0:
        dist.send(torch.full((2,), float(me)), right)
        dist.recv(got[:2], left)
    else:
        dist.recv(got[:2], left)
        dist.send(torch.full((2,), float(me)), right)
    ok(torch.equal(got[:2], torch.full((2,), float(left))), "send/recv ring")
    gl = [torch.zeros(2) for _ in range(size)] if me == 0 else None
    dist.gather(torch.full((2,), float(me)), gl, dst=0)
    if me == 0:
        ok(all(torch.equal(x, torch.full((2,), float(r))) for r, x in enumerate(gl)), "gather")
    out = torch.zeros(3)
    dist.scatter(out, [torch.full((3,), float(r * 2)) for r in range(size)] if me == 1 else None,
                 src=1)
    ok(torch.equal(out, torch.full((3,), float(me * 2))), "scatter")
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": me, "name": "r%d" % me})
    ok(objs == [{"rank": r, "name": "r%d" % r} for r in range(size)], "all_gather_object")
    lst = [("hello", me)] if me == 0 else [None]
    dist.broadcast_object_list(lst, src=0)
    ok(lst == [("hello", 0)], "broadcast_object_list")
    ts = [torch.full((2,), float(me)), torch.full((3,), 1.0)]
    with warnings.catch_warnings():  # 1.13 announces its deprecation
        warnings.simplefilter("ignore")
        dist.all_reduce_coalesced(ts)
    ok(torch.equal(ts[0], torch.full((2,), float(sum(range(size))))) and
       torch.equal(ts[1], torch.full((3,), float(size))), "all_reduce_coalesced")


def check_groups(ok, ctx):
    size, me = dist.get_world_size(), dist.get_rank()
    NON = dist.GroupMember.NON_GROUP_MEMBER
    # overlapping classic groups: every rank calls every new_group
    specs = [[0, 1], list(range(1, size)), list(range(size)), [size - 1, 0]]
    groups = [dist.new_group(r) for r in specs]
    for ranks, g in zip(specs, groups):
        if me in ranks:
            ok(g is not NON and dist.get_rank(g) == sorted(ranks).index(me) and
               dist.get_world_size(g) == len(ranks), "new_group(%s) member view" % ranks)
            t = torch.tensor([float(me)])
            w = dist.all_reduce(t, group=g, async_op=True)
            w.wait()
            ok(t.item() == sum(ranks), "all_reduce in new_group(%s)" % ranks)
            src = max(ranks)
            b = torch.tensor([float(me)])
            dist.broadcast(b, src, group=g)
            ok(b.item() == src, "broadcast from global rank %d in %s" % (src, ranks))
        else:
            ok(g is NON and dist.get_rank(g) == -1, "non-member of %s gets NON_GROUP_MEMBER"
               % ranks)
    # member-only: only the members call; no barrier, no store
    odd = [r for r in range(size) if r % 2 == 1]
    evens = [r for r in range(size) if r % 2 == 0]
    mine = odd if me % 2 else evens
    m = ct.new_group(mine)
    ok(dist.get_rank(m) == mine.index(me) and dist.get_world_size(m) == len(mine),
       "member-only group view")
    ok(dist.get_process_group_ranks(m) == mine, "member-only group ranks")
    t = torch.tensor([float(me)])
    dist.all_reduce(t, group=m)
    ok(t.item() == sum(mine), "all_reduce in a member-only group")
    outs = [torch.zeros(1) for _ in mine]
    dist.all_gather(outs, torch.tensor([float(me)]), group=m)
    ok([o.item() for o in outs] == [float(r) for r in mine], "all_gather in a member-only group")
    b = torch.tensor([float(me)])
    dist.broadcast(b, mine[-1], group=m)
    ok(b.item() == mine[-1], "broadcast from a global rank in a member-only group")
    dist.barrier(group=m)
    ok(ct.new_group([r for r in range(size) if r != me]) is NON if size > 1 else True,
       "member-only non-member handle")
    # errors raise with the cohort status
    alone = ct.new_group([me])
    ok.raises_status(lambda: dist.all_reduce(torch.zeros(2), op=dist.ReduceOp.BAND, group=alone),
                     "BAND is refused", cohort._status.ERR_UNSUPPORTED)
    # (meta tensors never reach a backend: torch 2.x runs c10d ops on them as meta kernels)
    ct.cohort_group(alone).abort()
    ok.raises_status(lambda: dist.all_reduce(torch.zeros(2), group=alone, async_op=True).wait(),
                     "Work.wait() raises the error of an aborted group",
                     cohort._status.ERR_REVOKED)


def check_megatron(ok, ctx, spec):
    size, me = dist.get_world_size(), dist.get_rank()
    ref = cohort.megatron.parse(spec, size)
    NON = dist.GroupMember.NON_GROUP_MEMBER
    for how in ("classic", "member-only"):
        own = {}
        for kind, members in ref.all_groups():
            if how == "classic":
                g = dist.new_group(members)
            elif me in members:
                g = ct.new_group(members)
            else:
                continue
            if me in members:
                own[kind] = (g, members)
            else:
                ok(g is NON, "%s %s: non-member handle" % (how, kind))
        for kind in cohort.megatron.KIND_ORDER:
            want = ref.rank_group(kind, me)
            ok((kind in own) == (want is not None), "%s %s: own group present" % (how, kind))
            if kind not in own:
                continue
            g, members = own[kind]
            t = torch.tensor([float(me), 1.0])
            dist.all_reduce(t, group=g)
            ok(t.tolist() == [float(sum(members)), float(len(members))],
               "%s %s %s: all_reduce gave %s" % (how, spec, kind, t.tolist()))


def main():
    ctx = cohort.init()
    ok = Checks("test_torch", ctx.rank)
    check_tensors(ok, ctx)
    ct.init_process_group()
    check_backend(ok, ctx)
    check_groups(ok, ctx)
    if dist.get_world_size() % 4 == 0:
        check_megatron(ok, ctx, "tp=2,pp=2,ep=2,etp=1")
    else:
        check_megatron(ok, ctx, "tp=2" if dist.get_world_size() % 2 == 0 else "tp=1")
    status = ok.finish(ctx.world)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
