#!/usr/bin/env bash
# End-to-end checks of the fpga_fft program as a user runs it: simulate (cycle model == functional
# model, latency formula) for several datapaths, the JSON report, verilog's files and its refusal to
# overwrite, the precision study on toy parameters, every bad option's exit code and message.
#   run_fpga_fft.sh BINARY
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

expect 0 "identical to the functional model, bit for bit" simulate --size 512 --width 16
expect 0 "latency: simulated 127 cycles, formula 127" simulate --size 512 --width 8 --mul-latency 2
expect 0 "identical to the functional model" simulate --size 512 --radix 8 --width 32 \
  --rounding truncate --merged-twist --direction inverse
expect 0 "identical to the functional model" simulate --size 64 --radix 64 --width 64 --frac-bits 10
expect 0 "one transform every 4 cycles (M/w = 4)" simulate --size 16 --width 4 --transforms 3 \
  --json "$tmp/sim.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['identical'] and \
r['latency_simulated']==r['latency_formula'] and r['transform_interval']==4" "$tmp/sim.json" \
  || fail "the simulate JSON report does not parse or has the wrong content"
# Overflow is counted, and the outputs still match (both wrap like registers).
expect 0 "identical to the functional model" simulate --size 64 --word-bits 16 --frac-bits 4 \
  --input-bits 16 --width 8

expect 0 "wrote $tmp/rtl/fft_stream.v" verilog --size 32 --width 4 --out "$tmp/rtl"
for f in fft_stream.v tb_fft_stream.v input.hex expected.txt; do
  [[ -s "$tmp/rtl/$f" ]] || fail "verilog did not write $f"
done
[[ $(wc -l <"$tmp/rtl/expected.txt") -eq 128 ]] || fail "expected.txt should hold 4 x 32 words"
expect 2 "exists; pass --force to overwrite it" verilog --size 32 --width 4 --out "$tmp/rtl"
expect 0 "wrote" verilog --size 32 --width 4 --out "$tmp/rtl" --force --name my_fft
expect 2 "--radix=8 but the generator emits radix-2 datapaths only" verilog --size 64 --radix 8 \
  --width 8 --out "$tmp/r8"
expect 2 "fpga_fft: --name '9x' is not a Verilog identifier" verilog --out "$tmp/x" --name 9x

expect 0 "0/4" study --params toy_INSECURE --frac-bits 30 --rounding nearest --gates 4 \
  --products 2 --seed 1 --markdown "$tmp/study.md" --json "$tmp/study.json"
grep -q "^| 30 | nearest |" "$tmp/study.md" || fail "the study table lacks the F=30 row"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['rows'][0]['wrong']==0" \
  "$tmp/study.json" || fail "the study JSON does not parse or has the wrong content"
grep -q "^| 30 | nearest | .* | -[0-9.]* | 0 |$" "$tmp/study.md" ||
  fail "4 gates: the study states a 95% range of log2 P (it needs 10)"
# From 10 gates a row gives the 95% range of its log2 P, which holds the estimate; a row's
# product error is measured on the same columns whichever rows run before it.
expect 0 "0/16" study --params toy_INSECURE --frac-bits 24,30 --gates 16 --products 2 --seed 1 \
  --json "$tmp/study2.json"
python3 - "$tmp/study.json" "$tmp/study2.json" <<'PY' || fail "the study's range or product columns"
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:])
assert one["rows"][0]["log2_next_gate_failure_95"] is None
for row in two["rows"]:
    low, high = row["log2_next_gate_failure_95"]
    assert low < row["log2_next_gate_failure"] < high, row
thirty = [r for r in two["rows"] if r["frac_bits"] == 30 and r["rounding"] == "nearest"][0]
assert thirty["product_rms_lsb"] == one["rows"][0]["product_rms_lsb"], (thirty, one["rows"][0])
assert one["baseline"]["engine"] in ("simd", "fftw", "portable"), one["baseline"]
PY

