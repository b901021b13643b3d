"""python3 -m cohort.bench torch [--ranks 2,4]: the torch.distributed backends side by side, one
job per rank count, every figure the largest over ranks:

  latency   dist.all_reduce of one float and of 64 KiB (16384 floats), per call, on the C++
            cohort backend (the default group), the Python cohort backend (cohort.torch's
            ctypes ProcessGroupCohort over the package's own context) and a gloo group;
  ddp       one DistributedDataParallel step (forward, backward, SGD) of a small MLP, cohort
            vs gloo;
  overlap   a 16 MiB all_reduce started with async_op=True before a compute loop (matmuls,
            sized to last about as long as the all_reduce alone), waited after it: the wall
            time against the two run back to back; speedup = back-to-back / overlapped (2.0
            at best, when both take the same time). Each figure is the best of 5 runs.

Options: --ranks 2,4, --iters N (latency calls per size, default 300), --timeout S, --launcher
as for `setup` ({n} the rank count), --python PATH.
"""
import json
import os
import sys
import time

ROW = "cohort.bench: "


def _now():
    return time.perf_counter()


def _sync(gloo):
    import torch.distributed as dist
    dist.barrier(group=gloo)


def _max(gloo, value):
    import torch
    import torch.distributed as dist
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    return t.item()


def _python_pg():
    """The Python backend's process group over the world, registered so dist.* takes it."""
    import torch.distributed.distributed_c10d as c10d
    import cohort.torch as ct
    ctx = ct.context()
    pg = ct.ProcessGroupCohort(ctx.rank, ctx.size, ctx.world, list(range(ctx.size)))
    pg_map, pg_names, pg_group_ranks = ct._registry()
    pg_map[pg] = (ct.BACKEND, None)
    pg_names[pg] = "cohort-python-bench"
    pg_group_ranks[pg] = {r: r for r in range(ctx.size)}
    return pg


def _latency(groups, gloo, iters):
    import torch
    import torch.distributed as dist
    out = {}
    for n, label in ((1, "1 float"), (16384, "64 KiB")):
        for name, g in groups:
            t = torch.ones(n)
            for _ in range(20):
                dist.all_reduce(t, group=g)
            _sync(gloo)
            t0 = _now()
            for _ in range(iters):
                dist.all_reduce(t, group=g)
            dt = (_now() - t0) / iters
            out["%s %s" % (label, name)] = _max(gloo, dt)
    return out


def _ddp(gloo, steps=20):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    out = {}
    for name, g in (("cohort", None), ("gloo", gloo)):
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 10)), process_group=g)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(32, 64), torch.randn(32, 10)

        def step():
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        for _ in range(3):
            step()
        _sync(gloo)
        t0 = _now()
        for _ in range(steps):
            step()
        out["ddp step " + name] = _max(gloo, (_now() - t0) / steps)
        del model
        dist.barrier(group=gloo)
    return out


def _overlap(gloo):
    import torch
    import torch.distributed as dist
    out = {}
    a = torch.randn(256, 256)
    big = torch.ones(4 << 20)  # 16 MiB of float32

    def compute(n):
        x = a
        for _ in range(n):
            x = torch.tanh(a @ x)
        return x
    def timed(fn, repeats=5):
        """The best of a few runs (a shared machine's noise only adds), largest over ranks."""
        best = None
        for _ in range(repeats):
            _sync(gloo)
            t0 = _now()
            fn()
            dt = _max(gloo, _now() - t0)
            best = dt if best is None else min(best, dt)
        return best

    for name, g in (("cohort", None), ("gloo", gloo)):
        dist.all_reduce(big, group=g)  # wiring and first-touch outside the timing
        comm = timed(lambda: dist.all_reduce(big, group=g))
        # calibrate the loop to about the all_reduce's time (every rank the same count)
        per = timed(lambda: compute(10)) / 10
        n = max(1, int(comm / per))
        comp = timed(lambda: compute(n))

        def both_fn():
            w = dist.all_reduce(big, group=g, async_op=True)
            compute(n)
            w.wait()
        both = timed(both_fn)
        out["overlap " + name] = {"allreduce_s": comm, "compute_s": comp, "overlapped_s": both,
                                  "speedup": (comm + comp) / both}
    return out


def _rank(args):
    import torch.distributed as dist
    import cohort.torch as ct
    ct.init_process_group()
    gloo = dist.new_group(backend="gloo")
    res = {"backend": ct.info()["backend"], "ranks": dist.get_world_size()}
    groups = [("cohort c++", None), ("cohort python", _python_pg()), ("gloo", gloo)]
    if res["backend"] != "c++":
        groups = groups[1:]
    res.update(_latency(groups, gloo, args.iters))
    res.update(_ddp(gloo))
    res.update(_overlap(gloo))
    if dist.get_rank() == 0:
        print(ROW + json.dumps(res), flush=True)
    dist.destroy_process_group()
    return 0


def _us(s):
    return "%.1f" % (s * 1e6)


def _driver(args, launch):
    print("cohort.bench torch: ranks %s (python %s)" % (args.ranks, args.python), flush=True)
    failed = False
    for n in [int(r) for r in args.ranks.split(",")]:
        res, err = launch(args, n, ["torch", "--rank-job", "--iters", str(args.iters)])
        if err:
            print("ranks=%d: FAILED: %s" % (n, err), flush=True)
            failed = True
            continue
        print("\n%d ranks (backend of the default group: %s), largest over ranks:\n"
              % (n, res["backend"]))
        print("| all_reduce | cohort C++ us | cohort Python us | gloo us | gloo / C++ |")
        print("|---|---|---|---|---|")
        for size in ("1 float", "64 KiB"):
            c = res.get("%s cohort c++" % size)
            p = res["%s cohort python" % size]
            g = res["%s gloo" % size]
            print("| %s | %s | %s | %s | %s |" % (size, _us(c) if c else "-", _us(p), _us(g),
                                                  "%.1fx" % (g / c) if c else "-"))
        print("\nDDP step (MLP 64-256-256-10, batch 32): cohort %.2f ms, gloo %.2f ms"
              % (res["ddp step cohort"] * 1e3, res["ddp step gloo"] * 1e3))
        for name in ("cohort", "gloo"):
            o = res["overlap " + name]
            print("overlap %s: 16 MiB all_reduce %.1f ms, compute %.1f ms, back to back %.1f ms,"
                  " overlapped %.1f ms: %.2fx" % (
                      name, o["allreduce_s"] * 1e3, o["compute_s"] * 1e3,
                      (o["allreduce_s"] + o["compute_s"]) * 1e3, o["overlapped_s"] * 1e3,
                      o["speedup"]))
    return 1 if failed else 0


def main(argv, launch):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m cohort.bench torch",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--launcher", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rank-job", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank_job:
        return _rank(args)
    return _driver(args, launch)


if __name__ == "__main__":
    sys.exit(os.EX_USAGE)
