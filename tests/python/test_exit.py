"""Finalizer hygiene: programs that leave contexts, groups, layouts and outstanding requests
behind (or raise, or drop the context early) exit cleanly, with status 0 and no traceback or
crash, and a handle whose context was finalized raises instead of touching freed memory. Each
case is its own singleton process."""
import os
import subprocess
import sys

from harness import HERE, Checks

PRELUDE = "import sys; sys.path.insert(0, %r); import harness, cohort\n" % HERE

CASES = {
    "nothing freed, a receive outstanding": """
ctx = cohort.init()
g = ctx.group([0], tag="left")
lay = ctx.layout("tp=1")
buf = bytearray(8)
r = g.irecv(buf, 0, tag=1)
r2 = lay.group("tp").ibarrier()
""",
    "context dropped while its groups live": """
ctx = cohort.init()
g = ctx.group([0])
del ctx
import gc; gc.collect()
g.allreduce(bytearray(4))
""",
    "exception inside with": """
try:
    with cohort.init() as ctx:
        r = ctx.world.irecv(bytearray(4), 0)
        raise KeyError("boom")
except KeyError:
    pass
try:
    r.wait()
except cohort.CohortError as e:
    assert e.status == -1, e
else:
    raise SystemExit("a request of a finalized context did not raise")
""",
    "finalize twice, free after finalize": """
ctx = cohort.init()
g = ctx.group([0])
lay = ctx.layout("tp=1")
tp = lay.group("tp")
ctx.finalize(); ctx.finalize()
g.free(); lay.free()
try:
    tp.barrier()
except cohort.InvalidArgument:
    pass
else:
    raise SystemExit("a layout group of a finalized context did not raise")
""",
    "two contexts": """
a = cohort.init(); b = cohort.init()
a.world.allreduce(bytearray(2)); b.world.allreduce(bytearray(2))
a.finalize()
b.world.barrier()
""",
}

TORCH_CASE = """
import torch, torch.distributed as dist, cohort.torch as ct
ct.init_process_group()
t = torch.ones(3)
dist.all_reduce(t)
w = dist.all_reduce(t, async_op=True)
g = ct.new_group([0])
"""


def run(code):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMIX_", "OMPI_"))}
    p = subprocess.run([sys.executable, "-c", PRELUDE + code], env=env, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stderr


def main():
    ok = Checks("test_exit", 0)
    cases = dict(CASES)
    try:
        import torch  # noqa: F401
        cases["torch backend never destroyed, async work outstanding"] = TORCH_CASE
    except ImportError:
        print("SKIP: test_exit: torch case (torch not installed for %s)" % sys.executable)
    for name, code in cases.items():
        rc, err = run(code)
        bad = [ln for ln in err.splitlines()
               if "Traceback" in ln or "Segmentation" in ln or "Error" in ln]
        ok(rc == 0 and not bad, "%s: rc %d, stderr: %s" % (name, rc, err.strip()[-600:]))
    return ok.finish()


if __name__ == "__main__":
    sys.exit(main())
