#!/usr/bin/env python3
"""A kernel's instructions by class and by source line, weighted by how often each range of
code runs (static SASS with nvcc's line information; no GPU needed).

  scripts/sass_lines.py INPUT --kernel TEXT [--range LO:HI] [--weight LO:HI:W ...] [--top N]

INPUT: a cubin compiled with -lineinfo (disassembled with nvdisasm -g -c, which comes from
NVDISASM, the PATH, /usr/local/cuda/bin or the PyPI package nvidia-cuda-nvdisasm), or that
disassembly saved as text. For the fused rotation kernels, e.g.:

  nvcc -DTORUSGATE_GPU_BUILT=1 -Igpu/include -Icore/include -O3 -DNDEBUG -lineinfo -cubin \\
       -arch=sm_90 -std=c++20 gpu/src/fused_kernels.cu -o fk.cubin
  scripts/sass_lines.py fk.cubin --kernel 'lane_rotation_kernel.*FixedLengthILj9ELj8EEEEELj1E'

--kernel: a regular expression that must match exactly one kernel's mangled name (the
candidates are listed otherwise). Without --range the script lists the kernel's loops (its
backward branches, innermost last) and stops, so that the ranges can be read off them.
--range LO:HI (hexadecimal addresses, both included): the code counted, say a step loop.
--weight LO:HI:W: instructions in [LO, HI] count W times (W >= 0: a row loop's trip count, 0
for an arm that does not run); a later --weight overrides an earlier one where they overlap.
Instructions are classed as FP64 (DFMA, DMUL, DADD), shared loads and stores, global loads
and stores, local (spill) loads and stores, barriers, and the rest ("other": integer,
address, control), whose weighted counts are listed by source file and line (docs/gpu.md
section 6.28).
"""
import argparse
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rotation_sass  # noqa: E402  (find_cuda_tool)

CLASSES = (
    ("fp64", ("DFMA", "DMUL", "DADD")),
    ("shared_loads", ("LDS", "LDSM")),
    ("shared_stores", ("STS",)),
    ("global_loads", ("LDG",)),
    ("global_stores", ("STG",)),
    ("local", ("LDL", "STL")),
    ("barriers", ("BAR",)),
)
ADDRESS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?);")
LINE = re.compile(r'^\s*//## File "([^"]+)", line (\d+)')
LABEL = re.compile(r"^(\.L_x_\d+):")


def fail(message):
    print(f"sass_lines: {message}", file=sys.stderr)
    sys.exit(1)


def instruction_class(opcode):
    base = opcode.split(".")[0]
    for name, bases in CLASSES:
        if base in bases:
            return name
    return "other"


def find_nvdisasm():
    found = rotation_sass.find_cuda_tool("nvdisasm", "NVDISASM")
    if found is None:
        fail("nvdisasm not found; install the CUDA toolkit's, or pip install "
             "nvidia-cuda-nvdisasm (or set NVDISASM)")
    return found


