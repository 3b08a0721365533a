#!/usr/bin/env bash
# Runs the hongtu pipeline for one run: convert -> partition -> reorganize ->
# train (-> plots), inside a Slurm job or by hand:
#
#   scripts/slurm/ht_pipeline.sh [-c CONFIG] [STEP...]      STEP: convert partition
#                                                          reorganize train plots all
#
# The sbatch scripts beside this file call it. Settings are HT_* environment
# variables or KEY=VALUE lines of a config file with the same names (the
# environment wins); `ht_pipeline.sh --help` lists them, example.conf documents
# them, docs/USAGE.md ("Batch jobs") explains the whole setup.
#
# Preprocessing outputs (graph, partition, plan) go to HT_DATA_DIR and are
# reused by later runs: each has a stamp file (FILE.stamp) holding the tool's
# version, the exact command line and the identity (size + mtime, or sha256)
# of every input and of the output itself. A step is skipped only when the
# stamp matches; otherwise it reruns and everything downstream follows
# (their inputs changed). Training outputs and logs go to the run directory.
set -euo pipefail

HT_KEYS=(HT_ROOT HT_BIN HT_RUNS_DIR HT_DATA_DIR HT_RUN_DIR HT_NAME HT_GRAPH HT_CONVERT_ARGS
         HT_PARTS HT_CHUNKS HT_METHOD HT_PARTITION_ARGS HT_REORGANIZE_ARGS HT_BACKEND HT_CPU_DEVICES
         HT_MODEL HT_EPOCHS HT_COMM HT_TRAIN_ARGS HT_SAVE_MODEL HT_PREDICT HT_PLOTS HT_STAMP HT_PYTHON
         HT_CHECKPOINT HT_CHECKPOINT_EVERY HT_REQUEUE
         HT_SBATCH_ARGS HT_PREP_SBATCH_ARGS HT_TRAIN_SBATCH_ARGS)

usage() {
  cat <<'EOF'
usage: ht_pipeline.sh [-c CONFIG] [STEP...]
Steps: convert partition reorganize train plots; all (default) = all five in order.
Settings (environment variable, or KEY=VALUE line in CONFIG; the environment wins):
  HT_ROOT            hongtu checkout (default: two levels above this script)
  HT_BIN             folder of the ht-* tools (default: $HT_ROOT/build/bin, else PATH)
  HT_RUNS_DIR        parent of run directories (default: $SLURM_SUBMIT_DIR/runs or ./runs)
  HT_DATA_DIR        reusable preprocessing outputs (default: $HT_RUNS_DIR/data)
  HT_RUN_DIR         this run's directory (default: $HT_RUNS_DIR/<job name>-<job id>,
                     outside Slurm $HT_RUNS_DIR/local-<date>-<pid>)
  HT_NAME            dataset name used in file names (default: graph, or HT_GRAPH's stem)
  HT_GRAPH           an existing .htg graph file: skips the convert step
  HT_CONVERT_ARGS    ht-convert arguments without -o, e.g. "--generate community --vertices 5000
                     --classes 8 --feature-dim 32" (word-split; paths may not contain spaces)
  HT_PARTS           m, partitions = GPUs (default: GPUs of the allocation; with no GPU HT_CPU_DEVICES)
  HT_CHUNKS          n, chunks per partition (default 4)
  HT_METHOD          ht-partition --method: metis|auto|multilevel|random|range (default metis)
  HT_PARTITION_ARGS  extra ht-partition arguments
  HT_REORGANIZE_ARGS extra ht-reorganize arguments
  HT_BACKEND         auto|cuda|cpu (default auto: cuda when the allocation has GPUs)
  HT_CPU_DEVICES     emulated devices of the cpu backend when HT_PARTS is not set (default 2)
  HT_MODEL           gcn|gat (default gcn)
  HT_EPOCHS          training epochs (default 200)
  HT_COMM            baseline|p2p|full (default full)
  HT_TRAIN_ARGS      extra ht-train arguments, e.g. "--lr 0.01 --dropout 0.5 --normalize-features"
  HT_SAVE_MODEL      1: write model.htmodel in the run directory (default 1)
  HT_PREDICT         1: write predictions.csv in the run directory (default 1)
  HT_CHECKPOINT      1: train with --checkpoint train.htckpt in the run directory and resume
                     from it when it is there (a requeued or rerun job) (default 1)
  HT_CHECKPOINT_EVERY epochs between checkpoints (default 10)
  HT_REQUEUE         auto|0: when ht-train stops on SIGTERM/SIGINT (time limit warning,
                     preemption) after writing its checkpoint, requeue the Slurm job
                     (scontrol requeue) so that it resumes (default auto: inside Slurm)
  HT_PLOTS           auto|1|0: plots of the metrics (auto: only when matplotlib is there,
                     failures only warn; 1: failures fail the job) (default auto)
  HT_STAMP           mtime|sha256: how inputs are identified in stamp files (default mtime)
  HT_PYTHON          python with matplotlib for the plots (default /usr/bin/python3)
  HT_SBATCH_ARGS, HT_PREP_SBATCH_ARGS, HT_TRAIN_SBATCH_ARGS: used by submit_chain.sh only
EOF
}

