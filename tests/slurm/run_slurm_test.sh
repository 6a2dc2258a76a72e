#!/usr/bin/env bash
# Integration test of `pathbench slurm` against a real single-node Slurm (Debian 12: slurm-wlm
# 22.05 and munge). Usage: run_slurm_test.sh PATHBENCH_BINARY (as root).
#
# In a private temp folder it starts munged, slurmctld and slurmd with their own key, config,
# sockets, free ports, state and logs (one node: this host, `nproc` CPUs, no cgroups), then:
#   a. submits the array script of tests/slurm/tiny_sweep.json (results in a folder whose name has a
#      space) and checks every run is done and `pathbench table` shows one row per encoding;
#   b. submits a longer version, cancels one array task mid-run, checks that run is not done (its
#      result says interrupted, and `pathbench table` lists it as left out),
#      resubmits the same script and checks every run is now done exactly once (one result JSON
#      each, the other results untouched, no claim files left) and the table works.
# Prints PASS/FAIL lines; exit 0 only when all passed, 77 (CTest: skipped) without Slurm/munge
# or root. Every daemon it started is stopped and the temp folder removed on exit; on failure the
# Slurm logs and the jobs' slurm-*.out files are printed first.
set -uo pipefail
export PATH=$PATH:/usr/sbin:/sbin