def read_text(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF":
        result = subprocess.run([find_nvdisasm(), "-g", "-c", path], capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            fail(f"nvdisasm failed on {path}: {result.stderr.strip()}")
        return result.stdout
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def kernels(text):
    """{mangled name: [lines]} of every .text section."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith(".text."):
            current = line[len(".text."):].strip().rstrip(":")
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def parse(lines):
    """The instructions (address, opcode, operands, 'file:line') and the labels' addresses."""
    instructions, labels, pending, where = [], {}, [], "?"
    for line in lines:
        m = LINE.match(line)
        if m:
            where = f"{os.path.basename(m.group(1))}:{m.group(2)}"
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = ADDRESS.match(line)
        if m:
            address = int(m.group(1), 16)
            for label in pending:
                labels[label] = address
            pending = []
            instructions.append((address, m.group(2), m.group(3), where))
    return instructions, labels


def branches(instructions, labels):
    """(address, target) of every branch whose target is known."""
    found = []
    for address, opcode, operands, _ in instructions:
        if not opcode.startswith("BRA"):
            continue
        m = re.search(r"(\.L_x_\d+)", operands) or re.search(r"0x([0-9a-f]+)", operands)
        if m is None:
            continue
        target = labels.get(m.group(1)) if m.group(1).startswith(".L") else int(m.group(1), 16)
        if target is not None:
            found.append((address, target))
    return found


def loops(instructions, labels):
    """(start, end) of each backward branch, outermost (longest) first."""
    found = [(t, a) for a, t in branches(instructions, labels) if t <= a]
    return sorted(found, key=lambda r: (-(r[1] - r[0]), r[0]))


def address_range(text, option, parts):
    fields = text.split(":")
    if len(fields) != parts:
        fail(f"{option} {text!r}: expected {'LO:HI' if parts == 2 else 'LO:HI:W'}")
    try:
        lo, hi = int(fields[0], 16), int(fields[1], 16)
        weight = int(fields[2]) if parts == 3 else 1
    except ValueError:
        fail(f"{option} {text!r}: addresses in hexadecimal, the weight a whole number")
    if lo > hi or weight < 0:
        fail(f"{option} {text!r}: LO must not exceed HI, and W must be >= 0")
    return lo, hi, weight


def main():
    parser = argparse.ArgumentParser(description="A kernel's weighted instructions by class "
                                     "and source line (static SASS, nvcc -lineinfo).")
    parser.add_argument("input")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--range", dest="span")
    parser.add_argument("--weight", action="append", default=[])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    span = address_range(args.span, "--range", 2) if args.span else None
    weights = [address_range(w, "--weight", 3) for w in args.weight]
    if args.top < 0:
        fail("--top must be >= 0")
    try:
        pattern = re.compile(args.kernel)
    except re.error as e:
        fail(f"--kernel {args.kernel!r}: {e}")
    if not os.path.isfile(args.input):
        fail(f"{args.input}: no such file")
    all_kernels = kernels(read_text(args.input))
    matches = [k for k in all_kernels if pattern.search(k)]
    if len(matches) != 1:
        listing = "\n  ".join(sorted(all_kernels)) or "(none: no .text sections)"
        fail(f"--kernel {args.kernel!r} matches {len(matches)} kernels; the kernels:\n  {listing}")
    instructions, labels = parse(all_kernels[matches[0]])
    if not instructions:
        fail(f"{matches[0]}: no instructions")
    print(f"kernel {matches[0]}: {len(instructions)} instructions")
    print("loops (backward branches, start:end, instructions):")
    for lo, hi in loops(instructions, labels):
        print(f"  {lo:x}:{hi:x} {(hi - lo) // 16 + 1}")
    # Forward branches bound the code that runs on some iterations only (an if, or the arms
    # nvcc split a loop into): weigh it apart.
    print("forward branches (from -> to):")
    for address, target in branches(instructions, labels):
        if target > address:
            print(f"  {address:x} -> {target:x}")
    if span is None:
        return
    if all(where == "?" for _, _, _, where in instructions):
        print("(no line information: compile with -lineinfo)")
    totals, other = collections.Counter(), collections.Counter()
    for address, opcode, _, where in instructions:
        if not span[0] <= address <= span[1]:
            continue
        weight = 1
        for lo, hi, w in weights:
            if lo <= address <= hi:
                weight = w
        kind = instruction_class(opcode)
        totals[kind] += weight
        if kind == "other":
            other[where] += weight
    print(f"weighted instructions in {span[0]:x}:{span[1]:x}: {sum(totals.values())}")
    for name, _ in CLASSES + (("other", ()),):
        print(f"  {name}: {totals[name]}")
    print(f"other, by source line (top {args.top}):")
    for where, count in other.most_common(args.top):
        print(f"  {count:6d} {where}")


if __name__ == "__main__":
    main()
