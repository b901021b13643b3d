"""A small data-parallel training run: a tiny MLP on synthetic data (fixed seeds), 40 SGD
steps, each rank on its own shard, gradients averaged with dist.all_reduce over the cohort
backend and, in the same job, over a gloo group. Checks: the final weights agree between
cohort and gloo (float tolerance), are identical on every rank, match a single-process run on
all shards computed locally, and the loss went down. Run under mpirun (2-4 ranks)."""
import sys

from harness import Checks, need_backend

ct = need_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

STEPS, BATCH, DIN, HIDDEN, DOUT = 40, 16, 8, 16, 2


def model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(DIN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, DOUT))


def shard(rank, step):
    g = torch.Generator().manual_seed(rank * 100003 + step)
    x = torch.randn(BATCH, DIN, generator=g)
    y = torch.stack([x[:, :4].sum(1), x[:, 4:].prod(1)], 1)
    return x, y


def train(rank, size, group, use_avg):
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        x, y = shard(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        for p in net.parameters():
            if use_avg:
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=group)
            else:
                dist.all_reduce(p.grad, group=group)
                p.grad /= size
        opt.step()
        losses.append(loss.item())
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]), losses


def reference(size):
    """One process, every shard: the mean of the shard losses, whose gradient is the mean of
    the shard gradients."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for step in range(STEPS):
        opt.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(net(x), y)
                   for x, y in (shard(r, step) for r in range(size))) / size
        loss.backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def main():
    ct.init_process_group()
    rank, size = dist.get_rank(), dist.get_world_size()
    ok = Checks("test_train", rank)
    gloo = dist.new_group(list(range(size)), backend="gloo")
    w_cohort, losses = train(rank, size, None, use_avg=False)
    w_cohort_avg, _ = train(rank, size, None, use_avg=True)
    w_gloo, _ = train(rank, size, gloo, use_avg=False)
    w_ref = reference(size)
    ok(torch.allclose(w_cohort, w_gloo, rtol=1e-5, atol=1e-6),
       "cohort and gloo weights agree (max diff %g)" % (w_cohort - w_gloo).abs().max())
    ok(torch.allclose(w_cohort_avg, w_gloo, rtol=1e-5, atol=1e-6),
       "cohort AVG and gloo weights agree (max diff %g)" % (w_cohort_avg - w_gloo).abs().max())
    ok(torch.allclose(w_cohort, w_ref, rtol=1e-4, atol=1e-5),
       "weights match the single-process reference (max diff %g)"
       % (w_cohort - w_ref).abs().max())
    every = [torch.zeros_like(w_cohort) for _ in range(size)]
    dist.all_gather(every, w_cohort)
    ok(all(torch.equal(every[0], w) for w in every), "every rank ends with the same weights")
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    ok(last < first, "loss went down (%.4f -> %.4f)" % (first, last))
    if rank == 0:
        print("test_train: %d ranks, %d steps: loss %.4f -> %.4f; max |cohort - gloo| %.3g, "
              "max |cohort - single process| %.3g" % (size, STEPS, first, last,
                                                      (w_cohort - w_gloo).abs().max(),
                                                      (w_cohort - w_ref).abs().max()))
    status = ok.finish_dist(gloo)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
