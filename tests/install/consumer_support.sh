# Sourced by run_install.sh and run_subproject.sh after ../script_support.sh:
#   build_consumer WHAT SOURCE BUILD [CMAKE ARGS...]
# configures the CMake project SOURCE into BUILD (Ninja where there is one, Release) with the
# extra arguments, builds it and runs BUILD/consumer, which must print "all correct", and
# BUILD/plugin_host where the project built it (its shared library links the static libraries,
# position-independent code), which must print "plugin correct"; a failure of any step is
# counted (fail) with WHAT naming the project, and its log printed.
build_consumer() {
  local what="$1" source="$2" build="$3"
  shift 3
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if ! cmake -S "$source" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" \
    >"$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log"
    fail "$what did not configure"
  elif ! cmake --build "$build" >"$tmp/build.log" 2>&1; then
    tail -40 "$tmp/build.log"
    fail "$what did not build"
  else
    program="$build/consumer"
    local before=$failures
    expect 0 "all correct"
    [[ $failures -eq $before ]] && cat "$tmp/out"
    # Built where the libraries are position-independent (the project decides).
    if [[ -e "$build/plugin_host" ]]; then
      program="$build/plugin_host"
      before=$failures
      expect 0 "plugin correct"
      [[ $failures -eq $before ]] && cat "$tmp/out"
    fi
  fi
}
