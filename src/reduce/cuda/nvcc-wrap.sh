#!/bin/sh
# Runs nvcc under libtool: libtool passes the host compiler's PIC flags (-fPIC -DPIC), which
# nvcc takes only as --compiler-options. Usage: nvcc-wrap.sh NVCC ARGS...
nvcc=$1
shift
for a do
    shift
    case $a in
    -fPIC | -fpic) set -- "$@" "--compiler-options=$a" ;;
    *) set -- "$@" "$a" ;;
    esac
done
exec "$nvcc" "$@"
