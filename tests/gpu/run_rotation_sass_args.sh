#!/usr/bin/env bash
# scripts/rotation_sass.py refuses a missing object or a bad --arch (before it looks for
# cuobjdump, so this runs without a CUDA toolkit), and names each fused rotation kernel from
# its mangled name.
#   run_rotation_sass_args.sh SCRIPT
set -uo pipefail
program="$1"
# shellcheck source=../script_support.sh
source "$(dirname "${BASH_SOURCE[0]}")/../script_support.sh"
expect 1 "rotation_sass: /no/such/object.o: no such file" /no/such/object.o
expect 1 "rotation_sass: --arch 'x90' is not like sm_90" "$program" --arch x90
python3 - "$program" <<'PY' || fail "kernel labels"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("rotation_sass", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
prefix = "_ZN9torusgate3gpu6detail49_GLOBAL__N__ea199fbc_16_fused_kernels_cu_45253c5e"
cases = {
    "27fused_fixed_rotation_kernelILj2ELj9EEEvPjPKjmNS1_5ShapeENS0_6kernel5fused11LaunchShapeE":
        "fixed K1=2 M=2^9",
    "26fused_lane_rotation_kernelINS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj10EEEEEEEvPjPKjm":
        "lane K1=2 M=2^10",
    "29fused_cluster_rotation_kernelILj3ENS0_6kernel5fused15TransformGroupsINS5_13RunTimeLengthEEEEEvPjPKjm":
        "cluster K1=3 M=run-time",
    "29fused_cluster_rotation_kernelILj2ENS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj4EEEEEEEvPjPKjm":
        "wide cluster K1=2 M=2^9",
    "29fused_cluster_rotation_kernelILj3ENS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj10ELj8EEEEEEEvPjPKjm":
        "cluster K1=3 M=2^10",
    "26fused_lane_rotation_kernelINS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEEEEvPjPKjm":
        "lane K1=2 M=2^9",
    "27fused_blind_rotation_kernelILj2EEEvPjPKjmNS1_5ShapeE": "blind K1=2 M=run-time",
    "16fused_key_kernelEPKjmNS1_5ShapeEPKNS0_6kernel7ComplexES9_PS7_": None,
    # The Unroll argument: 1 the standard key, 2 and 3 pairs and threes, 0 a bundled key.
    "27fused_fixed_rotation_kernelILj2ELj9ELj1EEEvPjPKjmNS1_5ShapeENS0_6kernel5fused11LaunchShapeE":
        "fixed K1=2 M=2^9",
    "27fused_fixed_rotation_kernelILj2ELj9ELj3EEEvPjPKjmNS1_5ShapeENS0_6kernel5fused11LaunchShapeE":
        "fixed K1=2 M=2^9 unroll 3",
    "27fused_blind_rotation_kernelILj3ELj2EEEvPjPKjmNS1_5ShapeE": "blind K1=3 M=run-time unroll 2",
    "29fused_cluster_rotation_kernelILj2ENS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEELj3EEEvPjPKjm":
        "cluster K1=2 M=2^9 unroll 3",
    "29fused_cluster_rotation_kernelILj2ENS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEELj0EEEvPjPKjm":
        "cluster K1=2 M=2^9 bundled",
    "29fused_cluster_rotation_kernelILj2ENS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEELj1EEEvPjPKjm":
        "cluster K1=2 M=2^9",
    "29fused_cluster_rotation_kernelILj2ENS0_6kernel5fused15TransformGroupsINS5_13RunTimeLengthEEELj2EEEvPjPKjm":
        "cluster K1=2 M=run-time unroll 2",
    # Lane kernels with their Unroll argument (docs/gpu.md section 6.27).
    "26fused_lane_rotation_kernelINS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEELj1EEEvPjPKjm":
        "lane K1=2 M=2^9",
    "26fused_lane_rotation_kernelINS0_6kernel5fused15TransformGroupsINS5_11FixedLengthILj9ELj8EEEEELj2EEEvPjPKjm":
        "lane K1=2 M=2^9 unroll 2",
    "26fused_lane_rotation_kernelINS0_6kernel5fused15TransformGroupsINS5_13RunTimeLengthEEELj3EEEvPjPKjm":
        "lane K1=2 M=run-time unroll 3",
}
for mangled, want in cases.items():
    got = m.label(prefix + mangled)
    assert got == want, (mangled, got, want)
PY
finish rotation_sass.py
