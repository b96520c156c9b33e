#!/usr/bin/env bash
# Every ```cpp block of README.md and docs/*.md is checked: equal, line for line, to its file
# under tests/docs/snippets (compiled and run by tests_docs), or README.md's API example
# (apps/api_example.cpp, checked by api_example_readme). A block that differs is named with
# the first differing line; a block without a snippet, or a snippet without a block, fails.
#   check_snippets.sh SOURCE_DIR
set -uo pipefail
root="$1"
snippets="$root/tests/docs/snippets"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"

# markdown file, the block's number among its cpp blocks, the snippet ("api_example": none).
blocks=(
  "README.md 1 api_example"
  "README.md 2 readme_integers.inc"
  "README.md 3 readme_with_backend.inc"
  "docs/architecture.md 1 architecture_with_backend.inc"
  "docs/circuits.md 1 circuits_md.inc"
  "docs/fpga_fft.md 1 fpga_fft_md.inc"
  "docs/gpu.md 1 gpu_md.inc"
)

# Block n of a markdown file, each line prefixed with its line number in the file and a tab.
block() {
  awk -v n="$2" '/^```cpp$/ {k++; if (k == n) {inside = 1; next}}
                 inside && /^```$/ {exit}
                 inside {print NR "\t" $0}' "$1"
}

declare -A listed
for entry in "${blocks[@]}"; do
  read -r md n snippet <<<"$entry"
  listed["$md $n"]=1
  [[ "$snippet" == api_example ]] && continue
  listed["$snippet"]=1
  block "$root/$md" "$n" >"$tmp/block"
  if [[ ! -s "$tmp/block" ]]; then
    fail "$md has no cpp block number $n (tests/docs/snippets/$snippet)"
    continue
  fi
  if [[ ! -f "$snippets/$snippet" ]]; then
    fail "no tests/docs/snippets/$snippet for $md's cpp block $n"
    continue
  fi
  # The first line where the block and the snippet differ, or where one of them ends.
  first="$(awk -F'\t' 'NR == FNR {md[FNR] = $1; text[FNR] = substr($0, length($1) + 2);
                                   count = FNR; next}
                       {if (FNR > count || text[FNR] != $0) {print FNR "\t" md[FNR]; found = 1;
                                                             exit}}
                       END {if (!found && FNR < count) print FNR + 1 "\t" md[FNR + 1]}' \
             "$tmp/block" "$snippets/$snippet")"
  if [[ -n "$first" ]]; then
    read -r line md_line <<<"$first"
    where="$md line $md_line"
    [[ -n "$md_line" ]] || where="past the block's end in $md"
    fail "$md's cpp block $n differs from tests/docs/snippets/$snippet at its line $line ($where):
  $md: $(sed -n "${line}p" <(cut -f2- "$tmp/block"))
  $snippet: $(sed -n "${line}p" "$snippets/$snippet")"
  fi
done

# No cpp block unchecked, no snippet left over.
for md in "$root/README.md" "$root"/docs/*.md; do
  rel="${md#"$root"/}"
  total="$(grep -c '^```cpp$' "$md")"
  for ((n = 1; n <= total; ++n)); do
    [[ -n "${listed["$rel $n"]:-}" ]] ||
      fail "$rel's cpp block $n is not checked: add it to tests/docs/check_snippets.sh"
  done
done
for file in "$snippets"/*.inc; do
  [[ -n "${listed["$(basename "$file")"]:-}" ]] ||
    fail "tests/docs/snippets/$(basename "$file") is no block's snippet"
done
finish docs_snippets
