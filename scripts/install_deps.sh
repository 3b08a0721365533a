#!/usr/bin/env bash
# Installs the Debian packages hongtu needs, and nothing when all are present.
#   scripts/install_deps.sh           install what is missing (root, or sudo)
#   scripts/install_deps.sh --check   only list what is missing and the apt line that installs it
#                                     (exit 0: all present; 1: some missing)
# Without root and without a working sudo nothing is installed: the missing
# packages and the line to give an administrator are printed (exit 1).
set -euo pipefail
pkgs=(cmake g++ make libmetis-dev libcli11-dev libfmt-dev libgtest-dev libopenblas-dev libxxhash-dev libzip-dev zlib1g-dev
      nlohmann-json3-dev libopenmpi-dev openmpi-bin python3-numpy python3-scipy python3-matplotlib)
check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install_deps.sh: error: unknown argument '$1' (--check or nothing)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present"
  exit 0
fi
apt_line="apt-get install --no-install-recommends ${missing[*]}"
if [ $check -eq 1 ]; then
  echo "deps: missing ${missing[*]}"
  echo "deps: to install them (as root): $apt_line"
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO="sudo"
  else
    echo "deps: missing ${missing[*]}" >&2
    echo "deps: installing needs root (and sudo is not available without a password); ask an administrator for:" >&2
    echo "  sudo $apt_line" >&2
    echo "deps: (then make && make install PREFIX=\$HOME/.local installs hongtu itself without root)" >&2
    exit 1
  fi
fi
echo "deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
