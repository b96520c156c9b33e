# Sourced by the end-to-end test scripts (tests/*/*.sh): a temporary directory $tmp removed
# on exit, failure counting, and
#   expect CODE TEXT ARGS...   runs "$program" ARGS, checks its exit code and that TEXT is in
#                              its output (stdout and stderr), printing the output otherwise;
#   finish NAME                exits 1 if any check failed, else reports success.
# The sourcing script sets $program first.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}

expect() {
  local code="$1" text="$2" name
  shift 2
  name="$(basename "$program")"
  "$program" "$@" >"$tmp/out" 2>&1
  local got=$?
  if [[ $got -ne $code ]]; then
    fail "$name $* exited with $got, expected $code"
    cat "$tmp/out"
  elif ! grep -qF -- "$text" "$tmp/out"; then
    fail "$name $*: output lacks '$text'"
    cat "$tmp/out"
  fi
}

finish() {
  if [[ $failures -ne 0 ]]; then
    echo "$1: $failures check(s) failed"
    exit 1
  fi
  echo "$1: all checks passed"
}