die() { echo "ht_pipeline: error: $*" >&2; exit 1; }
note() {
  local line
  line="[ht_pipeline $(date '+%F %T')] $*"
  echo "$line"
  if [ -n "${PIPELINE_LOG:-}" ]; then echo "$line" >>"$PIPELINE_LOG"; fi
}
is_key() { local k; for k in "${HT_KEYS[@]}"; do [ "$k" = "$1" ] && return 0; done; return 1; }

# KEY=VALUE lines; blank lines and '#' comments ignored; one pair of matching
# quotes around the value is removed; nothing is expanded or executed. A key
# already in the environment keeps its environment value.
load_config() {
  local file=$1 n=0 line key value
  [ -f "$file" ] || die "config file $file: no such file"
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    [ -z "$line" ] || [ "${line:0:1}" = "#" ] && continue
    [[ "$line" =~ ^([A-Z][A-Z0-9_]*)=(.*)$ ]] || die "$file:$n: expected KEY=VALUE, got: $line"
    key=${BASH_REMATCH[1]}
    value=${BASH_REMATCH[2]}
    is_key "$key" || die "$file:$n: unknown key $key (known keys: ht_pipeline.sh --help)"
    if [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]]; then value=${BASH_REMATCH[1]}; fi
    if [ -z "${!key+set}" ]; then printf -v "$key" '%s' "$value"; export "${key?}"; fi
  done <"$file"
}

