"""python3 -m cohort.bench torch [options]: latency, DDP step and overlap of the torch
backends side by side (cohort/bench_torch.py).

python3 -m cohort.bench megatron [options]: Megatron-core's initialize_model_parallel on gloo
and cohort, classic and member-only (cohort/bench_megatron.py).

python3 -m cohort.bench setup [options]: what it costs to set up Megatron's model-parallel
groups, in the users' terms. For each world size W (default 8, 16, 32) it launches jobs and
measures, for one layout (default tp=2,pp=2,ep=2,etp=1), the largest over ranks of:

  gloo classic      every rank calls dist.new_group(ranks, backend="gloo") for EVERY group of
                    every kind (Megatron's initialize_model_parallel), then one all_reduce in
                    each own group;
  cohort classic    the same calls with backend="cohort";
  cohort member-only  each rank calls cohort.torch.new_group for its own groups only;
  cohort layout     native cohort: ctx.layout(spec), then one allreduce per own group.

"create" is the group creation, "first" the first all_reduce in every own group (wiring
included), after a start line shared by all ranks (a TCPStore barrier, which wires nothing in
cohort). Each cohort figure is taken in a fresh job, so no endpoint is reused from another
method: gloo + cohort classic run in one job, member-only in a second, native in a third (no
torch). Rank 0 of each job prints one 'cohort.bench:' JSON line; the driver prints the table.

Options: --layout SPEC, --worlds 8,16,32, --methods classic,member,native, --timeout S (per
job), --launcher "mpirun ... -np {n}" ({n} is the rank count; default: this machine's mpirun
with --oversubscribe --bind-to none, plus --allow-run-as-root as root), --python PATH.
"""
import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import time

ROW = "cohort.bench: "


def _now():
    return time.perf_counter()


class _StoreSync:
    """A start line for all ranks through a TCPStore (rank 0 hosts it at MASTER_ADDR and
    COHORTBENCH_STORE_PORT, a name outside COHORT_*, which libcohort checks): nothing is wired
    in cohort or gloo by it."""

    def __init__(self, rank, size):
        from torch.distributed import TCPStore
        import datetime
        self.rank, self.size, self.n = rank, size, 0
        self.store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["COHORTBENCH_STORE_PORT"]),
                              size, rank == 0, datetime.timedelta(seconds=600))

    def __call__(self):
        self.n += 1
        key = "sync%d" % self.n
        if self.store.add(key, 1) == self.size:
            self.store.set(key + "/go", "1")
        self.store.wait([key + "/go"])

    def close(self):
        """The last call: rank 0 (the store's host) leaves only after every rank's last
        request reached it."""
        self.store.add("done", 1)
        if self.rank == 0:
            while self.store.add("done", 0) < self.size:
                time.sleep(0.01)


def _max_over_ranks(world, values):
    import array
    a = array.array("d", values)
    world.allreduce(a, op="max")
    return list(a)


def _rank_torch(args, method):
    import torch
    import torch.distributed as dist
    import cohort
    import cohort.torch as ct

    ctx = cohort.init()  # its own PMIx context: rank, size and the sync below
    me, size = ctx.rank, ctx.size
    sync = _StoreSync(me, size)
    ref = cohort.megatron.parse(args.layout, size)
    ct.init_process_group("cohort")
    results = {}
    phases = [("gloo classic", "gloo"), ("cohort classic", "cohort")] if method == "classic" \
        else [("cohort member-only", None)]
    for label, backend in phases:
        sync()
        t0 = _now()
        own, calls = {}, 0
        if backend is not None:
            for kind, members in ref.all_groups():
                g = dist.new_group(members, backend=backend)
                calls += 1
                if me in members:
                    own[kind] = (g, len(members))
        else:
            for kind in cohort.megatron.KIND_ORDER:
                members = ref.rank_group(kind, me)
                if members is not None:
                    own[kind] = (ct.new_group(members), len(members))
                    calls += 1
        t1 = _now()
        for kind, (g, n) in own.items():
            t = torch.ones(1)
            dist.all_reduce(t, group=g)
            if t.item() != n:
                raise SystemExit("cohort.bench: rank %d: %s %s all_reduce gave %g, not %d"
                                 % (me, label, kind, t.item(), n))
        t2 = _now()
        results[label] = [t1 - t0, t2 - t1, calls, len(own)]
    out = {}
    for label, (c, f, calls, nown) in results.items():
        mx = _max_over_ranks(ctx.world, [c, f, c + f])
        out[label] = {"create_s": mx[0], "first_s": mx[1], "total_s": mx[2],
                      "new_group_calls": calls, "own_groups": nown}
    sync.close()
    dist.destroy_process_group()
    return out


def _rank_native(args):
    import numpy as np
    import cohort

    ctx = cohort.init()
    me, size = ctx.rank, ctx.size
    try:
        sync = _StoreSync(me, size)
    except ImportError:  # no torch: a cohort barrier (it wires a few peers first)
        sync = ctx.world.barrier
    sync()
    before = ctx.stats()
    t0 = _now()
    lay = ctx.layout(args.layout)
    t1 = _now()
    after = ctx.stats()
    groups = lay.groups()
    for kind, g in groups.items():
        one = np.ones(1, np.float32)
        g.allreduce(one)
        if one[0] != g.size:
            raise SystemExit("cohort.bench: rank %d: layout %s allreduce gave %g" % (me, kind,
                                                                                    one[0]))
    t2 = _now()
    st = ctx.stats()
    mx = _max_over_ranks(ctx.world, [t1 - t0, t2 - t1, t2 - t0, st["endpoints"],
                                     after["messages_sent"] - before["messages_sent"]])
    if hasattr(sync, "close"):
        sync.close()
    lay.free()
    ctx.finalize()
    return {"cohort layout": {"create_s": mx[0], "first_s": mx[1], "total_s": mx[2],
                              "new_group_calls": 0, "own_groups": len(groups),
                              "endpoints_max": int(mx[3]), "create_messages": int(mx[4])}}


