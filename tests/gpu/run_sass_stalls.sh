#!/usr/bin/env bash
# scripts/sass_stalls.py on a small table laid out as ncu writes it: the stall totals, the
# long-scoreboard samples by producer (an mbarrier wait's predicate, a global load's wide
# register, an ALU result) and the top instructions; and its refusals of a missing file, a
# table without a header or without stall columns, and bad options.
#   run_sass_stalls.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
table="$tmp/table.csv"
{
  echo '"Kernel Name","fused_cluster_rotation_kernel"'
  echo '"Address","Source","stall_long_sb","stall_wait","stall_selected","stall_long_sb (Not Issued)"'
  echo '"0x10","      LDG.E.128 R72, desc[UR12][R190.64]","0","1","2","0"'
  echo '"0x20","      SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R0+UR6+0x10], R117","0","0","1","0"'
  echo '"0x30","@!P1  BRA 0x20","40","0","1","0"'
  echo '"0x40","      IADD3 R9, R9, 0x1, RZ","0","3","0","0"'
  echo '"0x50","      DMUL R184, R182, R74","12","0","0","0"'
  echo '"0x60","      DADD R8, R9, -R100","5","2","0","0"'
} >"$table"
"$program" "$table" --top 2 >"$tmp/out" 2>&1 || fail "sass_stalls.py on the table exited with $?"
for line in "stall samples: 67" \
            "long_sb                      57  85.1%" \
            "mbarrier wait                40  70.2%" \
            "global load                  12  21.1%" \
            "other                         5   8.8%" \
            "top 2 instructions by samples:" \
            "41  61.2%  @!P1  BRA 0x20"; do
  grep -qF -- "$line" "$tmp/out" || { fail "no line '$line'"; cat "$tmp/out"; }
done
grep -q "DADD" "$tmp/out" && fail "--top 2 printed a third instruction"
gzip -c "$table" >"$tmp/table.csv.gz"
"$program" "$tmp/table.csv.gz" >"$tmp/out.gz" 2>&1 || fail "the gzipped table exited with $?"
grep -qF "mbarrier wait                40  70.2%" "$tmp/out.gz" || fail "the gzipped table's producers"
expect 1 "sass_stalls: /no/such.csv: no such file" /no/such.csv
printf 'a,b\n1,2\n' >"$tmp/plain.csv"
expect 1 "no header with 'Address' and 'Source'" "$tmp/plain.csv"
printf '"Address","Source"\n"0x10","NOP"\n' >"$tmp/nostall.csv"
expect 1 "no stall_* columns" "$tmp/nostall.csv"
expect 1 "sass_stalls: --top must be >= 0 and --window >= 1" "$table" --window 0
finish sass_stalls.py
