"""Misuse is an exception, never a crash (issue 23), through the package: overlapping send and
receive buffers, the exact alias taken as in place, misaligned buffers, an overflowing
COHORT_ALGO_ range, a second thread on a context while the first is inside a call, and a fork
child using its parent's context. Each refusal is cohort.InvalidArgument carrying
COHORT_ERR_INVALID_ARG, and the group is still in step after it."""
import array
import os
import threading
import time

from harness import Checks

import cohort
from cohort import _status

INV = _status.ERR_INVALID_ARG


def overlap(ck, w):
    n = w.size
    buf = array.array("i", range(4 * n * 2))
    mv = memoryview(buf)
    ck.raises_status(lambda: w.allgather(mv[:4], mv[:4 * n]), "allgather into its own input",
                     INV)
    ck.raises_status(lambda: w.allgather(mv[1:5], mv[:4 * n]), "allgather, partial overlap",
                     INV)
    ck.raises_status(lambda: w.alltoall(mv[:4 * n], mv[:4 * n]), "alltoall, same buffer", INV)
    ck.raises_status(lambda: w.reduce_scatter(mv[:4 * n], mv[:4]), "reduce_scatter, overlap",
                     INV)
    ck.raises_status(lambda: w.allreduce(mv[:4], mv[2:6]), "allreduce, partial overlap", INV)
    ck(list(buf) == list(range(4 * n * 2)), "nothing written by the refused calls")
    # the exact alias of allreduce is its in-place form
    v = array.array("i", [1, 2, 3, 4])
    w.allreduce(v, v)
    ck(list(v) == [n, 2 * n, 3 * n, 4 * n], "allreduce(v, v) is allreduce in place: %r" % v)


def misaligned(ck, w):
    n = w.size
    raw = bytearray(4 * 16 + 1)
    send = memoryview(raw)[1:].cast("f")  # floats at an odd address
    for i in range(16):
        send[i] = float(i + w.rank)
    out = bytearray(4 * 16 + 3)
    recv = memoryview(out)[3:].cast("f")
    w.allreduce(send, recv)
    want = [float(i * n + n * (n - 1) // 2) for i in range(16)]
    ck(list(recv) == want, "misaligned allreduce: %r" % list(recv)[:4])


def bad_setting(ck):
    os.environ["COHORT_ALGO_ALLREDUCE"] = "0-99999999999999999999:ring"
    try:
        ck.raises_status(cohort.init, "init with an overflowing COHORT_ALGO_ range", INV)
    finally:
        del os.environ["COHORT_ALGO_ALLREDUCE"]


def two_threads(ck, rank):
    """One context, two threads (cohort.h's rule): calls on another group go on while a thread
    is inside a blocking receive on its own; a call on the group another thread is inside is
    refused there (InvalidArgument) and revokes that group on every member (MISMATCH), never a
    hang. (A wait on a request takes no group: a thread may wait while another posts.)"""
    os.environ["COHORT_TIMEOUT"] = "1"
    try:
        ctx = cohort.init()
    finally:
        del os.environ["COHORT_TIMEOUT"]
    g = ctx.group([rank], tag="thread-a")
    g2 = ctx.group([rank], tag="thread-b")
    got = array.array("i", [0])
    stop = threading.Event()
    seen = []

    def waiter():
        # a blocking receive nobody sends to: each times out after a second and is made again,
        # until the group is revoked under it
        while not stop.is_set():
            try:
                g.recv(got, 0, tag=5)
                seen.append("done")
                return
            except cohort.Timeout:
                seen.append("timeout")
            except cohort.CohortError as e:
                seen.append("mismatch" if e.status == _status.ERR_MISMATCH else repr(e))
                return

    t = threading.Thread(target=waiter)
    t.start()
    start = time.monotonic()
    while not seen and time.monotonic() - start < 120:  # thread A is inside its waits
        time.sleep(0.01)
    for _ in range(20):  # another group: goes on meanwhile
        g2.barrier()
    ck("mismatch" not in seen and "done" not in seen,
       "thread A still waits while the other group's barriers ran: %r" % seen[-4:])
    refused = None
    while refused is None and time.monotonic() - start < 120:  # the same group: refused
        try:
            g.barrier()
        except cohort.CohortError as e:  # refused here, or its revocation if A saw it first
            refused = e
    t.join(60)
    stop.set()
    ck(refused is not None and refused.status in (INV, _status.ERR_MISMATCH),
       "a barrier on the group another thread waits on: %r" % refused)
    ck("timeout" in seen, "thread A's waits timed out first: %r" % seen[:4])
    ck(seen and seen[-1] == "mismatch", "thread A's wait ends revoked (MISMATCH): %r" % seen[-4:])
    try:
        g.barrier()
        revoked = None
    except cohort.CohortError as e:
        revoked = e
    ck(revoked is not None and revoked.status == _status.ERR_MISMATCH,
       "the refused group's next barrier: %r" % revoked)
    g2.barrier()
    ctx.group([rank], tag="thread-c").barrier()
    ctx.finalize()


def fork_child(ck, ctx):
    w = ctx.world
    g = ctx.group([ctx.rank], tag="fork")
    got = array.array("i", [0])
    req = g.irecv(got, 0, tag=3)
    pid = os.fork()
    if pid == 0:
        ok = True
        try:
            w.barrier()
            ok = False
        except cohort.InvalidArgument:
            pass
        # refused, not failed: the request is still the parent's, pending
        try:
            req.wait()
            ok = False
        except cohort.InvalidArgument:
            ok = ok and not req.done
        try:
            ctx.finalize()
            ok = False
        except cohort.InvalidArgument:
            pass
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    ck(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
       "the fork child's calls on its parent's context raised InvalidArgument (%#x)" % status)
    w.barrier()  # the parent goes on, its request as it was
    ck(not req.done, "the parent's request is pending")
    g.send(array.array("i", [7]), 0, tag=3)
    req.wait()
    ck(got[0] == 7, "the parent's receive completes: %d" % got[0])
    g.free()


def main():
    ctx = cohort.init()
    w = ctx.world
    ck = Checks("test_misuse", ctx.rank)
    overlap(ck, w)
    misaligned(ck, w)
    bad_setting(ck)
    fork_child(ck, ctx)
    two_threads(ck, ctx.rank)
    w.barrier()
    rc = ck.finish(w)
    ctx.finalize()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
