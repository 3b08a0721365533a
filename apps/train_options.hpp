#pragma once
// Option values that ht-train and ht-partition read alike: ht-partition
// --chunks auto sizes the chunks for the model ht-train will train, so it
// takes ht-train's model options with the same syntax.
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/memory_limit.hpp"
#include "engine/layer_math.hpp"
#include "engine/layer_order.hpp"
#include "engine/trainer_options.hpp"
#include "models/model.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_tool.hpp"
#include "plan/plan.hpp"
#include "train/chunk_choice.hpp"

namespace ht::tools {

// The options that apply to one model only (its own math: GAT's heads and
// attention dropout, GCN's layer order), as its layer file declares them
// (ModelTraits::options).
inline std::vector<const char*> model_only_options(ModelKind kind) {
  const std::span<const char* const> o = model_traits(kind).options;
  return {o.begin(), o.end()};
}

// Refuses, with one line, an option given that belongs to a model other than
// `model` (of those `app` has): it would do nothing.
inline void refuse_other_models_options(const CLI::App& app, ModelKind model) {
  for (const auto& [name, kind] : model_kind_names()) {
    if (kind == model) continue;
    for (const char* o : model_only_options(kind))
      if (app.get_option_no_throw(o) != nullptr && app.count(o) > 0)
        throw usage_error(o, fmt::format("applies to --model {} only", name));
  }
}

// "1433-16-7" -> {1433, 16, 7}; "auto" -> {} (resolved from the graph).
inline std::vector<int> parse_layers(const std::string& text) {
  if (text == "auto") return {};
  const auto bad = [&] {
    return option_error("--layers", fmt::format("'{}' is not a list of positive widths like 1433-16-7", text));
  };
  if (text.empty() || text.back() == '-' || text.front() == '-') throw bad();
  std::vector<int> dims;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, '-')) {
    try {
      size_t used = 0;
      const int v = std::stoi(tok, &used);
      if (used != tok.size() || v < 1) throw std::invalid_argument(tok);
      dims.push_back(v);
    } catch (const std::exception&) {
      throw bad();
    }
  }
  if (dims.size() < 2) throw option_error("--layers", "needs at least an input and an output width, e.g. 1433-16-7");
  return dims;
}

// --gpu-cache: auto, off, or GiB per GPU -> TrainerOptions::gpu_cache.
inline int64_t parse_gpu_cache(const std::string& text) {
  if (text == "auto") return kGpuCacheAuto;
  if (text == "off") return 0;
  try {
    size_t used = 0;
    const double gib = std::stod(text, &used);
    if (used == text.size() && gib > 0 && gib < (1 << 20)) return static_cast<int64_t>(gib * (1ll << 30));
  } catch (const std::exception&) {
  }
  throw option_error("--gpu-cache", fmt::format("'{}' is not auto, off or a positive size in GiB", text));
}

// --chunks: a count in [1, 2^20], or auto (kChunksAuto); -1 for anything else.
inline int chunk_count(const std::string& text) {
  if (cli::same_name(text, "auto")) return kChunksAuto;
  try {
    size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= 1 && v <= (1 << 20)) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  return -1;
}

// The --chunks check (a usage error, as a bad number was before auto existed).
inline CLI::Validator chunks_value() {
  return CLI::Validator(
      [](std::string& s) {
        return chunk_count(s) < 0 ? fmt::format("must be auto or an integer in [1, 1048576], got {}", s)
                                  : std::string();
      },
      "N|auto", "");
}

// ht-partition --chunks auto: the GPU memory to choose for and the ht-train
// options that size the working set (the others are taken at ht-train's
// defaults: copies written behind, fused transforms, steps auto).
struct ChunkSizingOptions {
  std::string gpu_mem;  // --gpu-mem SIZE
  std::string layers = "auto";
  int hidden = 0;
  std::string gpu_cache = "auto";
  TrainerOptions trainer;  // model kind and heads, comm, GCN order, host dtype
};

inline const std::vector<const char*>& chunk_sizing_option_names() {
  static const std::vector<const char*> names{"--gpu-mem", "--model",     "--layers",    "--hidden",     "--heads",
                                              "--out-heads", "--comm",    "--gcn-order", "--host-dtype", "--gpu-cache"};
  return names;
}

