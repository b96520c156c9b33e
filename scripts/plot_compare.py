#!/usr/bin/env python3
"""Plots and speedup tables of a comparison run (build/apps/compare/compare_backends).

Reads DIR/results.csv and the published numbers (docs/results/published_gtx1080.csv) and
writes, next to the results:
  plot_<group>.png  one figure per workload group: median time against size, one panel per
                    workload (and operand type), one line per backend and parameter set,
                    error bars from the fastest to the slowest run, log scales; the published
                    GPU numbers whose size is known are drawn as black stars;
  speedups.md       a markdown table per group: every backend's median time, its speedup
                    over the sequential backend, and over the published GPU numbers.
Only measured results (status ok, a time above 0) are drawn or used as times. A skipped item
shows as "skipped" with its estimated time marked "est.": an estimate, not a measurement.
Plots of groups no longer in the results are removed. A results.csv that is missing or cannot be
read (not text, columns missing, rows cut short) is refused with a message and exit status 2.

usage: plot_compare.py DIR [--published CSV] [--out DIR]
"""
import argparse
import csv
import math
import os
import sys
from collections import OrderedDict

GROUPS = ["gates", "compound", "addition", "vector", "multiplication", "matrix", "regression"]
BACKEND_ORDER = ["sequential", "openmp", "gpu"]
COLORS = {"sequential": "tab:blue", "openmp": "tab:orange", "gpu": "tab:green"}
MARKERS = ["o", "s", "^", "v", "D"]
LINESTYLES = ["-", "--", ":", "-."]


# The columns this script reads from results.csv.
REQUIRED = ["group", "panel", "variant", "workload", "size", "x_name", "x", "backend", "params",
            "threads", "status", "median_s", "min_s", "max_s", "bootstraps", "depth",
            "estimated_s", "machine", "commit"]
# The published numbers' columns that the plots and tables read.
PUBLISHED_REQUIRED = ("group", "x_name", "x", "seconds", "platform", "source")


def fail(message):
    """Exit with status 2 (an error, as compare_backends'), the message on stderr."""
    print("plot_compare.py: " + message, file=sys.stderr)
    sys.exit(2)


def import_pyplot():
    """matplotlib.pyplot (file-only Agg backend) and ticker, or exit saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        hint = ""
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
            hint = ("\n  (this is %s; the system interpreter may have it: "
                    "/usr/bin/python3 %s ...)" % (sys.executable, sys.argv[0]))
        fail("matplotlib is not installed for this Python interpreter.\n"
             "  Install it with: apt-get install python3-matplotlib (Debian; scripts/setup.sh "
             "does it)\n  or: python3 -m pip install matplotlib" + hint)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker
    return plt, ticker


def read_csv(path, required=(), kind="a results.csv of compare_backends"):
    """The rows of a CSV file as dicts; exits (status 2) when it cannot be read, lacks one of
    the required columns or has a row with fewer or more fields than its header."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail("cannot read %s: %s" % (path, e))
    missing = [c for c in required if c not in header]
    if missing:
        fail("%s lacks the column%s %s (not %s?)"
             % (path, "s" if len(missing) > 1 else "", ", ".join(missing), kind))
    for number, row in enumerate(rows, start=2):
        if None in row or any(v is None for v in row.values()):
            fail("%s line %d has %s fields than its header (a damaged or cut file)"
                 % (path, number, "more" if None in row else "fewer"))
    return rows


