"""python3 -m cohort.bench megatron [options]: Megatron-core's own initialize_model_parallel
(megatron-core from PyPI, unchanged) on gloo and on cohort, classic and member-only, each
method in a fresh job per world size, the figures the largest over ranks:

  gloo classic        init_process_group("gloo"); every rank creates every group, as Megatron
                      is released (its create_group -> dist.new_group);
  cohort classic      init_process_group("cohort"), every rank creates every group;
  cohort member-only  backend cohort with the seed's change, applied by the caller:
                      create_group passes use_local_synchronization=True and a rank outside
                      `ranks` skips the call.

Not gloo with the seed's change: torch 2.15 names a group made with
use_local_synchronization=True by a hash of its ranks salted with the count of groups this rank
has made (distributed_c10d._hash_ranks_to_str), which differs between members once non-members
skip calls, and gloo meets its members under that name: Megatron's layout then hangs in gloo's
rendezvous (seen at W=8, tp=2,pp=2,ep=2, in the tp-ep-pp group). cohort does not meet by name.

"init" is initialize_model_parallel (create_gloo_process_groups=False), after a start line
shared by all ranks (a TCPStore barrier, which wires nothing), in wall time and in the
process's CPU time (all its threads: where ranks outnumber cores, wall time is mostly waiting
for a core, CPU time what the setup costs); "first" is one all_reduce in
every group the rank belongs to (Megatron's getters), wiring included. --repeats runs of each
method, alternating; the table gives median [min - max] and each method's init against gloo
classic's (medians).

Options: --layout tp=2,pp=2,ep=2 (tp, pp, ep, cp, etp, as cohort.megatron parses it), --worlds
8,16, --methods (comma list of gloo-classic, cohort-classic, cohort-member), --repeats 3,
--timeout S (per job), --launcher as for `setup` ({n} the rank count), --python PATH.
"""
import json
import os
import sys
import time

from cohort.bench_torch import _spread

ROW = "cohort.bench: "
METHODS = ("gloo-classic", "cohort-classic", "cohort-member")


def _own_groups(ps):
    """The groups this rank belongs to, through Megatron's getters (a getter whose group this
    rank is not in raises or gives None/NON_GROUP_MEMBER: skipped)."""
    import torch.distributed as dist
    getters = [ps.get_tensor_model_parallel_group, ps.get_pipeline_model_parallel_group,
               ps.get_data_parallel_group, ps.get_context_parallel_group,
               ps.get_model_parallel_group, ps.get_tensor_and_data_parallel_group,
               ps.get_embedding_group, ps.get_position_embedding_group,
               ps.get_expert_model_parallel_group, ps.get_expert_tensor_parallel_group,
               ps.get_expert_tensor_and_model_parallel_group,
               ps.get_expert_tensor_model_pipeline_parallel_group,
               ps.get_expert_data_parallel_group]
    out, seen = [], set()
    for get in getters:
        try:
            g = get()
        except (AssertionError, RuntimeError):
            continue
        if g is None or g == dist.GroupMember.NON_GROUP_MEMBER or id(g) in seen:
            continue
        seen.add(id(g))
        out.append((get.__name__, g, dist.get_world_size(g)))
    return out


