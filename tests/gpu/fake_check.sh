#!/bin/sh
# The device paths without a GPU: tests/mpi/cuda_coll with the fake CUDA runtime
# (tests/gpu/fake_cudart.c, "device" memory that faults on any host access) ahead of the real
# one, so every collective and p2p with device, managed and mixed buffers runs through the CUDA
# module's staging here, in CI. Run by make check (built only with CUDA).
set -eu
top=${TEST_SRCDIR:-.}
build=$(pwd)
[ -f "$build/tests/gpu/fake/libcudart.so.13" ] || { echo "fake_check: SKIP: no fake runtime"; exit 77; }
export LD_LIBRARY_PATH="$build/tests/gpu/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TEST_RUNS="2
4
3 COHORT_ALGO_ALLREDUCE=ring COHORT_ALGO_REDUCE_SCATTER=recursive_halving COHORT_ALGO_ALLGATHER=bruck
singleton
2 COHORT_CUDA_IPC=on CUDA_COLL_ONLY=allgather
3 COHORT_CUDA_IPC=on CUDA_COLL_ONLY=allgather"
exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/cuda_coll"
