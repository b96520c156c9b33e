#!/usr/bin/env bash
# torusgate eval on the GPU, as a user runs it, on the CUDA emulator (gpu/emu; docs/gpu.md
# section 2.1): the binary built as torusgate_emulated, so `--backend best` finds a CUDA
# device and the CudaBackend runs its real host code and kernels on the CPU. The client makes
# toy_INSECURE keys and encrypts; the server evaluates on each engine and key switching; the
# client decrypts and compares with plain arithmetic and with the CPU backend's result; then
# the options that do not apply, and the fallback without a device.
#   cli_gpu_emulated.sh TORUSGATE_EMULATED_BINARY
set -uo pipefail
tg="$1"
program="$tg"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

expect 0 "cannot decrypt" keygen --params toy_INSECURE --insecure-ok \
  --secret-key "$tmp/client.tgsk" --cloud-key "$tmp/server.tgck"
expect 0 "8-bit signed, 2 x 2" encrypt --key "$tmp/client.tgsk" --width 8 --signed \
  --values "1,-2;3,4" -o "$tmp/a.tgct"
expect 0 "8-bit signed, 2 x 2" encrypt --key "$tmp/client.tgsk" --width 8 --signed \
  --values "5,6;-7,8" -o "$tmp/b.tgct"

check() {  # check FILE EXPECTED_TEXT WHAT
  "$tg" decrypt --key "$tmp/client.tgsk" "$1" >"$tmp/got.txt" 2>&1 || fail "decrypt $1"
  printf '%b' "$2" | diff - "$tmp/got.txt" >/dev/null || { fail "$3 decrypted wrong"; cat "$tmp/got.txt"; }
}

# best is the GPU here; the default engines.
expect 0 "on gpu(torusgate CUDA emulator (CPU)), fused blind rotation (launch shape chosen per batch), automatic key switching" \
  eval --cloud-key "$tmp/server.tgck" --op matmul --width 16 "$tmp/a.tgct" "$tmp/b.tgct" \
  -o "$tmp/ab.tgct"
check "$tmp/ab.tgct" ' 19 -10\n-13  50\n' "A*B on the GPU"
# Every engine and key switching, and the second device.
for engine in cufft fused; do
  for ks in gather tensor_core; do
    expect 0 "$ks key switching" eval --cloud-key "$tmp/server.tgck" --op max --backend gpu \
      --gpu-engine "$engine" --key-switching "$ks" "$tmp/a.tgct" "$tmp/b.tgct" \
      -o "$tmp/max_${engine}_$ks.tgct"
    check "$tmp/max_${engine}_$ks.tgct" '5 6\n3 8\n' "max(A, B) ($engine, $ks)"
  done
done
expect 0 "fused blind rotation" eval --cloud-key "$tmp/server.tgck" --op mul --device 1 \
  --gpu-engine fused "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/mul.tgct"
check "$tmp/mul.tgct" '  5 -12\n-21  32\n' "A .* B on device 1"
# The same operation on the CPU: the same decryption.
expect 0 "on sequential" eval --cloud-key "$tmp/server.tgck" --op mul --backend sequential \
  "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/mul_cpu.tgct"
check "$tmp/mul_cpu.tgct" '  5 -12\n-21  32\n' "A .* B on the CPU"

# Options that do not apply; no output left behind.
expect 2 "--gpu-engine is a GPU option: it applies to --backend gpu, not to openmp" \
  eval --cloud-key "$tmp/server.tgck" \
  --op add --backend openmp --gpu-engine fused "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"
expect 2 "--threads applies to the openmp backend, not to gpu" eval \
  --cloud-key "$tmp/server.tgck" --op add --threads 2 "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"
expect 2 "unknown GPU engine 'cuda'" eval --cloud-key "$tmp/server.tgck" --op add \
  --gpu-engine cuda "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"
expect 2 "--device 2: this machine has 2 CUDA devices" eval --cloud-key "$tmp/server.tgck" \
  --op add --device 2 "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"
# The fused engine's shape and the transfers, as the benchmark programs take them; a shape
# the parameter set does not allow is refused by its flag before the key goes to the device.
expect 0 "fused blind rotation (2 rotations per thread)" eval --cloud-key "$tmp/server.tgck" \
  --op sub --fused-lanes 2 --transfer pinned --staging-mb 1 \
  --no-cuda-graphs --memory-budget-mb 64 "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/sub.tgct"
check "$tmp/sub.tgct" '-4 -8\n10 -4\n' "A - B with two lanes, pinned transfers"
expect 2 "--fused-groups 3 but parameter set 'toy_INSECURE' takes" eval \
  --cloud-key "$tmp/server.tgck" --op add --fused-groups 3 "$tmp/a.tgct" "$tmp/b.tgct" \
  -o "$tmp/x.tgct"
expect 2 "--fused-lanes 2 runs one group, one rotation slot per block and no cluster" eval \
  --cloud-key "$tmp/server.tgck" --op add --fused-lanes 2 --fused-rotations 2 "$tmp/a.tgct" \
  "$tmp/b.tgct" -o "$tmp/x.tgct"
expect 2 "--fused-cluster-points 5" eval --cloud-key "$tmp/server.tgck" --op add \
  --fused-cluster-points 5 "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"
[[ -e "$tmp/x.tgct" ]] && fail "a refused eval left an output file"

# Without a device: best runs on OpenMP, an explicit gpu is refused with the reason.
export TORUSGATE_CUDA_EMU_DEVICES=0
expect 0 "on openmp(" eval --cloud-key "$tmp/server.tgck" --op add "$tmp/a.tgct" \
  "$tmp/b.tgct" -o "$tmp/sum.tgct"
check "$tmp/sum.tgct" ' 6  4\n-4 12\n' "A + B on OpenMP"
expect 2 "--backend gpu: no CUDA device is available" eval --cloud-key "$tmp/server.tgck" \
  --op add --backend gpu "$tmp/a.tgct" "$tmp/b.tgct" -o "$tmp/x.tgct"

finish "torusgate eval on the emulated GPU"
