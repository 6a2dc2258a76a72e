"""Reading a results folder (the runner's JSON documents and JSONL curves) and the bookkeeping the
figures share: grouping runs into figures, means over seeds, writing the CSV beside each PNG."""
import csv
import hashlib
import json
import math
import os
import sys
import re
import statistics

import style


def load_results(folder):
    """Every result document under `folder` (recursively), each with its "path"."""
    results = []
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = os.path.join(root, name)
            try:
                with open(path) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                print(f"plots: left out unreadable result '{path}': {e}", file=sys.stderr)
                continue
            if not (isinstance(doc, dict) and "pathbench_result" in doc):
                continue  # another kind of JSON
            wrong = [k for k, kind in (("status", str), ("id", str), ("config", dict), ("metrics", dict))
                     if not isinstance(doc.get(k), kind)]
            if wrong:
                print(f"plots: left out unreadable result '{path}': key '{wrong[0]}' is missing or of the wrong type",
                      file=sys.stderr)
                continue
            doc["path"] = path
            results.append(doc)
    return sorted(results, key=lambda r: r["path"])


# The statuses whose runs the curve figures draw: a run interrupted by a signal (a time limit) has a
# curve up to where it stopped, and leaving it out would favour the runs that finished first.
CURVE_STATUSES = ("done", "interrupted")


def ended(result):
    """Whether a run's curve ends where the run ended (it finished), rather than where it was cut."""
    return result.get("status") == "done"


def load_curve(result):
    """The curve lines of a result (empty when the file is missing)."""
    path = os.path.join(os.path.dirname(result["path"]), result.get("curve", ""))
    lines = []
    if result.get("curve") and os.path.exists(path):
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    return lines


def flatten(value, prefix=""):
    if isinstance(value, dict) and value:
        out = {}
        for k, v in value.items():
            out.update(flatten(v, prefix + "." + k if prefix else k))
        return out
    return {prefix: json.dumps(value, sort_keys=True)}


def encoding(result):
    return result["config"]["model"]["encoding"]


class FigureRuns:
    """The runs of one figure and what every figure needs to know about them."""

    def __init__(self, name, title, runs):
        self.name = name    # file-name part
        self.title = title  # what distinguishes this figure from the others
        self.runs = runs
        self.metric = runs[0].get("primary_metric", "error_rate")
        self.higher_is_better = runs[0].get("higher_is_better", False)
        self.scale = 100.0 if is_ratio(self.metric) else 1.0  # ratios are shown in percent
        self.metric_label = self.metric.replace("_", " ") + (" (%)" if self.scale == 100.0 else "")
        self.splits = runs[0].get("eval_splits") or sorted(runs[0]["metrics"])
        self.encodings = sorted({encoding(r) for r in runs}, key=style.order_key)

    def of(self, enc):
        return [r for r in self.runs if encoding(r) == enc]


def figures(results, free_keys, statuses=("done",)):
    """Splits the results of these statuses (finished ones by default; curve figures add interrupted
    runs, whose curves hold real evaluations up to where they stopped) into figures: runs whose
    configs agree outside `free_keys` (dotted prefixes, e.g. "model.encoding") share a figure.
    Returns [FigureRuns]."""
    done = [r for r in results if r.get("status") in statuses]

    def fixed(r):
        return {k: v for k, v in flatten(r["config"]).items()
                if not any(k == f or k.startswith(f + ".") for f in free_keys)}

    groups = {}
    for r in done:
        key = json.dumps(fixed(r), sort_keys=True)
        groups.setdefault(key, []).append(r)
    keys = list(groups)
    varying = sorted({k for a in keys for b in keys for k in set(json.loads(a)) | set(json.loads(b))
                      if json.loads(a).get(k) != json.loads(b).get(k)})
    out = []
    for key in keys:
        runs = groups[key]
        values = json.loads(key)
        task = runs[0]["config"]["task"]["name"]
        parts = ["{}={}".format(k.split(".")[-1], json.loads(values[k]) if k in values else "-") for k in varying]
        out.append(FigureRuns(file_name_part([task] + parts), ", ".join([task] + parts), runs))
    return out


MAX_NAME = 120  # characters of a figure's file-name part; file names stop at 255 bytes


def file_name_part(parts):
    """The parts joined into a file-name part; past MAX_NAME characters (folders that differ in many
    keys), its first characters and a hash of the whole, so that names stay distinct and legal.

    >>> file_name_part(["parity", "n_layers=2", "lr=0.001"])
    'parity-n_layers=2-lr=0.001'
    >>> long = [file_name_part(["mqrar"] + [f"key{i}={i + n}" for i in range(40)]) for n in (0, 1)]
    >>> [len(name) for name in long], long[0] != long[1]
    ([120, 120], True)
    """
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join(parts))
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return name[:MAX_NAME - len(digest) - 1] + "-" + digest


def mean_std(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not values:
        return None, None, 0
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0), len(values)


def is_ratio(metric):
    return any(word in metric for word in ("rate", "accuracy", "match"))


def band(mean, std, metric):
    """mean ± std as (low, high), clipped to [0, 1] for ratios (a rate cannot leave that range)."""
    low, high = mean - std, mean + std
    if is_ratio(metric):
        low, high = max(low, 0.0), min(high, 1.0)
    return low, high


def breakdown_key(runs):
    """The per-group breakdown key (e.g. "per_length") the runs' metrics have, or None."""
    for r in runs:
        for split_metrics in r.get("metrics", {}).values():
            for key in split_metrics:
                if key.startswith("per_"):
                    return key
    return None


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def finish(fig, out_dir, stem, header, rows):
    """Writes <stem>.png and the CSV behind it, <stem>.csv; closes the figure; returns the PNG's path."""
    import matplotlib.pyplot as plt

    write_csv(os.path.join(out_dir, stem + ".csv"), header, rows)
    path = os.path.join(out_dir, stem + ".png")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def load_folders(folders):
    """The result documents under several folders, read as one: each file once (folders may overlap)."""
    found, seen = [], set()
    for folder in folders:
        for r in load_results(folder):
            if os.path.realpath(r["path"]) not in seen:
                seen.add(os.path.realpath(r["path"]))
                found.append(r)
    return found


def main(plot, description):
    """The command line of a plotting script: RESULTS_DIR [RESULTS_DIR ...] [--out DIR] (needed with
    several folders, which are read as one); prints the files written."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("results", nargs="+", help="folders of result files (searched recursively)")
    parser.add_argument("--out", help="folder for the PNG and CSV files (default, for one folder: <results>/plots)")
    args = parser.parse_args()
    if not args.out and len(args.results) > 1:
        raise SystemExit("plots: error: several folders: name the folder for the figures with --out")
    out_dir = args.out or os.path.join(args.results[0], "plots")
    found = load_folders(args.results)
    if not found:
        raise SystemExit("plots: error: no result files in '{}'".format("', '".join(args.results)))
    os.makedirs(out_dir, exist_ok=True)
    for path in plot(found, out_dir):
        print("wrote", path)
