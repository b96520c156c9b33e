#!/usr/bin/env bash
# End-to-end checks of the linear_regression binary as a user runs it: a CSV file and a
# synthetic dataset on the toy parameters (encrypted, fast), the plaintext backend, the JSON
# report, and the exit code and message of bad inputs.
#   run_linear_regression.sh BINARY EXAMPLE_CSV
set -uo pipefail
program="$1"
csv="$2"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

expect 0 "all encrypted results are exact" --params toy_INSECURE --dataset 8x2 --no-progress \
  --json "$tmp/report.json"
grep -q '"all_exact": true' "$tmp/report.json" || fail "the JSON report lacks all_exact: true"
grep -q '"beta_agrees": true' "$tmp/report.json" || fail "the JSON report lacks beta_agrees: true"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['rows']==8 and len(r['beta'])==3" \
  "$tmp/report.json" || fail "the JSON report does not parse or has the wrong content"
# The exact solve and the QR reference agree to the reference's rounding.
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
assert 0 <= r['max_beta_relative_difference'] < 1e-12, r['max_beta_relative_difference']" \
  "$tmp/report.json" || fail "the encrypted fit differs from the QR reference"
expect 0 "all encrypted results are exact" --params toy_INSECURE --backend sequential \
  --dataset 6x2 --kind binary --beta plain --no-progress
expect 0 "all encrypted results are exact" --params toy_INSECURE --csv "$csv" \
  --target price_100k --width 6 --no-intercept --beta none --no-progress
expect 0 "exact (12 rows)" --backend plaintext --csv "$csv" --target price_100k
expect 0 "standardized columns" --backend plaintext --csv "$csv" --target price_100k --standardize
expect 0 "usage: linear_regression" --help
# Columns 10^12 apart: --standardize is for them, the float comparison fit included.
printf 'a,b,y\n' >"$tmp/mix.csv"
for i in 1 2 3 4 5 6 7 8; do
  echo "$((i * 137 % 11))000000000000,0.$((i * 7 % 10))$i,$((i * 3 % 7)).5" >>"$tmp/mix.csv"
done
expect 0 "exact (12 entries)" --backend plaintext --csv "$tmp/mix.csv" --target y --standardize

# A fit that is not unique is refused before any key is made (exit 2, nothing encrypted): a
# constant column beside the intercept, a repeated one.
printf 'a,c,y\n0.1,0.5,0.2\n0.3,0.5,0.1\n0.5,0.5,0.4\n0.7,0.5,0.3\n' >"$tmp/constant.csv"
expect 2 "column 'c' is, as quantized to 8 bits, a combination of the columns before it" \
  --params toy_INSECURE --csv "$tmp/constant.csv" --target y
grep -q "encrypted" "$tmp/out" && fail "a refused fit encrypted its data"
grep -q "standardize" "$tmp/out" && fail "--standardize suggested for a constant column"
# A column that only its quantization makes constant: the message says so, not "a
# combination", and names what gives it the fraction bits it needs; each of them works.
printf 'a,t,y\n0.1,0.00001,0.2\n0.3,0.00002,0.1\n0.5,0.00004,0.4\n0.7,0.00003,0.3\n' \
  >"$tmp/tiny.csv"
expect 2 "column 't' is constant as quantized: its values (1e-05 to 4e-05) all round to 0 at 8 \
bits with 6 fraction bits; it needs 16 fraction bits; use --standardize" \
  --backend plaintext --csv "$tmp/tiny.csv" --target y --frac-bits 6
grep -q "or --width 17 with --frac-bits auto$" "$tmp/out" || fail "no --width advice"
expect 2 "or --frac-bits 16" --backend plaintext --csv "$tmp/tiny.csv" --target y \
  --frac-bits 6 --width 20
for fix in "--standardize" "--width 17" "--frac-bits 16 --width 20"; do
  # shellcheck disable=SC2086  # (the options split)
  expect 0 "exact (12 entries)" --backend plaintext --csv "$tmp/tiny.csv" --target y $fix \
    --beta none
done
# houses.csv with its age column scaled (the features share one scale): at 1e-9 it rounds to
# 0, at 1e6 it needs 23 bits, at 1e9 33; --standardize fits each, and a column that is exactly
# twice another is still refused at every scale.
scaled_houses() {  # SCALE [twice]: rooms, age * SCALE (and twice that), price
  python3 -c "
import sys
rows = [l.strip().split(',') for l in open(sys.argv[1])]
twice = len(sys.argv) > 3
print('rooms,age,' + ('age2,' if twice else '') + 'price')
for r in rows[1:]:
    a = float(r[1]) * float(sys.argv[2])
    print(','.join([r[0], repr(a)] + ([repr(2 * a)] if twice else []) + [r[3]]))
" "$csv" "$@"
}
for scale in 1e-9 1e-6 1e6 1e9; do
  scaled_houses "$scale" >"$tmp/scaled.csv"
  expect 0 "exact (12 entries)" --backend plaintext --csv "$tmp/scaled.csv" --target price \
    --standardize --beta none
  scaled_houses "$scale" twice >"$tmp/twice.csv"
  expect 2 "column 'age2' is, as quantized to 8 bits, a combination of the columns before it" \
    --backend plaintext --csv "$tmp/twice.csv" --target price --standardize
