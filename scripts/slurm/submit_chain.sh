#!/usr/bin/env bash
# Submits the hongtu pipeline as four dependent Slurm jobs:
#   convert -> partition -> reorganize -> train (+ plots)
# each starting only when the previous one succeeded (--dependency=afterok);
# when one fails, the later ones are cancelled (--kill-on-invalid-dep=yes).
# Preprocessing jobs can run on CPU nodes and training on GPU nodes:
#
#   scripts/slurm/submit_chain.sh [-c CONFIG] [-J NAME] [--dry-run] [--parsable]
#
# sbatch options come from the keys HT_SBATCH_ARGS (every job),
# HT_PREP_SBATCH_ARGS (the three preprocessing jobs) and HT_TRAIN_SBATCH_ARGS
# (the training job), e.g. HT_TRAIN_SBATCH_ARGS="--gpus=4 --cpus-per-task=16".
# m (HT_PARTS) must be known before the partition job runs: when it is not
# set, it is the GPU count requested in HT_TRAIN_SBATCH_ARGS (--gpus=N, -G N,
# --gres=gpu[:type]:N, --gpus-per-node=N), else HT_CPU_DEVICES (CPU backend).
# All jobs share one run directory, $HT_RUNS_DIR/<NAME>-<first job id>, with
# the Slurm output of each job (slurm-<id>-<step>.out) and the step logs.
# Prints the run directory and the job ids (--parsable: only the four ids,
# colon-separated).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ht_pipeline.sh
source "$here/ht_pipeline.sh"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

chain_die() { echo "submit_chain: error: $*" >&2; exit 1; }

# GPU count requested by sbatch options, or nothing.
requested_gpus() {
  local opts=("$@") i o next
  for ((i = 0; i < ${#opts[@]}; i++)); do
    o=${opts[i]}
    next=${opts[i + 1]:-}
    case $o in  # a count may carry a type: --gpus=a100:4
      --gpus=*|--gpus-per-node=*) echo "${o##*[=:]}"; return ;;
      --gpus|--gpus-per-node|-G) echo "${next##*:}"; return ;;
      -G*) o=${o#-G}; echo "${o##*:}"; return ;;
      --gres=gpu*) echo "${o#--gres=}" | sed -n 's/^gpu\(:[^:,]*\)*:\([0-9][0-9]*\).*/\2/p;t;s/^gpu$/1/p'; return ;;
    esac
  done
}

config="" name=hongtu dry=0 parsable=0
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -c|--config) [ $# -ge 2 ] || chain_die "$1 needs a file"; config=$2; shift 2 ;;
    -J|--job-name) [ $# -ge 2 ] || chain_die "$1 needs a name"; name=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --parsable) parsable=1; shift ;;
    *) chain_die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || chain_die "job name '$name': use letters, digits, '.', '_' and '-'"
if [ -n "$config" ]; then
  [ -f "$config" ] || chain_die "config file $config: no such file"
  config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
  load_config "$config"
fi
command -v sbatch >/dev/null || [ "$dry" = 1 ] || chain_die "sbatch not found: is this a Slurm login node?"

export HT_ROOT=${HT_ROOT:-$(cd "$here/../.." && pwd)}
HT_RUNS_DIR=${HT_RUNS_DIR:-$PWD/runs}
case $HT_RUNS_DIR in /*) ;; *) HT_RUNS_DIR=$PWD/$HT_RUNS_DIR ;; esac
export HT_RUNS_DIR
read -ra all_opts <<<"${HT_SBATCH_ARGS:-}"
read -ra prep_opts <<<"${HT_PREP_SBATCH_ARGS:-}"
read -ra train_opts <<<"${HT_TRAIN_SBATCH_ARGS:-}"
if [ -z "${HT_PARTS:-}" ]; then
  HT_PARTS=$(requested_gpus "${all_opts[@]}" "${train_opts[@]}")
  HT_PARTS=${HT_PARTS:-${HT_CPU_DEVICES:-2}}
fi
export HT_PARTS

cfg_arg=()
if [ -n "$config" ]; then cfg_arg=("$config"); fi
ids=()
cancel_submitted() {
  if [ ${#ids[@]} -gt 0 ] && [ "$dry" = 0 ]; then
    echo "submit_chain: cancelling jobs ${ids[*]}" >&2
    scancel "${ids[@]}" 2>/dev/null || true
  fi
}
trap 'rc=$?; if [ $rc -ne 0 ]; then cancel_submitted; fi' EXIT

submit() {  # submit STEP OUTPUT [SBATCH OPTIONS...]: prints the job id
  local step=$1 out=$2 id
  shift 2
  local cmd=(sbatch --parsable -J "$name" --output="$out" "$@" "$here/step.sbatch" "$step" "${cfg_arg[@]}")
  if [ "$dry" = 1 ]; then
    echo "HT_RUN_DIR=${HT_RUN_DIR:-} $(printf '%q ' "${cmd[@]}")" >&2
    echo "$((1001 + ${#ids[@]}))"
    return
  fi
  id=$("${cmd[@]}") || chain_die "sbatch failed for the $step job"
  echo "${id%%;*}"
}

# The first job is held until the run directory (named after its id) exists.
if [ -n "${HT_RUN_DIR:-}" ]; then
  out1=$HT_RUN_DIR/slurm-%j-convert.out
else
  out1=$HT_RUNS_DIR/$name-%j/slurm-%j-convert.out
fi
id=$(submit convert "$out1" --hold "${all_opts[@]}" "${prep_opts[@]}")
ids+=("$id")
export HT_RUN_DIR=${HT_RUN_DIR:-$HT_RUNS_DIR/$name-$id}
if [ "$dry" = 0 ]; then mkdir -p "$HT_RUN_DIR/logs"; fi
prev=$id
for step in partition reorganize train; do
  opts=("${all_opts[@]}")
  if [ "$step" = train ]; then opts+=("${train_opts[@]}"); else opts+=("${prep_opts[@]}"); fi
  id=$(submit "$step" "$HT_RUN_DIR/slurm-%j-$step.out" --dependency=afterok:"$prev" --kill-on-invalid-dep=yes "${opts[@]}")
  ids+=("$id")
  prev=$id
done
if [ "$dry" = 0 ]; then
  printf 'convert %s\npartition %s\nreorganize %s\ntrain %s\n' "${ids[@]}" >"$HT_RUN_DIR/jobs.txt"
  scontrol release "${ids[0]}" >/dev/null || chain_die "scontrol release ${ids[0]} failed"
fi
if [ "$parsable" = 1 ]; then
  (IFS=:; echo "${ids[*]}")
else
  echo "run directory: $HT_RUN_DIR"
  echo "jobs: convert ${ids[0]}, partition ${ids[1]}, reorganize ${ids[2]}, train ${ids[3]} (m = $HT_PARTS)"
fi
