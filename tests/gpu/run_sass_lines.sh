#!/usr/bin/env bash
# scripts/sass_lines.py on a small disassembly laid out as nvdisasm -g writes it: the loops
# and forward branches it lists, the weighted counts by class (a row loop run 6 times, an arm
# of it run twice, another never) and the other instructions by source line; and its
# refusals of a missing file, a kernel pattern that matches none or two, and bad ranges.
#   run_sass_lines.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
sass="$tmp/k.sass"
cat >"$sass" <<'SASS'
.text._Z6kernelv:
	//## File "/src/a.hpp", line 10
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_1:
	//## File "/src/b.hpp", line 20
        /*0010*/                   LDS R2, [R0] ;
        /*0020*/                   IMAD R3, R2, 0x3, RZ ;
        /*0030*/               @P0 BRA `(.L_x_2) ;
	//## File "/src/c.hpp", line 30
        /*0040*/                   DFMA R4, R6, R8, R4 ;
        /*0050*/                   LOP3.LUT R3, R3, 0xff, RZ, 0xc0, !PT ;
.L_x_2:
	//## File "/src/b.hpp", line 21
        /*0060*/                   STS [R0], R3 ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/              @!P1 BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
.text._Z6otherv:
        /*0000*/                   EXIT ;
.text._Z7other2v:
        /*0000*/                   EXIT ;
SASS
"$program" "$sass" --kernel kernel >"$tmp/out" 2>&1 || fail "the listing exited with $?"
for line in "kernel _Z6kernelv: 10 instructions" "  10:80 8" "  30 -> 60"; do
  grep -qF -- "$line" "$tmp/out" || { fail "listing: no line '$line'"; cat "$tmp/out"; }
done
grep -q "weighted" "$tmp/out" && fail "the listing counted without --range"
# The loop 10:80 six times, its arm 40:50 twice.
"$program" "$sass" --kernel kernel --range 10:80 --weight 10:80:6 --weight 40:50:2 \
  >"$tmp/out" 2>&1 || fail "the counts exited with $?"
# Six times LDS, IMAD, BRA, STS, BAR and BRA, twice DFMA and LOP3: 40; the other
# instructions by line: IMAD and the first BRA at b.hpp:20, the loop's BRA at :21, LOP3.
for line in "weighted instructions in 10:80: 40" "  fp64: 2" "  shared_loads: 6" \
            "  shared_stores: 6" "  barriers: 6" "  other: 20" \
            "      12 b.hpp:20" "       6 b.hpp:21" "       2 c.hpp:30"; do
  grep -qxF -- "$line" "$tmp/out" || { fail "counts: no line '$line'"; cat "$tmp/out"; }
done
"$program" "$sass" --kernel kernel --range 10:80 --weight 10:80:6 --weight 40:50:2 --top 1 \
  >"$tmp/out" 2>&1 || fail "--top 1 exited with $?"
grep -qF "b.hpp:21" "$tmp/out" && fail "--top 1 printed a second line"
"$program" "$sass" --kernel kernel --range 10:80 --weight 40:50:0 >"$tmp/out" 2>&1 ||
  fail "an arm that never runs exited with $?"
grep -qxF "weighted instructions in 10:80: 6" "$tmp/out" || { fail "weight 0"; cat "$tmp/out"; }
expect 1 "sass_lines: /no/such.sass: no such file" /no/such.sass --kernel kernel
expect 1 "matches 0 kernels" "$sass" --kernel nothing
expect 1 "matches 2 kernels" "$sass" --kernel other
expect 1 "--range '80:10': LO must not exceed HI" "$sass" --kernel kernel --range 80:10
expect 1 "--weight '10:80': expected LO:HI:W" "$sass" --kernel kernel --range 10:80 --weight 10:80
expect 1 "addresses in hexadecimal" "$sass" --kernel kernel --range 1x:80
finish sass_lines.py