done
expect 2 "the value 4.1e+09 does not fit a 8-bit signed integer even with 0 fraction bits (it \
needs 33 bits); use --standardize" --backend plaintext --csv "$tmp/scaled.csv" --target price
scaled_houses 1e6 >"$tmp/scaled.csv"
expect 2 "(it needs 23 bits); use --width 23, or --standardize" --backend plaintext \
  --csv "$tmp/scaled.csv" --target price
expect 0 "exact (12 entries)" --backend plaintext --csv "$tmp/scaled.csv" --target price \
  --width 23 --beta none
scaled_houses 1e-9 >"$tmp/scaled.csv"
expect 2 "column 'age' is constant as quantized: its values (3e-10 to 4.1e-09) all round to 0" \
  --backend plaintext --csv "$tmp/scaled.csv" --target price
grep -q "use --standardize, which scales each column" "$tmp/out" || fail "no --standardize advice"
# Constant but for the last bit (0.1 + 0.2 beside 0.3): refused with --standardize too, which
# made it rounding noise stretched to [-1, 1) and fitted a coefficient of 4e15.
python3 -c "
print('a,c,y')
for i in range(8): print(f'{i * 0.37 % 1!r},{0.3 if i % 2 else 0.1 + 0.2!r},{i * 5 % 7 / 10}')" \
  >"$tmp/last_bit.csv"
expect 2 "column 'c' is, as quantized to 8 bits, a combination of the columns before it" \
  --backend plaintext --csv "$tmp/last_bit.csv" --target y --standardize
printf 'a,b,y\n0.1,0.1,0.2\n0.3,0.3,0.1\n0.5,0.5,0.4\n0.7,0.7,0.3\n' >"$tmp/repeated.csv"
expect 2 "column 'b' is, as quantized to 8 bits, a combination" --backend plaintext \
  --csv "$tmp/repeated.csv" --target y
# Columns that the data make dependent and only the rounding separates (b = 3a): refused
# before any key is made, not after the training step by the comparison fit.
python3 -c "
print('a,b,y')
for i in range(1, 9): print(f'{i * 0.037!r},{3 * i * 0.037!r},{i * 5 % 7 / 10}')" \
  >"$tmp/collinear.csv"
expect 2 "column 'b' is a combination of the columns before it in the data" \
  --params toy_INSECURE --csv "$tmp/collinear.csv" --target y --no-progress
grep -q "encrypted" "$tmp/out" && fail "a fit refused for its data encrypted them first"
# A model whose coefficients do not fit --beta-width, and predictions wider than 64 bits:
# refused before any key is made too.
printf 'a,y\n0.001,9\n-0.002,-18\n0.003,30\n-0.004,-35\n' >"$tmp/steep.csv"
expect 2 "the model's coefficients do not fit 8-bit integers" --params toy_INSECURE \
  --csv "$tmp/steep.csv" --target y --no-progress
grep -q "encrypted" "$tmp/out" && fail "a model refused for its width encrypted the data first"
grep -q "the largest, 5376, needs 14 bits; use --beta-width 14 or more" "$tmp/out" ||
  fail "no width advice for the model"
# A coefficient past the 32 bits --beta-width allows: --standardize is the advice.
printf 'a,y\n1e-9,9\n-2e-9,-18\n3e-9,30\n-4e-9,-35\n' >"$tmp/steeper.csv"
expect 2 "needs 35 bits; that is more than --beta-width allows (32); use --standardize" \
  --backend plaintext --csv "$tmp/steeper.csv" --target y --width 31
expect 0 "all encrypted results are exact" --backend plaintext --csv "$tmp/steeper.csv" \
  --target y --width 31 --standardize --no-progress
printf 'a,b,c,e,y\n' >"$tmp/wide.csv"
for i in 1 2 3 4 5 6; do
  echo "0.$((i * 37 % 97)),-0.$((i * 53 % 89)),0.$((i * 71 % 83)),-0.$((i * 29 % 79)),0.$i" \
    >>"$tmp/wide.csv"
done
expect 2 "the predictions (sums of 4 products of s31 values and 32-bit coefficients) need" \
  --params toy_INSECURE --csv "$tmp/wide.csv" --target y --width 31 --beta-width 32 \
  --no-progress
grep -q "encrypted" "$tmp/out" && fail "predictions refused for their width encrypted first"
# An offset column at 28 bits (aggregates past 2^53): y = 4 (x - 100) exactly, so the fit of
# the quantized data is exactly -400, 4; solving the rounded doubles was 1e-2 off, and at half
# the spread refused the column as constant.
for step in 19 20; do
  python3 -c "
print('x,y')
for t in range(200): print(f'{100 + t / 2**$step!r},{4 * t / 2**$step!r}')" >"$tmp/offset.csv"
  expect 0 "exact (6 entries)" --backend plaintext --csv "$tmp/offset.csv" --target y \
    --width 28 --beta none --json "$tmp/offset.json"
  python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['beta']; \
