"""CUDA tensors through the Python package and the torch.distributed backend 'cohort', under
mpirun (tests/gpu/device-check.sh runs it at 2 ranks on one GPU): allreduce, all_gather and
reduce_scatter of CUDA tensors in float32, bfloat16 and int64 against values computed locally,
including a tensor written by a kernel on torch's stream just before the call (the package
synchronizes the stream: data ready when the call is made). Exits 77 (SKIP) without
torch.cuda or without a device libcohort can see."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("torch_cuda: SKIP: no torch")
    sys.exit(77)

import cohort.torch as ct  # noqa: E402


def main():
    ctx = ct.context()
    me, n = ctx.rank, ctx.size
    info = ctx.cuda_info()
    if not torch.cuda.is_available() or info["devices"] == 0:
        if me == 0:
            print("torch_cuda: SKIP: %s" % (info["reason"] or "no CUDA device (torch.cuda)"))
        return 77
    dev = torch.device("cuda", me % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    bad = 0
    for dt in (torch.float32, torch.bfloat16, torch.int64):
        for count in (1, 1000, 1 << 20):
            x = (torch.arange(count, device=dev) % 7 + me).to(dt)
            want = sum((torch.arange(count, device=dev) % 7 + r) for r in range(n)).to(dt)
            ctx.world.allreduce(x)
            bad += not torch.equal(x, want)
    ct.init_process_group()
    # a kernel on torch's stream writes the input just before the call
    t = torch.full((1 << 22,), float(me + 1), device=dev) * 2
    dist.all_reduce(t)
    bad += not torch.equal(t, torch.full_like(t, float(n * (n + 1))))
    outs = [torch.empty(5, device=dev) for _ in range(n)]
    dist.all_gather(outs, torch.full((5,), float(me), device=dev))
    bad += any(not torch.equal(o, torch.full((5,), float(r), device=dev))
               for r, o in enumerate(outs))
    rs = torch.empty(3, device=dev)
    dist.reduce_scatter(rs, [torch.full((3,), float(me + i), device=dev) for i in range(n)])
    bad += not torch.equal(rs, torch.full((3,), float(sum(r + me for r in range(n))), device=dev))
    w = dist.all_reduce(torch.ones(1 << 20, device=dev), async_op=True)
    w.wait()
    dist.destroy_process_group()
    print("torch_cuda: rank %d: %s" % (me, "PASS" if bad == 0 else "FAIL (%d checks)" % bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
