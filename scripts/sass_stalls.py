#!/usr/bin/env python3
"""Where a kernel's warps stall, from Nsight Compute's per-instruction SASS table.

Reads the CSV that scripts/gpu_run.sh's hotspots step writes (hotspots_*_sass.csv, or the
same gzipped: `ncu --import REP --page source --csv --print-source sass`) and prints:

- the warp stall samples by reason, with their shares;
- the long-scoreboard samples by what produced the operand they wait for: the instruction
  stalled waits for a register or predicate, and the nearest earlier instruction (in address
  order, within WINDOW instructions) that writes it names the source: a global load (LDG), a
  generic load (LD: another block's shared memory through the cluster, or global), a local
  load (LDL: spill), an mbarrier wait (SYNCS.PHASECHK: a cluster transfer or a bulk copy not
  yet arrived), else "other". Address order is not control flow, so this is an
  approximation: good for shares, not for single samples;
- the TOP instructions by samples, with their two largest reasons.

  scripts/sass_stalls.py CSV [--top 15] [--window 400]

No GPU needed (docs/gpu.md, section 6.14).
"""
import argparse
import collections
import csv
import gzip
import os
import re
import sys

PRODUCERS = (
    ("mbarrier wait", "SYNCS.PHASECHK"),
    ("local load (spill)", "LDL"),
    ("global load", "LDG"),
    ("generic load", "LD."),
    ("shared load", "LDS"),
)


def read_table(path):
    """(header, rows) of the SASS table; the file's first line may name the kernel."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        sys.exit(f"sass_stalls: {path}: cannot read it as a CSV: {error}")
    for i, row in enumerate(rows[:3]):
        if "Source" in row and "Address" in row:
            return row, rows[i + 1:]
    sys.exit(f"sass_stalls: {path}: no header with 'Address' and 'Source' in its first lines "
             "(expected ncu --page source --csv --print-source sass)")


def parse(source):
    """(guard predicate or None, opcode, operand strings) of one SASS line."""
    text = source.strip().rstrip(";").strip()
    guard = None
    match = re.match(r"@(!?)(U?P\w+)\s+", text)
    if match:
        guard = match.group(2)
        text = text[match.end():]
    parts = text.split(None, 1)
    if not parts:
        return guard, "", []
    operands = [o.strip() for o in parts[1].split(",")] if len(parts) > 1 else []
    return guard, parts[0], operands


def registers(operand):
    return {f"R{n}" for n in re.findall(r"\bR(\d+)\b", operand)}


def written(opcode, operands):
    """The registers and predicates an instruction writes (its first operand, widened for
    64- and 128-bit loads), or an empty set for stores, branches and the like."""
    if not operands or opcode.startswith(("ST", "RED", "ATOM", "BRA", "BAR", "CCTL", "UBLKCP")):
        return set()
    first = operands[0]
    if re.fullmatch(r"U?P\w+", first):
        return {first}
    match = re.fullmatch(r"R(\d+)", first)
    if not match:
        return set()
    width = 1
    size = re.search(r"\.(64|128)\b", opcode)
    if size:
        width = int(size.group(1)) // 32
    base = int(match.group(1))
    return {f"R{base + i}" for i in range(width)}


def read(opcode, guard, operands):
    """The registers and predicates an instruction reads."""
    sources = {guard} if guard else set()
    stores = opcode.startswith(("ST", "RED", "BRA", "CCTL"))
    start = 0 if stores or not written(opcode, operands) else 1
    for operand in operands[start:]:
        sources |= registers(operand)
        sources |= set(re.findall(r"\b(U?P[0-6T]?)\b", operand)) - {"PT", "UPT"}
    return sources


def producer_class(opcode):
    """PRODUCERS' name of the opcode (LD alone or LD.*: a generic load), else "other"."""
    for name, prefix in PRODUCERS:
        if (opcode + ".").startswith(prefix):
            return name
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--window", type=int, default=400)
    args = parser.parse_args()
    if args.top < 0 or args.window < 1:
        sys.exit("sass_stalls: --top must be >= 0 and --window >= 1")
    if not os.path.isfile(args.csv):
        sys.exit(f"sass_stalls: {args.csv}: no such file")
    header, rows = read_table(args.csv)
    column = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    if not reasons:
        sys.exit(f"sass_stalls: {args.csv}: no stall_* columns (profile with the "
                 "SourceCounters and WarpStateStats sections)")

    def count(row, name):
        cell = row[column[name]] if column[name] < len(row) else ""
        return int(cell) if cell.strip().isdigit() else 0

    code = [parse(row[column["Source"]]) for row in rows]
    per_row = [{reason: count(row, reason) for reason in reasons} for row in rows]
    totals = collections.Counter()
    for row in per_row:
        totals.update(row)
    samples = sum(totals.values())
    if samples == 0:
        sys.exit(f"sass_stalls: {args.csv}: no stall samples")
    print(f"stall samples: {samples}")
    for reason, n in totals.most_common():
        if n:
            print(f"  {reason[6:]:22s} {n:8d} {100 * n / samples:5.1f}%")

    long_sb = collections.Counter()
    if "stall_long_sb" in column:
        for k, row in enumerate(per_row):
            n = row["stall_long_sb"]
            if not n:
                continue
            guard, opcode, operands = code[k]
            wanted = read(opcode, guard, operands)
            source = "other"
            for j in range(k - 1, max(-1, k - 1 - args.window), -1):
                if written(code[j][1], code[j][2]) & wanted:
                    source = producer_class(code[j][1])
                    break
            long_sb[source] += n
    total_long = sum(long_sb.values())
    if total_long:
        print(f"long scoreboard by producer ({total_long} samples, "
              f"{100 * total_long / samples:.1f}% of all):")
        for source, n in long_sb.most_common():
            print(f"  {source:22s} {n:8d} {100 * n / total_long:5.1f}%")

    row_samples = [sum(row.values()) for row in per_row]
    ranked = sorted(range(len(rows)), key=lambda k: -row_samples[k])
    print(f"top {args.top} instructions by samples:")
    for k in ranked[:args.top]:
        n = row_samples[k]
        if n == 0:
            break
        parts = sorted(((c, r[6:]) for r, c in per_row[k].items()), reverse=True)[:2]
        why = ", ".join(f"{r} {c}" for c, r in parts if c)
        source = rows[k][column["Source"]].strip()[:60]
        print(f"  {n:7d} {100 * n / samples:5.1f}%  {source:60s} {why}")


if __name__ == "__main__":
    main()
