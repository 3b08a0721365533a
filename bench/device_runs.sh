#!/usr/bin/env bash
# The device runs of session 8 (bench/RESULTS.md, 2026-11-26), for the lent GPU machines: binaries
# and libraries carried in .carry/bin and .carry/lib (or .carry/lib.tar.xz), the 0880d9f-style
# baseline ht-train in .carry/old, real graphs as .carry/graphs.tar.xz (tta). Write nothing but
# what must come back under $OUT (8 files at most: tar the rest).
# Usage: bench/device_runs.sh check|sanitize|prep|it|cache|scale|scale2|tta|tta-community|tta-community12m|gat|spmm|setup|sage
#   (variables: see each mode; BIN_DIR: another binaries folder than .carry/bin, e.g. a baseline's)
#   check  test_cuda_executor          prep   it-2004-like graph, partition, plan (GPUS, CHUNKS)
#   it     ht-train on them: VARIANTS "new:bf16 old:bf16 new:fp32 new:bf16+no-gpu-accumulate", EPOCHS
#   cache  bench/gpu_cache.sh old vs new (GRAPHS, NS, DTYPE, GPUS)
#   scale  1 vs 2 GPUs (GRAPHS, NS, CACHES; MS="1 2 4" for more)   scale2  the same with early pulls on/off, GAT   tta  bench/tta.sh on the carried graphs (GRAPHS_LIST)
#   gat    GAT on a bench graph, old vs new (GF, DTYPES)
#   setup  ht-train's setup, old vs new, in memory and n = 4 from plan files (GRAPHS)
#   spmm   bench/spmm_backends.sh: --spmm own vs cusparse, GCN and GAT (GRAPHS, N, MODELS, EPOCHS);
#          FILTER=1 first runs the GPU tests of both backends (test_cuda_executor *Cusparse*:*Spmm*)
#   sage   issue 38: bench/sage_vs_pyg.sh: GraphSAGE vs PyG SAGEConv, accuracy on cora, citeseer (carried) and
#          community (5 seeds each), products-like n = 4 epoch time (LIST, RUNS, EPOCHS, EPOCHS_BIG, TIMING, TOTAL)
#   tta-community     issue 36: community2m (2.45 M) and tolokers, every system over the LRS sweep,
#                     each run capped (CAP, CAP_SMALL); hongtu on 2 GPUs too when 2 are visible
#                     (BIG, SMALL: other graphs, e.g. community_smoke and cora to try the mode out)
#   tta-community12m  issue 36: community12m (12 M) out of core, each system at one learning rate
#                     (LR_HONGTU, LR_PYG, LR_SAGE, LR_GCN: the best of tta-community's sweep), CAP12
set -uo pipefail
for t in .carry/lib .carry/graphs; do [[ -d $t || ! -f $t.tar.xz ]] || tar xJf $t.tar.xz -C .carry; done
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0
B=${BIN_DIR:-$PWD/.carry/bin}; OLD=$PWD/.carry/old
# CUDA's own libraries stay out of the carry (cuSPARSE alone is 160 MB): where the machine's CUDA
# lacks one, PyTorch's wheels there may hold it.
for so in $(ldd $B/ht-train 2>/dev/null | awk '/not found/{print $1}'); do
  d=$(find /usr /opt /root /home -name "$so" -print -quit 2>/dev/null); [[ -n $d ]] && LD_LIBRARY_PATH+=":$(dirname "$d")"
done
NG=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | head -4
nproc; free -g | head -2
case $1 in
check)
  ldd $B/ht-train | grep "not found"
  timeout 420 $B/test_cuda_executor > $OUT/test_cuda.log 2>&1; echo "test_cuda_executor rc=$?"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[       OK|SKIPPED" $OUT/test_cuda.log | tail -30
  ;;
sanitize)  # compute-sanitizer TOOLS on the GPU tests of FILTER (peer pulls and pushes, epoch equivalence)
  for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    timeout ${TLIM:-200} compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $B/test_cuda_executor \
      --gtest_filter="${FILTER:-CudaKernels.PeerPullAndPushMatchCpu:CudaEngine.EpochEqualsCpuExecutor:CudaKernels.SixteenBitReturnsIntoDeviceRowsMatchCpu}" \
      > $OUT/sanitize_$tool.log 2>&1
    echo "== compute-sanitizer $tool rc=$?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)|^\[  FAILED" $OUT/sanitize_$tool.log | head -6
  done
  ;;
