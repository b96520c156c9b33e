#!/usr/bin/env python3
"""The fused rotation kernels' instruction mix as nvcc compiled them (static SASS counts).

Reads the SASS of every fused rotation kernel in a CUDA object or executable (cuobjdump) and
prints, per kernel, its static instruction counts by class (FP64, global loads, shared
loads and stores, barriers, the cluster kernels' async stores, bulk copies, mbarrier
operations and cluster barriers, the rest) and the same divided by the rotations a thread
carries (2 for fused_lane_rotation_kernel, else 1). Static counts of loop bodies, not
executed counts: they compare two builds or two kernels, no GPU needed (docs/gpu.md,
section 6.3).

  scripts/rotation_sass.py OBJECT [--arch sm_90] [--filter TEXT]

OBJECT: e.g. build/gpu/CMakeFiles/torusgate_gpu.dir/src/fused_kernels.cu.o. cuobjdump comes
from CUOBJDUMP, the PATH, /usr/local/cuda/bin or the PyPI packages nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

CLASSES = (
    ("fp64", ("DFMA", "DMUL", "DADD")),
    ("global_loads", ("LDG",)),
    ("shared_loads", ("LDS",)),
    ("shared_stores", ("STS",)),
    ("barriers", ("BAR",)),
    # The cluster kernels' transfers (st.async), key fetches (the TMA's cp.async.bulk),
    # mbarrier operations and cluster barriers.
    ("async_stores", ("STAS",)),
    ("bulk_copies", ("UBLKCP",)),
    ("mbarrier", ("SYNCS",)),
    ("cluster_barriers", ("UCGABAR",)),
)


def find_cuda_tool(name, variable):
    """A CUDA binary tool (cuobjdump, nvdisasm): from the environment variable, the PATH,
    /usr/local/cuda/bin or the PyPI packages (nvidia-cuda-*); None where there is none."""
    for candidate in (os.environ.get(variable), shutil.which(name),
                      f"/usr/local/cuda/bin/{name}"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    try:
        import nvidia  # the PyPI packages
        for root in nvidia.__path__:
            for path in sorted(glob.glob(os.path.join(root, "cu*", "bin", name)), reverse=True):
                return path
    except ImportError:
        pass
    return None


def find_cuobjdump():
    return find_cuda_tool("cuobjdump", "CUOBJDUMP")


def label(mangled):
    """'fixed K1=2 M=2^9' for a fused rotation kernel's mangled name, else None."""
    match = re.search(r"fused_(blind|fixed|lane|cluster)_rotation_kernelI(.*?)EvP", mangled)
    if not match:
        return None
    kind, targs = match.groups()
    # An unrolled key's kernels apart: older builds' template argument Unrolled = true
    # (mangled Lb1E), now Unroll = U (2: pairs, 3: threes; 0: a bundled key's group steps).
    unrolled = " unrolled" if re.search(r"Lb1E+$", targs) else ""
    unroll = _unroll(kind, targs)
    if unroll == 0:
        unrolled = " bundled"
    elif unroll is not None and unroll > 1:
        unrolled = f" unroll {unroll}"
    name = _label(kind, targs)
    return name + unrolled


def _unroll(kind, targs):
    """The kernel's Unroll template argument, or None where it has none."""
    numbers = [int(n) for n in re.findall(r"Lj(\d+)E", targs)]
    if kind == "fixed" and len(numbers) >= 3:
        return numbers[2]
    if kind == "blind" and len(numbers) >= 2:
        return numbers[1]
    if kind in ("cluster", "lane"):
        # After the groups type (..EE): Lj<U>E.
        after = re.search(r"EELj(\d+)E+$", targs)
        return int(after.group(1)) if after else None
    return None


def _label(kind, targs):
    numbers = [int(n) for n in re.findall(r"Lj(\d+)E", targs)]
    # FixedLength<log2 M> (older builds) or FixedLength<log2 M, points per thread> (4: wide).
    fixed = re.search(r"FixedLengthILj(\d+)E(?:Lj(\d+)E)?", targs)
    length = f"M=2^{fixed.group(1)}" if fixed else "M=run-time"
    if kind == "lane":
        return f"lane K1=2 {length}"
    if kind == "fixed":
        return f"fixed K1={numbers[0]} M=2^{numbers[1]}"
    if kind == "cluster":
        wide = "wide " if fixed and fixed.group(2) == "4" else ""
        return f"{wide}cluster K1={numbers[0]} {length}"
    return f"blind K1={numbers[0]} M=run-time"


def kernels(sass):
    """{kernel label: [opcode, ...]} of the fused rotation kernels."""
    found, current = {}, None
    for line in sass.splitlines():
        match = re.search(r"Function : (\S+)", line)
        if match:
            current = label(match.group(1))
            if current:
                found[current] = []
            continue
        if current is None:
            continue
        instruction = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if instruction:
            found[current].append(instruction.group(2))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("object")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--filter", default="", help="only kernels whose name has TEXT")
    args = parser.parse_args()
    if not re.fullmatch(r"sm_[0-9]+a?", args.arch):
        sys.exit(f"rotation_sass: --arch '{args.arch}' is not like sm_90")
    if not os.path.isfile(args.object):
        sys.exit(f"rotation_sass: {args.object}: no such file")
    tool = find_cuobjdump()
    if tool is None:
        sys.exit("rotation_sass: cuobjdump not found; install the CUDA toolkit's, or pip install "
                 "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (or set CUOBJDUMP)")
    run = subprocess.run([tool, "-sass", "-arch", args.arch, args.object], capture_output=True,
                         text=True)
    if run.returncode != 0:
        sys.exit(f"rotation_sass: cuobjdump failed: {run.stderr.strip()}")
    found = {k: v for k, v in kernels(run.stdout).items() if args.filter in k}
    if not found:
        sys.exit(f"rotation_sass: no fused rotation kernel for {args.arch} in {args.object}")
    header = ["kernel", "lanes"] + [c for c, _ in CLASSES] + ["other", "total"]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, ops in sorted(found.items()):
        lanes = 2 if name.startswith("lane") else 1
        counts = [sum(op.startswith(prefixes) for op in ops) for _, prefixes in CLASSES]
        counts += [len(ops) - sum(counts), len(ops)]
        cells = [f"{c}" if lanes == 1 else f"{c} ({c / lanes:g} per rotation)" for c in counts]
        print(" | ".join([name, str(lanes)] + cells))


if __name__ == "__main__":
    main()