# GPUs of this job: SLURM_GPUS_ON_NODE (set with --gpus/--gres), else the
# entries of CUDA_VISIBLE_DEVICES, else 0.
detect_gpus() {
  if [[ "${SLURM_GPUS_ON_NODE:-}" =~ ^[0-9]+$ ]] && [ "$SLURM_GPUS_ON_NODE" -gt 0 ]; then
    echo "$SLURM_GPUS_ON_NODE"
  elif [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$CUDA_VISIBLE_DEVICES" != "NoDevFiles" ]; then
    local ids
    IFS=, read -ra ids <<<"$CUDA_VISIBLE_DEVICES"
    echo "${#ids[@]}"
  else
    echo 0
  fi
}

set_defaults() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  : "${HT_ROOT:=$(cd "$here/../.." && pwd)}"
  if [ -z "${HT_BIN:-}" ]; then
    if [ -x "$HT_ROOT/build/bin/ht-train" ]; then HT_BIN=$HT_ROOT/build/bin; else HT_BIN=; fi
  fi
  : "${HT_RUNS_DIR:=${SLURM_SUBMIT_DIR:-$PWD}/runs}"
  : "${HT_DATA_DIR:=$HT_RUNS_DIR/data}"
  if [ -z "${HT_RUN_DIR:-}" ]; then
    if [ -n "${SLURM_JOB_ID:-}" ]; then
      HT_RUN_DIR=$HT_RUNS_DIR/${SLURM_JOB_NAME:-job}-$SLURM_JOB_ID
    else
      HT_RUN_DIR=$HT_RUNS_DIR/local-$(date +%Y%m%d-%H%M%S)-$$
    fi
  fi
  if [ -z "${HT_NAME:-}" ]; then
    if [ -n "${HT_GRAPH:-}" ]; then HT_NAME=$(basename "$HT_GRAPH" .htg); else HT_NAME=graph; fi
  fi
  : "${HT_CHUNKS:=4}" "${HT_METHOD:=metis}" "${HT_BACKEND:=auto}" "${HT_CPU_DEVICES:=2}"
  : "${HT_MODEL:=gcn}" "${HT_EPOCHS:=200}" "${HT_COMM:=full}" "${HT_SAVE_MODEL:=1}" "${HT_PREDICT:=1}"
  : "${HT_PLOTS:=auto}" "${HT_STAMP:=mtime}" "${HT_PYTHON:=/usr/bin/python3}"
  : "${HT_CHECKPOINT:=1}" "${HT_CHECKPOINT_EVERY:=10}" "${HT_REQUEUE:=auto}"
  export HT_PYTHON
  : "${HT_CONVERT_ARGS:=}" "${HT_GRAPH:=}" "${HT_PARTITION_ARGS:=}" "${HT_REORGANIZE_ARGS:=}" "${HT_TRAIN_ARGS:=}"
  case $HT_STAMP in mtime|sha256) ;; *) die "HT_STAMP=$HT_STAMP: expected mtime or sha256" ;; esac
  case $HT_PLOTS in auto|0|1) ;; *) die "HT_PLOTS=$HT_PLOTS: expected auto, 1 or 0" ;; esac
  case $HT_CHECKPOINT in 0|1) ;; *) die "HT_CHECKPOINT=$HT_CHECKPOINT: expected 1 or 0" ;; esac
  case $HT_REQUEUE in auto|0) ;; *) die "HT_REQUEUE=$HT_REQUEUE: expected auto or 0" ;; esac
  case $HT_CHECKPOINT_EVERY in ''|*[!0-9]*|0) die "HT_CHECKPOINT_EVERY=$HT_CHECKPOINT_EVERY: expected a positive integer" ;; esac

  GPUS=$(detect_gpus)
  case $HT_BACKEND in
    auto) if [ "$GPUS" -gt 0 ]; then BACKEND=cuda; else BACKEND=cpu; fi ;;
    cpu|cuda) BACKEND=$HT_BACKEND ;;
    *) die "HT_BACKEND=$HT_BACKEND: expected auto, cpu or cuda" ;;
  esac
  if [ -n "${HT_PARTS:-}" ]; then M=$HT_PARTS
  elif [ "$BACKEND" = cuda ]; then
    [ "$GPUS" -gt 0 ] || die "HT_BACKEND=cuda but the job has no GPU (request some with sbatch --gpus=N, or set HT_PARTS)"
    M=$GPUS
  else M=$HT_CPU_DEVICES
  fi
  if [ "$BACKEND" = cuda ] && [ "$GPUS" -gt 0 ] && [[ "$M" =~ ^[0-9]+$ ]] && [ "$M" -gt "$GPUS" ]; then
    die "HT_PARTS=$M but the job has only $GPUS GPU(s) (SLURM_GPUS_ON_NODE / CUDA_VISIBLE_DEVICES)"
  fi
  if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK; fi

  GRAPH=${HT_GRAPH:-$HT_DATA_DIR/$HT_NAME.htg}
  local tag=$HT_NAME.m$M-n$HT_CHUNKS-$HT_METHOD
  PART=$HT_DATA_DIR/$tag.htp
  PLAN=$HT_DATA_DIR/$tag.htplan
}