prep)  # the it-2004-like graph, partition and plan for m = GPUS
  GPUS=${GPUS:-$NG} CHUNKS=${CHUNKS:-8} MAX_STEPS=3 BIN=$B LIB=$PWD/.carry/lib OUT=$OUT/prep bench/it2004_like.sh
  ls -la /tmp/cache/it2004/*/ 2>/dev/null | head; df -h /tmp | tail -1
  ;;
it)  # it-2004-like: old binary bf16, new bf16, new fp32 (and extra variants), same files
  GPUS=${GPUS:-$NG}; CHUNKS=${CHUNKS:-8}
  D=$(ls -d /tmp/cache/it2004/web_*/auto_m${GPUS}_n${CHUNKS} | head -1)
  G=$(dirname $D)/g.htg
  for v in ${VARIANTS:-old:bf16 new:bf16 new:fp32}; do
    bin=$B; [[ ${v%%:*} == old ]] && bin=$OLD
    dt=${v#*:}; extra=""; [[ $dt == *+* ]] && { extra="--${dt#*+}"; dt=${dt%%+*}; }
    tag=${v//[:+]/_}
    timeout ${TLIM:-300} $bin/ht-train --graph $G --partition $D/p.htp --plan $D/p.htplan --backend cuda --gpus $GPUS \
      --model gcn --layers 256-128-128-64 --host-dtype $dt --epochs ${EPOCHS:-4} --warmup 1 --eval-every 100 --no-verify \
      --metrics-out $OUT/it_$tag.jsonl --timeline-out $OUT/tl_$tag.json $extra > $OUT/it_$tag.log 2>&1
    echo "== it2004 m=$GPUS $v rc=$?"
    grep -E "^median epoch|^exposed|^busy|^GPU cache|^setup|^link|host queue" $OUT/it_$tag.log | head -12
  done
  ;;
cache)  # bench/gpu_cache.sh old vs new on the bench graphs: GRAPHS, NS, DTYPE, GPUS
  for b in old new; do
    bin=$B; [[ $b == old ]] && bin=$OLD
    OUT=$OUT/cache_$b BIN=$B TRAIN_BIN=$bin EPOCHS=${EPOCHS:-6} GPUS=${GPUS:-1} DTYPE=${DTYPE:-fp32} CACHES="${CACHES:-auto}" \
      bash bench/gpu_cache.sh "${GRAPHS:-community}" "${NS:-4}" ${EXTRA:-} 2>&1 | grep -E "^==|^median|^exposed" | sed "s/^/$b | /"
  done
  ;;
scale)  # 1 vs 2 GPUs, n = NS per GPU, GCN 100-256-256-47, cache CACHES, on GRAPHS (bench_graphs.sh)
  source bench/bench_graphs.sh; C=/tmp/cache; mkdir -p $C
  for graph in ${GRAPHS:-products community}; do
    bench_graph $graph > $OUT/gen_$graph.log 2>&1 || { echo "gen $graph failed"; tail -3 $OUT/gen_$graph.log; continue; }
    for m in ${MS:-1 2}; do
      plan=$C/$P${m}x${NS:-4}
      [[ -f $plan.htplan ]] || { $B/ht-partition -q -g $G -m $m -n ${NS:-4} --method $method -o $plan.htp > /dev/null 2>&1 &&
        $B/ht-reorganize -q -g $G -p $plan.htp -o $plan.htplan > /dev/null 2>&1; } || { echo "plan $graph m=$m failed"; continue; }
      for cache in ${CACHES:-auto off}; do
        timeout 200 $B/ht-train --graph $G --partition $plan.htp --plan $plan.htplan --backend cuda --gpus $m --model gcn \
          --layers 100-256-256-47 --epochs ${EPOCHS:-8} --warmup 2 --eval-every 100 --dropout 0 --comm full --store host \
          --gpu-cache $cache --metrics-out $OUT/s_${graph}_m${m}_$cache.jsonl > $OUT/s_${graph}_m${m}_$cache.log 2>&1
        echo "== $graph m=$m cache $cache rc=$? | $(grep -E '^median epoch' $OUT/s_${graph}_m${m}_$cache.log | cut -c1-60) | $(grep -E '^per-GPU' $OUT/s_${graph}_m${m}_$cache.log)"
        grep -E "^exposed" $OUT/s_${graph}_m${m}_$cache.log
      done
    done
  done
  ;;
