"""Every collective and point-to-point call of backend "cohort" against gloo's result on the
same inputs, in one job: the default group is cohort's, a gloo group over the same ranks is the
reference (where gloo refuses a call, the reference is computed locally and that is said).
Then groups: dist.new_group(ranks) called by every rank (non-members get torch's non-member
handle), and dist.new_group(ranks, use_local_synchronization=True) called by the members only,
in an order of their own; an all_reduce in each checked against its members' ranks.

Runs under mpirun (PMIx bootstrap: cohort.torch.init_process_group fills torch's env in from
the launcher) and under torchrun (store bootstrap: torch's env is set); EXPECT_BOOTSTRAP=pmix
or store checks which one the backend took. 2 or more ranks."""
import os
import sys

from harness import Checks, need_backend

ct = need_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

R = dist.ReduceOp
FLOATS = (torch.float32, torch.float64)
INTS = (torch.int32, torch.int64)


def vals(r, n, call, dtype):
    i = torch.arange(n, dtype=torch.int64)
    return ((r * 7 + i * 3 + call) % 5 + 1).to(dtype)


class Both:
    """Run one call on cohort's group and on gloo's with copies of the same inputs."""

    def __init__(self, ok, gloo):
        self.ok, self.gloo = ok, gloo
        self.refused = []

    def run(self, what, make, call, local=None, only=None):
        """make() -> fresh inputs (a list of tensors or lists); call(args, group) does the
        operation in place. The outputs (args after the call) must be equal (on rank `only`
        alone where only that rank's are defined: reduce's root)."""
        mine, ref = make(), make()
        call(mine, None)
        try:
            call(ref, self.gloo)
        except RuntimeError as e:  # gloo refuses it: a local reference instead
            if local is None:
                raise
            self.refused.append("%s (%s)" % (what, str(e).splitlines()[0][:60]))
            ref = local()
        if only is not None and dist.get_rank() != only:
            return
        flat_m, flat_r = _flatten(mine), _flatten(ref)
        same = len(flat_m) == len(flat_r) and all(
            a.dtype == b.dtype and a.shape == b.shape and
            (torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b)))
            for a, b in zip(flat_m, flat_r))
        self.ok(same, "%s: cohort %s, gloo %s" % (what, _short(flat_m), _short(flat_r)))


def _short(ts):
    return [t.reshape(-1)[:6].tolist() + (["..."] if t.numel() > 6 else []) for t in ts]


def _flatten(x):
    if x is None:  # a rooted call's list on a rank that is not the root
        return []
    if isinstance(x, torch.Tensor):
        return [x]
    out = []
    for y in x:
        out.extend(_flatten(y))
    return out


