#!/bin/bash
# Three rounds; each runs `before` (9a71dad) then `after` (a90e0cf) back to back.
set -u
B=/tmp/before/build/apps; A=/work/main/build/apps; O=/tmp/teamres
for r in 1 2 3; do
  for who in before after; do
    if [ $who = before ]; then D=$B; else D=$A; fi
    $D/bench_gates --backend openmp --threads 2 --batch 1,2,3 --reps 9 --json $O/${who}_gates_r$r.json > $O/${who}_gates_r$r.log 2>&1
    $D/bench_circuits --backend openmp --threads 2 --ops add.ripple,add.sklansky,less --widths 8 --reps 5 --json $O/${who}_circuits_r$r.json > $O/${who}_circuits_r$r.log 2>&1
  done
done
echo DONE