def fnum(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def measured(r):
    """The median time of a measured result (status ok, a time above 0), else None."""
    t = fnum(r["median_s"])
    return t if r["status"] == "ok" and t is not None and t > 0 else None


def fmt_seconds(s):
    if s is None:
        return "-"
    if s < 1:
        return "%.1f ms" % (1e3 * s)
    if s < 100:
        return "%.2f s" % s
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return "%d:%02d:%02d" % (h, m, sec) if h else "%d:%02d" % (m, sec)


def backend_label(backend, rows):
    threads = {r["threads"] for r in rows if r["backend"] == backend and r["threads"]}
    if backend == "openmp" and len(threads) == 1:
        return "openmp (%s thr)" % threads.pop()
    return backend


def ordered(values, order):
    known = [v for v in order if v in values]
    return known + sorted(v for v in values if v not in order)


def published_for(published, group, x_name, x):
    """Published rows of a group at a known size (x), for the plots and tables."""
    out = []
    for p in published:
        if p["group"] == group and p["x_name"] == x_name and fnum(p["x"]) == x and fnum(p["seconds"]):
            out.append(p)
    return out


def plot_group(plt, ticker, group, rows, published, out_dir):
    ok = [r for r in rows if measured(r) and fnum(r["x"]) is not None]
    if not ok:
        return None
    panels = list(OrderedDict.fromkeys(r["panel"] for r in rows))
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(7.5, 5.6 * ncols), 4.2 * nrows),
                             squeeze=False)
    params_list = ordered({r["params"] for r in rows}, ["tfhe_lib_80", "tfhe_lib_128"])
    for index, panel in enumerate(panels):
        ax = axes[index // ncols][index % ncols]
        prow = [r for r in ok if r["panel"] == panel]
        every = [r for r in rows if r["panel"] == panel]
        x_name = every[0]["x_name"]
        variants = list(OrderedDict.fromkeys(r["variant"] for r in every))
        for backend in ordered({r["backend"] for r in prow}, BACKEND_ORDER):
            for params in params_list:
                for vi, variant in enumerate(variants):
                    series = sorted((r for r in prow if r["backend"] == backend and r["params"] == params
                                     and r["variant"] == variant), key=lambda r: fnum(r["x"]))
                    if not series:
                        continue
                    xs = [fnum(r["x"]) for r in series]
                    med = [fnum(r["median_s"]) for r in series]
                    lo = [m - (fnum(r["min_s"]) or m) for m, r in zip(med, series)]
                    hi = [(fnum(r["max_s"]) or m) - m for m, r in zip(med, series)]
                    label = "%s, %s" % (backend_label(backend, rows), params)
                    if variant:
                        label += ", " + variant
                    ax.errorbar(xs, med, yerr=[lo, hi], color=COLORS.get(backend, "tab:gray"),
                                marker=MARKERS[params_list.index(params) % len(MARKERS)],
                                linestyle=LINESTYLES[vi % len(LINESTYLES)], capsize=3, label=label)
        xs_all = sorted({fnum(r["x"]) for r in every})
        first_star = True
        for x in xs_all:
            for p in published_for(published, group, x_name, x):
                ax.plot([x], [fnum(p["seconds"])], marker="*", color="black", markersize=13,
                        linestyle="none",
                        label=("published %s (%s)" % (p["platform"], p["source"])) if first_star else None)
                first_star = False
        ax.set_yscale("log")
        # Labels at 1, 2 and 5 times the powers of ten: readable even within one decade.
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
        if x_name == "values":  # regression shapes: ticks named by shape
            shapes = OrderedDict((fnum(r["x"]), r["size"].split(" ")[0]) for r in every)
            ax.set_xscale("log")
            ax.set_xticks(list(shapes.keys()))
            ax.set_xticklabels(list(shapes.values()))
            ax.minorticks_off()
            ax.set_xlabel("dataset rows x attributes")
        else:
            if len(xs_all) > 1 and xs_all[-1] / max(xs_all[0], 1e-9) >= 4:
                ax.set_xscale("log", base=2)
            ax.set_xticks(xs_all)
            ax.set_xticklabels(["%g" % x for x in xs_all])
            ax.minorticks_off()
            ax.set_xlabel({"bits": "bits", "length": "vector length (elements)",
                           "dimension": "matrix dimension q (q x q)"}.get(x_name, x_name))
        ax.set_ylabel("median time per run (s)")
        ax.set_title(panel, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    for index in range(len(panels), nrows * ncols):
        axes[index // ncols][index % ncols].axis("off")
    fig.suptitle("%s: measured time against size (error bars: fastest to slowest run)" % group,
                 fontsize=12)
    fig.tight_layout()
    path = os.path.join(out_dir, "plot_%s.png" % group)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def speedup_table(group, rows, published):
    """Markdown: per workload, size and parameter set, every backend's time and speedups."""
    backends = ordered({r["backend"] for r in rows}, BACKEND_ORDER)
    others = [b for b in backends if b != "sequential"]
    items = list(OrderedDict.fromkeys((r["workload"], r["size"], r["params"], r["x_name"], r["x"])
                                      for r in rows))
    has_pub = any(published_for(published, group, i[3], fnum(i[4])) for i in items)
    head = ["workload", "size", "params", "bootstraps", "depth"]
    head += [backend_label(b, rows) for b in backends]
    if "sequential" in backends:
        head += ["%s vs sequential" % b for b in others]
    if has_pub:
        head += ["published GPU (s)"] + ["%s vs published" % b for b in backends]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "--:|" * (len(head) - 3)]
    for workload, size, params, x_name, x in items:
        cell = {}
        times = {}
        boots = depth = ""
        for b in backends:
            match = [r for r in rows if (r["workload"], r["size"], r["params"], r["backend"]) ==
                     (workload, size, params, b)]
            if not match:
                cell[b] = "-"
                continue
            r = match[-1]
            boots, depth = r["bootstraps"] or boots, r["depth"] or depth
            if measured(r):
                times[b] = measured(r)
                cell[b] = fmt_seconds(times[b])
            elif r["status"] == "ok":
                cell[b] = "-"
            elif r["status"] == "skipped":
                est = fnum(r["estimated_s"])
                cell[b] = "skipped (est. %s)" % fmt_seconds(est) if est else "skipped"
            else:
                cell[b] = "**WRONG**"
        row = [workload, size, params, boots, depth] + [cell[b] for b in backends]
        if "sequential" in backends:
            for b in others:
                if b in times and "sequential" in times:
                    row.append("%.2fx" % (times["sequential"] / times[b]))
                else:
                    row.append("-")
        if has_pub:
            # Test-only parameter sets are no basis for a comparison with published numbers.
            pubs = [] if "INSECURE" in params else published_for(published, group, x_name, fnum(x))
            pub = fnum(pubs[0]["seconds"]) if pubs else None
            row.append(fmt_seconds(pub) if pub else "-")
            for b in backends:
                row.append("%.2fx" % (pub / times[b]) if pub and b in times else "-")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the --out folder of compare_backends (holds results.csv)")
    default_published = os.path.join(here, "..", "docs", "results", "published_gtx1080.csv")
    ap.add_argument("--published", default=default_published,
                    help="published numbers (default docs/results/published_gtx1080.csv)")
    ap.add_argument("--out", help="where the PNGs and speedups.md go (default: DIR)")
    args = ap.parse_args()
    results_path = os.path.join(args.dir, "results.csv")
    if not os.path.exists(results_path):
        fail("%s not found; run compare_backends --out %s first" % (results_path, args.dir))
    plt, ticker = import_pyplot()
    rows = read_csv(results_path, REQUIRED)
    if not rows:
        fail("%s holds no results" % results_path)
    published = (read_csv(args.published, PUBLISHED_REQUIRED, "a file of published numbers")
                 if os.path.exists(args.published) else [])
    published_name = ("docs/results/published_gtx1080.csv" if args.published == default_published
                      else args.published)
    if not published:
        print("plot_compare.py: note: no published numbers (%s not found)" % args.published, file=sys.stderr)
    out_dir = args.out or args.dir
    os.makedirs(out_dir, exist_ok=True)

    md = ["# Comparison speedups", "",
          "Median seconds per run of every measured item (status ok); `skipped (est. T)` is an "
          "estimate from the exact bootstrap count and the backend's measured speed, not a "
          "measurement. `B vs sequential` = sequential time / B time; `B vs published` = published "
          "time / B time (above 1: ours is faster). Published GPU numbers: %s (sources in "
          "docs/comparison.md)." % published_name, ""]
    machines = sorted({r["machine"] for r in rows if r["machine"]})
    commits = sorted({r["commit"] for r in rows if r["commit"]})
    md += ["Machine: %s. Commit: %s." % ("; ".join(machines) or "?", ", ".join(commits) or "?"), ""]
    written = []
    for group in ordered({r["group"] for r in rows}, GROUPS):
        grows = [r for r in rows if r["group"] == group]
        path = plot_group(plt, ticker, group, grows, published, out_dir)
        if path:
            written.append(path)
        md += ["## %s" % group, ""]
        if path:
            md += ["![%s](%s)" % (group, os.path.basename(path)), ""]
        md += [speedup_table(group, grows, published), ""]
    wrong = [r for r in rows if r["status"] == "wrong"]
    if wrong:
        md += ["**%d results decrypted WRONG**: see the `check` column of results.csv." % len(wrong), ""]
    md_path = os.path.join(out_dir, "speedups.md")
    with open(md_path, "w") as f:
        f.write("\n".join(md))
    written.append(md_path)
    # Plots of groups these results no longer hold (an --overwrite run with fewer workloads).
    for group in GROUPS:
        stale = os.path.join(out_dir, "plot_%s.png" % group)
        if stale not in written and os.path.exists(stale):
            os.remove(stale)
            print("removed", stale, "(no measured results of that group)")
    for p in written:
        print("wrote", p)


if __name__ == "__main__":
    main()
