#!/usr/bin/env python3
"""Times one sweep at several --jobs values and writes JSON: for each value, `pathbench run CONFIG
--jobs J` into a fresh folder, its wall time, the runs' training throughput and where each run's
time went (training, evaluation, the rest), the GPUs' mean utilization (sampled by nvidia-smi once a
second, where there is one) and, for each value after the first, whether every run's metrics equal
those of the first (bit-identical is expected on the CPU when the runs' thread count is fixed; GPU
runs may differ by the kernels' run-to-run nondeterminism). The first value's metrics are written
too (`metrics_by_run`, by run id and hash, as the result files are named: an id alone can repeat
within a sweep), so that two files, e.g. two code versions or machines, can be compared run by run.

Usage: scripts/bench_sweep.py CONFIG --jobs 1 2 4 8 --out results/bench/sweep-X.json
       [--pathbench build/pathbench] [--set key=value ...] [--gpus LIST]
Needs only the standard library."""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from sweep_tools import git_commit, result_documents, run_command, write_json_atomically


def start_gpu_sampler(path):
    if shutil.which("nvidia-smi") is None:
        return None
    out = open(path, "w")
    return subprocess.Popen(["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits",
                             "-l", "1"], stdout=out, stderr=subprocess.DEVNULL)


def mean_utilization(path):
    per_gpu = {}
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[1].isdigit():
                per_gpu.setdefault(parts[0], []).append(int(parts[1]))
    return {gpu: sum(v) / len(v) for gpu, v in per_gpu.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--jobs", type=int, nargs="+", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pathbench", default="build/pathbench")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--gpus")
    args = parser.parse_args()
    if any(j < 1 for j in args.jobs):
        sys.exit("bench_sweep: --jobs values must be >= 1")

    measurements, reference = [], None  # reference: the first --jobs value's result documents by hash
    with tempfile.TemporaryDirectory(prefix="pathbench-bench-sweep-") as scratch:
        for jobs in args.jobs:
            folder = os.path.join(scratch, f"jobs{jobs}")
            command = run_command(args.pathbench, args.config, folder, jobs, args.sets, args.gpus)
            sampler_file = os.path.join(scratch, f"gpu{jobs}.csv")
            sampler = start_gpu_sampler(sampler_file)
            start = time.monotonic()
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wall = time.monotonic() - start
            if sampler:
                sampler.terminate()
                sampler.wait()
            if done.returncode != 0:
                sys.exit(f"bench_sweep: {' '.join(command)} failed: {done.stderr.strip().splitlines()[-1:]}")
            runs = {doc["hash"]: doc for doc in result_documents(folder)}
            identical = None  # the first --jobs value is the reference itself
            if reference is None:
                reference = runs
            else:
                identical = set(runs) == set(reference) and all(r["metrics"] == reference[h]["metrics"]
                                                                for h, r in runs.items())
            measurements.append({
                "jobs": jobs,
                "wall_s": wall,
                "runs": len(runs),
                "runs_done": sum(r["status"] == "done" for r in runs.values()),
                "train_tokens_per_s_per_run": sorted(r["tokens_per_s"] or 0 for r in runs.values()),
                # where each run's time went: training steps, periodic and final evaluations, and the
                # rest (start-up, checkpoints, writing results), by run id and hash
                "time_s_by_run": {f"{r['id']}-{h}": {"wall": r["wall_time_s"], "train": r["train_time_s"],
                                                     "eval": r["eval_time_s"]} for h, r in runs.items()},
                "threads_per_run": sorted({r["threads"] for r in runs.values()}),
                "gpu_utilization_percent": mean_utilization(sampler_file) if sampler else None,
                "metrics_identical_to_first": identical,
            })
            compared = "" if identical is None else f", metrics identical to jobs {args.jobs[0]}: {identical}"
            evals = sum(r["eval_time_s"] or 0 for r in runs.values())
            walls = sum(r["wall_time_s"] or 0 for r in runs.values())
            share = f", evaluation {100 * evals / walls:.0f} % of the runs' time" if walls > 0 else ""
            print(f"jobs {jobs}: {wall:.1f} s wall, {len(runs)} runs{share}{compared}", flush=True)
    doc = {"benchmark": "sweep", "config": args.config, "sets": args.sets, "gpus": args.gpus,
           "git_commit": git_commit(args.pathbench), "host": platform.node(), "cpus": os.cpu_count(),
           "measurements": measurements,
           "metrics_by_run": {f"{r['id']}-{h}": r["metrics"] for h, r in reference.items()}}
    write_json_atomically(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