# The paths as printed: a terminal's escape sequence in them stays inert (\x1B).
esc=$'\e[31m'
expect 0 "wrote $tmp/d\x1B[31m/fft_stream.v" verilog --size 32 --width 4 --out "$tmp/d$esc"
grep -qF "$esc" "$tmp/out" && fail "verilog: the folder's path reached the terminal raw"
expect 0 "markdown written to $tmp/d\x1B[31m/study.md" study --params toy_INSECURE \
  --frac-bits 30 --gates 4 --products 2 --seed 1 --markdown "$tmp/d$esc/study.md" \
  --json "$tmp/d$esc/study.json"
grep -qF "JSON written to $tmp/d\x1B[31m/study.json" "$tmp/out" || fail "study: the JSON path"
grep -qF "$esc" "$tmp/out" && fail "study: a report's path reached the terminal raw"

expect 2 "(log2 --radix must divide log2 --size=9); allowed radices: 2, 8, 512" simulate --radix 4
expect 2 "fpga_fft: --word-bits + --twiddle-bits + log2(--radix) = 128 but the model's" simulate \
  --word-bits 64 --twiddle-bits 62 --radix 4 --size 16 --width 4
expect 2 "fpga_fft: --width=3 but expected a power of two in [max(2, --radix)=2, min(256, --size)=" \
  simulate --width 3
expect 2 "fpga_fft: --frac-bits=70 but expected at most" simulate --frac-bits 70
expect 2 "--direction 'sideways' is not known" simulate --direction sideways
# The user's text is quoted with its control bytes shown, not sent to the terminal.
expect 2 "--direction 'side\x1Bways' is not known" simulate --direction $'side\x1bways'
expect 2 "--simulator 'model\x1Bsim' is not known" cosim --workdir "$tmp/c" \
  --simulator $'model\x1bsim'
# study has no --size (its M is N/2 of --params) and names its flags, not the library's fields.
expect 2 "fpga_fft: --radix=4 does not divide a 128-point FFT into equal stages (log2 --radix \
must divide log2 M=7); allowed radices: 2, 128" study --params toy_INSECURE --radix 4 --gates 0
expect 2 "fpga_fft: --radix=256 but expected a power of two in [2, M=128]" study \
  --params toy_INSECURE --radix 256 --gates 0
expect 2 "fpga_fft: --full-length supports the separate twist only" study --params toy_INSECURE \
  --full-length --merged-twist --gates 0
expect 2 "--rounding: 'up' is not known; expected nearest or truncate" simulate --rounding up
expect 2 "--transforms=0" simulate --transforms 0
# A simulation larger than the memory the program may take (here 2 GB of address space, ulimit
# -v) is refused before it starts, naming the options; a small one still runs under the limit.
cat >"$tmp/limited" <<EOF
#!/usr/bin/env bash
ulimit -v 2000000 && exec "$program" "\$@"
EOF
chmod +x "$tmp/limited"
hard_limit="$(ulimit -Hv)"
if [[ "$hard_limit" != unlimited && "$hard_limit" -lt 2000000 ]]; then
  echo "skipped the memory refusal: the address space is limited below 2 GB already"
elif ! "$tmp/limited" --help >/dev/null 2>&1; then
  echo "skipped the memory refusal: cannot run a wrapper script from $tmp (noexec?)"
else
  unlimited="$program"
  program="$tmp/limited"
  expect 2 "--size 65536 with --transforms 1024 would hold about 3.0 GiB in memory" simulate \
    --size 65536 --width 8 --transforms 1024
  expect 0 "identical to the functional model, bit for bit" simulate --size 512 --width 16
  program="$unlimited"
fi
expect 2 "--simulator 'modelsim' is not known" cosim --workdir "$tmp/c" --simulator modelsim
expect 2 "parameter set" study --params nonsense --gates 0
expect 2 "fpga_fft verilog: --out is required (see 'fpga_fft verilog --help')" verilog
[[ $(wc -l <"$tmp/out") -eq 1 ]] || fail "a command-line error should be one line"
expect 2 "A subcommand is required" 
expect 2 "unknown command 'bogus'; expected simulate, verilog, cosim or study" bogus
expect 2 "unknown command 'a\x1B[2Jb'" $'a\x1b[2Jb'
expect 2 "--frac-bits: '' is not a number" study --params toy_INSECURE --frac-bits 20,,26
expect 2 "--rounding: '' is not known" study --params toy_INSECURE --rounding nearest,
expect 2 "--rounding: nearest is listed twice" study --params toy_INSECURE --rounding nearest,nearest
expect 2 "--frac-bits: 26 is listed twice" study --params toy_INSECURE --frac-bits 26,26
# A value is never the next option: --json would have taken --merged-twist as a file name.
expect 2 "--json needs a value but the next argument is the option '--merged-twist'" \
  simulate --size 8 --width 2 --json --merged-twist
