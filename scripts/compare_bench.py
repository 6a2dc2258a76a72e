#!/usr/bin/env python3
"""Prints the markdown table of an A/B timing of two builds, made from their JSON files rather than
copied by hand: rounds of `pathbench bench-attention --out` (or of `pathbench bench --device cuda
--out`, the model's training step) for a base build and a candidate build, run in one device call
(scripts/gpu_compare.sh alternates their order from round to round). One row per encoding and
shape (or encoding, for the model's step, and a second row for the step's device time where both
builds report it: the wall time's spread between rounds is mostly the host's), each round's median
ms for both builds, and the candidate's change against the base over the mean of the rounds. Rows
only one build timed are left out. Where the model's step was timed with nope among the encodings,
a second table gives each other encoding's tokens/s as a fraction of nope's (nope's step time over
its own, round by round), wall and device time, for both builds.

Usage: scripts/compare_bench.py --base A1.json [A2.json …] --candidate B1.json [B2.json …]"""
import argparse
import json


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"compare_bench.py: cannot read {path}: {e}")


def timings(path):
    """{row label: ms} of one JSON and the labels in order: forward+backward medians of an attention
    benchmark, training-step medians of a model benchmark."""
    doc = load(path)
    attention = "kernels" in doc
    cells, order = {}, []
    for r in doc.get("results", []):
        try:
            if attention:
                label = f"{r['encoding']} {r['batch']}·{r['length']}·{r['heads']}·{r['head_dim']}"
                ms = r["forward_backward_ms_median"]
            else:
                label, ms = f"{r['encoding']} step", r["ms_per_step_median"]
        except KeyError as e:
            raise SystemExit(f"compare_bench.py: {path}: a result lacks {e}")
        cells[label] = ms
        order.append(label)
        if not attention and "device_ms_per_step_median" in r:
            cells[f"{label}, device"] = r["device_ms_per_step_median"]
            order.append(f"{label}, device")
    if not order:
        raise SystemExit(f"compare_bench.py: {path} holds no results")
    return cells, order, doc.get("git", {}).get("commit", "?")[:7]


def nope_row(label):
    """The row of nope's step that a model-step row (`X step` or `X step, device`) compares with;
    None for an attention row."""
    rest = label.partition(" ")[2]
    return f"nope {rest}" if rest.startswith("step") else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", nargs="+", required=True, help="the base build's JSON files, one per round")
    ap.add_argument("--candidate", nargs="+", required=True, help="the candidate's JSON files, one per round")
    args = ap.parse_args()
    base = [timings(p) for p in args.base]
    cand = [timings(p) for p in args.candidate]
    rows = [label for label in base[0][1] if all(label in t[0] for t in base + cand)]
    if not rows:
        raise SystemExit("compare_bench.py: the two builds timed no row in common")
    names = f"{base[0][2]} (base)", f"{cand[0][2]} (candidate)"
    print(f"| row | {names[0]} ms, rounds | {names[1]} ms, rounds | change |")
    print("|---|---|---|---|")
    for label in rows:
        b = [t[0][label] for t in base]
        c = [t[0][label] for t in cand]
        change = 100 * (sum(c) / len(c) / (sum(b) / len(b)) - 1)
        fmt = lambda ms: ", ".join(f"{x:.3f}" for x in ms)
        print(f"| {label} | {fmt(b)} | {fmt(c)} | {change:+.1f} % |")
    fractions = [label for label in rows if label.split(" ")[0] != "nope" and nope_row(label) in rows]
    if fractions:
        print()
        print(f"| tokens/s ÷ nope's | {names[0]}, rounds | {names[1]}, rounds |")
        print("|---|---|---|")
        for label in fractions:
            fmt = lambda runs: ", ".join(f"{t[0][nope_row(label)] / t[0][label]:.3f}" for t in runs)
            print(f"| {label} | {fmt(base)} | {fmt(cand)} |")


if __name__ == "__main__":
    main()
