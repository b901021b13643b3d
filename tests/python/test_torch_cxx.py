"""The "cohort" backend (cohort._cohort_torch) under torch's own C++ clients, each run side
by side with gloo in the same job (the default group is cohort's, a gloo group over the same
ranks is the reference):
- DistributedDataParallel on a small MLP, 5 steps: find_unused_parameters off and on (a layer
  the forward skips), and with the fp16 compress communication hook;
- ZeroRedundancyOptimizer under DDP; FullyShardedDataParallel where torch allows it on CPU
  (a refusal is printed, and must come from FSDP itself, not the backend);
- nonblocking Work: a receive whose sender has not sent yet is not completed, then completes
  on the progress thread without wait(); get_future().then(...); several in flight at once;
- member-only Megatron-style groups (tp, dp) built by their members alone
  (use_local_synchronization=True), all_reduce in each;
- bool tensors, AVG on integers, all_gather_coalesced, recv from any source (the source each
  message came from, also in a member-only group); errors (a refused op, an aborted group, a
  timeout: " Timed out " and [COHORT_ERR_TIMEOUT]) carry the cohort status name.
Every check compares against gloo or a reference computed locally. Run under mpirun or
torchrun, 4 ranks (2 or more work). Skipped (77) when torch or the extension is missing."""
import datetime
import sys
import time
import warnings

from harness import Checks, need_backend

ct = need_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS = 5


def net(unused=False):
    torch.manual_seed(7)
    layers = [torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
              torch.nn.Linear(32, 4)]
    m = torch.nn.Sequential(*layers)
    if unused:
        m.extra = torch.nn.Linear(4, 4)  # never called by Sequential.forward
    return m


def batch(rank, step):
    g = torch.Generator().manual_seed(rank * 7919 + step)
    x = torch.randn(16, 8, generator=g)
    return x, x[:, :4] * 2 - x[:, 4:]


def train(pg, unused=False, hook=None, zero=False):
    model = DDP(net(unused), process_group=pg, find_unused_parameters=unused)
    if hook is not None:
        model.register_comm_hook(pg, hook)
    if zero:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD,
                                      process_group=pg, lr=0.05)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(STEPS):
        x, y = batch(dist.get_rank(), step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.module.parameters()])


def compare(ok, what, mine, ref, report, fp16=False):
    bitwise = torch.equal(mine, ref)
    diff = (mine - ref).abs().max().item()
    # Float sums of 4 ranks in another order (cohort's algorithm vs gloo's ring) may differ in
    # the last bit; more than a few ulps after 5 steps is a wrong gradient. The fp16 hook sums
    # in float16: an ulp there is 1e-3 relative.
    rtol, atol = (1e-3, 1e-4) if fp16 else (1e-5, 1e-6)
    ok(bitwise or torch.allclose(mine, ref, rtol=rtol, atol=atol),
       "%s: cohort vs gloo differ by %g" % (what, diff))
    report.append("%s: %s" % (what, "bitwise equal" if bitwise else "max |diff| %.3g" % diff))


def check_ddp(ok, gloo, report):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    cases = [("DDP", {}), ("DDP find_unused_parameters", {"unused": True}),
             ("DDP fp16_compress_hook", {"hook": default_hooks.fp16_compress_hook}),
             ("DDP + ZeroRedundancyOptimizer", {"zero": True})]
    for what, kw in cases:
        mine = train(None, **kw)
        ref = train(gloo, **kw)
        compare(ok, what, mine, ref, report, fp16="hook" in kw)
        # every rank must hold the same parameters after DDP
        all_p = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(all_p, mine)
        ok(all(torch.equal(p, mine) for p in all_p), "%s: ranks agree" % what)


def check_fsdp(ok, gloo, report):
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    except (ImportError, ValueError) as e:  # 1.13's dataclasses under Python 3.11
        report.append("FSDP: torch %s cannot import it under Python %d.%d: %s: %s"
                      % (torch.__version__, sys.version_info[0], sys.version_info[1],
                         type(e).__name__, str(e)[:120]))
        return
    try:
        model = FSDP(net(), process_group=dist.group.WORLD)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        x, y = batch(dist.get_rank(), 0)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    except (RuntimeError, AssertionError, AttributeError, ValueError) as e:
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        ok("cohort backend" not in text, "FSDP failed in the backend: %s" % text)
        report.append("FSDP: refused by torch %s on CPU: %s: %s"
                      % (torch.__version__, type(e).__name__, text[:160]))
        return
    report.append("FSDP: ran on CPU (no gloo comparison written for it)")