def _rank(args):
    import faulthandler
    import torch
    import torch.distributed as dist
    from cohort.bench import _StoreSync
    from cohort.megatron import member_only, parse
    torch.set_num_threads(1)
    # A job that hangs says where, before the driver's bound kills it.
    faulthandler.dump_traceback_later(max(30, int(args.timeout * 0.8)), exit=False)
    os.environ.setdefault("RANK", os.environ.get("OMPI_COMM_WORLD_RANK",
                                                 os.environ.get("PMIX_RANK", "0")))
    os.environ.setdefault("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    backend, how = args.rank_method.split("-")
    if backend == "cohort":
        import cohort.torch as ct
        ct.init_process_group("cohort")
    else:
        dist.init_process_group("gloo")
    from megatron.core import parallel_state as ps
    me, size = dist.get_rank(), dist.get_world_size()
    lay = parse(args.layout, size)
    sync = _StoreSync(me, size)
    if how == "member":
        ps.create_group = member_only(ps.create_group)
    calls = [0]
    plain_new_group = dist.new_group

    def counted(*a, **k):
        calls[0] += 1
        return plain_new_group(*a, **k)
    dist.new_group = counted
    sync()
    c0 = time.process_time()
    t0 = time.perf_counter()
    ps.initialize_model_parallel(tensor_model_parallel_size=lay.tp,
                                 pipeline_model_parallel_size=lay.pp,
                                 expert_model_parallel_size=lay.ep,
                                 expert_tensor_parallel_size=lay.etp,
                                 context_parallel_size=lay.cp,
                                 create_gloo_process_groups=False)
    t1 = time.perf_counter()
    c1 = time.process_time()
    own = _own_groups(ps)
    for name, g, n in own:
        t = torch.ones(1)
        dist.all_reduce(t, group=g)
        if t.item() != n:
            raise SystemExit("cohort.bench megatron: rank %d: %s %s all_reduce gave %g, not %d"
                             % (me, args.rank_method, name, t.item(), n))
    t2 = time.perf_counter()
    dist.new_group = plain_new_group
    mx = torch.tensor([t1 - t0, t2 - t1, t2 - t0, calls[0], len(own), c1 - c0],
                      dtype=torch.float64)
    dist.all_reduce(mx, op=dist.ReduceOp.MAX)
    sync.close()
    if me == 0:
        import importlib.metadata as md
        print(ROW + json.dumps({"init_s": mx[0].item(), "first_s": mx[1].item(),
                                "total_s": mx[2].item(), "new_group_calls": int(mx[3].item()),
                                "own_groups": int(mx[4].item()), "init_cpu_s": mx[5].item(),
                                "torch": torch.__version__,
                                "megatron": md.version("megatron-core")}), flush=True)
    ps.destroy_model_parallel()
    dist.destroy_process_group()
    return 0


def _median(xs):
    return _spread(xs, str)[1]


def _ms(xs):
    return _spread(xs, lambda x: "%.1f" % (x * 1e3))[0]


def _driver(args, launch):
    methods = args.methods.split(",")
    for m in methods:
        if m not in METHODS:
            raise SystemExit("cohort.bench megatron: unknown method %r (%s)" % (m, ", ".join(
                METHODS)))
    worlds = [int(w) for w in args.worlds.split(",")]
    from cohort.megatron import parse
    for w in worlds:
        try:
            parse(args.layout, w)  # a bad layout is said here, before any job starts
        except ValueError as e:
            raise SystemExit("cohort.bench megatron: --layout %s at W=%d: %s" % (args.layout, w, e))
    print("cohort.bench megatron: layout %s, worlds %s, methods %s, %d runs each (python %s)"
          % (args.layout, worlds, methods, args.repeats, args.python), flush=True)
    failed = False
    rows = []
    for w in worlds:
        runs = {m: [] for m in methods}
        for rep in range(args.repeats):
            for m in methods:  # alternating, so a slow spell of the machine hits every method
                res, err = launch(args, w, ["megatron", "--layout", args.layout,
                                            "--rank-method", m])
                if err:
                    print("W=%d %s run %d: FAILED: %s" % (w, m, rep + 1, err), flush=True)
                    failed = True
                    continue
                runs[m].append(res)
                print("W=%d %-15s run %d: init %.1f ms (CPU %.1f ms), first all_reduce %.1f ms, "
                      "%d new_group calls (megatron-core %s, torch %s)"
                      % (w, m, rep + 1, res["init_s"] * 1e3, res["init_cpu_s"] * 1e3,
                         res["first_s"] * 1e3, res["new_group_calls"], res["megatron"],
                         res["torch"]), flush=True)
        rows.append((w, runs))
    print("\nMegatron-core initialize_model_parallel, layout %s, largest over ranks, ms, median "
          "[min - max] of %d runs:\n" % (args.layout, args.repeats))
    print("| W | method | new_group calls per rank | init ms | init CPU ms | first all_reduce in "
          "each own group ms | gloo classic / this: init, init CPU (medians) |")
    print("|---|---|---|---|---|---|---|")
    for w, runs in rows:
        base = runs.get("gloo-classic")
        for m, rs in runs.items():
            if not rs:
                continue
            ratio = "-"
            if base:
                ratio = "%.1fx, %.1fx" % tuple(_median([r[k] for r in base]) /
                                               _median([r[k] for r in rs])
                                               for k in ("init_s", "init_cpu_s"))
            print("| %d | %s | %d | %s | %s | %s | %s |" % (
                w, m.replace("-", " "), rs[0]["new_group_calls"], _ms([r["init_s"] for r in rs]),
                _ms([r["init_cpu_s"] for r in rs]), _ms([r["first_s"] for r in rs]), ratio))
    return 1 if failed else 0


def main(argv, launch):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m cohort.bench megatron",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", default="tp=2,pp=2,ep=2")
    ap.add_argument("--worlds", default="8,16")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--launcher", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rank-method", choices=METHODS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank_method:
        return _rank(args)
    return _driver(args, launch)


if __name__ == "__main__":
    sys.exit(os.EX_USAGE)
