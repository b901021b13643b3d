#!/bin/sh
# Installs what is missing (Debian 12 packages only), then builds cohort in place.
#   scripts/setup.sh [configure options...]
#   SETUP_TESTS=1 scripts/setup.sh ...   also every test program, in the same make
#                                        (make build-tests: no core idle, make check starts
#                                        testing at once; what scripts/test.sh runs)
set -eu
cd "$(dirname "$0")/.."
pkgs="gcc make autoconf automake libtool pkg-config libucx-dev ucx-utils libpmix-dev \
openmpi-bin libopenmpi-dev check"
missing=
for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
[ -x configure ] || ./autogen.sh
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
    ./configure -q "$@"
fi
if [ "${SETUP_TESTS:-0}" = 1 ]; then
    make -j"$(nproc)" build-tests
else
    make -j"$(nproc)"
fi
