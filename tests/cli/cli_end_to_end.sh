#!/usr/bin/env bash
# The torusgate binary end to end, as a user runs it, on toy_INSECURE: the client makes keys
# and encrypts, the server evaluates with the cloud key alone (in its own directory), the
# client decrypts and describes the files; then exit codes and messages of bad inputs. With
# the TFHE library v1.1 vectors: their keys and ciphertexts imported, gates evaluated with a
# cloud key made for the imported secret key, the outputs exported in the library's format,
# and import then export reproducing the library's files byte for byte.
#   cli_end_to_end.sh TORUSGATE_BINARY [TFHE_LIB_TESTDATA_DIR]
set -uo pipefail
tg="$1"
data="${2:-}"
program="$tg"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
mkdir "$tmp/client" "$tmp/server"

c="$tmp/client"
s="$tmp/server"
# Client: keys and inputs; only the cloud key and the ciphertexts go to the server.
expect 0 "cannot decrypt" keygen --params toy_INSECURE --insecure-ok \
  --secret-key "$c/client.tgsk" --cloud-key "$c/server.tgck"
expect 0 "8-bit signed, 2 x 2" encrypt --key "$c/client.tgsk" --width 8 --signed \
  --values "1,-2;3,4" -o "$c/a.tgct"
printf '5 6\n-7 8\n' >"$c/b.txt"
expect 0 "8-bit signed, 2 x 2" encrypt --key "$c/client.tgsk" --width 8 --signed \
  --input "$c/b.txt" -o "$c/b.tgct"
cp "$c/server.tgck" "$c/a.tgct" "$c/b.tgct" "$s/"

# Server: a matrix product and an element-wise maximum, with the cloud key only.
expect 0 "bootstraps in" eval --cloud-key "$s/server.tgck" --op matmul --width 16 \
  "$s/a.tgct" "$s/b.tgct" -o "$s/ab.tgct"
expect 0 "8-bit signed, 2 x 2" eval --cloud-key "$s/server.tgck" --op max \
  "$s/a.tgct" "$s/b.tgct" -o "$s/max.tgct" --backend sequential
cp "$s/ab.tgct" "$s/max.tgct" "$c/"

# Client: decrypt and compare with plain arithmetic.
"$tg" decrypt --key "$c/client.tgsk" "$c/ab.tgct" >"$tmp/ab.txt" 2>&1 || fail "decrypt ab"
printf ' 19 -10\n-13  50\n' | diff - "$tmp/ab.txt" || fail "A*B decrypted wrong"
"$tg" decrypt --key "$c/client.tgsk" "$c/max.tgct" -o "$c/max.txt" -q || fail "decrypt max"
printf '5 6\n3 8\n' | diff - "$c/max.txt" || fail "max(A, B) decrypted wrong"
expect 0 "integer array, format version 3" info "$c/ab.tgct" "$c/client.tgsk" "$s/server.tgck"
# Every file names the one secret key: the array, the key itself, the cloud key made from it.
key_id=$("$tg" info "$c/client.tgsk" | sed -n 's/.*, key id \([0-9a-f]\{16\}\),.*/\1/p')
[[ -n "$key_id" ]] || fail "info shows no key id for the secret key"
expect 0 "under key id $key_id" info "$c/ab.tgct"
expect 0 "made from key id $key_id" info "$s/server.tgck"
# Another key pair of the same set: its secret key and its cloud key are refused by key id.
expect 0 "cannot decrypt" keygen --params toy_INSECURE --insecure-ok \
  --secret-key "$c/other.tgsk" --cloud-key "$s/other.tgck"
expect 1 "under key id $key_id but" decrypt --key "$c/other.tgsk" "$c/ab.tgct"
expect 1 "the result would decrypt to random bits" eval --cloud-key "$s/other.tgck" --op neg \
  "$s/a.tgct" -o "$s/never.tgct"
[[ -e "$s/never.tgct" ]] && fail "a refused eval left a file"
# A file whose name begins with '-', after the end-of-options marker "--".
cp "$c/max.tgct" "$c/-max.tgct"
(cd "$c" && "$tg" decrypt --key client.tgsk -- -max.tgct) >"$tmp/dash.txt" 2>&1 ||
  fail "decrypt -- -max.tgct: $(cat "$tmp/dash.txt")"
printf '5 6\n3 8\n' | diff - "$tmp/dash.txt" || fail "decrypt -- -max.tgct decrypted wrong"
expect 0 "16-bit signed, 2 x 2" info "$c/ab.tgct"

# Bad inputs: exit 2 for the command line, 1 for files; nothing overwritten.
expect 2 "unknown operation 'pow'" eval --cloud-key "$s/server.tgck" --op pow "$s/a.tgct" \
  "$s/b.tgct" -o "$s/x.tgct"
expect 2 "does not fit 8-bit unsigned (0..255)" encrypt --key "$c/client.tgsk" --width 8 \
  --values 300 -o "$c/x.tgct"
expect 1 "refusing to overwrite" eval --cloud-key "$s/server.tgck" --op add "$s/a.tgct" \
  "$s/b.tgct" -o "$s/ab.tgct"
expect 1 "holds a secret key, but --cloud-key needs a cloud key" eval \
  --cloud-key "$c/client.tgsk" --op add "$c/a.tgct" "$c/b.tgct" -o "$c/x.tgct"
head -c 200 "$c/a.tgct" >"$c/cut.tgct"
expect 1 "truncated" decrypt --key "$c/client.tgsk" "$c/cut.tgct"
expect 0 "INSECURE" --help
expect 2 "--device is a GPU option: it applies to --backend gpu, not to sequential" \
  eval --cloud-key "$s/server.tgck" --op add "$s/a.tgct" "$s/b.tgct" -o "$s/x.tgct" \
  --backend sequential --device 0
