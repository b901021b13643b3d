#!/bin/sh
# launch-timeout: 400
# The second half of tests/gpu/fake_check.sh (see there): every collective through CUDA IPC
# and every message-based algorithm on device buffers, over the host-loop kernels.
FAKE_CHECK_PART=device exec sh "${TEST_SRCDIR:-.}/tests/gpu/fake_check.sh"
