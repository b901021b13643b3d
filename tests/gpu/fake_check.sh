#!/bin/sh
# launch-timeout: 400
# The device paths without a GPU: tests/mpi/cuda_coll with the fake CUDA runtime
# (tests/gpu/fake_cudart.c, "device" memory that faults on any host access) ahead of the real
# one. With the real CUDA module (whose kernels cannot run here, so a reduction asked of the
# device fails) and COHORT_CUDA_IPC=off every collective and p2p with device, managed and mixed
# buffers runs through staging, and one run makes a device reduction fail on purpose (every
# member gets a status); with the test module whose kernels are host loops
# (tests/gpu/fake_kernels.c, found first on COHORT_PLUGIN_PATH) every collective runs through
# CUDA IPC (once with rank 1 unable to map the others' memory, FAKE_CUDA_IPC_FAIL_RANK: the
# fallback; once with every copy or kernel touching a peer's memory refused when its caller
# waits for it, FAKE_CUDA_SYNC_OPENED_FAIL: the collectives' copies and reductions and the
# point-to-point receiver's copy are enqueued and their ends polled from progress), and
# then every message-based algorithm on the device buffers themselves
# (COHORT_CUDA_PIPELINE_MIN=0: local copies and reductions on the "device", each transfer
# staged on its own; a kernel handed host memory fails the run); and (FAKE_CHECK_PART=vote)
# COHORT_CUDA_IPC=auto, the default: the matrix with calls from 64 KiB voting their way into IPC,
# the vote with COHORT_CHECK=1, with a rank shown no device, at another threshold; the
# message-based algorithms on device buffers below the vote's threshold, whose same-node
# messages go through CUDA IPC (cma.c), a user's rule naming cuda_ipc from 1 MiB ahead of the
# ring (COHORT_ALGO_ rules come before the defaults, so it keeps the vote); and every
# collective forced to cuda_ipc (COHORT_ALGO_<COLL>=cuda_ipc: a vote at any size; the
# defaults' threshold out of reach, so every IPC call is the forced rows'). Run by make check
# (built only with CUDA).
#
# cuda_coll says "runs: together": launch.sh starts the lines of one rank count as one mpirun
# that runs their configurations one after the other, each in a context of its own
# (harness.h's test_configs; the fake reads its FAKE_CUDA_* settings at each call). Each part
# keeps one COHORT_PLUGIN_PATH (the real module, or the host-loop one first) for all its lines:
# a module, once loaded, stays loaded in its process (src/mem/gpu.c). TEST_TOGETHER=0: one
# mpirun per line, as before.
set -eu
top=${TEST_SRCDIR:-.}
build=$(pwd)
[ -f "$build/tests/gpu/fake/libcudart.so.13" ] || { echo "fake_check: SKIP: no fake runtime"; exit 77; }
[ -f "$build/tests/gpu/fake-kernels/cohort_cuda.so" ] || { echo "fake_check: SKIP: no fake module"; exit 77; }
export LD_LIBRARY_PATH="$build/tests/gpu/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
kernels="COHORT_PLUGIN_PATH=$build/tests/gpu/fake-kernels:${COHORT_PLUGIN_PATH:-$build/.libs}"
# Two halves, two tests (tests/gpu/fake_device.sh runs the second), each within launch.sh's
# bound on a whole script: staging with the real module, then the host-loop kernels' runs.
if [ "${FAKE_CHECK_PART:-staging}" = staging ]; then
    # The module's C side and check_reduce_cuda's own logic (host loops against host loops).
    COHORT_PLUGIN_PATH="$build/tests/gpu/fake-kernels" timeout -k 5 300 \
        "$build/tests/unit/check_reduce_cuda"
    export TEST_RUNS="2 COHORT_CUDA_IPC=off
4 COHORT_CUDA_IPC=off
3 COHORT_CUDA_IPC=off COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=recursive_halving COHORT_ALGO_ALLGATHER=bruck
singleton
2 CUDA_COLL_DEVICE_FIRST=1 COHORT_CUDA_IPC=off
3 CUDA_COLL_KERNEL_FAIL=1 COHORT_CUDA_IPC=off COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=ring"
    exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/cuda_coll"
fi
if [ "$FAKE_CHECK_PART" = vote ]; then
    TEST_RUNS="3 COHORT_CUDA_IPC_MIN=65536 $kernels
4 CUDA_COLL_VOTE=1 COHORT_CHECK=1 $kernels
2 CUDA_COLL_VOTE=1 COHORT_CUDA_IPC_MIN=65536 $kernels
3 COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=1m-inf:cuda_ipc,ring COHORT_ALGO_REDUCE_SCATTER=ring COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise COHORT_ALGO_BCAST=knomial COHORT_ALGO_REDUCE=knomial $kernels
3 CUDA_COLL_EXPECT_IPC=1 COHORT_CUDA_IPC_MIN=1g CUDA_COLL_ONLY=bcast,reduce,allreduce,reduce_scatter,allgather,alltoall COHORT_ALGO_BCAST=cuda_ipc COHORT_ALGO_REDUCE=cuda_ipc COHORT_ALGO_ALLREDUCE=cuda_ipc COHORT_ALGO_ALLGATHER=cuda_ipc COHORT_ALGO_REDUCE_SCATTER=cuda_ipc COHORT_ALGO_ALLTOALL=cuda_ipc $kernels" \
        "$top/tests/mpi/launch.sh" "$build/tests/mpi/cuda_coll"
    # A rank shown no device, in an mpirun of its own: the CUDA module counts the devices once
    # per process (src/reduce/cuda/module.c, as CUDA reads CUDA_VISIBLE_DEVICES once): in a
    # process shared with the other 3-rank lines, rank 1 would keep the first one's answer.
    export TEST_RUNS="3 CUDA_COLL_VOTE=1 FAKE_CUDA_NO_DEVICE_RANK=1 $kernels"
    exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/cuda_coll"
fi
export TEST_RUNS="2 COHORT_CUDA_IPC=on $kernels
3 COHORT_CUDA_IPC=on COHORT_CUDA_IPC_CACHE=0 $kernels
4 COHORT_CUDA_IPC=on $kernels
3 COHORT_CUDA_IPC=on FAKE_CUDA_IPC_FAIL_RANK=1 CUDA_COLL_ONLY=bcast,reduce,allreduce,reduce_scatter,allgather,alltoall,p2p $kernels
3 COHORT_CUDA_IPC=on CUDA_COLL_EXPECT_IPC=1 FAKE_CUDA_SYNC_OPENED_FAIL=1 $kernels
3 COHORT_CUDA_IPC=off COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=ring COHORT_ALGO_ALLGATHER=ring COHORT_ALGO_ALLTOALL=pairwise COHORT_ALGO_BCAST=knomial COHORT_ALGO_REDUCE=knomial $kernels
4 COHORT_CUDA_IPC=off COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=rabenseifner COHORT_ALGO_REDUCE_SCATTER=recursive_halving COHORT_ALGO_ALLGATHER=bruck COHORT_ALGO_ALLTOALL=bruck COHORT_ALGO_BCAST=scatter_allgather $kernels
3 COHORT_CUDA_IPC=off COHORT_CUDA_PIPELINE_MIN=0 COHORT_ALGO_ALLREDUCE=recursive_doubling $kernels"
exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/cuda_coll"
