#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing), then configures and
# builds torusgate into $BUILD_DIR (default: build/) in Release mode with Ninja, with $JOBS
# parallel jobs (default: the number of cores).
# Idempotent: a second run installs nothing and rebuilds only what changed.
# CUDA is optional: when nvcc is found (on PATH or at /usr/local/cuda/bin/nvcc) the gpu
# target is compiled with it; without it the CPU parts build alone.
set -euo pipefail

# It takes no arguments (settings: BUILD_DIR, JOBS, ...): --help prints the header above, so
# that asking for help never installs packages or starts a build.
case "${1:-}" in
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
  ?*)
    echo "setup.sh: takes no arguments (see --help), got '$1'" >&2
    exit 2
    ;;
esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
if [[ ! "$jobs" =~ ^[1-9][0-9]{0,3}$ ]]; then
  echo "setup.sh: JOBS='$jobs' is not a whole number of build jobs in 1..9999" >&2
  exit 2
fi

# clang + libclang-rt-14-dev: the libFuzzer harnesses (scripts/fuzz.sh); verilator: the
# co-simulation of the generated FFT Verilog against the fpga_fft model.
packages=(build-essential cmake ninja-build pkg-config libfftw3-dev libsodium-dev catch2 libcli11-dev
          python3-matplotlib clang libclang-rt-14-dev verilator)

missing=()
for p in "${packages[@]}"; do
  status="$(dpkg -s "$p" 2>/dev/null || true)"
  if [[ "$status" != *"Status: install ok installed"* ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing missing packages: ${missing[*]}"
  sudo_cmd=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "setup: not root and sudo is not installed; install as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all required packages are installed"
fi

cmake_args=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release)
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cmake_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi

echo "setup: configuring into $build_dir"
cmake "${cmake_args[@]}"
echo "setup: building with $jobs jobs"
cmake --build "$build_dir" -j"$jobs"
echo "setup: done; binaries in $build_dir/apps, tests in $build_dir/tests"
