#!/usr/bin/env bash
# Co-simulation of generated Verilog against the C++ model (fpga_fft cosim): bit for bit and cycle
# for cycle, for radix-2 datapaths of several sizes, widths, directions, twists, roundings and
# latencies. Exits 77 (ctest: skipped) when no HDL simulator is installed.
#   run_cosim.sh BINARY [full]     (full: the larger sweep of the slow test)
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

if ! command -v verilator >/dev/null 2>&1 && ! command -v iverilog >/dev/null 2>&1; then
  echo "skipped: neither verilator nor iverilog is installed (scripts/setup.sh installs verilator)"
  exit 77
fi

configs=(
  "--size 32 --width 4 --transforms 3"
  "--size 16 --width 2 --merged-twist --rounding truncate --direction inverse --mul-latency 0 --add-latency 0"
  # The inverse with rounding to nearest: its 1/r drop rounds too (a generator truncating there
  # passed the three others).
  "--size 16 --width 4 --direction inverse"
  "--size 64 --width 64 --word-bits 40 --frac-bits 20 --mul-latency 1 --add-latency 2"
)
if [[ "${2:-}" == "full" ]]; then
  configs+=(
    "--size 512 --width 8"
    "--size 512 --width 64 --direction inverse --merged-twist"
    "--size 128 --width 2 --rounding truncate --word-bits 24 --frac-bits 12 --twiddle-bits 16 --input-bits 24"
    "--size 256 --width 16 --direction inverse --word-bits 48 --frac-bits 30 --mul-latency 5"
    "--size 2 --width 2 --merged-twist"
  )
fi
i=0
for config in "${configs[@]}"; do
  # shellcheck disable=SC2086
  expect 0 "PASS: bit for bit and cycle for cycle" cosim --workdir "$tmp/c$i" $config
  i=$((i + 1))
done
finish "fpga_fft cosim (${#configs[@]} datapaths)"