scale2)  # issue 32: 1, 2, 4 GPUs (MS), n = NS per GPU, PULLS at m > 1 (on: --overlap-pulls,
  # kept: --keep-remote-rows on, off: --keep-remote-rows off; default "on off"; m = 1 runs once, with
  # PULLS_FIRST, default on), CACHES, MODELS,
  # partitions by METHOD (default: the graph's; community's METIS takes ~90 s per m, multilevel ~6 s)
  source bench/bench_graphs.sh; C=/tmp/cache; mkdir -p $C $OUT/s2; t0=$SECONDS
  for graph in ${GRAPHS:-community products}; do
    bench_graph $graph > $OUT/s2/gen_$graph.log 2>&1 || { echo "gen $graph failed"; continue; }
    meth=${METHOD:-$method}; [[ $method == range ]] && meth=range
    for m in ${MS:-1 2 4}; do
      [[ $m -le $NG ]] || continue
      plan=$C/$P${m}x${NS:-4}_$meth
      [[ -f $plan.htplan ]] || { $B/ht-partition -q -g $G -m $m -n ${NS:-4} --method $meth -o $plan.htp > /dev/null 2>&1 &&
        $B/ht-reorganize -q -g $G -p $plan.htp -o $plan.htplan > /dev/null 2>&1; } || { echo "plan $graph m=$m failed"; continue; }
      for model in ${MODELS:-gcn}; do
        margs=(--model gcn --layers 100-256-256-47); [[ $model == gat ]] && margs=(--model gat --layers 100-64-64-47 --heads 4 --out-heads 1)
        for cache in ${CACHES:-auto off}; do
          for pulls in ${PULLS:-on off}; do
            [[ $m == 1 && $pulls != ${PULLS_FIRST:-on} ]] && continue  # one run at m = 1
            extra=(); [[ $pulls == on && $m -gt 1 ]] && extra=(--overlap-pulls)
            [[ $pulls == kept ]] && extra=(--keep-remote-rows on); [[ $pulls == off && $m -gt 1 ]] && extra=(--keep-remote-rows off)
            tag=${graph}_${model}_m${m}_${cache}_$pulls
            timeout 200 $B/ht-train --graph $G --partition $plan.htp --plan $plan.htplan --backend cuda --gpus $m "${margs[@]}" \
              --epochs ${EPOCHS:-8} --warmup 2 --eval-every 100 --dropout 0 --comm full --store host \
              --gpu-cache $cache "${extra[@]}" --metrics-out $OUT/s2/$tag.jsonl > $OUT/s2/$tag.log 2>&1
            echo "== $tag rc=$? | $(grep -E '^median epoch' $OUT/s2/$tag.log | cut -c1-100) | $(grep -E '^per-GPU' $OUT/s2/$tag.log)"
            grep -E "^exposed|^per epoch" $OUT/s2/$tag.log | cut -c1-160
          done
        done
      done
    done
  done
  echo "scale2 took $((SECONDS - t0)) s"; tar czf $OUT/scale2.tar.gz -C $OUT s2 && rm -rf $OUT/s2
  ;;
tta)  # bench/tta.sh on the carried real graphs (GRAPHS_LIST), EPOCHS, PATIENCE
  ldd $B/ht-train | grep "not found"
  timeout ${TLIM:-420} env HT_BIN=$B GRAPHS=$PWD/.carry/graphs bash bench/tta.sh --out /tmp/tta --graphs "${GRAPHS_LIST:-cora citeseer facebook tolokers}" \
    --epochs ${EPOCHS:-200} --patience ${PATIENCE:-30} 2>&1 | tail -40
  echo "tta rc=$?"; [[ -f /tmp/tta/tta_table.md ]] || python3 bench/tta.py report /tmp/tta --table /tmp/tta/tta_table.md --plot /tmp/tta/tta.png
  cat /tmp/tta/tta_table.md 2>/dev/null; tar czf $OUT/tta.tar.gz -C /tmp tta
  ;;
