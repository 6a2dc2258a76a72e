"""Makes sure the running interpreter has matplotlib: if it lacks it, re-executes the script with
the first candidate interpreter that has it ($PATHBENCH_PYTHON, python3 on PATH, /usr/bin/python3,
/usr/local/bin/python3), or exits with a clear message. Import this before matplotlib."""
import os
import shutil
import subprocess
import sys

_REEXEC_MARK = "PATHBENCH_PLOT_REEXEC"


def _candidates():
    seen = set()
    for c in (os.environ.get("PATHBENCH_PYTHON"), shutil.which("python3"), "/usr/bin/python3",
              "/usr/local/bin/python3"):
        if c and os.path.exists(c) and os.path.realpath(c) not in seen:
            seen.add(os.path.realpath(c))
            yield c


def _has_matplotlib(python):
    try:
        return subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    tried = [sys.executable]
    if not os.environ.get(_REEXEC_MARK):
        for python in _candidates():
            if os.path.realpath(python) == os.path.realpath(sys.executable):
                continue
            tried.append(python)
            if _has_matplotlib(python):
                os.environ[_REEXEC_MARK] = "1"
                os.execv(python, [python] + sys.argv)
    sys.exit("plots: error: no Python interpreter with matplotlib found (tried: {}); install it "
             "(Debian: apt-get install python3-matplotlib; else pip install matplotlib) or set "
             "PATHBENCH_PYTHON to an interpreter that has it".format(", ".join(tried)))


ensure_matplotlib()
