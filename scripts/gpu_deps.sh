#!/usr/bin/env bash
# Downloads (apt-get download, no root needed) the Debian packages the build needs beyond a
# compiler, CMake, ninja and CUDA into a folder, default .deps/ (ignored by git), so that a
# GPU machine without internet or apt can build the project: name the folder in the device
# tool's `carry` list; scripts/gpu_run.sh unpacks the packages there (dpkg -x) when the
# libraries are not installed. Run it on a Debian 12 machine like the one the GPU machine runs.
#   scripts/gpu_deps.sh [DIR]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$repo_root/.deps}"
mkdir -p "$dir"
cd "$dir"

# FFTW and libsodium (headers, pkg-config files, libraries), Catch2 2.x and CLI11 (headers and
# CMake files), and pkg-config itself (pkgconf), which the build's CMake needs.
packages=(libfftw3-dev libfftw3-double3 libsodium-dev libsodium23 catch2 libcli11-dev
          pkgconf pkgconf-bin libpkgconf3)
if ! command -v apt-get >/dev/null; then
  echo "gpu_deps: apt-get not found; download these Debian 12 packages by hand: ${packages[*]}" >&2
  exit 1
fi
apt-get download "${packages[@]}"
echo "gpu_deps: $(ls ./*.deb | wc -l) packages in $dir:"
ls -1 ./*.deb
