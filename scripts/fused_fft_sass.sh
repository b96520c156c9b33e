#!/usr/bin/env bash
# The FP64 work of the fused engine's FFT as nvcc compiles it: builds
# gpu/tools/fused_fft_probe.cu (one kernel per pass of the transforms of N = 512, 1024, 2048,
# forward and inverse, with the pass's shape as constants, as in the fused kernel, and the
# other FP64 parts of a CMUX step) for one GPU architecture, and counts in each kernel's SASS
# the FP64 instructions (DADD, DMUL, DFMA) and the twiddle loads (global loads beyond the 8
# points), per pass, per transform and per tfhe_lib_128 CMUX step, per thread. With --against REV it does the same for the fused_fft.hpp of git revision REV and
# prints both. No GPU needed: nvcc and cuobjdump (with nvdisasm) suffice, from the CUDA
# toolkit or from PyPI (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm).
#   scripts/fused_fft_sass.sh [--arch sm_90] [--against REV] [--json FILE]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
arch=sm_90
against=""
json=""
# value OPTION WHAT "$@": the option's value, or exit 2 naming what it needs.
value() {
  [[ $# -ge 4 && -n "$4" ]] || { echo "fused_fft_sass: $1 needs $2" >&2; exit 2; }
  printf '%s' "$4"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) arch="$(value --arch "a value like sm_90" "$@")" || exit 2; shift 2 ;;
    --against) against="$(value --against "a git revision" "$@")" || exit 2; shift 2 ;;
    --json) json="$(value --json "a file name" "$@")" || exit 2; shift 2 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fused_fft_sass: unknown argument '$1' (expected --arch, --against, --json)" >&2; exit 2 ;;
  esac
done
[[ "$arch" =~ ^sm_[0-9]+a?$ ]] || { echo "fused_fft_sass: --arch '$arch' is not like sm_90" >&2; exit 2; }

nvcc_bin="$(command -v nvcc || true)"
[[ -z "$nvcc_bin" && -x /usr/local/cuda/bin/nvcc ]] && nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -n "$nvcc_bin" ]] || { echo "fused_fft_sass: nvcc not found" >&2; exit 1; }

# cuobjdump: CUOBJDUMP, the PATH, the CUDA toolkit, or the PyPI packages of any python3.
find_cuobjdump() {
  if [[ -n "${CUOBJDUMP:-}" ]]; then echo "$CUOBJDUMP"; return; fi
  if command -v cuobjdump >/dev/null 2>&1; then command -v cuobjdump; return; fi
  if [[ -x /usr/local/cuda/bin/cuobjdump ]]; then echo /usr/local/cuda/bin/cuobjdump; return; fi
  python3 - <<'PY' 2>/dev/null || true
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for root in nvidia.__path__:
    for path in sorted(glob.glob(os.path.join(root, "cu*", "bin", "cuobjdump")), reverse=True):
        print(path)
        raise SystemExit(0)
PY
}
cuobjdump_bin="$(find_cuobjdump)"
if [[ -z "$cuobjdump_bin" ]]; then
  echo "fused_fft_sass: cuobjdump not found; install the CUDA toolkit's, or" \
       "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (or set CUOBJDUMP)" >&2
  exit 1
