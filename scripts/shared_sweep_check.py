#!/usr/bin/env python3
"""Checks that sweep processes can share one results folder, as hosts on a shared filesystem or
Slurm array tasks do, and writes what it saw as JSON. On one machine it plays that out:

1. reference: `pathbench run CONFIG --out REF` alone;
2. shared: two `pathbench run CONFIG --out SHARED` processes started together (A and B, each with
   --jobs J and, where given, --gpus LIST), and B's whole process group (its workers too) killed with
   SIGKILL after --kill-after seconds, as a lost host would be;
3. resubmission: once A has ended, the same command again (C) trains whatever is left.

It then checks that every run of the sweep has a finished result in SHARED, that no run finished
twice (from the `<id> done in` lines the processes print), which runs were started again after the
kill, and whether each run's metrics equal the reference's (bit-identical is expected on the CPU;
GPU runs may differ by the kernels' run-to-run nondeterminism); for each run that differs it writes
the metric with the largest difference. Exits non-zero when a check fails.

Usage: scripts/shared_sweep_check.py CONFIG --out FILE.json [--jobs J] [--kill-after S]
       [--gpus LIST] [--pathbench build/pathbench] [--set key=value ...]
Needs only the standard library."""
import argparse
import collections
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time

from sweep_tools import git_commit, result_documents, run_command, write_json_atomically

DONE = re.compile(r"\] (\S+) done in ")
STARTED = re.compile(r"\] (\S+): \d+ steps")


def results(folder):
    """Result documents of a folder by run id."""
    return {doc["id"]: doc for doc in result_documents(folder)}


def events(log_path):
    """(started run ids, finished run ids) in the order a process printed them."""
    started, done = [], []
    with open(log_path, errors="replace") as f:
        for line in f:
            if m := DONE.search(line):
                done.append(m.group(1))
            elif m := STARTED.search(line):
                started.append(m.group(1))
    return started, done


def largest_difference(reference, other, path=""):
    """(path, reference value, other value) where two metric documents differ: of the numeric
    leaves that differ, the one with the largest absolute difference; None when they are equal."""
    if isinstance(reference, dict) and isinstance(other, dict) and reference.keys() == other.keys():
        found = [largest_difference(reference[k], other[k], f"{path}/{k}") for k in reference]
    elif isinstance(reference, list) and isinstance(other, list) and len(reference) == len(other):
        found = [largest_difference(a, b, f"{path}/{i}") for i, (a, b) in enumerate(zip(reference, other))]
    else:
        return None if reference == other else (path or "/", reference, other)
    found = [f for f in found if f]
    numeric = [f for f in found if all(isinstance(v, (int, float)) for v in f[1:])]
    if numeric:
        return max(numeric, key=lambda f: abs(f[1] - f[2]))
    return found[0] if found else None


def start(command, log_path, own_group=False):
    log = open(log_path, "w")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=own_group)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--out", required=True)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--kill-after", type=float, default=5.0)
    parser.add_argument("--gpus")
    parser.add_argument("--pathbench", default="build/pathbench")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    args = parser.parse_args()
    if args.jobs < 1 or args.kill_after <= 0:
        sys.exit("shared_sweep_check: --jobs must be >= 1 and --kill-after > 0")

    with tempfile.TemporaryDirectory(prefix="pathbench-shared-sweep-") as scratch:
        def command(folder):
            return run_command(args.pathbench, args.config, folder, args.jobs, args.sets, args.gpus)

        ref_dir, shared = os.path.join(scratch, "reference"), os.path.join(scratch, "shared")
        logs = {name: os.path.join(scratch, f"{name}.log") for name in ("reference", "A", "B", "C")}
        t0 = time.monotonic()
        reference_exit = start(command(ref_dir), logs["reference"]).wait()
        reference_wall = time.monotonic() - t0
        reference = results(ref_dir)
        if reference_exit != 0 or not reference:
            sys.exit(f"shared_sweep_check: the reference sweep failed (exit {reference_exit}); see its output:\n"
                     + open(logs["reference"]).read()[-2000:])

        t0 = time.monotonic()
        a = start(command(shared), logs["A"])
        b = start(command(shared), logs["B"], own_group=True)
        time.sleep(args.kill_after)
        b_alive_at_kill = b.poll() is None
        if b_alive_at_kill:
            os.killpg(b.pid, signal.SIGKILL)
        b_exit = b.wait()
        a_exit = a.wait()
        c_exit = start(command(shared), logs["C"]).wait()
        shared_wall = time.monotonic() - t0

        per_process = {}
        finished = collections.Counter()
        restarted = set()
        for name in ("A", "B", "C"):
            started, done = events(logs[name])
            per_process[name] = {"started": started, "finished": done}
            finished.update(done)
        b_started = set(per_process["B"]["started"]) - set(per_process["B"]["finished"])
        for name in ("A", "C"):
            restarted |= b_started & set(per_process[name]["started"])
        got = results(shared)

    all_done = set(got) == set(reference) and all(r["status"] == "done" for r in got.values())
    finished_twice = sorted(run for run, n in finished.items() if n > 1)
    identical = sorted(run for run, r in got.items() if run in reference and r["metrics"] == reference[run]["metrics"])
    differences = {}
    for run in sorted(set(got) & set(reference)):
        if found := largest_difference(reference[run]["metrics"], got[run]["metrics"]):
            differences[run] = {"metric": found[0], "reference": found[1], "shared": found[2]}
    checks = {
        "b_killed_mid_sweep": b_alive_at_kill,
        "every_run_done": all_done,
        "no_run_finished_twice": not finished_twice,
        "killed_runs_trained_again": b_started <= restarted,
    }
    doc = {
        "benchmark": "shared_sweep_check", "config": args.config, "sets": args.sets, "jobs": args.jobs,
        "gpus": args.gpus, "kill_after_s": args.kill_after, "git_commit": git_commit(args.pathbench),
        "host": platform.node(),
        "cpus": os.cpu_count(), "runs": len(reference), "reference_wall_s": reference_wall,
        "shared_wall_s": shared_wall, "exit_codes": {"A": a_exit, "B": b_exit, "C": c_exit},
        "processes": per_process, "runs_in_progress_in_b_when_killed": sorted(b_started),
        "finished_twice": finished_twice, "metrics_identical_to_reference": len(identical),
        "largest_metric_difference": differences,
        "checks": checks,
    }
    write_json_atomically(args.out, doc)
    for name, ok in checks.items():
        print(f"{name}: {ok}")
    print(f"{len(identical)} of {len(reference)} runs' metrics identical to the reference; wrote {args.out}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