tta-community)  # issue 36 (a)-(c), one call < 540 s: community2m and tolokers, the lr sweep LRS for every system
  # (hongtu in memory, 2 GPUs out of core when visible; PyG full-graph; mini-batch SAGE and GCN 15-10-5 b1024),
  # each run capped at CAP s of training (CAP_SMALL on tolokers), early stop PATIENCE; TLIM bounds the whole.
  [[ $($B/ht-train --help 2>&1) == *--time-limit* ]] || { echo "$B/ht-train has no --time-limit: carry one built from issue-36c or later"; exit 1; }
  ldd $B/ht-train | grep "not found"
  T=/tmp/tta36; G36=/tmp/g36; rm -rf $T; mkdir -p $T $G36; t0=$SECONDS  # graphs kept on a warm machine
  cp -n .carry/graphs/*.htg $G36/ 2>/dev/null  # the real graphs (tolokers), beside the generated ones
  run_tta() {  # GRAPH CAP [tta.sh args]
    local g=$1 cap=$2 left=$((${TLIM:-500} - (SECONDS - t0))); shift 2
    [[ $left -gt 20 ]] || { echo "== $g: no time left"; return; }
    timeout -k 10 $left env HT_BIN=$B GRAPHS=$G36 bash bench/tta.sh --out $T \
      --graphs $g --lr-list "${LRS:-0.001 0.003 0.01 0.03}" --time-cap $cap --epochs 1000 --patience ${PATIENCE:-30} \
      --minibatch "${MB:-sage:15-10-5:1024 gcn:15-10-5:1024}" "$@" 2>&1 | grep -v "^|" | tail -40
    echo "== $g: rc=${PIPESTATUS[0]} at $((SECONDS - t0)) s"
  }
  run_tta "${SMALL:-tolokers}" ${CAP_SMALL:-6} --systems "hongtu-inmem pyg-full minibatch"
  sys2=""; [[ $NG -ge 2 ]] && sys2="hongtu-2gpu"
  run_tta ${BIG:-community2m} ${CAP:-12} --systems "hongtu-inmem $sys2 pyg-full minibatch" --chunks 1
  python3 bench/tta.py report $T --table $T/tta_table.md --best-table $T/tta_best_lr.md --plot $T/tta.png > /dev/null
  cat $T/tta_best_lr.md; echo; cat $T/tta_table.md
  cp $T/tta_table.md $T/tta_best_lr.md $T/tta.png $OUT/ 2>/dev/null
  tar czf $OUT/tta_community.tar.gz -C /tmp --exclude=graphs tta36
  ;;
tta-community12m)  # issue 36 (a), one call < 540 s: community12m (12 M vertices, 300 M edges) out of core, each
  # system at one learning rate (the best of tta-community's sweep on community2m: LR_HONGTU, LR_PYG, LR_SAGE,
  # LR_GCN), each run capped at CAP12 s of training; hongtu partitioned once (ht-partition, n auto); HT12_EXTRA:
  # more ht-train options (e.g. "--host-dtype bf16" if the host memory check refuses the fp32 store); PYG12=0
  # skips PyG full-graph (expected out of memory at 12 M x 256).
  [[ $($B/ht-train --help 2>&1) == *--time-limit* ]] || { echo "$B/ht-train has no --time-limit: carry one built from issue-36c or later"; exit 1; }
  ldd $B/ht-train | grep "not found"
  T=/tmp/tta36_12m; rm -rf $T; mkdir -p $T /tmp/g36; t0=$SECONDS
  run12() {  # SYSTEMS LR [tta.sh args]
    local sys=$1 lr=$2 left=$((${TLIM:-510} - (SECONDS - t0))); shift 2
    [[ $left -gt 30 ]] || { echo "== $sys: no time left"; return; }
    timeout -k 10 $left env HT_BIN=$B GRAPHS=/tmp/g36 bash bench/tta.sh --out $T \
      --graphs ${BIG12:-community12m} --lr-list $lr --time-cap ${CAP12:-60} --epochs 1000 --patience ${PATIENCE:-30} "$@" \
      --systems "$sys" 2>&1 | grep -v "^|" | grep -v "^$" | tail -12
    echo "== $sys lr $lr: rc=${PIPESTATUS[0]} at $((SECONDS - t0)) s"
  }
  sys2=""; [[ $NG -ge 2 ]] && sys2="hongtu-2gpu"
  HT_TRAIN_EXTRA="${HT12_EXTRA:-}" run12 "hongtu-ooc $sys2" ${LR_HONGTU:-0.01} --chunks auto
  run12 minibatch ${LR_SAGE:-0.003} --minibatch "sage:15-10-5:1024"
  run12 minibatch ${LR_GCN:-0.003} --minibatch "gcn:15-10-5:1024"
  [[ ${PYG12:-1} -eq 1 ]] && run12 pyg-full ${LR_PYG:-0.01}
  python3 bench/tta.py report $T --table $T/tta_table.md --best-table $T/tta_best_lr.md --plot $T/tta.png > /dev/null
  cat $T/tta_table.md; df -h /tmp | tail -1
  cp $T/tta_table.md $OUT/tta12m_table.md; cp $T/tta.png $OUT/tta12m.png
  tar czf $OUT/tta_community12m.tar.gz -C /tmp --exclude=graphs tta36_12m
  ;;
sage)  # issue 38: GraphSAGE against PyG SAGEConv (bench/sage_vs_pyg.sh; its variables pass through), < 540 s
  ldd $B/ht-train | grep "not found"
  S=/tmp/sage38; rm -rf $S; mkdir -p $S
  OUT=$S BIN=$B GRAPHS=$PWD/.carry/graphs C=/tmp/cache TOTAL=${TOTAL:-520} bash bench/sage_vs_pyg.sh 2>&1 | tail -60
  echo "sage rc=${PIPESTATUS[0]}"; cp $S/sage_vs_pyg.md $OUT/ 2>/dev/null
  tar czf $OUT/sage38.tar.gz -C /tmp --exclude=graphs sage38
  ;;
setup)  # ht-train's setup, old against new (issue 33): in memory (--chunks 1) and n = 4 from plan files, GRAPHS
  source bench/bench_graphs.sh; C=/tmp/cache; mkdir -p $C
  for graph in ${GRAPHS:-community products}; do
    bench_graph $graph || continue
    plan=$C/${P}1x4; meth=$method; [[ $meth == metis ]] && meth=multilevel
    [[ -f $plan.htplan ]] || { $B/ht-partition -q -g $G -m 1 -n 4 --method $meth -o $plan.htp > /dev/null 2>&1 &&
      $B/ht-reorganize -q -g $G -p $plan.htp -o $plan.htplan > /dev/null 2>&1; } || echo "plan $graph failed"
    for b in old new; do
      bin=$B; [[ $b == old ]] && bin=$OLD
      for mode in memory files; do
        args=(--chunks 1); [[ $mode == files ]] && args=(--partition $plan.htp --plan $plan.htplan --store host)
        timeout 200 $bin/ht-train --graph $G "${args[@]}" --backend cuda --model gcn --layers 100-256-256-47 --epochs 5 \
          --warmup 2 --eval-every 100 > $OUT/setup_${graph}_${mode}_$b.log 2>&1
        echo "== $graph $mode $b rc=$? | $(grep -E '^median epoch' $OUT/setup_${graph}_${mode}_$b.log | cut -c1-32)"
        grep -E "^setup" $OUT/setup_${graph}_${mode}_$b.log
      done
    done
  done
  ;;
gat)  # GAT on a bench graph's n=4 plan (made by cache above): old vs new, DTYPES
  G=/tmp/cache/${GF:-p}.htg; PL=/tmp/cache/${GF:-p}4
  for dt in ${DTYPES:-bf16 fp32}; do for b in old new; do
    bin=$B; [[ $b == old ]] && bin=$OLD
    timeout 200 $bin/ht-train --graph $G --partition $PL.htp --plan $PL.htplan --backend cuda --model gat \
      --layers 100-64-64-47 --heads 4 --out-heads 1 --epochs ${EPOCHS:-6} --warmup 2 --eval-every 100 --dropout 0 \
      --host-dtype $dt --comm full --metrics-out $OUT/gat_${b}_$dt.jsonl > $OUT/gat_${b}_$dt.log 2>&1
    echo "== GAT $GF $dt $b rc=$?"; grep -E "^median epoch|^exposed|^GPU cache" $OUT/gat_${b}_$dt.log
  done; done
  ;;
spmm)  # the sparse products' backends: own kernels vs cuSPARSE, timed and compared (bench/spmm_backends.sh)
  if [[ ${FILTER:-0} == 1 ]]; then
    timeout 300 $B/test_cuda_executor --gtest_filter='*Cusparse*:*Spmm*' > $OUT/test_spmm.log 2>&1
    echo "test_cuda_executor *Cusparse*:*Spmm* rc=$?"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[       OK|SKIPPED" $OUT/test_spmm.log | tail -8
  fi
  OUT=$OUT BIN=$B LIB=$PWD/.carry/lib EPOCHS=${EPOCHS:-6} N=${N:-4} MODELS="${MODELS:-gcn gat}" \
    bash bench/spmm_backends.sh "${GRAPHS:-products community rmat}" 2>&1 | grep -vE "^exposed" | tail -40
  ;;
esac
