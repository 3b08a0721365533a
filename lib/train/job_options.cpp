#include "train/job_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ht {
namespace {

std::string given(const std::string& path) { return path.empty() ? "no" : "yes"; }
template <typename E>
std::string number(E e) {
  return std::to_string(static_cast<long long>(e));
}

}  // namespace

std::vector<JobOption> options_that_must_agree(const TrainJob& job) {
  const TrainerOptions& t = job.trainer;
  const ModelConfig& m = t.model;
  const OptimizerConfig& o = t.optimizer;
  // Floats in fmt's shortest text that reads back as the same value.
  return {
      {"--model", number(m.kind)},
      {"--layers", fmt::format("{}", fmt::join(m.dims, "-"))},
      {"--hidden", number(job.hidden)},
      {"--heads", number(m.heads)},
      {"--out-heads", number(m.out_heads)},
      {"--dropout", fmt::format("{}", m.dropout)},
      {"--attn-dropout", fmt::format("{}", m.attn_dropout)},
      {"--no-bias", number(m.bias)},
      {"--seed", number(m.seed)},
      {"--optimizer", number(o.kind)},
      {"--lr", fmt::format("{}", o.lr)},
      {"--weight-decay", fmt::format("{}", o.weight_decay)},
      {"--decay-first-layer-only", number(o.decay_first_layer_only)},
      {"--momentum", fmt::format("{}", o.momentum)},
      {"--epochs", number(job.epochs)},
      {"--eval-every", number(job.eval_every)},
      {"--backend", number(job.backend)},
      {"--spmm", number(job.spmm)},
      {"--chunks", number(job.chunks)},
      {"--gpu-mem", number(job.gpu_mem_bytes)},
      {"--comm", number(t.comm)},
      {"--gcn-order", number(t.gcn_order)},
      {"--no-overlap", number(t.overlap_copies)},
      {"--steps", number(t.steps)},
      {"--merged-buffers", number(t.merged_buffers)},
      {"--no-early-start", number(t.early_start)},
      {"--no-fuse-transforms", number(t.fuse_transforms)},
      {"--no-gradient-handoff", number(t.handoff_gradients)},
      {"--no-device-forwarding", number(t.forward_on_device)},
      {"--store", number(job.store)},
      {"--host-dtype", number(t.host_dtype)},
      {"--normalize-features", number(job.normalize_features)},
      {"--load-model", given(job.load_model)},
      {"--resume", given(job.resume_path)},
      {"--predict-only", number(job.predict_only)},
      // Every process takes part in gathering the logits when either is asked for.
      {"--predict-out/--logits-out", given(job.predict_out + job.logits_out)},
  };
}

}  // namespace ht