def check_async(ok, gloo):
    size, me = dist.get_world_size(), dist.get_rank()
    # a receive from a rank that sends only after a gloo barrier this rank enters later
    t = torch.zeros(3)
    if me == 0:
        w = dist.irecv(t, 1, tag=5)
        fut = w.get_future()
        ok(not w.is_completed() and not fut.done(),
           "irecv completed before its sender sent")
        dist.barrier(group=gloo)
        deadline = time.time() + 60  # waits for the progress thread, bounded
        while not w.is_completed() and time.time() < deadline:
            time.sleep(0.001)
        ok(w.is_completed(), "irecv not completed by the progress thread within 60 s, "
                             "without wait()")
        ok(fut.done() and torch.equal(fut.value()[0], torch.full((3,), 9.0)),
           "irecv future value")
    elif me == 1:
        dist.barrier(group=gloo)
        dist.send(torch.full((3,), 9.0), 0, tag=5)
    else:
        dist.barrier(group=gloo)
    # get_future().then(...) and several operations in flight, waited in reverse order
    ts = [torch.full((1000,), float(me + i)) for i in range(4)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    futs = [w.get_future().then(lambda f: f.value()[0] * 2) for w in works]
    total = sum(range(size))
    for i in reversed(range(4)):
        got = futs[i].wait()
        ok(torch.equal(got, torch.full((1000,), 2.0 * (total + size * i))),
           "future.then of all_reduce %d" % i)
        ok(works[i].is_completed() and works[i].is_success(), "work %d success" % i)
    ok(torch.equal(works[0].result()[0], ts[0]), "Work.result() is the output tensor")


def check_dtypes(ok, gloo):
    size, me = dist.get_world_size(), dist.get_rank()
    R = dist.ReduceOp
    # gloo 1.13 refuses bool all_reduce ("Invalid scalar type"): the reference is local
    every = torch.stack([torch.tensor([r % 2 == 0, True, False, r == 0]) for r in range(size)])
    for op, ref in ((R.SUM, every.any(0)), (R.PRODUCT, every.all(0)), (R.MIN, every.all(0)),
                    (R.MAX, every.any(0))):
        b = every[me].clone()
        dist.all_reduce(b, op=op)
        ok(torch.equal(b, ref), "bool all_reduce %s: %s, wanted %s" % (op, b, ref))
    for dt in (torch.int32, torch.int64, torch.int8, torch.uint8):
        t = (torch.arange(5) + me * 3).to(dt)
        dist.all_reduce(t, op=R.AVG)
        want = sum(torch.arange(5) + r * 3 for r in range(size)).div(size, rounding_mode="trunc")
        ok(torch.equal(t, want.to(dt)), "AVG on %s: %s, wanted %s" % (dt, t, want))
    b = torch.tensor([me == 1, True])
    outs = [torch.zeros(2, dtype=torch.bool) for _ in range(size)]
    dist.all_gather(outs, b)
    ok(all(torch.equal(o, torch.tensor([r == 1, True])) for r, o in enumerate(outs)),
       "bool all_gather")
    bb = torch.tensor([False]) if me else torch.tensor([True])
    dist.broadcast(bb, 0)
    ok(bool(bb.item()), "bool broadcast")
    ins = [torch.full((2,), float(me)), torch.arange(3.0) + me]  # torch wants one dtype
    outs = [[torch.zeros(2), torch.zeros(3)] for _ in range(size)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.all_gather_coalesced(outs, ins)
    ok(all(torch.equal(o[0], torch.full((2,), float(r))) and
           torch.equal(o[1], torch.arange(3) + r) for r, o in enumerate(outs)),
       "all_gather_coalesced")
    z = torch.zeros(2, 2, dtype=torch.complex64) + me
    dist.all_reduce(z)
    ok(torch.equal(z, torch.zeros(2, 2, dtype=torch.complex64) + sum(range(size))),
       "complex all_reduce")


def check_anysource(ok):
    """dist.recv without a source: rank 0 takes one message from every other rank, each
    named once by the returned source; then once in a member-only group, whose source comes
    back as a global rank."""
    size, me = dist.get_world_size(), dist.get_rank()
    if me == 0:
        seen = []
        for _ in range(size - 1):
            t = torch.zeros(4)
            src = dist.recv(t, tag=21)
            seen.append(src)
            ok(torch.equal(t, torch.full((4,), float(src))), "recv any source: data of %s" % src)
        ok(sorted(seen) == list(range(1, size)), "recv any source: sources %s" % seen)
    else:
        dist.send(torch.full((4,), float(me)), 0, tag=21)
    if size >= 3:
        members = [0, size - 1]
        if me in members:
            g = ct.new_group(members)
            if me == 0:
                t = torch.zeros(1)
                ok(dist.recv(t, group=g, tag=2) == size - 1 and t.item() == size - 1,
                   "recv any source in a group gives the global rank")
            else:
                dist.send(torch.full((1,), float(me)), 0, group=g, tag=2)


def check_megatron(ok):
    """tp pairs and dp strides, each group built by its own members only."""
    size, me = dist.get_world_size(), dist.get_rank()
    tp = 2 if size % 2 == 0 else 1
    tp_members = [me - me % tp + i for i in range(tp)]
    dp_members = list(range(me % tp, size, tp))
    groups = {"tp": (ct.new_group(tp_members), tp_members),
              "dp": (ct.new_group(dp_members), dp_members)}
    for kind, (g, members) in groups.items():
        ok(dist.get_process_group_ranks(g) == members, "%s group ranks" % kind)
        t = torch.tensor([float(me), 1.0])
        w = dist.all_reduce(t, group=g, async_op=True)
        w.wait()
        ok(t.tolist() == [float(sum(members)), float(len(members))],
           "%s all_reduce gave %s" % (kind, t.tolist()))


def check_monitored(ok, gloo):
    """dist.monitored_barrier as torch defines it: all there, it passes; with ranks missing,
    rank 0 names them in gloo's words (every one with wait_all_ranks, the first without), the
    others say rank 0 failed them. Each on a group of its own (a failed one is revoked), made
    by every rank before any member-only group (torch names later ones per rank)."""
    size, me = dist.get_world_size(), dist.get_rank()
    groups = [dist.new_group() for _ in range(3)]
    dist.monitored_barrier(group=groups[0], timeout=datetime.timedelta(seconds=60))
    ok(True, "monitored_barrier with every rank")
    if size < 3:
        return
    absent = list(range(size - 2, size)) if size >= 4 else [size - 1]
    for g, wait_all in ((groups[1], True), (groups[2], False)):
        if me in absent:
            dist.barrier(group=gloo)  # until the others are done with it
            continue
        try:
            dist.monitored_barrier(group=g, timeout=datetime.timedelta(seconds=2),
                                   wait_all_ranks=wait_all)
            ok(False, "monitored_barrier without ranks %s passed" % absent)
        except RuntimeError as e:
            if me == 0:
                want = ("Ranks %s failed to pass monitoredBarrier in 2000 ms"
                        % ", ".join(map(str, absent)) if wait_all else
                        "Rank %d failed to pass monitoredBarrier in 2000 ms" % absent[0])
            else:
                want = "Rank %d successfully reached monitoredBarrier" % me
            ok(want in str(e) and "[COHORT_ERR_TIMEOUT]" in str(e),
               "monitored_barrier wait_all_ranks=%s: %s, wanted %r" % (wait_all, e, want))
        dist.barrier(group=gloo)


def check_profiler(ok):
    """Each operation is a profiler event "cohort:<op>", as gloo's are "gloo:<op>"."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        dist.all_reduce(torch.ones(4))
        dist.broadcast(torch.ones(4), 0)
    names = {e.name for e in prof.events()}
    ok({"cohort:all_reduce", "cohort:broadcast"} <= names,
       "profiler events: %s" % sorted(n for n in names if ":" in n))


def check_errors(ok):
    size, me = dist.get_world_size(), dist.get_rank()
    alone = ct.new_group([me])

    def raises(fn, name, what):
        try:
            fn()
        except RuntimeError as e:
            return ok("[%s]" % name in str(e), "%s: raised %s" % (what, e))
        return ok(False, "%s: did not raise" % what)
    raises(lambda: dist.all_reduce(torch.zeros(2), op=dist.ReduceOp.BAND, group=alone),
           "COHORT_ERR_UNSUPPORTED", "BAND")
    ct.cohort_group(alone).abort()
    raises(lambda: dist.all_reduce(torch.zeros(2), group=alone, async_op=True).wait(),
           "COHORT_ERR_REVOKED", "an aborted group")
    if size >= 2 and me < 2:
        # rank 0 waits on a receive rank 1 never sends: the group's 1 s timeout fires
        pair = ct.new_group([0, 1], timeout=datetime.timedelta(seconds=1))
        if me == 0:
            w = dist.irecv(torch.zeros(1), 1, group=pair, tag=3)
            try:
                w.wait()
                ok(False, "a receive past the timeout: did not raise")
            except RuntimeError as e:
                # torch's own tests match " (Timed out|closed|timeout) " in a timeout's error
                ok("[COHORT_ERR_TIMEOUT]" in str(e) and " Timed out " in str(e),
                   "a receive past the timeout: raised %s" % e)
            raises(lambda: dist.all_reduce(torch.zeros(1), group=pair, async_op=True).wait(),
                   "COHORT_ERR_REVOKED", "the group after a timeout")


def main():
    ct.init_process_group()
    me = dist.get_rank()
    ok = Checks("test_torch_cxx", me)
    if me == 0:
        print("test_torch_cxx: %s" % ct.info(), flush=True)
    gloo = dist.new_group(backend="gloo")
    report = []
    check_monitored(ok, gloo)
    check_ddp(ok, gloo, report)
    check_fsdp(ok, gloo, report)
    check_async(ok, gloo)
    check_dtypes(ok, gloo)
    check_anysource(ok)
    check_profiler(ok)
    check_megatron(ok)
    check_errors(ok)
    if me == 0:
        for line in report:
            print("test_torch_cxx: " + line, flush=True)
    status = ok.finish_dist(gloo)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