# An output that is a FIFO (or a device such as /dev/null) is written into, never replaced.
mkfifo "$c/fifo"
cat "$c/fifo" >"$c/from_fifo" &
expect 0 "8-bit signed, 2 x 2" encrypt --key "$c/client.tgsk" --width 8 --signed \
  --values "1,-2;3,4" -o "$c/fifo" --force
wait
[[ -p "$c/fifo" ]] || fail "encrypt -o FIFO --force replaced the FIFO with a file"
cmp -s <(tail -c +1 "$c/from_fifo" | head -c 4) <(head -c 4 "$c/a.tgct") \
  || fail "the FIFO's reader did not get the encrypted array"
rm -f "$c/fifo" "$c/from_fifo"
[[ -e "$c/x.tgct" || -e "$s/x.tgct" ]] && fail "a failed command left an output file"
"$tg" decrypt --key "$c/client.tgsk" "$c/ab.tgct" | diff - "$tmp/ab.txt" || fail "ab.tgct changed"

# The TFHE library v1.1 vectors, when present.
if [[ -n "$data" && -f "$data/plain.txt" ]]; then
  l="$tmp/lib"
  mkdir "$l"
  expect 0 "secret key for tfhe_lib_128" import "$data/lwe.key" "$data/tgsw.key" -o "$l/client.tgsk"
  expect 0 "cloud key" keygen --from "$l/client.tgsk" --cloud-key "$l/server.tgck"
  for name in a b; do
    expect 0 "64 integers (1-bit unsigned, 1 x 64)" import "$data/$name.ctxt" \
      --params "$data/params.txt" -o "$l/$name.tgct"
  done
  # plain.txt columns: i a b c and nand or nor xor ...; bits as one line "0 1 1 ...".
  column() { awk -v c="$1" 'NR > 1 { print $c }' "$data/plain.txt" | xargs; }
  bits() { "$tg" decrypt --key "$l/client.tgsk" "$1" | xargs; }
  for gate in and:5 or:7 xor:9; do
    op="${gate%%:*}"
    want="$(column "${gate##*:}")"
    expect 0 "64 bootstraps" eval --cloud-key "$l/server.tgck" --op "$op" "$l/a.tgct" \
      "$l/b.tgct" -o "$l/$op.tgct"
    [[ "$(bits "$l/$op.tgct")" == "$want" ]] ||
      fail "$op of the library's ciphertexts differs from plain.txt"
    # Exported in the library's format and imported again: the same bits.
    expect 0 "as TFHE library v1.1" export "$l/$op.tgct" -o "$l/out_$op.ctxt"
    [[ $(stat -c %s "$l/out_$op.ctxt") -eq $((64 * 2536)) ]] || fail "out_$op.ctxt size"
    expect 0 "imported" import "$l/out_$op.ctxt" --params tfhe_lib_128 -o "$l/back_$op.tgct"
    [[ "$(bits "$l/back_$op.tgct")" == "$want" ]] || fail "out_$op.ctxt reads back to other bits"
  done
  # Import then export: the library's own files again, byte for byte.
  expect 0 "LWE key" export "$l/client.tgsk" --lwe-key "$l/lwe.key" --tgsw-key "$l/tgsw.key"
  cmp -s "$l/lwe.key" "$data/lwe.key" || fail "lwe.key not reproduced"
  cmp -s "$l/tgsw.key" "$data/tgsw.key" || fail "tgsw.key not reproduced"
  [[ $(stat -c %a "$l/lwe.key") == 600 ]] || fail "lwe.key is not mode 0600"
  expect 0 "gate ciphertexts" export "$l/a.tgct" -o "$l/a.ctxt"
  cmp -s "$l/a.ctxt" "$data/a.ctxt" || fail "a.ctxt not reproduced"
  expect 0 "parameters tfhe_lib_128" import "$data/params.txt" -o "$l/params.tgpr"
  expect 0 "parameter set" export "$l/params.tgpr" -o "$l/params.txt"
  cmp -s "$l/params.txt" "$data/params.txt" || fail "params.txt not reproduced"
  # The cloud key as the library's cloud keyset, and back: the same keys, without the key id
  # (the library's cloud keyset does not name its secret key), so the same keyset again.
  expect 0 "cloud keyset" export "$l/server.tgck" -o "$l/cloud.key"
  expect 0 "TFHE library v1.1 cloud keyset, the named set 'tfhe_lib_128'" info "$l/cloud.key"
  expect 0 "cloud key for tfhe_lib_128" import "$l/cloud.key" -o "$l/again.tgck"
  expect 0 "made from key id unknown" info "$l/again.tgck"
  expect 0 "cloud keyset" export "$l/again.tgck" -o "$l/cloud_again.key"
  cmp -s "$l/cloud_again.key" "$l/cloud.key" || fail "the cloud keyset did not import as the key"
  # Bad inputs.
  expect 2 "half of a secret key" import "$data/lwe.key" -o "$l/x.tgsk"
  expect 2 "carry no parameters" import "$data/a.ctxt" -o "$l/x.tgct"
  expect 1 "already: export reads torusgate files" export "$data/a.ctxt" -o "$l/x.ctxt"
  expect 1 "refusing to overwrite" import "$data/a.ctxt" --params tfhe_lib_128 -o "$l/a.tgct"
  [[ -e "$l/x.tgsk" || -e "$l/x.tgct" || -e "$l/x.ctxt" ]] && fail "a failed import left a file"
else
  echo "TFHE library vectors not found at '$data': their checks skipped"
fi

finish "torusgate end to end"
