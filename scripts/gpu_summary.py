#!/usr/bin/env python3
"""Docs-ready summary of the GPU benchmark reports that scripts/gpu_run.sh writes.

Reads every bench_gates_gpu_*.json in DIR (bench_gates --backend gpu --json) and writes a
markdown summary: the device, commit and date of each report; per parameter set, engine and
key switching a table of every batch size (bootstraps per second, ms per bootstrap, the share
of the blind rotation, the key switching and the transfers, the nominal FP64 work as a share
of the device's peak, the fused engine's launch shape); and for tfhe_lib_128 the targets of
issues 3 and 5 with the measured value and whether it is met. Only numbers found in the
reports are written; a target whose measurement is missing says so.

usage: gpu_summary.py DIR [--out FILE]
"""
import argparse
import glob
import json
import os
import sys

ENGINE_NAMES = {"cufft": "cuFFT-batched", "fused": "fused"}


def load_reports(directory):
    reports = []
    for path in sorted(glob.glob(os.path.join(directory, "bench_gates_gpu_*.json"))):
        with open(path, encoding="utf-8") as f:
            try:
                report = json.load(f)
            except json.JSONDecodeError as e:
                raise SystemExit(f"gpu_summary: {path} is not valid JSON: {e}")
        if "runs" not in report or "device" not in report:
            raise SystemExit(f"gpu_summary: {path} is not a GPU report of bench_gates "
                             "(no 'runs' or 'device')")
        reports.append((os.path.basename(path), report))
    return reports


def percent(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "-"


def shape_text(result):
    groups = result.get("fused_groups", 0)
    if not groups:
        return "-"
    return f"{groups}x{result.get('fused_rotations_per_block', 1)}"


def transfer_share(result):
    """Upload and download as a share of the whole run (transfers + evaluate)."""
    t = result.get("transfers_ms", {})
    moved = t.get("upload_inputs", 0.0) + t.get("download_outputs", 0.0)
    evaluate = result.get("phases_ms_median", {}).get("evaluate_total", 0.0)
    return moved / (moved + evaluate) if moved + evaluate > 0 else None


def run_table(run):
    lines = ["| batch | bootstraps/s | ms per bootstrap | blind rotation | key switching "
             "| transfers | FP64 of peak | shape | errors |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in run["results"]:
        phases = r.get("phases_ms_median", {})
        evaluate = phases.get("evaluate_total", 0.0)
        share = transfer_share(r)
        lines.append(
            f"| {r['batch']} | {r['bootstraps_per_s_median']:,.0f} "
            f"| {r['ms_per_bootstrap_median']:.4f} "
            f"| {percent(phases.get('blind_rotation', 0.0), evaluate)} "
            f"| {percent(phases.get('key_switching', 0.0), evaluate)} "
            f"| {'-' if share is None else f'{100.0 * share:.1f}%'} "
            f"| {r.get('fp64_percent_of_peak', 0.0):.1f}% | {shape_text(r)} | {r['errors']} |")
    return lines


def best(runs, engine, batches, key):
    """The best value of `key` over the runs of `engine` at the given batch sizes."""
    values = [r[key] for run in runs if run["engine"] == engine
              for r in run["results"] if r["batch"] in batches]
    return max(values) if values else None


def targets(runs):
    lines = ["Targets (issues 3 and 5, tfhe_lib_128):", ""]

    def line(what, value, text, ok):
        if value is None:
            lines.append(f"- {what}: not measured in these reports")
        else:
            lines.append(f"- {what}: {text} ({'met' if ok else 'NOT met'})")

    cufft = best(runs, "cufft", {16384, 65536}, "bootstraps_per_s_median")
    line("cuFFT engine, large batch, at least 15,000 bootstraps/s", cufft,
         f"{cufft:,.0f}/s" if cufft else "", cufft is not None and cufft >= 15000)
    shares = [transfer_share(r) for run in runs if run["engine"] == "cufft"
              for r in run["results"] if r["batch"] == 16384]
    shares = [s for s in shares if s is not None]
    share = min(shares) if shares else None
    line("transfers at most 5% of a 16,384-gate run (cuFFT engine)", share,
         f"{100.0 * share:.1f}%" if share is not None else "", share is not None and share <= 0.05)
    fused = best(runs, "fused", {16384, 65536}, "bootstraps_per_s_median")
    line("fused engine, large batch, at least 100,000 bootstraps/s", fused,
         f"{fused:,.0f}/s" if fused else "", fused is not None and fused >= 100000)
    latencies = [r["median_s"] * 1e3 for run in runs if run["engine"] == "fused"
                 for r in run["results"] if r["batch"] == 1]
    latency = min(latencies) if latencies else None
    line("fused engine, batch 1, at most 1 ms", latency,
         f"{latency:.3f} ms" if latency is not None else "", latency is not None and latency <= 1.0)
    return lines


def summary(reports):
    out = ["# GPU benchmark summary", ""]
    for name, report in reports:
        d = report["device"]
        p = report["parameters"]
        out.append(f"## {p['name']}: `{name}`")
        out.append("")
        out.append(f"Device {d['name']} (compute capability {d.get('compute_capability', '?')}, "
                   f"{d.get('multiprocessors', '?')} multiprocessors, FP64 peak "
                   f"{d.get('peak_fp64_flops', 0) / 1e12:.1f} TFLOP/s, memory "
                   f"{d.get('peak_memory_bytes_per_s', 0) / 1e9:.0f} GB/s); commit "
                   f"{report.get('commit', '?')}, {report.get('date', '?')}; medians of "
                   f"{report['runs'][0]['results'][0]['reps'] if report['runs'] and report['runs'][0]['results'] else '?'} "
                   f"repetitions; nominal work {report.get('nominal_fp64_per_bootstrap', 0) / 1e6:.1f} "
                   "MFLOP per bootstrap.")
        out.append("")
        for run in report["runs"]:
            out.append(f"Engine {ENGINE_NAMES.get(run['engine'], run['engine'])}, key switching "
                       f"{run['key_switching']}, device keys {run['device_key_bytes'] / 1e6:.1f} MB "
                       f"made in {run['device_key_upload_s']:.2f} s:")
            out.append("")
            out.extend(run_table(run))
            out.append("")
        if p["name"] == "tfhe_lib_128":
            out.extend(targets(report["runs"]))
            out.append("")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the OUT_DIR of scripts/gpu_run.sh")
    parser.add_argument("--out", help="write the summary here instead of stdout")
    args = parser.parse_args()
    if not os.path.isdir(args.dir):
        raise SystemExit(f"gpu_summary: {args.dir} is not a directory")
    reports = load_reports(args.dir)
    if not reports:
        raise SystemExit(f"gpu_summary: no bench_gates_gpu_*.json in {args.dir}")
    text = summary(reports)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
