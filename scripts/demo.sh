#!/bin/sh
# The main job: build, then show what each rank of an 8-rank Megatron-style layout wired.
#   scripts/demo.sh [layout spec]    (default tp=2,pp=2,ep=2,etp=1)
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
spec=${1:-tp=2,pp=2,ep=2,etp=1}
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
export COHORT_PLUGIN_PATH="$PWD/.libs"
exec timeout 300 mpirun $root --oversubscribe --bind-to none -x COHORT_PLUGIN_PATH -np 8 \
    tools/cohort_peers --layout "$spec"
