#!/usr/bin/env bash
# A sweep on a real Slurm: starts a one-node cluster on this machine (munged, slurmctld and slurmd on 127.0.0.1,
# every file in a scratch directory, free ports), submits the array script of `icl-cli sweep --emit-slurm` with
# sbatch, waits for its four tasks, re-queues one finished task (scontrol requeue: its resume is a no-op that leaves
# the run file as it is), re-submits another with a resume that asks for more steps (the run continues from its
# checkpoint under Slurm), and aggregates the runs. The daemons are stopped on every exit (trap).
# Exits 77 (ctest SKIP_RETURN_CODE) with the reason when the daemons cannot start here (not root, munged or
# slurmctld/slurmd refusing to start); missing programs are a failure (scripts/install-deps.sh installs them).
# Usage: slurm_sweep_test.sh ICL_CLI   (about 40 s)
set -euo pipefail
cli=$(realpath "$1")
fail() { echo "slurm_sweep_test: FAIL: $*" >&2; exit 1; }
skip() { echo "slurm_sweep_test: SKIP: $*" >&2; exit 77; }
ok() { echo "slurm_sweep_test: ok: $*"; }

for p in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo scancel setpriv python3; do
    command -v "$p" >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v "$p" >/dev/null ||
        fail "$p not found: run scripts/install-deps.sh (munge, slurmctld, slurmd, slurm-client)"
done
export PATH=$PATH:/usr/sbin:/sbin
[[ $(id -u) == 0 ]] || skip "not root: slurmd must run as root to start jobs (uid $(id -u))"
# In a PID namespace of its own where the kernel allows one: when this script ends, however it ends (ctest's timeout
# kill included), every process it started (daemons, slurmstepd, the job's icl-cli) ends with it; the script gets
# SIGTERM when unshare dies (--kill-child=TERM) and cleans up.
if [[ -z ${ICL_SLURM_TEST_NS:-} ]] && unshare --mount --pid --fork --kill-child --mount-proc true 2>/dev/null; then
    ICL_SLURM_TEST_NS=1 exec unshare --mount --pid --fork --kill-child=TERM --mount-proc bash "$0" "$@"
fi
deadline=$((SECONDS + 180))  # every wait below ends by then, before ctest's TIMEOUT (240 s)

