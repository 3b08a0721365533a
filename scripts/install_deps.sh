#!/usr/bin/env bash
# Installs the Debian packages hongtu needs, and nothing when all are present.
set -euo pipefail
pkgs=(cmake g++ make libmetis-dev libcli11-dev libfmt-dev libgtest-dev libopenblas-dev libxxhash-dev libzip-dev zlib1g-dev
      nlohmann-json3-dev libopenmpi-dev openmpi-bin python3-numpy python3-scipy python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