tool() {
  local t=$1
  if [ -n "$HT_BIN" ]; then
    [ -x "$HT_BIN/$t" ] || die "$HT_BIN/$t: not found or not executable (build with make, or set HT_BIN)"
    echo "$HT_BIN/$t"
  else
    command -v "$t" >/dev/null || die "$t: not on PATH and $HT_ROOT/build/bin has no tools (build with make, or set HT_BIN)"
    command -v "$t"
  fi
}

# One line identifying a file or folder: size + mtime (ns), or its sha256.
identity() {
  local p=$1
  if [ -d "$p" ]; then
    if [ "$HT_STAMP" = sha256 ]; then
      echo "$p dir $(cd "$p" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum | sha256sum | cut -d' ' -f1)"
    else
      echo "$p dir $(find "$p" -type f -printf '%P %s %T@\n' | LC_ALL=C sort | sha256sum | cut -d' ' -f1)"
    fi
  elif [ "$HT_STAMP" = sha256 ]; then
    echo "$p sha256 $(sha256sum <"$p" | cut -d' ' -f1)"
  else
    echo "$p $(stat -L -c '%s %.9Y' "$p")"
  fi
}

# run_cached STEP --out FILE [--out FILE...] [--in PATH...] -- COMMAND...:
# runs COMMAND unless the first output's stamp says it was made by the same
# tool version and command line from the same inputs, and every output is
# still there; then stamps it.
run_cached() {
  local step=$1 outs=() ins=() want reason="" p lockfd=""
  shift
  while [ "$1" != -- ]; do
    case $1 in --out) outs+=("$2") ;; --in) ins+=("$2") ;; *) die "run_cached: bad argument $1" ;; esac
    shift 2
  done
  shift
  local cmd=("$@") out=${outs[0]}
  mkdir -p "$(dirname "$out")"
  if command -v flock >/dev/null; then
    # Jobs sharing HT_DATA_DIR wait here for each other instead of racing.
    exec {lockfd}>"$(dirname "$out")/.$(basename "$out").lock"
    flock "$lockfd"
  fi
  want="tool: $("${cmd[0]}" --version 2>&1 | head -n 1)"$'\n'
  want+="command: $(printf '%q ' "$(basename "${cmd[0]}")" "${cmd[@]:1}")"$'\n'
  for p in "${ins[@]}"; do want+="input: $(identity "$p")"$'\n'; done
  for p in "${outs[@]}"; do [ -f "$p" ] || reason="no $p yet"; done
  if [ -n "$reason" ]; then :
  elif [ ! -f "$out.stamp" ]; then reason="$out has no stamp"
  elif [ "$(sed '$d' "$out.stamp")"$'\n' != "$want" ]; then reason="tool, command or inputs changed since $out was made"
  elif [ "$(tail -n 1 "$out.stamp")" != "output: $(identity "$out")" ]; then reason="$out changed since it was stamped"
  fi
  if [ -z "$reason" ]; then
    note "$step: reused $out (stamp matches: same tool, command and inputs)"
    echo "reused $out (stamp $out.stamp matches)" >>"$LOGS/$step.log"
  else
    note "$step: running ($reason)"
    rm -f "$out.stamp"
    run_logged "$step" "${cmd[@]}"
    printf '%soutput: %s\n' "$want" "$(identity "$out")" >"$out.stamp.tmp"
    mv -f "$out.stamp.tmp" "$out.stamp"
  fi
  if [ -n "$lockfd" ]; then exec {lockfd}>&-; fi
}

# Runs a command with its output to the job log and to logs/STEP.log; a
# failure ends the job with the command's exit status.
run_logged() {
  local step=$1 rc
  shift
  note "$step: $(printf '%q ' "$@")"
  set +e
  "$@" 2>&1 | tee -a "$LOGS/$step.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -ne 0 ]; then
    note "$step: FAILED with exit code $rc (log: $LOGS/$step.log)"
    exit "$rc"
  fi
}

words() { local -n _arr=$1; read -ra _arr <<<"$2"; }

