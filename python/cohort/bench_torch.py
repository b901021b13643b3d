"""python3 -m cohort.bench torch [--ranks 2,4]: the torch.distributed backends side by side, one
job per rank count, every figure the largest over ranks:

  latency   dist.all_reduce of one float and of 64 KiB (16384 floats), per call, on the
            cohort backend (the default group) and a gloo group over the same ranks,
            alternating: --repeats blocks of --iters calls each, every block's figure the
            largest over ranks; printed as the median [min - max] over the blocks;
  ddp       one DistributedDataParallel step (forward, backward, SGD) of a small MLP, cohort
            vs gloo;
  overlap   a 16 MiB all_reduce started with async_op=True before a compute loop (matmuls,
            sized to last about as long as the all_reduce alone), waited after it: the wall
            time against the two run back to back; speedup = back-to-back / overlapped (2.0
            at best, when both take the same time), over --repeats runs: median [min - max].

Options: --ranks 2,4, --iters N (latency calls per block, default 200), --repeats N (default
7), --timeout S, --launcher as for `setup` ({n} the rank count), --python PATH.
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


def _latency(groups, gloo, iters, repeats):
    """label -> the per-call time of each block (largest over ranks), groups alternating."""
    import torch
    import torch.distributed as dist
    out = {}
    for n, label in ((1, "1 float"), (16384, "64 KiB")):
        ts = {name: torch.ones(n) for name, _ in groups}
        for name, g in groups:
            for _ in range(20):
                dist.all_reduce(ts[name], group=g)
        for _ in range(repeats):
            for name, g in groups:
                t = ts[name]
                _sync(gloo)
                t0 = _now()
                for _ in range(iters):
                    dist.all_reduce(t, group=g)
                out.setdefault("%s %s" % (label, name), []).append(
                    _max(gloo, (_now() - t0) / iters))
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


def _overlap(gloo, repeats):
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
    def timed(fn, runs=3):
        """The best of a few runs (a shared machine's noise only adds), largest over ranks."""
        best = None
        for _ in range(runs):
            _sync(gloo)
            t0 = _now()
            fn()
            dt = _max(gloo, _now() - t0)
            best = dt if best is None else min(best, dt)
        return best

    for name, g in (("cohort", None), ("gloo", gloo)):
        dist.all_reduce(big, group=g)  # wiring and first-touch outside the timing
        runs = []
        for _ in range(repeats):
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
            runs.append({"allreduce_s": comm, "compute_s": comp, "overlapped_s": both,
                         "speedup": (comm + comp) / both})
        out["overlap " + name] = runs
    return out


def _rank(args):
    import torch.distributed as dist
    import torch
    import cohort.torch as ct
    # One compute thread per rank, as torchrun sets (OMP_NUM_THREADS=1): ranks share the cores
    # with each other and with their backend's threads.
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    ct.init_process_group()
    gloo = dist.new_group(backend="gloo")
    res = {"bootstrap": ct.info()["bootstrap"], "ranks": dist.get_world_size(),
           "torch": torch.__version__, "threads": torch.get_num_threads()}
    res.update(_latency([("cohort", None), ("gloo", gloo)], gloo, args.iters, args.repeats))
    res.update(_ddp(gloo))
    res.update(_overlap(gloo, args.repeats))
    if dist.get_rank() == 0:
        print(ROW + json.dumps(res), flush=True)
    dist.destroy_process_group()
    return 0


def _us(s):
    return "%.1f" % (s * 1e6)


def _spread(xs, fmt):
    xs = sorted(xs)
    mid = xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    return "%s [%s - %s]" % (fmt(mid), fmt(xs[0]), fmt(xs[-1])), mid


def _driver(args, launch):
    print("cohort.bench torch: ranks %s (python %s)" % (args.ranks, args.python), flush=True)
    failed = False
    for n in [int(r) for r in args.ranks.split(",")]:
        res, err = launch(args, n, ["torch", "--rank-job", "--iters", str(args.iters),
                                    "--repeats", str(args.repeats)])
        if err:
            print("ranks=%d: FAILED: %s" % (n, err), flush=True)
            failed = True
            continue
        print("\n%d ranks (torch %s, bootstrap %s), per call, largest over ranks, median "
              "[min - max] of %d blocks of %d calls:\n"
              % (n, res["torch"], res["bootstrap"], args.repeats, args.iters))
        print("| all_reduce | cohort us | gloo us | gloo / cohort (medians) |")
        print("|---|---|---|---|")
        for size in ("1 float", "64 KiB"):
            c, cm = _spread(res["%s cohort" % size], _us)
            g, gm = _spread(res["%s gloo" % size], _us)
            print("| %s | %s | %s | %.1fx |" % (size, c, g, gm / cm))
        print("\nDDP step (MLP 64-256-256-10, batch 32): cohort %.2f ms, gloo %.2f ms"
              % (res["ddp step cohort"] * 1e3, res["ddp step gloo"] * 1e3))
        for name in ("cohort", "gloo"):
            runs = res["overlap " + name]
            ms = lambda x: "%.1f" % (x * 1e3)  # noqa: E731
            print("overlap %s (%d runs, median [min - max]): 16 MiB all_reduce %s ms, compute "
                  "%s ms, overlapped %s ms, back to back / overlapped %s" % (
                      name, len(runs), _spread([r["allreduce_s"] for r in runs], ms)[0],
                      _spread([r["compute_s"] for r in runs], ms)[0],
                      _spread([r["overlapped_s"] for r in runs], ms)[0],
                      _spread([r["speedup"] for r in runs], lambda x: "%.2fx" % x)[0]))
    return 1 if failed else 0


def main(argv, launch):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m cohort.bench torch",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
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