def _rank_main(args):
    if args.rank_method == "native":
        out = _rank_native(args)
    else:
        out = _rank_torch(args, args.rank_method)
    if os.environ.get("PMIX_RANK", "0") == "0":
        print(ROW + json.dumps(out), flush=True)


def _free_port():
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _launch(args, n, tail):
    """Run `python3 -m cohort.bench TAIL...` on n ranks; returns (rank 0's JSON row, error)."""
    if args.launcher:
        cmd = shlex.split(args.launcher.replace("{n}", str(n)))
    else:
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(n)]
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ)
    env.setdefault("MASTER_ADDR", socket.gethostname())
    env["MASTER_PORT"] = str(_free_port())
    env["COHORTBENCH_STORE_PORT"] = str(_free_port())
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg_parent + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if cmd[0].endswith("mpirun"):
        for var in ("MASTER_ADDR", "MASTER_PORT", "COHORTBENCH_STORE_PORT", "PYTHONPATH",
                    "COHORT_PLUGIN_PATH", "COHORT_LIBRARY", "COHORT_TORCH_EXTENSION"):
            if var in env:
                cmd[1:1] = ["-x", var]
    cmd += [args.python, "-m", "cohort.bench"] + list(tail)
    t0 = _now()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        # what the ranks wrote before the bound (a rank's stack dump, say) is the diagnostic
        tail = e.stderr or e.stdout or b""
        tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        return None, "timed out after %d s: %s" % (args.timeout, tail.strip()[-3000:])
    rows = [ln[len(ROW):] for ln in p.stdout.splitlines() if ln.startswith(ROW)]
    if p.returncode != 0 or not rows:
        return None, "rc %d: %s" % (p.returncode, (p.stderr or p.stdout).strip()[-800:])
    res = json.loads(rows[-1])
    for v in res.values():
        if isinstance(v, dict):
            v["job_s"] = _now() - t0
    return res, None


def _fmt_ms(s):
    return "%.1f" % (s * 1e3) if s >= 0.01 else "%.3f" % (s * 1e3)


def _driver(args):
    worlds = [int(w) for w in args.worlds.split(",")]
    methods = args.methods.split(",")
    import cohort.megatron as meg
    print("cohort.bench setup: layout %s, worlds %s, methods %s (python %s)"
          % (args.layout, worlds, methods, args.python), flush=True)
    table = []
    failed = False
    for w in worlds:
        ngroups = len(meg.parse(args.layout, w).all_groups())
        for method in methods:
            res, err = _launch(args, w, ["setup", "--layout", args.layout, "--rank-method",
                                         method])
            if err:
                print("W=%d %s: FAILED: %s" % (w, method, err), flush=True)
                failed = True
                continue
            for label, v in res.items():
                table.append((w, ngroups, label, v))
                print("W=%d %-18s create %s ms, first all_reduce %s ms (job %.1f s)"
                      % (w, label, _fmt_ms(v["create_s"]), _fmt_ms(v["first_s"]), v["job_s"]),
                      flush=True)
    print()
    print("Megatron group setup, layout %s: largest over ranks, ms (create = the group "
          "creation calls; first = one all_reduce in every own group, wiring included)"
          % args.layout)
    print()
    print("| W | method | new_group calls per rank | own groups | create ms | first all_reduce "
          "ms | total ms |")
    print("|---|---|---|---|---|---|---|")
    for w, ngroups, label, v in table:
        print("| %d | %s | %d | %d | %s | %s | %s |" % (
            w, label, v["new_group_calls"], v["own_groups"], _fmt_ms(v["create_s"]),
            _fmt_ms(v["first_s"]), _fmt_ms(v["total_s"])))
    for w, _, label, v in table:
        if "create_messages" in v:
            print("W=%d cohort layout: messages sent by layout creation %d (must be 0), endpoints "
                  "per rank after the first allreduces <= %d" % (w, v["create_messages"],
                                                                 v["endpoints_max"]))
    return 1 if failed else 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["torch"]:  # the backends side by side: cohort/bench_torch.py
        from . import bench_torch
        return bench_torch.main(argv[1:], _launch)
    if argv[:1] == ["megatron"]:  # Megatron-core's own setup: cohort/bench_megatron.py
        from . import bench_megatron
        return bench_megatron.main(argv[1:], _launch)
    ap = argparse.ArgumentParser(prog="python3 -m cohort.bench",
                                 description=__doc__.split("\n\n")[1])
    ap.add_argument("mode", choices=["setup"])
    ap.add_argument("--layout", default="tp=2,pp=2,ep=2,etp=1")
    ap.add_argument("--worlds", default="8,16,32")
    ap.add_argument("--methods", default="classic,member,native")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--launcher", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rank-method", choices=["classic", "member", "native"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank_method:
        return _rank_main(args)
    return _driver(args)


if __name__ == "__main__":
    sys.exit(main())