work=$(mktemp -d /tmp/icl-slurm.XXXXXX)
chmod 755 "$work"  # munged requires its socket's directories to be searchable by all
pids=()
# Each daemon runs in the foreground (-D/-F) as a child of this script and gets SIGTERM when the script dies
# (setpriv --pdeathsig), also where no PID namespace could be made.
daemon=(setpriv --pdeathsig TERM)
cleanup() {
    local rc=$?
    if [[ -n ${SLURM_CONF:-} ]] && ((${#pids[@]} > 1)); then
        scancel --quiet --full --user=root 2>/dev/null || true
        for _ in $(seq 20); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.5; done
    fi
    # slurmd, slurmctld, munged, in that order; each was started in the foreground (-D/-F) by this script.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if ((rc != 0 && rc != 77)); then
        for log in "$work"/munged.out "$work"/slurmctld.log "$work"/slurmd.log "$work"/runs/slurm_*.log; do
            [[ -f $log ]] && { echo "--- $log"; tail -n 20 "$log"; }
        done
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# munge: a fresh key (only root may read it) and a private socket.
mkdir -m 700 "$work/key"
mkdir -m 755 "$work/munge" "$work/state" "$work/spool"
mungekey --create --keyfile="$work/key/munge.key" --bits=1024 || skip "mungekey cannot create a key"
"${daemon[@]}" munged -F --key-file="$work/key/munge.key" --socket="$work/munge/socket" --pid-file="$work/munge/munged.pid" \
    --seed-file="$work/key/munged.seed" --log-file="$work/munged.log" >"$work/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S $work/munge/socket ]] && break; sleep 0.1; done
munge -S "$work/munge/socket" -n | unmunge -S "$work/munge/socket" >/dev/null 2>&1 ||
    skip "munged does not start here: $(tail -n 1 "$work/munged.out" 2>/dev/null)"
ok "munged on $work/munge/socket"

read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
cpus=$(nproc)
((cpus >= 2)) || cpus=2  # the script asks for 2 CPUs per task; config_overrides lets a 1-CPU machine declare 2
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=icltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
MailProg=/bin/true
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=localnode NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localnode Default=YES MaxTime=INFINITE State=UP
EOF
"${daemon[@]}" slurmctld -D -c -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping 2>/dev/null | grep -q UP || skip "slurmctld does not start here: $(tail -n 1 "$work/slurmctld.log" 2>/dev/null)"
"${daemon[@]}" slurmd -D -N localnode -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq 60); do
    state=$(sinfo -h -n localnode -o %t 2>/dev/null || true)
    [[ $state == idle ]] && break
    kill -0 "${pids[2]}" 2>/dev/null || break
    sleep 0.25
done
[[ $state == idle ]] || skip "slurmd does not start here (node state '$state'): $(tail -n 1 "$work/slurmd.log" 2>/dev/null)"
ok "one-node cluster: slurmctld on port $ctld_port, slurmd on $slurmd_port, node localnode idle with $cpus CPUs"

# wait_job JOB: until no task of JOB is pending or running (at most until the deadline), then every task COMPLETED.
wait_job() {
    while ((SECONDS < deadline)) && [[ -n $(squeue -h -j "$1" 2>/dev/null) ]]; do sleep 0.5; done
    [[ -z $(squeue -h -j "$1") ]] || fail "job $1 still queued after ${SECONDS} s: $(squeue -j "$1")"
    local states
    states=$(scontrol -o show job "$1" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c)
    [[ $(grep -vc 'JobState=COMPLETED' <<<"$states") == 0 ]] || fail "job $1: $states"
}
checkpoints() { "$cli" info "$1" --json | python3 -c 'import json, sys; print(*(c["step"] for c in json.load(sys.stdin)["checkpoints"]))'; }

# The tiny 2 × 2 sweep of tests/app/cli (Cli.SweepAggregateAndSlurmScript): 6 steps, checkpoints every 3.
cat >"$work/sweep.json" <<'EOF'
{"preset": "chan-bursty", "scale": "quick", "steps": 6,
 "set": ["training.eval_every=3", "training.checkpoint_every=3", "eval.n_prompts=32", "task.n_classes=100"],
 "grid": {"task.p_bursty": [0, 0.9], "model.kind": ["gpt2", "lstm"]}}
EOF
runs=$work/runs
(cd "$work" && "$cli" sweep sweep.json --out "$runs" --emit-slurm job.sh) || fail "icl-cli sweep --emit-slurm"
job=$(cd "$work" && ICL_CLI=$cli sbatch --parsable job.sh) || fail "sbatch job.sh"
job=${job%%;*}
wait_job "$job"
for i in 0 1 2 3; do
    f=$runs/run_000$i.h5
    [[ -f $f ]] || fail "task $i wrote no $f"
    grep -q "finished at step 6 on cpu -> $f" "$runs/slurm_$i.log" || fail "task $i log: $(cat "$runs/slurm_$i.log")"
    [[ $(checkpoints "$f") == "0 3 6" ]] || fail "run_000$i.h5 checkpoints: $(checkpoints "$f")"
done
ok "sbatch job.sh: array job $job, tasks 0-3 COMPLETED, each run trained to step 6 (checkpoints 0 3 6)"

# Re-queue finished task 1: it finds its run file and resumes it, which leaves a finished run as it is. A re-queued
# job waits for its credential lifetime (120 s) before it may start; StartTime=now lifts that.
before=$(sha256sum <"$runs/run_0001.h5")
scontrol requeue "${job}_1" || fail "scontrol requeue ${job}_1"
for _ in $(seq 40); do scontrol -o show job "${job}_1" | grep -q 'JobState=PENDING' && break; sleep 0.25; done
scontrol update JobId="${job}_1" StartTime=now || fail "scontrol update ${job}_1 StartTime=now"
wait_job "$job"
scontrol -o show job "${job}_1" | grep -q 'Restarts=1' || fail "task 1 did not run again: $(scontrol -o show job "${job}_1")"
grep -q "run_0001.h5: already finished at step 6" "$runs/slurm_1.log" ||
    fail "re-queued task 1 log: $(cat "$runs/slurm_1.log")"
[[ $(sha256sum <"$runs/run_0001.h5") == "$before" ]] || fail "the re-queued task changed the finished run_0001.h5"
ok "scontrol requeue ${job}_1: the task ran again (Restarts=1), resumed its finished run and left it unchanged"

# Re-submit task 3 with an ICL_CLI whose resume asks for 3 more steps: the run continues from its checkpoint at 6.
cat >"$work/icl_cli_more_steps.sh" <<EOF
#!/bin/bash
if [ "\$1 \$2" = 'train --resume' ]; then exec '$cli' "\$@" --steps 9; fi
exec '$cli' "\$@"
EOF
chmod 755 "$work/icl_cli_more_steps.sh"
again=$(cd "$work" && sbatch --parsable --array=3 --export="ALL,ICL_CLI=$work/icl_cli_more_steps.sh" job.sh) ||
    fail "sbatch --array=3 job.sh"
again=${again%%;*}
wait_job "$again"
grep -q "finished at step 9 on cpu -> $runs/run_0003.h5" "$runs/slurm_3.log" ||
    fail "re-submitted task 3 log: $(cat "$runs/slurm_3.log")"
[[ $(checkpoints "$runs/run_0003.h5") == "0 3 6 9" ]] || fail "run_0003.h5 checkpoints: $(checkpoints "$runs/run_0003.h5")"
ok "sbatch --array=3 job.sh (job $again): task 3 resumed run_0003.h5 from step 6 to 9 (checkpoints 0 3 6 9)"

"$cli" aggregate "$runs" --json >"$work/aggregate.json" || fail "icl-cli aggregate"
python3 - "$work/aggregate.json" "$runs/aggregate/table.csv" <<'EOF' || fail "aggregate"
import csv, json, sys
a = json.load(open(sys.argv[1]))
assert (a["runs"], a["unfinished"], a["damaged"]) == (4, 0, []), a
rows = list(csv.DictReader(open(sys.argv[2])))
got = sorted((r["file"], r["model.kind"], r["task.p_bursty"], r["step"]) for r in rows)
want = [("run_0000.h5", "gpt2", "0", "6"), ("run_0001.h5", "lstm", "0", "6"),
        ("run_0002.h5", "gpt2", "0.9", "6"), ("run_0003.h5", "lstm", "0.9", "9")]
assert got == want, got
EOF
ok "icl-cli aggregate: 4 runs, none unfinished; table.csv has each grid point once at its final step"
