# Sourced by the benchmark scripts: moves to the repository root, exports BUILD_DIR (default
# build), and defines
#   built_binary REL_PATH   runs scripts/setup.sh (unless SKIP_SETUP=1), then prints
#                           $BUILD_DIR/REL_PATH, or exits 1 with a message when it is missing.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
export BUILD_DIR="${BUILD_DIR:-build}"

built_binary() {
  if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
    scripts/setup.sh >&2
  fi
  local bin="$BUILD_DIR/$1"
  if [[ ! -x "$bin" ]]; then
    echo "$(basename "$0"): $bin not found; run scripts/setup.sh (or unset SKIP_SETUP)" >&2
    exit 1
  fi
  echo "$bin"
}
