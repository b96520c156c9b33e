#!/usr/bin/env bash
# Sorting and argmax with tfhe_lib_128 keys through the CLI: 3 runs of each, the eval report
# (bootstraps, depth, seconds) of every run, and the decrypted results.
set -euo pipefail
T="${T:-build/apps/cli/torusgate}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
$T keygen --params tfhe_lib_128 --secret-key "$dir/client.tgsk" --cloud-key "$dir/server.tgck"
$T encrypt --key "$dir/client.tgsk" --width 8 --values 200,17,99,3,250,17,64,128 -o "$dir/v.tgct"
$T encrypt --key "$dir/client.tgsk" --width 8 --signed \
  --values "5,-3,12,-128,7,0,-1,127;9,9,-4,-4,100,-100,3,3" -o "$dir/m.tgct"
for op in sort argmax row-max; do
  for input in v m; do
    for rep in 1 2 3; do
      echo "== $op $input run $rep"
      $T eval --cloud-key "$dir/server.tgck" --op "$op" --backend openmp "$dir/$input.tgct" \
        -o "$dir/out.tgct" --force
    done
    $T decrypt --key "$dir/client.tgsk" "$dir/out.tgct"
  done
done
