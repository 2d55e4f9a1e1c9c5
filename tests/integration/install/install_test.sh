#!/usr/bin/env bash
# cmake --install puts libweft.so, weft.h, the CMake package and weft.pc under a prefix; a
# consumer project then builds against it both ways and runs.
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/weft.h lib/cmake/weft/weftConfig.cmake lib/pkgconfig/weft.pc; do
  [[ -e "$work/prefix/$f" ]] || { echo "missing $f"; exit 1; }
done
ls "$work/prefix"/lib/libweft.so* >/dev/null
# find_package(weft)
cmake -S "$source/tests/integration/install/consumer" -B "$work/cmake-build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake-build/consumer"
# pkg-config
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc -std=c99 "$source/tests/integration/install/consumer/consumer.c" -o "$work/pc-consumer" \
  $(pkg-config --cflags --libs weft)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc-consumer"