step_convert() {
  if [ -n "$HT_GRAPH" ]; then
    [ -f "$HT_GRAPH" ] || die "HT_GRAPH=$HT_GRAPH: no such file"
    note "convert: using the existing graph $HT_GRAPH"
    return
  fi
  [ -n "$HT_CONVERT_ARGS" ] || die "set HT_GRAPH (an existing .htg) or HT_CONVERT_ARGS (ht-convert arguments)"
  local args ins=() a bin
  bin=$(tool ht-convert)
  words args "$HT_CONVERT_ARGS"
  # Every argument naming an existing file or folder is an input.
  for a in "${args[@]}"; do if [ -e "$a" ]; then ins+=(--in "$a"); fi; done
  run_cached convert --out "$GRAPH" "${ins[@]}" -- "$bin" "${args[@]}" -o "$GRAPH"
}

step_partition() {
  [ -f "$GRAPH" ] || die "$GRAPH: no such graph (run the convert step first)"
  local args bin
  bin=$(tool ht-partition)
  words args "$HT_PARTITION_ARGS"
  run_cached partition --out "$PART" --out "$PART.stats.json" --in "$GRAPH" -- "$bin" --graph "$GRAPH" --parts "$M" --chunks "$HT_CHUNKS" \
    --method "$HT_METHOD" "${args[@]}" --stats-json "$PART.stats.json" -o "$PART"
  cp -f "$PART.stats.json" "$HT_RUN_DIR/partition.stats.json" 2>/dev/null || true
}

step_reorganize() {
  [ -f "$PART" ] || die "$PART: no such partition (run the partition step first)"
  local args bin
  bin=$(tool ht-reorganize)
  words args "$HT_REORGANIZE_ARGS"
  run_cached reorganize --out "$PLAN" --out "$PLAN.stats.json" --in "$GRAPH" --in "$PART" -- "$bin" --graph "$GRAPH" --partition "$PART" "${args[@]}" \
    --stats-json "$PLAN.stats.json" -o "$PLAN"
  cp -f "$PLAN.stats.json" "$HT_RUN_DIR/reorganize.stats.json" 2>/dev/null || true
}

# Runs the training command with SIGTERM/SIGINT forwarded to it (the batch
# shell gets the scheduler's warning signal: #SBATCH --signal=B:TERM@...):
# ht-train finishes its epoch, writes its checkpoint and exits 143/130; the
# job is then requeued (HT_REQUEUE) and the next start resumes.
run_training() {
  local rc pid
  note "train: $(printf '%q ' "$@")"
  set +e
  "$@" > >(tee -a "$LOGS/train.log") 2>&1 &
  pid=$!
  trap 'kill -TERM "$pid" 2>/dev/null' TERM
  trap 'kill -INT "$pid" 2>/dev/null' INT
  wait "$pid"
  rc=$?
  while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done
  trap - TERM INT
  set -e
  if [ "$rc" -eq 143 ] || [ "$rc" -eq 130 ]; then
    note "train: stopped by a signal (exit $rc); checkpoint: $([ -f "$CKPT" ] && echo "$CKPT" || echo none)"
    if [ "$HT_REQUEUE" = auto ] && [ -n "${SLURM_JOB_ID:-}" ] && [ -f "$CKPT" ] && command -v scontrol >/dev/null; then
      if scontrol requeue "$SLURM_JOB_ID"; then note "train: job $SLURM_JOB_ID requeued; it resumes from $CKPT"; fi
    fi
    exit "$rc"
  fi
  if [ "$rc" -ne 0 ]; then
    note "train: FAILED with exit code $rc (log: $LOGS/train.log)"
    exit "$rc"
  fi
}

