#!/usr/bin/env bash
# Regenerates the fpga_fft results of docs/results/fpga_fft/ (docs/fpga_fft.md):
#   streaming_M512.{json,md}   the cycle model of a 512-point datapath for radix 2 and 8 and every
#                              streaming width: simulated latency (= the formula), cycles per
#                              transform, multipliers, adders, memory words (seconds)
#   precision_tfhe_lib_128.{json,md}
#                              fpga_fft study: F = 14..34, both roundings, 64 NAND gates and 16
#                              product columns per row, keys and inputs from --seed 1 so the
#                              table is reproducible (about 20 minutes on 2 quiet cores)
#   scripts/fpga_fft_results.sh [streaming|precision|all]   (default all)
# Extra arguments after the first go to the study (precision or all; streaming takes none):
# an option given there replaces the setting above (e.g. --gates 256), and the files are named
# after its --params. Environment: BUILD_DIR (default build), SKIP_SETUP=1 (the binary as it
# is), OUT_DIR (default docs/results/fpga_fft; a relative one is taken from the folder the
# script is run in).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
what="${1:-all}"
shift || true
case "$what" in
  streaming | precision | all) ;;
  -h | --help)
    print_header
    exit 0
    ;;
  *)
    echo "usage: scripts/fpga_fft_results.sh [streaming|precision|all] [study options]" >&2
    exit 2
    ;;
esac
# The study's settings of record, each unless the extra arguments give that option (the study
# refuses an option given twice); the output files are OUT_DIR's, named after the parameters.
params=tfhe_lib_128
study_args=()
for default in "--params tfhe_lib_128" "--gates 64" "--products 16" "--seed 1"; do
  option="${default% *}"
  given=0
  for ((i = 1; i <= $#; i++)); do
    arg="${!i}"
    next=$((i + 1))
    case "$arg" in
      "$option") given=1; [[ "$option" == --params ]] && params="${!next:-}" ;;
      "$option="*) given=1; [[ "$option" == --params ]] && params="${arg#*=}" ;;
      --json | --json=* | --markdown | --markdown=*)
        echo "fpga_fft_results.sh: $arg: the study's files go to OUT_DIR (see --help)" >&2
        exit 2
        ;;
    esac
  done
  ((given)) || study_args+=("$option" "${default#* }")
done
if [[ ! "$params" =~ ^[A-Za-z0-9_]+$ ]]; then
  echo "fpga_fft_results.sh: --params needs a parameter set name, got '$params'" >&2
  exit 2
fi
if [[ "$what" == streaming && $# -gt 0 ]]; then
  echo "fpga_fft_results.sh: streaming takes no study options, got '$1' (see --help)" >&2
  exit 2
fi
tool="$(built_binary apps/fpga_fft/fpga_fft)"
out="$(from_caller "${OUT_DIR:-}")"
out="${out:-docs/results/fpga_fft}"
mkdir -p "$out"

if [[ "$what" != precision ]]; then
  rows=()
  for radix in 2 8; do
    for width in 2 4 8 16 32 64 128 256; do
      ((width < radix)) && continue
      "$tool" simulate --size 512 --radix "$radix" --width "$width" --transforms 2 \
        --json "$out/.simulate.json" >/dev/null
      rows+=("$(cat "$out/.simulate.json")")
    done
  done
  rm -f "$out/.simulate.json"
  printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
text = sys.stdin.read()
decoder, reports, i = json.JSONDecoder(), [], 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    obj, i = decoder.raw_decode(text, i)
    reports.append(obj)
out = sys.argv[1]
json.dump({"program": "fpga_fft simulate", "reports": reports}, open(out + "/streaming_M512.json", "w"), indent=1)
with open(out + "/streaming_M512.md", "w") as md:
    r0 = reports[0]
    md.write("# Streaming datapath of a 512-point FFT (cycle model)\n\n")
    md.write("Made by `scripts/fpga_fft_results.sh streaming` on %s, commit %s. W = 64, F = 30, "
             "T = 32, multiplier latency 3, adder latency 1, separate twist, forward. The simulated "
             "latency equals the formula of docs/fpga_fft.md in every row, and every output equals "
             "the functional model bit for bit.\n\n" % (r0["date"], r0["commit"]))
    md.write("| radix | w | latency (cycles) | cycles per transform | real multipliers | real adders | memory words |\n")
    md.write("|---:|---:|---:|---:|---:|---:|---:|\n")
    for r in reports:
        d = r["datapath"]
        radix = d.split(" r=")[1].split(" ")[0]
        w = d.split("w=")[1].split(",")[0]
        assert r["identical"] and r["latency_simulated"] == r["latency_formula"]
        md.write("| %s | %s | %d | %d | %d | %d | %d |\n" % (radix, w, r["latency_simulated"],
                 r["transform_interval"], r["multipliers"], r["adders"], r["memory_words"]))
' "$out"
  echo "fpga_fft_results: wrote $out/streaming_M512.{json,md}"
fi
if [[ "$what" != streaming ]]; then
  "$tool" study "${study_args[@]}" --json "$out/precision_$params.json" \
    --markdown "$out/precision_$params.md" "$@"
  echo "fpga_fft_results: wrote $out/precision_$params.{json,md}"
fi
