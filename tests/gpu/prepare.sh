#!/bin/sh
# Run on the build machine (with network and a configured, built tree) before a device run:
# fetches the Debian packages of tests/gpu/debs.txt into tests/gpu/debs/ and makes the source
# tarball tests/gpu/dist/cohort.tar.gz (configure included: the GPU machine has no autotools).
# Both folders are ignored by git; pass them to the device run as carried paths:
#   run(command="bash tests/gpu/device-check.sh", carry=["tests/gpu/debs", "tests/gpu/dist"])
set -eu
cd "$(dirname "$0")/../.."
mkdir -p tests/gpu/debs tests/gpu/dist
# shellcheck disable=SC2046
(cd tests/gpu/debs && apt-get download $(grep -v '^#' ../debs.txt))
make dist >/dev/null
mv -f cohort-*.tar.gz tests/gpu/dist/cohort.tar.gz
du -sh tests/gpu/debs tests/gpu/dist
