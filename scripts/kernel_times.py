#!/usr/bin/env python3
"""Kernel time per unit of work from Nsight Compute's per-launch CSV (`ncu --csv --page raw --metrics
gpu__time_duration.sum …`): each kernel's total time divided by the number of units the profiled run
held (training steps, evaluation batches, forward+backward calls), its share, and its launches per
unit, largest first.

Usage: scripts/kernel_times.py CSV [--units N] [--unit NAME] [--top K]
  e.g. scripts/kernel_times.py results/bench/s36-a65bd4c-h100/kernels/path-4x4096x8x128.csv
"""
import argparse
import collections
import csv
import re
import sys


def kernel_name(full):
    """e.g. "void pathbench::cuda::(anonymous namespace)::path_prep_kernel<float, 64>(…)" → path_prep_kernel;
    the full name (cut) when no such last component is found."""
    bare = re.sub(r"\(anonymous namespace\)|<unnamed>", "", full)
    parts = [p.strip() for p in re.split(r"[<(]", bare)[0].replace("void ", "").split("::") if p.strip()]
    return parts[-1] if parts and parts[-1] not in ("pathbench", "cuda", "detail") else full[:100]


def launches(path):
    """(kernel name, ns) of each launch in the CSV."""
    rows = [r for r in csv.reader(open(path)) if r]
    header = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if header is None:
        sys.exit(f"kernel_times.py: {path}: no 'Kernel Name' column (not ncu's --csv --page raw output)")
    names, data = rows[header], rows[header + 2:]  # the line after the header holds the units
    if "gpu__time_duration.sum" not in names:
        sys.exit(f"kernel_times.py: {path}: no gpu__time_duration.sum column")
    name_col, time_col = names.index("Kernel Name"), names.index("gpu__time_duration.sum")
    return [(r[name_col], float(r[time_col].replace(",", ""))) for r in data if len(r) > time_col]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--units", type=int, default=1, help="units of work the profiled run held (default 1)")
    parser.add_argument("--unit", default="call", help="what a unit is, for the first line (default 'call')")
    parser.add_argument("--top", type=int, default=25, help="kernels listed (default 25)")
    args = parser.parse_args()
    if args.units < 1:
        sys.exit(f"kernel_times.py: --units must be at least 1, not {args.units}")
    found = launches(args.csv)
    total, count = collections.Counter(), collections.Counter()
    for name, ns in found:
        total[kernel_name(name)] += ns / args.units
        count[kernel_name(name)] += 1
    overall = sum(total.values())
    print(f"{len(found)} launches over {args.units} × {args.unit}, {overall / 1e3:.1f} us of kernel time per {args.unit}")
    for name, ns in total.most_common(args.top):
        print(f"{ns / 1e3:9.1f} us {100 * ns / overall:5.1f} %  x{count[name] / args.units:<5g} {name}")


if __name__ == "__main__":
    main()
