#!/usr/bin/env bash
# A real scheduler in the loop: brings up a one-node Slurm on this machine (Debian's slurm-wlm
# and munge, as root) and submits the example batch scripts of deploy/slurm through their
# driver, submit.sh: a recording rendered as a job array of 4 chunks (--chunk auto) with a
# dependent concat job, a sweep as an array of 4 shards (--shard auto) with a dependent merge
# job. Checks both against the single-machine results: the film decodes to the whole
# render's frames exactly (--crf 0: lossless), the merged CSV equals the unsharded one byte for
# byte. Stops the daemons it started. Prints the wall times.
#
#   scripts/slurm-check.sh            # FORGE=path/to/forge to test another binary
#   STEPS=299 SIZE=1280x720 scripts/slurm-check.sh   # a longer, larger film (default 119, 320x180)
#
# Needs: root, apt-get install slurm-wlm munge ffmpeg mesa-vulkan-drivers.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy=$PWD/deploy/slurm
FORGE=${FORGE:-$PWD/target/release/forge}
FORGE=$(readlink -f "$FORGE")
[ -x "$FORGE" ] || { echo "no forge binary at $FORGE (cargo build --release)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "slurm-check.sh: run as root (it starts munged, slurmctld, slurmd)" >&2; exit 1; }
for p in munged slurmctld slurmd sbatch ffmpeg; do
    command -v "$p" >/dev/null || { echo "missing $p: apt-get install slurm-wlm munge ffmpeg" >&2; exit 1; }
done
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

host=$(hostname -s)
work=$(mktemp -d /tmp/forge-slurm.XXXXXX)
conf=$work/etc
mkdir -p "$conf" "$work/spool/ctld" "$work/spool/d" "$work/run" "$work/job"
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    sleep 1
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# munge: a key of our own, a socket of our own (a munged already running is left alone).
chmod 755 "$work"
m=$work/munge
mkdir -p "$m"
munge_sock=$m/munge.socket
dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
chmod 400 "$m/munge.key"
chown -R munge: "$m"
chmod 700 "$m"
runuser -u munge -- /usr/sbin/munged --key-file="$m/munge.key" --socket="$munge_sock" \
    --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munge.seed" --force
sleep 0.5
pids+=("$(cat "$m/munged.pid")")

cat > "$conf/slurm.conf" <<EOF
ClusterName=forgecheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=check Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf/slurm.conf
slurmctld -f "$SLURM_CONF"
sleep 0.5
pids+=("$(cat "$work/run/slurmctld.pid")")
slurmd -f "$SLURM_CONF"
sleep 1
pids+=("$(cat "$work/run/slurmd.pid")")
for _ in $(seq 30); do
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    case $state in idle*|mix*|alloc*) break ;; down*|drain*) scontrol update nodename="$host" state=resume || true ;; esac
    sleep 1
done
echo "slurm: node $host is ${state:-unknown}"

cd "$work/job"
"$FORGE" simulate murmuration --agents 400 --steps "${STEPS:-119}" -o film.bfs -q
look=(--size "${SIZE:-320x180}" --crf 0 -q)

# Single machine.
t0=$(date +%s.%N)
"$FORGE" render film.bfs "${look[@]}" -o whole.mp4 --force
t1=$(date +%s.%N)
sweep=(vicsek --vary noise=0.5:3.5:0.25 --vary agents=40 --seeds 2 --equilibrate 50 --measure 50 -q)
"$FORGE" sweep "${sweep[@]}" -o all.csv

# Through Slurm: deploy/slurm/submit.sh, arrays of 4, each followed by its join (afterok),
# waited for (WAIT=1). A failed job shows in the checks below.
t2=$(date +%s.%N)
WAIT=1 FORGE=$FORGE CHUNKS=4 RECORDING=film.bfs RENDER_ARGS="${look[*]}" FILM_PARTS=parts \
    FILM=film.mp4 "$deploy/submit.sh" render || true
t3=$(date +%s.%N)
WAIT=1 FORGE=$FORGE SHARDS=4 SWEEP_ARGS="${sweep[*]}" SWEEP_PARTS=shards SWEEP_CSV=merged.csv \
    SWEEP_PLOT='' "$deploy/submit.sh" sweep || true

fail=0
frames() { ffmpeg -v error -i "$1" -f framemd5 - | grep -v '^#'; }
if [ -f film.mp4 ] && diff <(frames whole.mp4) <(frames film.mp4) >/dev/null; then
    echo "render: 4 Slurm chunks joined = the whole render, frame for frame ($(frames film.mp4 | wc -l) frames)"
else
    echo "render: FAILED (see $work/job/*.log)"; fail=1
fi
if [ -f merged.csv ] && cmp -s all.csv merged.csv; then
    echo "sweep: 4 Slurm shards merged = the unsharded CSV, byte for byte ($(($(wc -l < all.csv) - 1)) points)"
else
    echo "sweep: FAILED (see $work/job/*.log)"; fail=1
fi
printf 'wall: whole render %.2f s; 4-chunk array + concat through Slurm %.2f s (%s frames at %s)\n' \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t3 - $t2" | bc)" "$((${STEPS:-119} + 1))" "${SIZE:-320x180}"
if [ $fail = 0 ]; then rm -rf "$work"; else echo "kept $work"; fi
exit $fail
