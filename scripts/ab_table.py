#!/usr/bin/env python3
"""The table of an A/B folder written by scripts/ab_bench_gates.sh.

Reads DIR/{old,new}_<backend>_r<round>.json (bench_gates reports) and prints, in markdown, the
milliseconds per bootstrap of every round's median for each backend and batch, old and new
side by side, and new/old of the medians over the rounds. The column heads name each side's
commits, and its key form (unroll) and FFT engine where the sides differ in them. Exits 2 on
a folder without reports, a report that is not bench_gates JSON, or sides that measured
different batches.
"""
import json
import pathlib
import re
import statistics
import sys

NAME = re.compile(r"^(old|new)_([a-z]+)_r([0-9]+)\.json$")
# Report fields named in a side's column where the two sides differ: name -> (field, default).
SETTINGS = {"unroll": ("bootstrapping_key_unroll", 1), "fft": ("fft", "?")}


def fail(message):
    print(f"ab_table.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(folder):
    """{(backend, batch): {side: {round: ms per bootstrap}}}, the sides' commits and settings."""
    table, commits = {}, {"old": set(), "new": set()}
    settings = {name: {"old": set(), "new": set()} for name in SETTINGS}
    for path in sorted(folder.iterdir()):
        match = NAME.match(path.name)
        if not match:
            continue
        side, backend, round_ = match.group(1), match.group(2), int(match.group(3))
        try:
            report = json.loads(path.read_text())
            commits[side].add(report["commit"])
            for name, (field, default) in SETTINGS.items():
                settings[name][side].add(str(report.get(field, default)))
            rows = [(r["batch"], r["ms_per_bootstrap_median"]) for r in report["results"]]
        except (ValueError, KeyError, TypeError) as error:
            fail(f"{path}: not a bench_gates report ({error})")
        for batch, ms in rows:
            table.setdefault((backend, batch), {}).setdefault(side, {})[round_] = ms
    if not table:
        fail(f"{folder}: no old_*_r*.json or new_*_r*.json reports")
    for (backend, batch), sides in table.items():
        if set(sides) != {"old", "new"}:
            fail(f"{backend} batch {batch} was measured on one side only")
    return table, commits, settings


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nusage: ab_table.py DIR")
        sys.exit(0 if len(sys.argv) == 2 else 2)
    folder = pathlib.Path(sys.argv[1])
    if not folder.is_dir():
        fail(f"{folder} is not a folder")
    table, commits, settings = load(folder)

    def label(side):
        text = f"{side} " + ", ".join(f"`{c[:7]}`" for c in sorted(commits[side]))
        for name, sides in settings.items():  # the settings in which the sides differ
            if sides["old"] != sides["new"]:
                text += f", {name} " + ", ".join(sorted(sides[side]))
        return text

    print(f"Milliseconds per bootstrap, median of each round (rounds in order); "
          f"new/old of the medians over the rounds.\n")
    print(f"| backend | batch | {label('old')} | {label('new')} | new/old |")
    print("|---|--:|---|---|--:|")
    for (backend, batch) in sorted(table):
        sides = table[(backend, batch)]
        cells = {}
        for side in ("old", "new"):
            rounds = sides[side]
            cells[side] = " / ".join(f"{rounds[r]:.2f}" for r in sorted(rounds))
        ratio = statistics.median(sides["new"].values()) / statistics.median(sides["old"].values())
        print(f"| {backend} | {batch} | {cells['old']} | {cells['new']} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
