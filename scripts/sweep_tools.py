"""What scripts/bench_sweep.py and scripts/shared_sweep_check.py share: the commit to record, the
`pathbench run` command line of a sweep, the result documents of a results folder, and writing a
JSON file atomically. Standard library only."""
import glob
import json
import os
import subprocess


def git_commit(pathbench):
    """The commit the binary records in its results (`pathbench --version`: the commit it was built
    from, or PATHBENCH_GIT_COMMIT where set), else None."""
    try:
        first = subprocess.run([pathbench, "--version"], capture_output=True, text=True,
                               check=True).stdout.split("\n")[0].split()
    except (OSError, subprocess.CalledProcessError):
        return None
    return first[1] if len(first) > 1 and not first[1].startswith("(") else None


def run_command(pathbench, config, folder, jobs, sets, gpus=None):
    """`pathbench run CONFIG --out FOLDER --jobs J [--set ...] [--gpus LIST]` as an argument list."""
    command = [pathbench, "run", config, "--out", folder, "--jobs", str(jobs)]
    for s in sets:
        command += ["--set", s]
    return command + (["--gpus", gpus] if gpus else [])


def result_documents(folder):
    """The pathbench result documents (*.json with "pathbench_result") of a folder."""
    docs = []
    for path in glob.glob(os.path.join(folder, "*.json")):
        with open(path) as f:
            doc = json.load(f)
        if isinstance(doc, dict) and "pathbench_result" in doc:
            docs.append(doc)
    return docs


def write_json_atomically(path, doc):
    """Writes doc to path through a temporary file, so no partial file is ever visible."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)
