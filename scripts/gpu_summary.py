#!/usr/bin/env python3
"""Docs-ready summary of the GPU benchmark reports that scripts/gpu_run.sh writes.

Reads every bench_gates_gpu_*.json (bench_gates --backend gpu --json) and every
bench_circuits_gpu_*.json (bench_circuits --backend gpu --json) in DIR and writes a markdown
summary: the device, commit and date of each report; per parameter set, engine and key
switching a table of every batch size (bootstraps per second, ms per bootstrap, the share of
the blind rotation, the key switching and the transfers, the nominal FP64 work as a share of
the device's peak, the fused engine's launch shape); the transfers of the large batches
(16,384 and 65,536 gates) of every run, direct or through pinned staging buffers, in ms and
GB/s; for tfhe_lib_128 the targets of issues 3 and 5 with the measured value and whether it
is met (the best run over all reports, named; the transfer target over both transfer modes);
per parameter set and key form with forced fused launch shapes, the rotation kernel's own
rate of every shape beside the one the engine chose; per parameter set with fused runs of
several key forms at 16,384 or 65,536 gates, each key form's and shape's best rate, fastest
first; per A/B comparison of the bundle, lanes and variants steps (report names in
AB_GROUPS) each label's times against the baseline's and the decisions they support
(docs/gpu.md sections 6.25 to 6.29); per circuit report a table of every operation
(bootstraps, depth, time, time per level, transfer share, the noise model's chance of a wrong
bit per run); and for tfhe_lib_128 the circuit targets of DESIGN.md section 11 (32-bit add,
32-bit multiply, transfer share; the first two name an H100, as issue 5's do), the best run named with
its key form and that chance. Only
numbers found in the reports are written; a target whose measurement is missing says so.

usage: gpu_summary.py DIR [--out FILE]
"""
import argparse
import glob
import json
import os
import re
import sys

ENGINE_NAMES = {"cufft": "cuFFT-batched", "fused": "fused"}
# The batch sizes of the transfer table: where the transfers weigh.
TRANSFER_BATCHES = (16384, 65536)


def load_reports(directory, pattern, program, keys, unreadable):
    """The reports of `program` matching `pattern`, each checked for the top-level `keys`. A
    file that is not such a report (empty, cut short by a run stopped while it wrote, another
    program's) is left out, named in `unreadable` with the reason and on stderr: one bad file
    does not cost the summary of the others."""
    reports = []
    for path in sorted(glob.glob(os.path.join(directory, pattern))):
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            unreadable.append((name, f"not valid JSON ({e})"))
            continue
        if (not isinstance(report, dict) or report.get("benchmark") != program
                or any(k not in report for k in keys)):
            unreadable.append((name, f"not a GPU report of {program} "
                                     f"(no {' or '.join(repr(k) for k in keys)})"))
            continue
        reports.append((name, report))
    for name, why in unreadable:
        print(f"gpu_summary: left out {name}: {why}", file=sys.stderr)
    return reports


def runs_without_reports(directory):
    """The bench_*_gpu_*.log files whose command wrote no JSON report (a run that failed, was
    stopped, or skipped at the DEADLINE before it began writes its log only)."""
    missing = []
    for log in sorted(glob.glob(os.path.join(directory, "bench_*_gpu_*.log"))):
        if not os.path.exists(log[:-len(".log")] + ".json"):
            missing.append(os.path.basename(log))
    return missing


