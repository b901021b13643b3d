#!/bin/sh
# launch-timeout: 400
# The third part of tests/gpu/fake_check.sh (see there): COHORT_CUDA_IPC=auto, the vote on
# CUDA IPC, over the host-loop kernels.
FAKE_CHECK_PART=vote exec sh "${TEST_SRCDIR:-.}/tests/gpu/fake_check.sh"
