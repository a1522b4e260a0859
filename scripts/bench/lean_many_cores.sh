#!/bin/bash
# Lean workers on a many-core machine (issue #31): 16 workers on `maxi-yatzy` and on the
# `maxi-yatzy-saved` slice of 20 down to 15 filled, beside each one's one-process run.
#
# The two one-process runs are pinned to cores 0 and 1 and run at once; the pools run one
# after the other on the other cores (16 workers on 14 cores: CPU time is what is compared, so
# the pools' wall is not a 16-core figure). Every run is `bench_lean.py --json`, one file each.
#
#   scripts/bench/lean_many_cores.sh OUT_DIR [WORKERS]
#
# A machine without the project installed: put its dependencies on PYTHONPATH and
# redis-server on PATH first; `python3 -m memo_solver compile` runs here before the clock.
set -u
out=${1:?usage: lean_many_cores.sh OUT_DIR [WORKERS]}
workers=${2:-16}
cores=$(nproc)
[ "$cores" -ge 4 ] || { echo "lean_many_cores.sh: needs 4 cores or more, this machine has $cores" >&2; exit 2; }
mkdir -p "$out"
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
bench="python3 $(dirname "$0")/bench_lean.py --json"
start=$(date +%s)
since() { echo "$1 rc $2 at $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg)"; }
python3 -m memo_solver compile >"$out/compile.txt" 2>&1 || { tail -5 "$out/compile.txt"; exit 1; }
since compile 0
(taskset -c 0 $bench --rules maxi-yatzy --modes here >"$out/maxi_here.json" 2>"$out/maxi_here.err"
 since "maxi-yatzy, one process" $?) &
(taskset -c 1 $bench --rules maxi-yatzy-saved --down-to 15 --modes here \
   >"$out/slice_here.json" 2>"$out/slice_here.err"
 since "slice, one process" $?) &
(taskset -c "2-$((cores - 1))" $bench --rules maxi-yatzy --modes workers --workers "$workers" \
   >"$out/maxi_pool.json" 2>"$out/maxi_pool.err"
 since "maxi-yatzy, $workers workers" $?
 taskset -c "2-$((cores - 1))" $bench --rules maxi-yatzy-saved --down-to 15 --modes workers \
   --workers "$workers" >"$out/slice_pool.json" 2>"$out/slice_pool.err"
 since "slice, $workers workers" $?) &
wait