step_train() {
  [ -f "$PLAN" ] || die "$PLAN: no such plan (run the reorganize step first)"
  local args cmd bin
  bin=$(tool ht-train)
  words args "$HT_TRAIN_ARGS"
  cmd=("$bin" --graph "$GRAPH" --partition "$PART" --plan "$PLAN" --model "$HT_MODEL"
       --epochs "$HT_EPOCHS" --backend "$BACKEND" --gpus "$M" --comm "$HT_COMM" "${args[@]}"
       --metrics-out "$HT_RUN_DIR/metrics.jsonl")
  if [ "$HT_SAVE_MODEL" = 1 ]; then cmd+=(--save-model "$HT_RUN_DIR/model.htmodel"); fi
  if [ "$HT_PREDICT" = 1 ]; then cmd+=(--predict-out "$HT_RUN_DIR/predictions.csv"); fi
  CKPT=$HT_RUN_DIR/train.htckpt
  if [ "$HT_CHECKPOINT" = 1 ]; then
    cmd+=(--checkpoint "$CKPT" --checkpoint-every "$HT_CHECKPOINT_EVERY")
    if [ -f "$CKPT" ]; then
      cmd+=(--resume "$CKPT")
      note "train: resuming from $CKPT (restart ${SLURM_RESTART_COUNT:-0} of this job)"
    fi
  fi
  run_training "${cmd[@]}"
}

step_plots() {
  [ "$HT_PLOTS" = 0 ] && return
  local metrics=$HT_RUN_DIR/metrics.jsonl plot=$HT_ROOT/scripts/plot_metrics rc
  [ -f "$metrics" ] || die "$metrics: no such file (run the train step first)"
  if [ "$HT_PLOTS" = auto ] && ! "$HT_PYTHON" -c 'import matplotlib' 2>/dev/null; then
    note "plots: skipped ($HT_PYTHON has no matplotlib; Debian: apt-get install python3-matplotlib)"
    return
  fi
  if [ "$HT_PLOTS" = auto ]; then
    set +e
    "$plot" "$metrics" -o "$HT_RUN_DIR/plots" 2>&1 | tee -a "$LOGS/plots.log"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" -eq 0 ] || note "plots: WARNING: plot_metrics failed (exit $rc); training outputs are complete"
  else
    run_logged plots "$plot" "$metrics" -o "$HT_RUN_DIR/plots"
  fi
}

write_run_env() {
  local k
  {
    echo "# effective settings of the last step run here ($(date '+%F %T'))"
    for k in "${HT_KEYS[@]}"; do printf '%s=%s\n' "$k" "${!k:-}"; done
    printf 'SLURM_JOB_ID=%s\nGPUS_DETECTED=%s\nBACKEND=%s\nM=%s\n' "${SLURM_JOB_ID:-}" "$GPUS" "$BACKEND" "$M"
    printf 'GRAPH=%s\nPARTITION=%s\nPLAN=%s\n' "$GRAPH" "$PART" "$PLAN"
  } >"$HT_RUN_DIR/run.env"
}

main() {
  local config="" steps=() s
  while [ $# -gt 0 ]; do
    case $1 in
      -h|--help) usage; exit 0 ;;
      -c|--config) [ $# -ge 2 ] || die "$1 needs a file"; config=$2; shift 2 ;;
      convert|partition|reorganize|train|plots) steps+=("$1"); shift ;;
      all) steps+=(convert partition reorganize train plots); shift ;;
      *) die "unknown argument '$1' (steps: convert partition reorganize train plots all; --help)" ;;
    esac
  done
  [ ${#steps[@]} -gt 0 ] || steps=(convert partition reorganize train plots)
  config=${config:-${HT_CONFIG:-}}
  if [ -n "$config" ]; then load_config "$config"; fi
  set_defaults
  mkdir -p "$HT_RUN_DIR/logs" "$HT_DATA_DIR"
  LOGS=$HT_RUN_DIR/logs
  PIPELINE_LOG=$LOGS/pipeline.log
  if [ -n "$config" ]; then cp -f "$config" "$HT_RUN_DIR/config.conf" 2>/dev/null || true; fi
  write_run_env
  note "run ${SLURM_JOB_ID:+job $SLURM_JOB_ID }in $HT_RUN_DIR: steps ${steps[*]}; backend $BACKEND, m = $M (GPUs in the allocation: $GPUS), n = $HT_CHUNKS"
  for s in "${steps[@]}"; do "step_$s"; done
  note "done: ${steps[*]}"
}

# Run when executed; submit_chain.sh sources this file for load_config.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