# Output paths are checked before the work (exit 2), and an earlier report survives a refusal.
echo '{"earlier": "report"}' >"$tmp/keep.json"
expect 2 "--markdown: cannot write to '$tmp/none/t.md': the folder '$tmp/none' does not exist" study \
  --params toy_INSECURE --gates 0 --json "$tmp/keep.json" --markdown "$tmp/none/t.md"
grep -q earlier "$tmp/keep.json" || fail "a refused study emptied the earlier --json report"
expect 2 "--json: cannot write to '$tmp': it is a folder" simulate --size 16 --width 4 --json "$tmp"
expect 2 "--out: '$tmp/keep.json' is a file, not a folder" verilog --out "$tmp/keep.json"
# Values that wrapped, were clamped or were ignored are refused up front (exit 2).
expect 2 "--frac-bits=4294967295 but expected at most --word-bits - 2 = 62" simulate --size 64 \
  --frac-bits 4294967295
expect 2 "--seed: '-5' is not a number" simulate --size 16 --width 4 --seed -5
expect 2 "--seed: 18446744073709551616 is out of range; expected an integer in 0..18446744073709551615" \
  verilog --out "$tmp/seed" --seed 18446744073709551616
expect 2 "--seed: '-1' is not a number" study --params toy_INSECURE --gates 0 --seed -1
expect 0 "seed 18446744073709551615" simulate --size 16 --width 4 --seed 18446744073709551615
expect 2 "--json: the path is empty" simulate --size 64 --json ""
expect 2 "fpga_fft simulate: --size: the value is empty; expected a number" simulate --size ""
expect 2 "fpga_fft study: --word-bits: the value is empty" study --params toy_INSECURE \
  --gates 0 --word-bits ""
expect 2 "--json: the path is empty" study --params toy_INSECURE --gates 0 --json ""
expect 2 "--markdown: the path is empty" study --params toy_INSECURE --gates 0 --markdown ""
expect 2 "name the same file; one report would replace the other" study --params toy_INSECURE \
  --gates 0 --json "$tmp/same.md" --markdown "$tmp/./same.md"
expect 2 "--threads=-3 but expected 0..4096" study --params toy_INSECURE --threads -3 --gates 2
grep -q "keys and" "$tmp/out" && fail "study made keys before refusing --threads -3"
expect 2 "size=3 but expected a power of two" cosim --simulator iverilog --size 3 --workdir "$tmp/w"
expect 2 "--name 'module' is a reserved word of Verilog or SystemVerilog" verilog \
  --out "$tmp/k" --name module
expect 0 "simulate" --help

# scripts/fpga_fft_results.sh with this build as it is: an option after the first argument
# replaces the study's setting of record (the study refuses an option given twice) and a
# --params names the files; options the script owns, or study options for streaming, are
# refused before any work.
program="$(dirname "${BASH_SOURCE[0]}")/../../scripts/fpga_fft_results.sh"
BUILD_DIR="$(cd "$(dirname "$1")/../.." && pwd)"
export SKIP_SETUP=1 BUILD_DIR OUT_DIR="$tmp/results"
expect 0 "wrote $tmp/results/precision_toy_INSECURE.{json,md}" precision --params toy_INSECURE \
  --gates 2 --products 1 --frac-bits 30 --rounding nearest
[[ -s "$tmp/results/precision_toy_INSECURE.md" ]] || fail "fpga_fft_results.sh: no markdown"
expect 2 "streaming takes no study options, got '--gates'" streaming --gates 2
expect 2 "--json: the study's files go to OUT_DIR" precision --json "$tmp/x.json"
expect 2 "--params needs a parameter set name, got '../x'" all --params ../x
[[ ! -e "$tmp/results/streaming_M512.md" ]] || fail "fpga_fft_results.sh: a refused run wrote"
finish "fpga_fft end to end"
