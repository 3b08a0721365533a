#!/usr/bin/env bash
# Lays out .carry/ (git-ignored) for the lent GPU machine, which has CUDA but none of our apt
# libraries: stripped tools and the CUDA test in .carry/bin, the shared libraries they need that a
# bare CUDA image lacks as .carry/lib.tar.xz (xz keeps the carry under its 64 MiB limit), optionally a
# baseline ht-train in .carry/old (OLD=path) and real graphs as .carry/graphs.tar.xz (GRAPHS=dir).
# Usage: scripts/make_carry.sh [build-dir]     (bench/device_runs.sh is the matching device side)
set -euo pipefail
B=${1:-build}/bin; C=.carry
rm -rf $C/bin $C/lib && mkdir -p $C/bin $C/lib
for t in ht-convert ht-partition ht-reorganize ht-train test_cuda_executor ${EXTRA_BINS:-}; do
  strip -o $C/bin/$t $B/$t
done
# Every library the tools load except glibc's, the C++ runtime and CUDA's own (the device has those).
ldd $C/bin/* | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas[^/]*|libcusparse|libnccl|libnvJitLink)\.so' |
  while read -r so; do cp -L "$so" $C/lib/; done
tar cJf $C/lib.tar.xz -C $C lib && rm -rf $C/lib
[[ -z ${OLD:-} ]] || { mkdir -p $C/old && strip -o $C/old/ht-train "$OLD"; }
[[ -z ${GRAPHS:-} ]] || tar cJf $C/graphs.tar.xz -C "$(dirname "$GRAPHS")" "$(basename "$GRAPHS")"
du -sh $C; ls $C $C/bin
