#!/bin/sh
# launch-timeout: 300
# tests/mpi/count_mismatch's device path without a GPU: members that disagree on a count or a
# root, their buffers on the (fake) device, through CUDA IPC (COHORT_CUDA_IPC=on): the canaries
# around every device buffer intact, COHORT_ERR_MISMATCH on every member, the group usable after.
set -eu
top=${TEST_SRCDIR:-.}
build=$(pwd)
[ -f "$build/tests/gpu/fake/libcudart.so.13" ] || { echo "fake_mismatch: SKIP: no fake runtime"; exit 77; }
[ -f "$build/tests/gpu/fake-kernels/cohort_cuda.so" ] || { echo "fake_mismatch: SKIP: no fake module"; exit 77; }
export LD_LIBRARY_PATH="$build/tests/gpu/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
kernels="COHORT_PLUGIN_PATH=$build/tests/gpu/fake-kernels:${COHORT_PLUGIN_PATH:-$build/.libs}"
export TEST_RUNS="2 COUNT_MISMATCH_PATHS=cuda_ipc $kernels
4 COUNT_MISMATCH_PATHS=cuda_ipc $kernels"
exec "$top/tests/mpi/launch.sh" "$build/tests/mpi/count_mismatch"
