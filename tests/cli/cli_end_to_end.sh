#!/usr/bin/env bash
# The torusgate binary end to end, as a user runs it, on toy_INSECURE: the client makes keys
# and encrypts, the server evaluates with the cloud key alone (in its own directory), the
# client decrypts and describes the files; then exit codes and messages of bad inputs.
#   cli_end_to_end.sh TORUSGATE_BINARY
set -uo pipefail
tg="$1"
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
expect 0 "integer array, format version 1" info "$c/ab.tgct" "$c/client.tgsk" "$s/server.tgck"
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
[[ -e "$c/x.tgct" || -e "$s/x.tgct" ]] && fail "a failed command left an output file"
"$tg" decrypt --key "$c/client.tgsk" "$c/ab.tgct" | diff - "$tmp/ab.txt" || fail "ab.tgct changed"

finish "torusgate end to end"