fi
# cuobjdump runs nvdisasm from its own folder or the PATH.
export PATH="$(dirname "$cuobjdump_bin"):$PATH"
command -v nvdisasm >/dev/null 2>&1 || {
  echo "fused_fft_sass: nvdisasm not found beside $cuobjdump_bin (pip install nvidia-cuda-nvdisasm)" >&2
  exit 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# compile NAME SOURCE_ROOT: the probe against SOURCE_ROOT's headers, its SASS into NAME.sass.
compile() {
  local name="$1" root="$2"
  "$nvcc_bin" -std=c++20 -O3 -arch="$arch" -cubin -I "$root/gpu/src" -I "$root/gpu/include" \
    -I "$root/core/include" -o "$work/$name.cubin" "$repo_root/gpu/tools/fused_fft_probe.cu"
  "$cuobjdump_bin" -sass "$work/$name.cubin" > "$work/$name.sass"
}

compile current "$repo_root"
# The current revision, "-modified" when the sources the probe reads differ from it.
label="$(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo 'working tree')"
if [[ -n "$(git -C "$repo_root" status --porcelain -- gpu/src gpu/include gpu/tools core/include 2>/dev/null)" ]]; then
  label+="-modified"
fi
labels=("$label")
nvcc_version="$("$nvcc_bin" --version | tail -n 1)"
if [[ -n "$against" ]]; then
  git -C "$repo_root" rev-parse --verify --quiet "$against^{commit}" >/dev/null ||
    { echo "fused_fft_sass: '$against' is not a git revision here" >&2; exit 2; }
  mkdir -p "$work/against"
  git -C "$repo_root" archive "$against" gpu/src gpu/include core/include | tar -x -C "$work/against"
  compile against "$work/against"
  labels+=("$against")
fi

python3 - "$work" "$arch" "$json" "$nvcc_version" "${labels[@]}" <<'PY'
import collections, json, re, sys

work, arch, json_path, nvcc_version, labels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
files = ["current"] + (["against"] if len(labels) > 1 else [])
name_re = re.compile(r"fft_pass_probeILj(\d+)ELj(\d+)ELj(\d+)ELb([01])E")
op_re = re.compile(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)")

def counts(path):
    text = open(path).read()
    passes, parts = {}, {}
    for chunk in re.split(r"\n\s*Function : ", text)[1:]:
        name = chunk.split("\n", 1)[0]
        ops = collections.Counter(mo.group(1) for mo in map(op_re.search, chunk.split("\n")) if mo)
        fp64 = {"DADD": ops["DADD"], "DMUL": ops["DMUL"], "DFMA": ops["DFMA"],
                "fp64": ops["DADD"] + ops["DMUL"] + ops["DFMA"]}
        m = name_re.search(name)
        if m:
            M, top, stages, inverse = (int(g) for g in m.groups())
            passes[(M, top, stages, bool(inverse))] = dict(fp64, twiddle_loads=ops["LDG"] - 8,
                                                          branches=ops["BRA"])
        for part in ("digits", "products", "untwist"):
            if f"step_{part}_probe" in name:
                parts[part] = fp64
    return passes, parts

results = {}
step_parts = {}
for label, f in zip(labels, files):
    results[label], step_parts[label] = counts(f"{work}/{f}.sass")
report = {"arch": arch, "nvcc": nvcc_version, "counts": "static SASS instructions per thread",
          "revisions": {}}
print(f"FP64 instructions and twiddle loads per thread of the fused FFT's passes ({arch}, "
      f"{nvcc_version}; T = M/8 threads per transform)\n")
for label in labels:
    r = results[label]
    print(f"## {label}\n")
    print("| M | pass (top bit, stages) | direction | DADD | DMUL | DFMA | FP64 | twiddle loads |")
    print("|---|---|---|---|---|---|---|---|")
    totals = collections.defaultdict(lambda: [0, 0])
    for (M, top, stages, inverse), c in sorted(r.items(), key=lambda kv: (kv[0][0], kv[0][3], -kv[0][1])):
        d = "inverse" if inverse else "forward"
        print(f"| {M} | {top}, {stages} | {d} | {c['DADD']} | {c['DMUL']} | {c['DFMA']} | "
              f"{c['fp64']} | {c['twiddle_loads']} |")
        totals[(M, d)][0] += c["fp64"]
        totals[(M, d)][1] += c["twiddle_loads"]
    print("\n| M | direction | FP64 per thread per transform | per transform (x M/8) | twiddle loads per thread |")
    print("|---|---|---|---|---|")
    for (M, d), (fp64, loads) in sorted(totals.items()):
        print(f"| {M} | {d} | {fp64} | {fp64 * M // 8} | {loads} |")
    print()
    # A CMUX step of tfhe_lib_128 (k = 1, l = 3, M = 512) with G = 1 (64 threads a rotation):
    # per row the digits, the forward transform and the products; per column the inverse and
    # the untwist.
    parts = step_parts[label]
    step = None
    if len(parts) == 3 and (512, "forward") in totals:
        rows, columns = 6, 2
        row = parts["digits"]["fp64"] + totals[(512, "forward")][0] + parts["products"]["fp64"]
        column = totals[(512, "inverse")][0] + parts["untwist"]["fp64"]
        step = rows * row + columns * column
        print("A CMUX step of tfhe_lib_128, G = 1, per thread: 6 rows x (digits "
              f"{parts['digits']['fp64']} + forward {totals[(512, 'forward')][0]} + products "
              f"{parts['products']['fp64']}) + 2 columns x (inverse {totals[(512, 'inverse')][0]}"
              f" + untwist {parts['untwist']['fp64']}) = **{step}** FP64 instructions; x 64 threads"
              f" x 630 steps = {step * 64 * 630 / 1e6:.1f} M per bootstrap\n")
    report["revisions"][label] = {
        "passes": [dict(M=k[0], top=k[1], stages=k[2], inverse=k[3], **v) for k, v in sorted(r.items())],
        "transforms": [dict(M=k[0], direction=k[1], fp64_per_thread=v[0], twiddle_loads_per_thread=v[1])
                       for k, v in sorted(totals.items())],
        "step_parts_per_thread": parts,
        "tfhe_lib_128_step_fp64_per_thread_g1": step,
    }
if json_path:
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"fused_fft_sass: wrote {json_path}", file=sys.stderr)
PY