assert abs(b[0] + 400) < 1e-9 and abs(b[1] - 4) < 1e-11, b" "$tmp/offset.json" ||
    fail "the fit of the offset column (spread 200 / 2^$step) is not -400, 4"
done
printf 'a,y\n1,2\n3,x\n' >"$tmp/bad.csv"
expect 2 "line 3, column 'y': 'x' is not a number" --csv "$tmp/bad.csv" --target y
expect 2 "no column named 'price'" --csv "$csv" --target price
expect 2 "--csv needs --target" --csv "$csv"
expect 2 "no such file" --csv "$tmp/missing.csv" --target y
: >"$tmp/empty.csv"
expect 2 "the file is empty" --csv "$tmp/empty.csv" --target y
expect 2 "$csv: line 2, column 'rooms': the value 3 does not fit 8-bit signed fixed point with 6" \
  --csv "$csv" --target price_100k --frac-bits 6
expect 2 "is not 0 or 1" --csv "$csv" --target price_100k --kind binary
expect 2 "--standardize applies to numeric data" --dataset 8x2 --kind binary --standardize
expect 2 "dataset shape '12'" --dataset 12
expect 2 "unknown argument '--rows'" --rows 3
expect 2 "--params: unknown parameter set 'nope'" --params nope --csv "$tmp/missing.csv" --target y
expect 2 "expected best, gpu, openmp, sequential or plaintext" --backend nope
expect 2 "--width" --width 40
# Aggregates past 64 bits: the message names the widest width that fits these rows.
expect 2 "the sums of 12 products of 32-bit values need more than 64 bits; use --width 30 or \
less" --backend plaintext --csv "$csv" --target price_100k --width 32
expect 2 "2 rows cannot determine 3 coefficients" --dataset 2x2 --backend plaintext
expect 2 "--json: cannot write" --json /nonexistent/dir/r.json --backend plaintext
expect 2 "--params: unknown parameter set 'nope'" --params nope --backend plaintext
expect 2 "--seed applies to synthetic --dataset data, not to a --csv file" --csv "$csv" \
  --target price_100k --seed 3
expect 2 "--csv: the path is empty" --csv ""
expect 2 "--beta-width applies to the model's coefficients, which --beta none does not make" \
  --backend plaintext --beta none --beta-width 12
printf 'a,y\n+-1,2\n' >"$tmp/signs.csv"
expect 2 "line 2, column 'a': '+-1' is not a number" --csv "$tmp/signs.csv" --target y
# Datasets that would not fit memory are refused up front (exit 2) with the size, under an
# address-space limit of 3 GiB so that the check does not depend on this machine's memory:
# the synthetic data themselves, and the encrypted inputs (20000 x 100 at 8 bits, 16 million
# samples of 65 words: 4.2 GB) before any key is made.
expect_limited() {
  local before=$failures
  (ulimit -v 3145728 && expect "$@" && exit $((failures > before))) ||
    failures=$((failures + 1))
}
expect_limited 2 "--dataset 100000x100000 would hold about" --backend plaintext \
  --dataset 100000x100000
expect_limited 2 "20000 rows of 100 attributes encrypted would hold about 3.9 GiB" \
  --params toy_INSECURE --dataset 20000x100 --beta none
grep -q "keys made" "$tmp/out" && fail "a refused run made keys"
# A failure after the start (the report cannot be written) is 1, not a usage error.
if [[ -w /dev/full ]]; then
  expect 1 "--json: writing '/dev/full' failed" --backend plaintext --json /dev/full
fi
# What a run prints quotes the CSV's path, its column names and the report's path escaped: a
# terminal's escape sequence in them stays inert (\x1B); the JSON report keeps them as they are.
esc=$'\e[31m'
mkdir -p "$tmp/d$esc"
printf 'a%s,b,y\n' "$esc" >"$tmp/d$esc/e.csv"
for i in 1 2 3 4 5 6; do echo "0.$i,0.$((i * 3 % 7)),$i.5" >>"$tmp/d$esc/e.csv"; done
expect 0 "report written to $tmp/d\x1B[31m/e.json" --backend plaintext --csv "$tmp/d$esc/e.csv" \
  --target y --no-progress --json "$tmp/d$esc/e.json"
grep -qF "data         $tmp/d\x1B[31m/e.csv (target 'y')" "$tmp/out" ||
  fail "the data line does not show the CSV's path escaped"
grep -qF '  a\x1B[31m ' "$tmp/out" || fail "the model table does not show the column name escaped"
grep -qF "$esc" "$tmp/out" && fail "a path or column name reached the terminal raw"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
assert r['coefficient_names'][1] == 'a\x1b[31m', r['coefficient_names']" "$tmp/d$esc/e.json" ||
  fail "the JSON report does not keep the column name as it is"
"$program" --help 2>/dev/null | grep -q "^usage: linear_regression" ||
  fail "linear_regression --help: not on stdout"

finish "linear_regression"