skip() { echo "slurm test: skipped ($*)"; exit 77; }
[[ $# -eq 1 && -x $1 ]] || { echo "usage: $0 PATHBENCH_BINARY" >&2; exit 2; }
for c in munged munge slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
  command -v "$c" >/dev/null || skip "$c not installed; apt-get install slurm-wlm munge"
done
[[ $(id -u) -eq 0 ]] || skip "needs root to run slurmd"

pb=$(realpath "$1")
config=$(realpath "$(dirname "$0")/tiny_sweep.json")
node=$(hostname -s)
tmp=$(mktemp -d /tmp/pathbench-slurm.XXXXXX)
daemons=()   # pids of munged, slurmctld, slurmd (started with -F/-D, so children of this shell)
jobs=()      # Slurm job ids submitted
failures=0

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
die() { fail "$*"; exit 1; }

stop_pid() {  # TERM, up to 10 s grace, then KILL
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

leftovers() {  # processes other than this shell with their cwd or an open file in $tmp: our jobs
  local d
  for d in /proc/[0-9]*; do
    [[ ${d#/proc/} == "$$" ]] && continue
    { [[ $(readlink "$d/cwd") == "$tmp"* ]] || [[ $(ls -l "$d/fd" 2>/dev/null) == *" -> $tmp/"* ]]; } &&
      echo "${d#/proc/}"
  done
}
cleanup() {
  local rc=$? p out
  trap '' INT TERM HUP  # finish cleaning up whatever arrives
  cd /
  [[ $rc -ne 0 && $rc -ne 77 ]] && dump_logs
  for j in "${jobs[@]}"; do timeout 10 scancel "$j" 2>/dev/null; done
  for _ in $(seq 30); do  # until the queue is empty (or the controller is gone)
    out=$(timeout 5 squeue -h 2>/dev/null) && [[ -n $out ]] || break
    sleep 1
  done
  timeout 10 scontrol shutdown >/dev/null 2>&1
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do stop_pid "${daemons[i]}"; done
  for p in $(leftovers); do
    echo "killing leftover $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)"
    kill -9 "$p"
  done
  rm -rf "$tmp"
  echo "slurm test: $([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)") in ${SECONDS}s"
  exit "$rc"
}
dump_logs() {
  for f in "$tmp"/log/*.log "$tmp"/results*/slurm-*.out; do
    [[ -f $f ]] && { echo "===== $f"; tail -n 100 "$f"; }
  done
  for f in "$tmp"/log/*.stderr; do  # daemons' own stderr: errors from before their log opened
    [[ -s $f ]] && { echo "===== $f"; tail -n 20 "$f"; }
  done
  for j in "${jobs[@]}"; do timeout 10 scontrol show job "$j" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- munge, slurmctld, slurmd -------------------------------------------------------------------
mkdir -p "$tmp"/{munge,state,spool,log}
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$tmp/munge" && chmod 600 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.socket
munged -F -f --key-file="$tmp/munge/munge.key" --socket="$sock" --pid-file="$tmp/munge/munged.pid" \
  --seed-file="$tmp/munge/munged.seed" --log-file="$tmp/log/munged.log" 2>"$tmp/log/munged.stderr" &
daemons+=($!)
for _ in $(seq 50); do munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1 && break; sleep 0.2; done
munge -n -S "$sock" | unmunge -S "$sock" >/dev/null || die "munged did not start"

free_port() {  # a TCP port on 127.0.0.1 that nothing listens on now, so a real Slurm beside us is no clash
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctld_port=$(free_port) && slurmd_port=$(free_port) || die "no free TCP port for slurmctld and slurmd"
[[ $ctld_port != "$slurmd_port" ]] || slurmd_port=$(free_port)
export SLURM_CONF=$tmp/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=pathbench-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" >"$tmp/log/slurmctld.stderr" 2>&1 &
daemons+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$tmp/log/slurmd.stderr" 2>&1 &
daemons+=($!)
for _ in $(seq 60); do [[ $(sinfo -h -n "$node" -o %T 2>/dev/null) == idle ]] && break; sleep 1; done
[[ $(sinfo -h -n "$node" -o %T 2>/dev/null) == idle ]] || die "node $node not idle: $(sinfo 2>&1)"
pass "slurmctld and slurmd up, node $node idle with $(nproc) CPUs"

# ---- helpers -----------------------------------------------------------------------------------
submit() {  # submit SCRIPT: sets $job to the job id
  job=$(sbatch --parsable "$1") || die "sbatch $1"
  job=${job%%;*}
  jobs+=("$job")
}
wait_job() {  # wait_job ID: until no task of the job is pending/running/completing (300 s)
  local out
  for _ in $(seq 300); do
    out=$(squeue -h -j "$1" 2>&1) || { [[ $out == *"Invalid job id"* ]] && return 0; die "squeue: $out"; }
    [[ -z $out ]] && return 0
    sleep 1
  done
  die "job $1 still queued after 300 s: $(squeue 2>&1)"
}
run_ids() {  # run_ids DIR [--set ...]: the sweep's run ids, in shard order (task i runs run i)
  local dir=$1; shift
  "$pb" run "$config" --out "$dir" "$@" --dry-run | awk '/^ +[0-9]+ / {print $2}'
}
is_done() { grep -Eq '"status": *"done"' "$1.json" 2>/dev/null; }
check_all_done() {  # check_all_done DIR IDS...: each run done, one result JSON each, no claims
  local dir=$1; shift
  local id ok=1
  for id in "$@"; do is_done "$dir/$id" || { ok=0; echo "  not done: $id"; }; done
  [[ $ok -eq 1 ]] && pass "all $# runs done in $dir" || fail "some runs not done in $dir"
  local n
  n=$(find "$dir" -maxdepth 1 -name '*.json' | wc -l)
  [[ $n -eq $# ]] && pass "one result JSON per run ($n)" || fail "$n result JSONs for $# runs"
  n=$(find "$dir" -maxdepth 1 -name '*.claim' | wc -l)
  [[ $n -eq 0 ]] && pass "no claim files left" || fail "$n claim files left: $(ls "$dir"/*.claim)"
}
check_table() {  # check_table DIR: `pathbench table` works, one row per encoding
  local out
  if out=$("$pb" table "$1" 2>&1) && [[ $(grep -Ec '^\| (nope|path) \|' <<<"$out") -eq 2 ]]; then
    pass "pathbench table $1 has a row per encoding"
  else
    fail "pathbench table $1:"$'\n'"$out"
  fi
}
check_completed() {  # the 4 array tasks of $job ended COMPLETED (exit status 0)
  local states
  states=$(scontrol show job "$job" 2>&1 | grep -o 'JobState=[A-Z]*' | sort | uniq -c | xargs)
  [[ $states == "4 JobState=COMPLETED" ]] && pass "job $job: 4 array tasks completed" ||
    fail "job $job task states: $states"
}
cd "$tmp" || die "cd $tmp"

# ---- a. the tiny sweep as an array job (its results folder's name and job name have spaces) -------
res="$tmp/results a"
"$pb" slurm "$config" --results "$res" --cpus-per-task 1 --time 00:10:00 --job-name "tiny sweep" \
  --out "$tmp/job-a.sh" ||
  die "pathbench slurm"
mapfile -t ids < <(run_ids "$res")
[[ ${#ids[@]} -eq 4 ]] || die "expected 4 runs, got ${#ids[@]}"
submit "$tmp/job-a.sh"
wait_job "$job"
check_completed
check_all_done "$res" "${ids[@]}"
check_table "$res"
# (outputs are captured before matching: under pipefail, `cmd | grep -q` fails when grep's early exit
# stops cmd with SIGPIPE)
job_info=$(scontrol show job "$job" 2>&1)
[[ $job_info == *'JobName=tiny sweep'* ]] && pass "job name with a space kept whole" ||
  fail "job name: $(grep -o 'JobName=[^ ]*' <<<"$job_info" | head -1)"
n=$(find "$res" -maxdepth 1 -name 'slurm-*.out' | wc -l)
[[ $n -eq 4 ]] && pass "the 4 tasks' logs in the results folder (#SBATCH --output, quoted)" ||
  fail "$n slurm-*.out files in '$res', expected 4"

# ---- b. cancel one array task mid-run, resubmit ------------------------------------------------
res=$tmp/results-b
long=(--set training.steps=20000 --set training.log_every=100 --set training.eval_every=5000)
"$pb" slurm "$config" "${long[@]}" --results "$res" --cpus-per-task 1 --time 00:10:00 \
  --out "$tmp/job-b.sh" || die "pathbench slurm (long)"
mapfile -t ids < <(run_ids "$res" "${long[@]}")
submit "$tmp/job-b.sh"
killed=
for _ in $(seq 600); do  # up to 120 s: a running task whose run has a curve but no result yet
  for t in $(squeue -h -j "$job" -t RUNNING -o %K 2>/dev/null); do
    id=${ids[t]}
    if [[ -s $res/$id.curve.jsonl && ! -e $res/$id.json ]]; then
      scancel "${job}_$t" && killed=$t && break 2
    fi
  done
  sleep 0.2
done
[[ -n $killed ]] || die "no array task of job $job seen running with a curve"
pass "cancelled array task ${job}_$killed mid-run ($(wc -l <"$res/${ids[killed]}.curve.jsonl") curve lines)"
wait_job "$job"
if is_done "$res/${ids[killed]}"; then fail "cancelled run ${ids[killed]} is done"; else
  pass "cancelled run not done after the job ended"; fi
# scancel's SIGTERM stops the run after a step: its result says interrupted, and tables list it
if grep -Eq '"status": *"interrupted"' "$res/${ids[killed]}.json" 2>/dev/null &&
   [[ $("$pb" table "$res" 2>&1) == *"Left out: 1 run with status interrupted"* ]]; then
  pass "cancelled run recorded as interrupted and listed as left out by pathbench table"
else
  fail "cancelled run ${ids[killed]}: no interrupted result, or pathbench table does not list it"
fi
declare -A before=()
for t in "${!ids[@]}"; do
  [[ $t -eq $killed ]] && continue
  is_done "$res/${ids[t]}" || fail "run ${ids[t]} (task $t) not done after the first job"
  before[$t]=$(md5sum <"$res/${ids[t]}.json")
done
submit "$tmp/job-b.sh"
wait_job "$job"
check_completed
check_all_done "$res" "${ids[@]}"
same=1
for t in "${!before[@]}"; do [[ $(md5sum <"$res/${ids[t]}.json") == "${before[$t]}" ]] || same=0; done
[[ $same -eq 1 ]] && pass "resubmission left the ${#before[@]} finished results untouched" ||
  fail "resubmission rewrote finished results"
check_table "$res"

[[ $failures -eq 0 ]] || exit 1
echo "PASS: slurm_array"
