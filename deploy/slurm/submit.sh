#!/bin/bash
# Submits forge's work to Slurm as two pairs of jobs: the film's chunks as a job array, then
# their concat (--dependency=afterok on the array); the sweep's shards as a job array, then
# their merge. Nothing runs here; sbatch queues the jobs and returns (WAIT=1: wait for the
# joins and exit non-zero if one failed).
#
#   deploy/slurm/submit.sh [all|render|sweep]      # default: all
#
# Settings (environment; each batch script lists its own, with defaults):
#   CHUNKS   how many chunks the film is cut into (default: 8) -> --array=0-(CHUNKS-1)
#   SHARDS   how many shards the sweep is cut into (default: 8)
#   FORGE, RECORDING, RENDER_ARGS, FILM_PARTS, FILM      -> render-chunks / render-concat
#   FORGE, SWEEP_ARGS, SWEEP_PARTS, SWEEP_CSV, SWEEP_PLOT -> sweep-shards / sweep-merge
#   SBATCH_ARGS  more sbatch flags for every job (e.g. "--partition=cpu --time=4:00:00")
#   WAIT=1   block until the joins end (sbatch --wait)
#
# The jobs run in the folder this is called from; the recording and outputs must be on a file
# system every node sees. Example, 32 chunks of a 4K film:
#   forge simulate turbulence -o film.bfs
#   CHUNKS=32 RECORDING=film.bfs RENDER_ARGS=--4k deploy/slurm/submit.sh render
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
what=${1:-all}
case $what in all|render|sweep) ;; *) echo "usage: $0 [all|render|sweep]" >&2; exit 2 ;; esac
read -r -a extra <<<"${SBATCH_ARGS:-}"
wait_flag=()
if [ "${WAIT:-0}" = 1 ]; then wait_flag=(--wait); fi

count() { # count NAME VALUE: a whole number >= 1
    case $2 in
        '' | *[!0-9]* | 0) echo "$1 must be a whole number >= 1, got '$2'" >&2; exit 2 ;;
    esac
}
joins=()
# pair NAME COUNT ARRAY_SCRIPT JOIN_SCRIPT: the array, then its join after it succeeded.
pair() {
    local array join
    array=$(sbatch --parsable --export=ALL --array=0-$(($2 - 1)) "${extra[@]}" "$here/$3")
    array=${array%%;*}
    echo "$1: array job $array ($2 tasks, $3)"
    if [ ${#wait_flag[@]} = 0 ]; then
        join=$(sbatch --parsable --export=ALL --dependency=afterok:"$array" \
            --kill-on-invalid-dep=yes "${extra[@]}" "$here/$4")
        echo "$1: join job ${join%%;*} ($4), after $array succeeds"
    else
        # sbatch --wait prints the id, then waits for the job and exits with its status.
        (
            set -o pipefail
            sbatch --parsable --export=ALL --dependency=afterok:"$array" \
                --kill-on-invalid-dep=yes "${wait_flag[@]}" "${extra[@]}" "$here/$4" |
                sed -u "s/^\([0-9]*\).*/$1: join job \1 ($4), after $array succeeds; waiting/"
        ) &
        joins+=("$!")
    fi
}
if [ "$what" != sweep ]; then
    count CHUNKS "${CHUNKS:=8}"
    pair render "$CHUNKS" render-chunks.sbatch render-concat.sbatch
fi
if [ "$what" != render ]; then
    count SHARDS "${SHARDS:=8}"
    pair sweep "$SHARDS" sweep-shards.sbatch sweep-merge.sbatch
fi
status=0
for pid in "${joins[@]}"; do wait "$pid" || status=1; done
exit $status