def percent(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "-"


def shape_text(result):
    """The fused engine's launch shape: GxR (groups per rotation x rotations per block), cC
    (a thread block cluster of C blocks per rotation; wC with 4 points per thread; a suffix
    e where every block sums the column it decomposes, then b where the group steps ran on
    bundled keys, bo where those were made while the rotation ran) or lP (P rotations per thread; clusters and lanes never combine), lP and
    GxR with a suffix s where the key rows came through the TMA's stage. Reports made before
    bench_gates recorded clusters or lanes are GxR."""
    cluster = result.get("fused_cluster_blocks", 0)
    if cluster > 1:
        every = "e" if result.get("fused_cluster_sums", 0) == 2 else ""
        bundled = {0: "", 1: "b"}.get(result.get("fused_bundle", 0), "bo")
        return (f"{'w' if result.get('fused_cluster_points', 0) == 4 else 'c'}{cluster}"
                f"{every}{bundled}")
    staged = "s" if result.get("fused_key_stage", 0) else ""
    lanes = result.get("fused_lanes", 0)
    if lanes > 1:
        return f"l{lanes}{staged}"
    groups = result.get("fused_groups", 0)
    if not groups:
        return "-"
    return f"{groups}x{result.get('fused_rotations_per_block', 1)}{staged}"


def shape_order(text):
    """GxR shapes by G then R, then the clusters (cC, cCb, cCbo, cCe, cCeb, cCebo, wC, wCe)
    by size, then the lanes (lP) by P."""
    if text[0] in "cw":
        bundled = 2 if text.endswith("bo") else 1 if text.endswith("b") else 0
        core = text[:len(text) - bundled]
        every = core.endswith("e")
        return (1, int(core[1:len(core) - every]), 6 * (text[0] == "w") + 3 * every + bundled)
    staged = int(text.endswith("s"))
    text = text[:len(text) - staged]
    if text.startswith("l"):
        return (2, int(text[1:]), staged)
    groups, rotations = text.split("x")
    return (0, int(groups), int(rotations), staged)


def transfer_share(result):
    """Upload and download as a share of the whole run (transfers + evaluate)."""
    t = result.get("transfers_ms", {})
    moved = t.get("upload_inputs", 0.0) + t.get("download_outputs", 0.0)
    evaluate = result.get("phases_ms_median", {}).get("evaluate_total", 0.0)
    return moved / (moved + evaluate) if moved + evaluate > 0 else None


def transfer_mode(run):
    """A run's transfer mode; reports made before bench_gates recorded it: direct."""
    return run.get("transfer", "direct")


def staging_text(run):
    """" (8 MiB staging)" for a pinned run whose report gives its staging buffers' size;
    else empty."""
    staging = run.get("staging_bytes")
    if transfer_mode(run) != "pinned" or not staging:
        return ""
    if staging % (1 << 20) == 0:
        return f" ({staging >> 20} MiB staging)"
    return f" ({staging / 1024:g} KiB staging)"


def gb_per_s(nbytes, ms):
    return f"{nbytes / (ms / 1e3) / 1e9:.2f}" if ms > 0 else "-"


def transfer_table(reports):
    """Upload and download of every run's large batches (TRANSFER_BATCHES), with the mode:
    ms (the caller's wait), GB/s and their share of the run. Bytes moved: two input batches
    of LWE samples of n + 1 32-bit words up, one batch down."""
    lines = []
    for name, report in reports:
        words = report["parameters"]["lwe_dimension"] + 1
        for run in report["runs"]:
            for r in run["results"]:
                if r["batch"] not in TRANSFER_BATCHES:
                    continue
                t = r.get("transfers_ms", {})
                up, down = t.get("upload_inputs", 0.0), t.get("download_outputs", 0.0)
                share = transfer_share(r)
                lines.append(
                    f"| `{name}` | {ENGINE_NAMES.get(run['engine'], run['engine'])} "
                    f"| {run['key_switching']} | {r['batch']} "
                    f"| {transfer_mode(run)}{staging_text(run)} "
                    f"| {up:.3f} | {down:.3f} | {gb_per_s(r['batch'] * 2 * words * 4, up)} "
                    f"| {gb_per_s(r['batch'] * words * 4, down)} "
                    f"| {'-' if share is None else f'{100.0 * share:.1f}%'} |")
    if not lines:
        return []
    return ["## Transfers: direct vs pinned", "",
            "Both input batches to the device (upload) and the outputs back (download) of "
            "every run's batches of " + " and ".join(f"{b:,}" for b in TRANSFER_BATCHES) +
            " gates: the caller's wait (medians, ms), GB/s of the LWE samples moved (2 x batch "
            "x (n+1) x 4 bytes up, batch x (n+1) x 4 down) and their share of transfers + "
            "evaluate. Reports without a transfer mode are direct.", "",
            "| report | engine | key switching | batch | transfer | upload ms | download ms "
            "| upload GB/s | download GB/s | transfers |",
            "|---|---|---|---|---|---|---|---|---|---|"] + lines + [""]


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


def is_forced(run):
    """Whether the run forced a launch shape: groups or rotations per block given, a cluster
    of more than one block, more than one lane (fused_lanes_option 0 is automatic, 1 one
    lane), or the key stage (fused_key_stage_option 2; 0 never stages until measured, so a
    staged shape is not what the engine chooses)."""
    return bool(run.get("fused_groups_option") or run.get("fused_rotations_option")
                or run.get("fused_cluster_option", 0) > 1
                or run.get("fused_lanes_option", 0) > 1
                or run.get("fused_key_stage_option", 0) == 2)


def source_text(name, run, r, with_transfer=False):
    """Where a figure comes from: the launch shape (forced or chosen), the transfer mode
    (where asked for) and the report."""
    shape = ""
    if run["engine"] == "fused":
        shape = f"shape {shape_text(r)}, {'forced' if is_forced(run) else 'chosen'}; "
    transfer = f"{transfer_mode(run)} transfers; " if with_transfer else ""
    return f"{shape}{transfer}key switching {run['key_switching']}; {name}"


# The device that issue 5's targets name (DESIGN.md section 11): a figure that meets one on
# another device is said to be met there, not met.
TARGET_DEVICE = "H100"


def target_line(what, text=None, ok=False, device=None):
    """One target's line: its measured value and whether it is met, or that it is missing.
    With `device` (the measuring device's name, for a target that names TARGET_DEVICE), a
    figure within the target on another device is "met on" that device only."""
    if text is None:
        return f"- {what}: not measured in these reports"
    if not ok:
        verdict = "NOT met"
    elif device is None or TARGET_DEVICE in device:
        verdict = "met"
    else:
        verdict = f"met on {device}; the target names an {TARGET_DEVICE}"
    return f"- {what}: {text} ({verdict})"


def targets(entries):
    """The targets of issues 3 and 5 over (report name, run, report) triples of tfhe_lib_128:
    the best error-free run of each engine, named with its launch shape, key form (where not
    the standard key) and report; issue 5's with the device where it is not an H100."""
    lines = ["Targets (issues 3 and 5, tfhe_lib_128; the best run of every report):", ""]

    def pick(engine, batches, value, better):
        # A result with errors meets nothing: its words were wrong (an A/B build, say).
        found = [(value(r), name, run, r, report) for name, run, report in entries
                 if run["engine"] == engine
                 for r in run["results"] if r["batch"] in batches and not r.get("errors")
                 and value(r) is not None]
        return better(found, key=lambda x: x[0]) if found else None

    def line(what, found, text, ok, with_transfer=False, on_device=False):
        if found is None:
            lines.append(target_line(what))
        else:
            v, name, run, r, report = found
            unroll = key_form(report)
            form = f"{key_form_name(unroll)}, " if unroll != 1 else ""
            lines.append(target_line(
                what, f"{text(v)} (batch {r['batch']}, {form}"
                f"{source_text(name, run, r, with_transfer)})",
                ok(v), report["device"]["name"] if on_device else None))

    rate = lambda r: r["bootstraps_per_s_median"]
    line("cuFFT engine, large batch, at least 15,000 bootstraps/s",
         pick("cufft", {16384, 65536}, rate, max), lambda v: f"{v:,.0f}/s", lambda v: v >= 15000)
    # The better of the transfer modes: the lowest share over direct and pinned runs, named.
    line("transfers at most 5% of a 16,384-gate run (cuFFT engine)",
         pick("cufft", {16384}, transfer_share, min), lambda v: f"{100.0 * v:.1f}%",
         lambda v: v <= 0.05, with_transfer=True)
    line("fused engine, large batch, at least 100,000 bootstraps/s",
         pick("fused", {16384, 65536}, rate, max), lambda v: f"{v:,.0f}/s", lambda v: v >= 100000,
         on_device=True)
    line("fused engine, batch 1, at most 1 ms",
         pick("fused", {1}, lambda r: r["median_s"] * 1e3, min), lambda v: f"{v:.3f} ms",
         lambda v: v <= 1.0, on_device=True)
    return lines


KEY_FORMS = {1: "standard key", 2: "key in pairs", 3: "key in threes", 4: "key in fours"}


def key_form_name(unroll):
    """'key in pairs' for --unroll 2, ..., 'unroll U' for a form without a name."""
    return KEY_FORMS.get(unroll, f"unroll {unroll}")


def key_form(report):
    """The report's bootstrapping key form (bench_gates --unroll; 1 where not recorded)."""
    return report.get("bootstrapping_key_unroll") or 1


def params_title(params, unroll):
    """'tfhe_lib_128' for the standard key, 'tfhe_lib_128, key in pairs (--unroll 2)' else."""
    if unroll == 1:
        return params
    return f"{params}, {key_form_name(unroll)} (--unroll {unroll})"


def fused_rotation_results(reports):
    """(report, run, result, blind rotations/s) of every error-free fused result whose blind
    rotation took time: the rotation kernel's own rate (batch over its device time, so the key
    switching does not count)."""
    for _, report in reports:
        for run in report["runs"]:
            if run["engine"] != "fused":
                continue
            for r in run["results"]:
                ms = r.get("phases_ms_median", {}).get("blind_rotation", 0.0)
                if ms > 0 and r["errors"] == 0:
                    yield report, run, r, r["batch"] / (ms / 1e3)


def shape_study(reports):
    """Per parameter set and key form with forced fused launch shapes: the blind rotation's
    own rate (batch over its device time, so the key switching does not count) of every shape
    at every batch size, beside the shape the engine chose: the data to tune its choice with.
    Each key form apart: its steps differ."""
    out = []
    by_params = {}
    for report, run, r, v in fused_rotation_results(reports):
        study = by_params.setdefault((report["parameters"]["name"], key_form(report)),
                                     {"forced": {}, "auto": {}})
        if is_forced(run):
            cell = study["forced"].setdefault(shape_text(r), {})
            cell[r["batch"]] = max(cell.get(r["batch"], 0.0), v)
        elif v > study["auto"].get(r["batch"], (0.0, ""))[0]:
            study["auto"][r["batch"]] = (v, shape_text(r))
    for (params, unroll), study in sorted(by_params.items()):
        if not study["forced"]:
            continue
        shapes = sorted(study["forced"], key=shape_order)
        batches = sorted(set(study["auto"]) | {b for c in study["forced"].values() for b in c})
        out += [f"## Fused launch shapes, {params_title(params, unroll)}", "",
                "Blind rotations per second of the rotation kernel's own device time (the key "
                "switching left out), per forced shape (groups per rotation x rotations per "
                "block, cC: a cluster of C blocks per rotation (wC: 4 points per thread; a "
                "suffix e: every block sums its column), or lP: P rotations per thread) "
                "and the shape the engine chose:", "",
                "| batch | chosen | " + " | ".join(shapes) + " | fastest |",
                "|---|---|" + "---|" * len(shapes) + "---|"]
        for b in batches:
            cells = [(v, f"{t}, forced") for t in shapes
                     for v in [study["forced"][t].get(b)] if v is not None]
            auto = study["auto"].get(b)
            if auto:
                cells.append((auto[0], f"{auto[1]}, chosen"))
            fastest = max(cells)[1] if cells else "-"
            out.append(f"| {b} | " + (f"{auto[0]:,.0f} ({auto[1]})" if auto else "-") + " | " +
                       " | ".join(f"{study['forced'][t][b]:,.0f}" if b in study["forced"][t]
                                  else "-" for t in shapes) + f" | {fastest} |")
        out.append("")
    return out


def key_form_study(reports):
    """Per parameter set with fused runs of more than one key form at the large batches
    (TRANSFER_BATCHES): each key form's and launch shape's best bootstraps/s and blind
    rotations/s (the rotation kernel's own device time), fastest first: which key form and
    shape a large batch should take (docs/gpu.md section 6.27)."""
    out = []
    by_params = {}
    for report, run, r, rotations in fused_rotation_results(reports):
        if r["batch"] not in TRANSFER_BATCHES:
            continue
        cells = by_params.setdefault(report["parameters"]["name"], {})
        key = (r["batch"], key_form(report), shape_text(r), run["key_switching"])
        best = (r["bootstraps_per_s_median"], rotations)
        cells[key] = max(cells.get(key, best), best)
    for params, cells in sorted(by_params.items()):
        if len({form for _, form, _, _ in cells}) < 2:
            continue
        out += [f"## Key forms at large batches, {params}", "",
                "The fused engine's best run of each key form, launch shape and key switching "
                "(blind rotations/s: the rotation kernel's own device time), fastest first:", "",
                "| batch | key | shape | key switching | bootstraps/s | blind rotations/s |",
                "|---|---|---|---|---|---|"]
        for (batch, form, shape, ks), (rate, rotations) in sorted(
                cells.items(), key=lambda kv: (kv[0][0], -kv[1][0])):
            out.append(f"| {batch} | {key_form_name(form)} | {shape} | {ks} | "
                       f"{rate:,.0f} | {rotations:,.0f} |")
        out.append("")
    return out


# The A/B comparisons that gpu_run.sh's steps write, by report name: the baseline's label
# first. Each is a question docs/gpu.md's sections 6.25 to 6.29 left for a GPU to answer.
# A difference under these shares of the baseline's time decides nothing: a blind
# rotation's device time (identical builds within 0.6% in docs/gpu.md section 6.24) and a
# whole bootstrap's wall time (identical builds 3.1% apart at batch 1 there: 1.490 and 1.536
# ms, host and key switching included).
AB_NOISE = {"rotation": 0.01, "total": 0.03}
AB_GROUPS = (
    # (pattern: params, key, label; title; labels in order, the baseline first)
    (re.compile(r"bench_gates_gpu_(?P<params>.+)_bundle(?P<key>[234])_(?P<label>off|on|overlap)"
                r"\.json$"),
     "Bundled keys, {key} (the `bundle` step; docs/gpu.md sections 6.25 and 6.26)",
     ("off", "on", "overlap")),
    (re.compile(r"bench_gates_gpu_(?P<params>.+)_(?P<label>lanes1|lanes2|lanes3|lanes2_1x1|"
                r"lanes3_1x1)\.json$"),
     "Large batches on two lanes (the `lanes` step; docs/gpu.md sections 6.27 and 6.38)",
     ("lanes1", "lanes2", "lanes3", "lanes2_1x1", "lanes3_1x1")),
    # One group per shape: each compares with its own key from L2, round by round.
    (re.compile(r"bench_gates_gpu_(?P<params>.+)_stage_(?P<key>l2|1x1)_(?P<label>(?:off|on)_[12])"
                r"\.json$"),
     "The key stage on large batches, {key} (the `stage` step; docs/gpu.md section 6.34)",
     ("off_1", "on_1", "off_2", "on_2")),
    (re.compile(r"bench_gates_gpu_variant_(?P<label>.+)\.json$"),
     "Builds side by side (the `variants` step; docs/gpu.md sections 6.28 and 6.29)",
     ("now",)),
)
AB_LABELS = {"off": "group steps (--fused-bundle 1)", "on": "bundled (--fused-bundle 2)",
             "overlap": "bundled, overlapped (--fused-bundle-overlap 2)",
             "lanes1": "standard key, automatic shape", "lanes2": "pairs on two lanes",
             "lanes3": "threes on two lanes", "lanes2_1x1": "pairs on 1x1",
             "lanes3_1x1": "threes on 1x1",
             **{f"{mode}_{round}": f"key {'staged' if mode == 'on' else 'from L2'} (round {round})"
                for mode in ("off", "on") for round in (1, 2)}}
# What a clear win (beyond AB_NOISE) decides, per label against another: the batch it is
# read at, what is compared (the blind rotation's device time, which includes the bundling,
# or the whole bootstrap's wall time, where the change is on the host) and the action.
AB_DECISIONS = {
    ("on", "off"): (1, "rotation", "make --fused-bundle 0 bundle this key form's chunks "
                                   "(section 6.25)"),
    ("overlap", "on"): (1, "rotation", "make --fused-bundle-overlap 0 overlap where a chunk "
                                       "bundles (section 6.26)"),
    # Each key form's two lanes against its own 1x1, the shape it takes without lane room.
    ("lanes2_1x1", "lanes2"): (65536, "rotation", "take keys in pairs' lane room out of "
                                                  "fused_limits, so that --fused-lanes 0 gives "
                                                  "them 1x1 again (section 6.38)"),
    ("lanes3", "lanes3_1x1"): (65536, "rotation", "give keys in threes lane room in "
                                                  "fused_limits, so that --fused-lanes 0 takes "
                                                  "two lanes for them (section 6.38)"),
    ("columns", "now"): (16384, "rotation", "bring the column words back: revert the revert "
                                            "of 42e355d (section 6.28)"),
    ("now", "before"): (1, "total", "section 6.29's host path pays at batch 1: keep it, state "
                                    "the figure"),
    **{(f"on_{round}", f"off_{round}"):
       (65536, "rotation", "make --fused-key-stage 0 stage the standard key's chunks of this "
                           "shape, if the other round agrees (section 6.34)")
       for round in (1, 2)},
}
KEY_WORDS = {"2": "keys in pairs", "3": "keys in threes", "4": "keys in fours",
             "l2": "two lanes (l2)", "1x1": "one lane (1x1)"}


def ab_runs(reports):
    """{(group index, title): {label: (report name, result by batch, device)}} for the reports whose
    names an AB_GROUPS pattern matches: the fused engine's results (its only run in these
    reports)."""
    groups = {}
    for name, report in reports:
        for index, (pattern, title, _) in enumerate(AB_GROUPS):
            m = pattern.match(name)
            if not m:
                continue
            fields = m.groupdict()
            heading = title.format(key=KEY_WORDS.get(fields.get("key"), ""))
            if fields.get("params"):
                heading += f", {fields['params']}"
            results = {r["batch"]: r for run in report["runs"] if run["engine"] == "fused"
                       for r in run["results"]}
            groups.setdefault((index, heading), {})[fields["label"]] = (name, results,
                                                                      report["device"])
    return groups


def ab_order(index, labels):
    """The group's labels: its named ones in order (the baseline first), then the others."""
    named = [l for l in AB_GROUPS[index][2] if l in labels]
    return named + sorted(l for l in labels if l not in named)


def ab_time(r):
    """(ms per bootstrap, blind rotation ms) of a result."""
    return (r["ms_per_bootstrap_median"],
            r.get("phases_ms_median", {}).get("blind_rotation", 0.0))


def ab_verdict(ours, theirs, measure):
    """'1.12x faster', '0.93x (slower)' or 'within 1%' (AB_NOISE[measure]): their time over
    ours."""
    if ours <= 0 or theirs <= 0:
        return "-"
    if abs(theirs - ours) < AB_NOISE[measure] * theirs:
        return f"within {100 * AB_NOISE[measure]:.0f}%"
    return f"{theirs / ours:.3f}x " + ("faster" if ours < theirs else "(slower)")


def ab_study(reports):
    """Per A/B group of the reports (AB_GROUPS): every label's time per bootstrap and blind
    rotation at every batch against the baseline's, and the decisions (AB_DECISIONS) that
    the figures support. A result with errors decides nothing (its build gave wrong words)."""
    out = []
    for (index, heading), runs in sorted(ab_runs(reports).items()):
        if len(runs) < 2:
            continue  # nothing to compare with
        labels = ab_order(index, runs)
        base = labels[0]
        batches = sorted({b for _, results, _ in runs.values() for b in results})
        out += [f"## A/B: {heading}", "",
                f"Medians of each report; the ratios are the baseline's time (`{base}`: "
                f"`{runs[base][0]}`) over each label's, per bootstrap and for the blind "
                f"rotation; within {100 * AB_NOISE['total']:.0f}% per bootstrap or "
                f"{100 * AB_NOISE['rotation']:.0f}% for the rotation decides nothing.", "",
                "| batch | label | report | ms per bootstrap | blind rotation ms | against the "
                "baseline | its rotation | errors |",
                "|---|---|---|---|---|---|---|---|"]
        for b in batches:
            base_r = runs[base][1].get(b)
            for label in labels:
                name, results, _ = runs[label]
                r = results.get(b)
                if r is None:
                    continue
                per, rot = ab_time(r)
                against = rot_against = "-"
                if base_r is not None and label != base:
                    base_per, base_rot = ab_time(base_r)
                    against = ab_verdict(per, base_per, "total")
                    rot_against = ab_verdict(rot, base_rot, "rotation")
                out.append(f"| {b} | {AB_LABELS.get(label, label)} | `{name}` | {per:.4f} "
                           f"| {rot:.3f} | {against} | {rot_against} | {r['errors']} |")
        out.append("")
        decisions = []
        for (ours, theirs), (batch, measure, action) in AB_DECISIONS.items():
            if ours not in runs and theirs not in runs:
                continue  # not this group's pair
            if ours not in runs or theirs not in runs:
                gone = theirs if ours in runs else ours
                decisions.append(f"- `{ours}` against `{theirs}` at batch {batch:,}: not "
                                 f"measured (no report for `{gone}`)")
                continue
            a, b = runs[ours][1].get(batch), runs[theirs][1].get(batch)
            what = f"`{ours}` against `{theirs}` at batch {batch:,}"
            if a is None or b is None:
                decisions.append(f"- {what}: not measured in these reports")
                continue
            if any("emulator" in runs[l][2].get("name", "") for l in (ours, theirs)):
                decisions.append(f"- {what}: on the CUDA emulator, whose times decide nothing")
                continue
            if a["errors"] or b["errors"]:
                decisions.append(f"- {what}: errors in a run ({a['errors']}, {b['errors']}): "
                                 "decides nothing")
                continue
            pick = 0 if measure == "total" else 1
            t_ours, t_theirs = ab_time(a)[pick], ab_time(b)[pick]
            verdict = ab_verdict(t_ours, t_theirs, measure)
            ms = lambda t: f"{t:.3f}" if t < 10 else f"{t:.1f}"
            unit = (f"{ms(t_ours)} against {ms(t_theirs)} ms per bootstrap" if pick == 0 else
                    f"blind rotation {ms(t_ours)} against {ms(t_theirs)} ms")
            wins = t_ours < (1 - AB_NOISE[measure]) * t_theirs
            decisions.append(f"- {what}: {verdict} ({unit}): " +
                             (action if wins else "no change"))
        if decisions:
            out += ["What the figures decide:", ""] + decisions + [""]
    return out


def device_text(report):
    d = report["device"]
    return (f"Device {d['name']} (compute capability {d.get('compute_capability', '?')}, "
            f"{d.get('multiprocessors', '?')} multiprocessors, FP64 peak "
            f"{d.get('peak_fp64_flops', 0) / 1e12:.1f} TFLOP/s, memory "
            f"{d.get('peak_memory_bytes_per_s', 0) / 1e9:.0f} GB/s); commit "
            f"{report.get('commit', '?')}, {report.get('date', '?')}")


def failure_text(r):
    """The noise model's chance of a wrong bit per run (bench_circuits' log2_failure_per_run),
    '2^-62.8'; '-' where the report has none (the plaintext backend, older reports)."""
    log2_p = r.get("log2_failure_per_run")
    return "-" if log2_p is None else f"2^{log2_p:.1f}"


def circuit_table(report):
    lines = ["| operation | type | elements | bootstraps | depth | median ms | ms per level "
             "| bootstraps/s | transfers | fail/run | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        ms = 1e3 * r["median_s"]
        rate = r.get("bootstraps_per_s_median")
        share = r.get("transfer_share_median")
        lines.append(
            f"| {r['op']} | {r['type']} | {r['lanes']} | {r['bootstraps']:,} | {r['depth']} "
            f"| {ms:.3f} | {ms / r['depth'] if r['depth'] else 0:.3f} "
            f"| {'-' if rate is None else f'{rate:,.0f}'} "
            f"| {'-' if share is None else f'{100.0 * share:.2f}%'} | {failure_text(r)} "
            f"| {r['errors']} |")
    return lines


def circuit_targets(reports):
    """DESIGN.md section 11's circuit targets over every tfhe_lib_128 circuit report."""
    lines = ["Circuit targets (DESIGN.md section 11, tfhe_lib_128; add and multiply on one element):", ""]
    rows = [(report, r) for _, report in reports for r in report["results"]]

    def fastest(prefix):
        found = [(r["median_s"] * 1e3, r, report) for report, r in rows
                 if r["op"].startswith(prefix) and r["width"] == 32 and r["lanes"] == 1
                 and r["errors"] == 0]
        return min(found, key=lambda x: x[0]) if found else None

    def line(what, best, limit):
        if best is None:
            lines.append(target_line(what))
            return
        ms, r, report = best
        unroll = key_form(report)
        form = f", {key_form_name(unroll)}" if unroll != 1 else ""
        failure = (f", fail/run {failure_text(r)}" if r.get("log2_failure_per_run") is not None
                   else "")
        lines.append(target_line(
            what, f"{ms:.2f} ms ({r['op']}, depth {r['depth']}, "
            f"{report.get('backend_description', report.get('gpu_engine', '?'))}{form}{failure})",
            ms <= limit, report.get("device", {}).get("name", "?")))

    line("32-bit add at most 10 ms", fastest("add."), 10.0)
    line("32-bit multiply, 32-bit result, at most 30 ms", fastest("mul.wrapping."), 30.0)
    shares = [(r.get("transfer_share_median"), r) for _, r in rows
              if r.get("transfer_share_median") is not None]
    what = "transfers at most 5% of a GPU circuit run"
    if not shares:
        lines.append(target_line(what))
    else:
        worst, r = max(shares, key=lambda x: x[0])
        lines.append(target_line(
            what, f"at most {100.0 * worst:.2f}% over {len(shares)} runs (largest: {r['op']} "
            f"{r['type']}, {r['lanes']} element{'s' if r['lanes'] != 1 else ''})", worst <= 0.05))
    return lines


def circuits_summary(reports):
    out = []
    for name, report in reports:
        p = report["parameters"]
        first = report["results"][0] if report["results"] else {}
        out.append(f"## Circuits, {params_title(p['name'], key_form(report))}: `{name}`")
        out.append("")
        out.append(f"{device_text(report)}; engine "
                   f"{report.get('backend_description', report.get('gpu_engine', '?'))}. Median "
                   f"of {first.get('reps', '?')} run(s) of record + compile + execute; transfers: "
                   "the inputs' upload before and the result's download after each run, as a "
                   "share of upload + run + download.")
        out.append("")
        out.extend(circuit_table(report))
        out.append("")
    lib128 = [(n, r) for n, r in reports if r["parameters"]["name"] == "tfhe_lib_128"]
    if lib128:
        out.extend(circuit_targets(lib128))
        out.append("")
    return out


def summary(reports, circuit_reports=()):
    out = ["# GPU benchmark summary", ""]
    for name, report in reports:
        p = report["parameters"]
        out.append(f"## {p['name']}: `{name}`")
        out.append("")
        unroll = report.get("bootstrapping_key_unroll", 1)
        if unroll in (2, 3, 4):
            steps = {2: "pair steps, docs/gpu.md section 6.9",
                     3: "key bits in threes, docs/gpu.md section 6.19",
                     4: "key bits in fours, on bundled keys, docs/gpu.md section 6.25"}[unroll]
            out.append(f"With an **unrolled bootstrapping key** (`--unroll {unroll}`: {steps}).")
            out.append("")
        out.append(f"{device_text(report)}; medians of "
                   f"{report['runs'][0]['results'][0]['reps'] if report['runs'] and report['runs'][0]['results'] else '?'} "
                   f"repetitions; nominal work {report.get('nominal_fp64_per_bootstrap', 0) / 1e6:.1f} "
                   "MFLOP per bootstrap.")
        out.append("")
        for run in report["runs"]:
            pinned = (f", {transfer_mode(run)} transfers{staging_text(run)}"
                      if transfer_mode(run) != "direct" else "")
            out.append(f"Engine {ENGINE_NAMES.get(run['engine'], run['engine'])}, key switching "
                       f"{run['key_switching']}{pinned}, device keys "
                       f"{run['device_key_bytes'] / 1e6:.1f} MB made in "
                       f"{run['device_key_upload_s']:.2f} s:")
            out.append("")
            out.extend(run_table(run))
            out.append("")
    out.extend(transfer_table(reports))
    entries = [(name, run, report) for name, report in reports
               if report["parameters"]["name"] == "tfhe_lib_128" for run in report["runs"]]
    if entries:
        out.extend(targets(entries))
        out.append("")
    out.extend(shape_study(reports))
    out.extend(key_form_study(reports))
    out.extend(ab_study(reports))
    out.extend(circuits_summary(circuit_reports))
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the OUT_DIR of scripts/gpu_run.sh")
    parser.add_argument("--out", help="write the summary here instead of stdout")
    args = parser.parse_args()
    if not os.path.isdir(args.dir):
        raise SystemExit(f"gpu_summary: {args.dir} is not a directory")
    unreadable = []
    reports = load_reports(args.dir, "bench_gates_gpu_*.json", "bench_gates", ("runs", "device"),
                           unreadable)
    circuit_reports = load_reports(args.dir, "bench_circuits_gpu_*.json", "bench_circuits",
                                   ("results", "device"), unreadable)
    if not reports and not circuit_reports:
        raise SystemExit(f"gpu_summary: no bench_gates_gpu_*.json or bench_circuits_gpu_*.json "
                         f"report in {args.dir} that reads")
    text = summary(reports, circuit_reports)
    missing = runs_without_reports(args.dir)
    if unreadable or missing:
        text += "\n## Runs without a report\n\n"
        text += "".join(f"- `{name}`: {why}; left out\n" for name, why in unreadable)
        text += "".join(f"- `{name}`: no JSON beside it (the run failed, was stopped or was "
                        f"skipped at the DEADLINE; the log says which)\n" for name in missing)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
