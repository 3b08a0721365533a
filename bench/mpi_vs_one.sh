#!/usr/bin/env bash
# A job of M processes of one GPU each (mpirun) against one process of M GPUs, in one call: GCN
# 100-256-256-47 on the community graph (SBM, N 2.45 M, E ≈ 122 M, METIS, as bench/gpu_cache.sh),
# store on host, the same partition and plan for both; prints each run's summary lines, whether
# the loss curves are the same, the epoch ratio and each run's peak RSS per process. The processes
# are not bound to cores (--bind-to none) and each has its share of them as OpenMP threads.
# Usage: OUT=DIR [M=2] [N=4] [EPOCHS=8] [METHOD=metis] [MPIRUN=mpirun] bench/mpi_vs_one.sh [extra ht-train args]
# (METHOD=multilevel: about 6 s instead of METIS's 90 s on the community graph; the plan's name says which)
# Binaries and libraries from .carry/bin and .carry/lib (the device machine's layout); the graph,
# partition and plan are cached in /tmp/cache.
set -u
B=$PWD/.carry/bin; C=/tmp/cache; mkdir -p "$C" "$OUT"
M=${M:-2}; N=${N:-4}; MPIRUN=${MPIRUN:-mpirun}
G=$C/c.htg; METHOD=${METHOD:-metis}; plan=$C/c${M}x$N; [[ $METHOD == metis ]] || plan+=_$METHOD
[[ -f $G ]] || $B/ht-convert --generate community --vertices 2450000 --avg-degree 50 --feature-dim 100 --classes 47 \
  --train-fraction 0.25 --seed 1 -o "$G" > "$OUT/gen.log" 2>&1 || { echo "generate failed"; exit 1; }
if [[ ! -f $plan.htplan ]]; then
  $B/ht-partition -g "$G" -m "$M" -n "$N" --method "$METHOD" -o "$plan.htp" > "$OUT/part.log" 2>&1 &&
    $B/ht-reorganize -g "$G" -p "$plan.htp" -o "$plan.htplan" > "$OUT/reorg.log" 2>&1 || { echo "plan failed"; exit 1; }
fi
args=(--graph "$G" --partition "$plan.htp" --plan "$plan.htplan" --backend cuda --model gcn --layers 100-256-256-47
      --epochs "${EPOCHS:-8}" --warmup 2 --eval-every 100 --dropout 0 --optimizer adam --comm full --store host "$@")
declare -A epoch rss
for run in one job; do
  if [[ $run == one ]]; then
    $B/ht-train "${args[@]}" --gpus "$M" --metrics-out "$OUT/m_one.jsonl" > "$OUT/train_one.log" 2>&1
  else
    # Open MPI binds each of 2 processes to one core by default: unbound, each with its share of the cores.
    $MPIRUN --oversubscribe --bind-to none -x OMP_NUM_THREADS=$(( $(nproc) / M )) -np "$M" $B/ht-train "${args[@]}" \
      --gpus 1 --metrics-out "$OUT/m_job.jsonl" > "$OUT/train_job.log" 2>&1
  fi
  echo "== $run (rc $?)"
  grep -E "^training|^median epoch|^exposed|^per epoch|^GPU cache|^memory|^host memory" "$OUT/train_$run.log" | tail -7
  epoch[$run]=$(sed -n 's/^median epoch \([0-9.]*\) ms.*/\1/p' "$OUT/train_$run.log")
  rss[$run]=$(sed -n 's/.*peak process RSS \([0-9.]* [KMG]iB\).*/\1/p' "$OUT/train_$run.log" | head -1)
done
same=$(cmp -s <(grep -o '"loss":[^,]*' "$OUT/m_one.jsonl") <(grep -o '"loss":[^,]*' "$OUT/m_job.jsonl") &&
  echo "the same bits" || echo "DIFFERENT")
echo "losses of the $M-process job against one process of $M GPUs: $same"
paste -d' ' <(grep -o '"loss":[^,]*' "$OUT/m_one.jsonl") <(grep -o '"loss":[^,]*' "$OUT/m_job.jsonl") | head -4
awk -v a="${epoch[job]:-0}" -v b="${epoch[one]:-0}" 'BEGIN { if (b > 0) printf "epoch: job %.2f ms, one process %.2f ms, ratio %.3f\n", a, b, a / b }'
echo "peak RSS per process: job ${rss[job]:-?} (the largest process), one process ${rss[one]:-?}"
