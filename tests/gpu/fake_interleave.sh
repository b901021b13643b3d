#!/bin/sh
# launch-timeout: 400
# tests/mpi/interleave on device buffers under the fake CUDA runtime (see tests/gpu/fake_check.sh)
# and the module whose kernels are host loops: nonblocking calls of mixed kinds and sizes in
# flight together on one group, one member late each round, 200 rounds (issue 20). The 64 KiB
# calls vote on CUDA IPC (COHORT_CUDA_IPC_MIN=64k) and run there, off the group's shared
# segment, while the small ones are staged and run on it; then the same with a group stream
# whose asynchronous copies write every input (each call waits for its copy), and with votes
# under COHORT_CHECK=1. Every result is checked; a hang is a TIMEOUT (COHORT_TIMEOUT=30).
set -eu
top=${TEST_SRCDIR:-.}
build=$(pwd)
[ -f "$build/tests/gpu/fake/libcudart.so.13" ] || { echo "fake_interleave: SKIP: no fake runtime"; exit 77; }
[ -f "$build/tests/gpu/fake-kernels/cohort_cuda.so" ] || { echo "fake_interleave: SKIP: no fake module"; exit 77; }
export LD_LIBRARY_PATH="$build/tests/gpu/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
kernels="COHORT_PLUGIN_PATH=$build/tests/gpu/fake-kernels:${COHORT_PLUGIN_PATH:-$build/.libs}"
dev="INTERLEAVE_DEVICE=1 COHORT_CUDA_IPC_MIN=65536 COHORT_TIMEOUT=30 $kernels"
export TEST_RUNS="2 $dev
4 $dev
3 INTERLEAVE_STREAM=1 $dev
2 INTERLEAVE_STREAM=1 COHORT_CHECK=1 $dev"
exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/interleave"
