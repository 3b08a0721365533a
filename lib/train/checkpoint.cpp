#include "train/checkpoint.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/container.hpp"
#include "core/error.hpp"

namespace ht {

std::unique_ptr<ContainerWriter> write_model(const std::string& path, const ModelConfig& cfg,
                                             const ModelParams& params) {
  auto w = std::make_unique<ContainerWriter>(path, kModelMagic, kModelVersion);
  w->set_meta(0, cfg.kind == ModelKind::gcn ? 0 : 1);
  w->set_meta(1, static_cast<uint64_t>(cfg.num_layers()));
  w->set_meta(2, static_cast<uint64_t>(cfg.heads));
  w->set_meta(3, static_cast<uint64_t>(cfg.out_heads));
  for (const ParamTensor& t : params.tensors)
    w->add_section(t.name, DType::f32, static_cast<uint64_t>(t.rows), static_cast<uint64_t>(t.cols), t.value.data(),
                   2);
  return w;
}

void save_model(const std::string& path, const ModelConfig& cfg, const ModelParams& params) {
  write_model(path, cfg, params)->commit();
}

void load_model(const std::string& path, const ModelConfig& cfg, ModelParams& params) {
  ContainerReader r(path, kModelMagic, kModelVersion);
  const uint64_t kind = cfg.kind == ModelKind::gcn ? 0 : 1;
  if (r.meta(0) != kind || r.meta(1) != static_cast<uint64_t>(cfg.num_layers()))
    throw file_error(path, fmt::format("checkpoint is a {} with {} layers; the requested model is a {} with {} layers",
                                       r.meta(0) == 0 ? "GCN" : "GAT", r.meta(1), kind == 0 ? "GCN" : "GAT",
                                       cfg.num_layers()));
  for (ParamTensor& t : params.tensors) {
    if (!r.has(t.name)) throw file_error(path, "checkpoint lacks parameter " + t.name);
    const SectionInfo& s = r.section(t.name);
    if (s.shape[0] != static_cast<uint64_t>(t.rows) || s.shape[1] != static_cast<uint64_t>(t.cols))
      throw file_error(path, fmt::format("parameter {} is [{}, {}] in the checkpoint but [{}, {}] in the model", t.name,
                                         s.shape[0], s.shape[1], t.rows, t.cols));
    auto v = r.array<float>(t.name, static_cast<uint64_t>(t.size()));
    // Never written by a run (a diverged one stops first): damage, named as such.
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        r.fail_in(t.name, fmt::format("parameter {} holds {} at element {} of [{}, {}]", t.name, v[i], i, t.rows,
                                      t.cols));
    t.value.assign(v.begin(), v.end());
  }
}

}  // namespace ht
