"""Megatron-core, unchanged, on backend "cohort": parallel_state.initialize_model_parallel
(tp=2, pp=2 at 4 and 8 ranks; the rest data parallel) three ways in one job:
- classic, create_gloo_process_groups=False: every rank creates every group (Megatron's
  create_group -> dist.new_group), as released;
- classic, create_gloo_process_groups=True: the same plus Megatron's gloo groups;
- member-only: the seed's change, applied here by the caller as a user would: create_group
  passes use_local_synchronization=True and a rank not in `ranks` skips the call (it gets the
  non-member handle). No group is then created by a rank outside it.
Each time, every group getter's group is checked against Megatron's own rank lists (its
RankGenerator, the arithmetic parallel_state uses): dist.get_process_group_ranks equals the list
holding this rank, and an all_reduce of (rank, 1) over it gives (sum, size) of that list.

Runs under mpirun (PMIx) and torchrun (store), at 4, 8 and 16 ranks (tests/python/run.sh).
megatron-core 0.19.2 from PyPI (python/requirements-megatron.txt: its wheel for Python 3.11,
installed past its metadata's >= 3.12). Skipped (77) without megatron-core or the backend."""
import sys

from harness import Checks, need, need_backend

ct = need_backend()
need("megatron.core")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from megatron.core import parallel_state as ps  # noqa: E402
from cohort.megatron import member_only  # noqa: E402

TP, PP = 2, 2


def expected(size):
    """kind -> (getter, rank lists), from Megatron's RankGenerator."""
    dp = size // (TP * PP)
    dense = ps.RankGenerator(tp=TP, ep=1, dp=dp, pp=PP, cp=1, order="tp-cp-ep-dp-pp")
    expert = ps.RankGenerator(tp=TP, ep=1, dp=dp, pp=PP, cp=1, order="tp-cp-ep-dp-pp")
    pp_lists = dense.get_ranks("pp")
    return {
        "tp": (ps.get_tensor_model_parallel_group, dense.get_ranks("tp")),
        "pp": (ps.get_pipeline_model_parallel_group, pp_lists),
        "dp": (ps.get_data_parallel_group, dense.get_ranks("dp")),
        "dp-cp": (lambda: ps.get_data_parallel_group(with_context_parallel=True),
                  dense.get_ranks("dp-cp")),
        "cp": (ps.get_context_parallel_group, dense.get_ranks("cp")),
        "mp": (ps.get_model_parallel_group, dense.get_ranks("tp-pp")),
        "tp-dp": (ps.get_tensor_and_data_parallel_group, dense.get_ranks("tp-dp")),
        "tp-dp-cp": (lambda: ps.get_tensor_and_data_parallel_group(with_context_parallel=True),
                     dense.get_ranks("tp-dp-cp")),
        "tp-cp": (ps.get_tensor_and_context_parallel_group, dense.get_ranks("tp-cp")),
        "embd": (ps.get_embedding_group, [[p[0], p[-1]] for p in pp_lists]),
        "pos-embd": (ps.get_position_embedding_group, [[p[0]] for p in pp_lists]),
        "ep": (ps.get_expert_model_parallel_group, expert.get_ranks("ep")),
        "etp": (ps.get_expert_tensor_parallel_group, expert.get_ranks("tp")),
        "etp-ep": (ps.get_expert_tensor_and_model_parallel_group, expert.get_ranks("tp-ep")),
        "etp-ep-pp": (ps.get_expert_tensor_model_pipeline_parallel_group,
                      expert.get_ranks("tp-ep-pp")),
        "edp": (ps.get_expert_data_parallel_group, expert.get_ranks("dp")),
    }


def check(ok, how, gloo_groups):
    me, size = dist.get_rank(), dist.get_world_size()
    for kind, (getter, lists) in expected(size).items():
        mine = [lst for lst in lists if me in lst]
        # the position embedding's lists hold the first stage only: a later stage has none
        ok(len(mine) == 1 or (not mine and kind == "pos-embd"),
           "%s %s: rank %d in %d of Megatron's lists" % (how, kind, me, len(mine)))
        if not mine:
            continue
        members = mine[0]
        g = getter()
        ok(dist.get_process_group_ranks(g) == members, "%s %s: group ranks %s, Megatron's %s"
           % (how, kind, dist.get_process_group_ranks(g), members))
        ok(dist.get_backend(g) == "cohort", "%s %s: backend %s" % (how, kind,
                                                                   dist.get_backend(g)))
        t = torch.tensor([float(me), 1.0])
        dist.all_reduce(t, group=g)
        ok(t.tolist() == [float(sum(members)), float(len(members))],
           "%s %s: all_reduce over %s gave %s" % (how, kind, members, t.tolist()))
    if gloo_groups:
        g = ps.get_data_parallel_group_gloo()
        members = [lst for lst in expected(size)["dp"][1] if me in lst][0]
        t = torch.tensor([float(me)])
        dist.all_reduce(t, group=g)
        ok(dist.get_backend(g) == "gloo" and t.item() == sum(members),
           "%s dp gloo group: %s over %s" % (how, t.item(), members))


def main():
    ct.init_process_group()
    me, size = dist.get_rank(), dist.get_world_size()
    ok = Checks("test_megatron", me)
    if size % (TP * PP):
        print("SKIP: test_megatron: %d ranks is not a multiple of tp*pp = %d" % (size, TP * PP))
        return 77
    # Made first: after member-only groups torch 2.15 names a group every rank creates after
    # its own count of creations (distributed_c10d._process_group_name), which then differs
    # between ranks, and gloo's rendezvous under that name would never meet. cohort's groups
    # do not rendezvous by name.
    gloo = dist.new_group(backend="gloo")
    plain = ps.create_group
    for how, with_gloo, patch in (("classic", False, False), ("classic+gloo", True, False),
                                  ("member-only", False, True)):
        ps.create_group = member_only(plain) if patch else plain
        ps.initialize_model_parallel(tensor_model_parallel_size=TP,
                                     pipeline_model_parallel_size=PP,
                                     create_gloo_process_groups=with_gloo)
        check(ok, how, with_gloo)
        ps.destroy_model_parallel()
        dist.barrier()
    ps.create_group = plain
    if me == 0:
        print("test_megatron: megatron-core %s, torch %s, %d ranks, tp=%d pp=%d, %s"
              % (_version(), torch.__version__, size, TP, PP, ct.info()["bootstrap"]),
              flush=True)
    status = ok.finish_dist(gloo)
    dist.destroy_process_group()
    return status


def _version():
    from importlib.metadata import version
    return version("megatron-core")


if __name__ == "__main__":
    sys.exit(main())