def check_collectives(ok, gloo):
    size, me = dist.get_world_size(), dist.get_rank()
    b = Both(ok, gloo)
    root = 1 % size
    for n in (1, 1000):
        for dt in FLOATS + INTS:
            for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX):
                b.run("all_reduce %s %s n=%d" % (op, dt, n), lambda: [vals(me, n, 1, dt)],
                      lambda a, g, op=op: dist.all_reduce(a[0], op=op, group=g))
            b.run("reduce %s n=%d root %d" % (dt, n, root), lambda: [vals(me, n, 2, dt)],
                  lambda a, g: dist.reduce(a[0], root, group=g), only=root)
            b.run("broadcast %s n=%d root %d" % (dt, n, root), lambda: [vals(me, n, 3, dt)],
                  lambda a, g: dist.broadcast(a[0], root, group=g))
    # AVG: gloo has none; the reference is gloo's SUM divided
    for dt in FLOATS:
        t, ref = vals(me, 10, 4, dt), vals(me, 10, 4, dt)
        dist.all_reduce(t, op=R.AVG)
        dist.all_reduce(ref, group=gloo)
        ok(torch.allclose(t, ref / size), "all_reduce AVG %s: %s, gloo's SUM / %d %s"
           % (dt, t.tolist(), size, (ref / size).tolist()))
    for n in (1, 333):
        dt = torch.float32
        b.run("all_gather n=%d" % n,
              lambda: [[torch.zeros(n, dtype=dt) for _ in range(size)], vals(me, n, 5, dt)],
              lambda a, g: dist.all_gather(a[0], a[1], group=g))
        b.run("all_gather_into_tensor n=%d" % n,
              lambda: [torch.zeros(n * size, dtype=dt), vals(me, n, 6, dt)],
              lambda a, g: dist.all_gather_into_tensor(a[0], a[1], group=g))

        def rs_local(n=n, dt=dt):
            total = sum(vals(r, n * size, 7, dt) for r in range(size))
            return [torch.zeros(n, dtype=dt) + total[me * n:(me + 1) * n],
                    list(vals(me, n * size, 7, dt).chunk(size))]
        b.run("reduce_scatter n=%d" % n,
              lambda: [torch.zeros(n, dtype=dt), list(vals(me, n * size, 7, dt).chunk(size))],
              lambda a, g: dist.reduce_scatter(a[0], a[1], group=g), local=rs_local)

        def rst_local(n=n, dt=dt):
            total = sum(vals(r, n * size, 8, dt) for r in range(size))
            return [total[me * n:(me + 1) * n].clone(), vals(me, n * size, 8, dt)]
        b.run("reduce_scatter_tensor n=%d" % n,
              lambda: [torch.zeros(n, dtype=dt), vals(me, n * size, 8, dt)],
              lambda a, g: dist.reduce_scatter_tensor(a[0], a[1], group=g), local=rst_local)
        b.run("all_to_all n=%d" % n,
              lambda: [[torch.zeros(n, dtype=dt) for _ in range(size)],
                       list(vals(me, n * size, 9, dt).chunk(size))],
              lambda a, g: dist.all_to_all(a[0], a[1], group=g))
        b.run("all_to_all_single n=%d" % n,
              lambda: [torch.zeros(n * size, dtype=dt), vals(me, n * size, 10, dt)],
              lambda a, g: dist.all_to_all_single(a[0], a[1], group=g))
    # uneven all_to_all_single: rank r sends r + j + 1 rows to rank j
    ins = [me + j + 1 for j in range(size)]
    outs = [r + me + 1 for r in range(size)]
    b.run("all_to_all_single uneven",
          lambda: [torch.zeros(sum(outs), 2), vals(me, sum(ins) * 2, 11,
                                                   torch.float32).reshape(-1, 2)],
          lambda a, g: dist.all_to_all_single(a[0], a[1], outs, ins, group=g))
    def a2a_local():
        got = [vals(r, sum(r + j + 1 for j in range(size)), 12, torch.float32).split(
            [r + j + 1 for j in range(size)])[me].clone() for r in range(size)]
        return [got, list(vals(me, sum(ins), 12, torch.float32).split(ins))]
    b.run("all_to_all uneven",
          lambda: [[torch.zeros(o) for o in outs],
                   list(vals(me, sum(ins), 12, torch.float32).split(ins))],
          lambda a, g: dist.all_to_all(a[0], a[1], group=g), local=a2a_local)
    b.run("gather root %d" % root,
          lambda: [[torch.zeros(5) for _ in range(size)] if me == root else None,
                   vals(me, 5, 13, torch.float32)],
          lambda a, g: dist.gather(a[1], a[0], root, group=g))
    b.run("scatter root %d" % root,
          lambda: [torch.zeros(4), [vals(r, 4, 14, torch.float32) for r in range(size)]
                   if me == root else None],
          lambda a, g: dist.scatter(a[0], a[1], root, group=g))
    dist.barrier()
    # p2p: a ring, blocking and nonblocking, tags
    nxt, prv = (me + 1) % size, (me - 1) % size

    def ring(a, g):  # both groups are the world: group ranks are global ranks
        if me % 2 == 0:
            dist.send(a[1], nxt, group=g, tag=3)
            dist.recv(a[0], prv, group=g, tag=3)
        else:
            dist.recv(a[0], prv, group=g, tag=3)
            dist.send(a[1], nxt, group=g, tag=3)
    if size > 1:
        b.run("send/recv ring", lambda: [torch.zeros(7), vals(me, 7, 15, torch.float32)], ring)

        def iring(a, g):
            ws = [dist.irecv(a[0], prv, group=g, tag=4), dist.isend(a[1], nxt, group=g, tag=4)]
            for w in ws:
                w.wait()
        b.run("isend/irecv ring", lambda: [torch.zeros(3, dtype=torch.int64),
                                           vals(me, 3, 16, torch.int64)], iring)
    if me == 0 and b.refused:
        print("test_torch_gloo: gloo refused, compared to a local reference: %s"
              % "; ".join(b.refused), flush=True)


def check_groups(ok):
    size, me = dist.get_world_size(), dist.get_rank()
    NON = dist.GroupMember.NON_GROUP_MEMBER
    # classic: every rank calls, members get the group, others the non-member handle
    first = list(range(0, size - 1)) or [0]
    g = dist.new_group(first)
    if me in first:
        t = torch.tensor([float(me)])
        dist.all_reduce(t, group=g)
        ok(t.item() == sum(first), "classic new_group %s: %s" % (first, t.item()))
        ok(dist.get_backend(g) == "cohort", "classic new_group's backend is cohort")
    else:
        ok(g is NON, "classic new_group: non-member handle")
    # member-only: evens and odds, each created by its members only, then a pair, in an
    # order that differs between the two kinds of member
    evens, odds = list(range(0, size, 2)), list(range(1, size, 2))
    mine = evens if me % 2 == 0 else odds
    pair = [0, size - 1]
    made = {}
    order = [("parity", mine), ("pair", pair)]
    if me % 2:
        order.reverse()
    for kind, members in order:
        if me in members:
            made[kind] = (dist.new_group(members, use_local_synchronization=True), members)
    for kind in ("parity", "pair"):
        if kind not in made:
            continue
        grp, members = made[kind]
        ok(dist.get_process_group_ranks(grp) == members, "%s ranks" % kind)
        t = torch.tensor([float(me), 1.0])
        dist.all_reduce(t, group=grp)
        ok(t.tolist() == [float(sum(members)), float(len(members))],
           "member-only %s %s: all_reduce gave %s" % (kind, members, t.tolist()))
        view = ct.cohort_group(grp)
        ok(view.ranks == members and view.size == len(members), "cohort_group %r" % (view,))
    h = ct.new_group([r for r in range(size) if r != me]) if size > 1 else None
    ok(size == 1 or h is NON, "cohort.torch.new_group: non-member handle without a call")
    dist.barrier()


def main():
    ct.init_process_group()
    me = dist.get_rank()
    ok = Checks("test_torch_gloo", me)
    info = ct.info()
    want = os.environ.get("EXPECT_BOOTSTRAP")
    ok(want is None or info["bootstrap"] == want,
       "bootstrap %s, wanted %s" % (info["bootstrap"], want))
    if me == 0:
        print("test_torch_gloo: torch %s, %d ranks, %s" % (torch.__version__,
                                                           dist.get_world_size(), info),
              flush=True)
    gloo = dist.new_group(backend="gloo")
    check_collectives(ok, gloo)
    check_groups(ok)
    status = ok.finish_dist(gloo)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