// Adds them to ht-partition, in one --help group, worded as ht-train's.
inline void add_chunk_sizing_options(CLI::App& app, ChunkSizingOptions& s) {
  app.add_option("--gpu-mem", s.gpu_mem,
                 "GPU memory per GPU to choose --chunks auto for: a size like 80G or 40GiB (a bare number is GiB, "
                 "as ht-train --gpu-mem); required by auto");
  cli::add_enum(app, "--model", s.trainer.model.kind, model_kind_names(), "ht-train's --model");
  app.add_option("--layers", s.layers, "ht-train's --layers, e.g. 128-256-47; auto = F-hidden-C of the graph");
  app.add_option("--hidden", s.hidden, "ht-train's --hidden for --layers auto (default 16 for GCN, 8 for GAT)")
      ->check(cli::in_range(1, 1 << 20));
  app.add_option("--heads", s.trainer.model.heads, "ht-train's --heads (GAT)")->check(cli::in_range(1, 1024));
  app.add_option("--out-heads", s.trainer.model.out_heads, "ht-train's --out-heads (GAT)")
      ->check(cli::in_range(1, 1024));
  cli::add_enum(app, "--comm", s.trainer.comm, comm_mode_names(), "ht-train's --comm");
  cli::add_enum(app, "--gcn-order", s.trainer.gcn_order, gcn_order_names(), "ht-train's --gcn-order");
  cli::add_enum(app, "--host-dtype", s.trainer.host_dtype, store_dtype_names(), "ht-train's --host-dtype");
  app.add_option("--gpu-cache", s.gpu_cache,
                 "ht-train's --gpu-cache: auto keeps room for the features' rows when that is at most 1/8 of "
                 "--gpu-mem, a size in GiB keeps that much, off none")
      ->capture_default_str();
  for (const char* name : chunk_sizing_option_names())
    app.get_option(name)->group("GPU memory for --chunks auto (sized for ht-train with these options)");
}

// --chunks auto: checks the sizing options and sets opt.choose_chunks (and
// params.chunks = 1: the GPUs' vertex sets are made first); a count: refuses
// the sizing options, which would do nothing.
inline void wire_chunk_choice(const CLI::App& app, const ChunkSizingOptions& s, PartitionToolOptions& opt) {
  if (opt.params.chunks != kChunksAuto) {
    for (const char* name : chunk_sizing_option_names())
      if (app.count(name) > 0) throw option_error(name, "applies to --chunks auto only");
    return;
  }
  if (s.gpu_mem.empty())
    throw option_error("--chunks", "auto needs --gpu-mem SIZE, the GPU memory per GPU to choose for (e.g. 80G)");
  const std::optional<int64_t> bytes = parse_memory_size(s.gpu_mem);
  if (!bytes || *bytes <= 0) throw option_error("--gpu-mem", fmt::format("'{}' is not a size like 80G or 40GiB", s.gpu_mem));
  // Options ht-train would refuse with this model: the chunks chosen for them
  // would be for a model that cannot train.
  const auto given = [&](const char* name) { return app.count(name) > 0; };
  refuse_other_models_options(app, s.trainer.model.kind);
  if (given("--hidden") && s.layers != "auto")
    throw usage_error("--hidden", "applies to --layers auto only (--layers gives every width)");
  TrainerOptions t = s.trainer;
  t.model.dims = parse_layers(s.layers);
  t.gpu_cache = parse_gpu_cache(s.gpu_cache);
  const PartitionParams requested = opt.params;
  const ChunkBudget budget{*bytes, "--gpu-mem"};
  const int hidden = s.hidden;
  opt.params.chunks = 1;
  opt.choose_chunks = [=](const GraphView& g, Partition base, PartitionRunInfo& info) {
    // --layers against the graph, as ht-train checks it.
    if (!t.model.dims.empty() && t.model.dims.front() != g.feature_dim)
      throw option_error("--layers", fmt::format("starts with {} but the graph has {} feature columns",
                                                 t.model.dims.front(), g.feature_dim));
    if (!t.model.dims.empty() && g.num_classes > 0 && t.model.dims.back() != g.num_classes)
      throw option_error("--layers", fmt::format("ends with {} but the graph has {} classes", t.model.dims.back(),
                                                 g.num_classes));
    ChunkChoice c = choose_model_chunks(g, std::move(base), requested, t, hidden, budget);
    if (c.chunks > 1) info.chunking = std::move(c.chunking);  // (n = 1: base's, as made)
    return std::move(c.partition);
  };
}

}  // namespace ht::tools
