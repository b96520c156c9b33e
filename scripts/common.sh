# Sourced by the benchmark scripts: moves to the repository root, exports BUILD_DIR (default
# build; a relative one is the repository's folder, as for scripts/setup.sh, while a relative
# OUT_DIR is the caller's: see from_caller), and defines
#   built_binary REL_PATH   runs scripts/setup.sh (unless SKIP_SETUP=1), then prints
#                           $BUILD_DIR/REL_PATH, or exits 1 with a message when it is missing;
#   from_caller PATH        PATH made absolute against the folder the script was run from (a
#                           relative OUT_DIR or --out means the caller's folder, not the
#                           repository); an empty or absolute PATH as it is;
#   print_header            prints the script's header comment (its --help);
#   takes_no_arguments "$@" for a script whose settings come from the environment: -h or
#                           --help prints the script's header comment and exits 0, any other
#                           argument exits 2 (so that `--help` never starts a long run).
caller_dir="$PWD"
script_path="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
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

from_caller() {
  if [[ -z "$1" || "$1" == /* ]]; then echo "$1"; else echo "$caller_dir/$1"; fi
}

print_header() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$script_path"
}

takes_no_arguments() {
  case "${1:-}" in
    -h | --help)
      print_header
      exit 0
      ;;
    ?*)
      echo "$(basename "$script_path"): takes no arguments (its settings come from the" \
           "environment; see --help), got '$1'" >&2
      exit 2
      ;;
  esac
}
