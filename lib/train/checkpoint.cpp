#include "train/checkpoint.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/container.hpp"
#include "core/error.hpp"

namespace ht {

std::unique_ptr<ContainerWriter> write_model(const std::string& path, const ModelConfig& cfg,
                                             const ModelParams& params) {
  auto w = std::make_unique<ContainerWriter>(path, kModelMagic, kModelVersion);
  // meta[0] held version 1's kind number; from version 2 the name is the kind.
  const std::string name = name_of(cfg.kind);
  w->add_section(kModelNameSection, DType::u8, name.size(), 1, name.data());
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

namespace {
// `text` as it can be printed on one line: other bytes as '?', at most 64 of them.
std::string printable(std::string text) {
  if (text.size() > 64) text = text.substr(0, 64) + "...";
  for (char& c : text)
    if (c < 32 || c > 126) c = '?';
  return text;
}
}  // namespace

ModelKind recorded_model_kind(const ContainerReader& r) {
  if (r.version() == 1) {
    // Version 1's numbers, fixed forever: a later model has a name only.
    switch (r.meta(0)) {
      case 0: return ModelKind::gcn;
      case 1: return ModelKind::gat;
      default:
        throw file_error(r.path(), fmt::format("model file (version 1) records model kind {}, not 0 (gcn) or 1 (gat)",
                                               r.meta(0)));
    }
  }
  if (!r.has(kModelNameSection)) throw file_error(r.path(), "model file lacks its model name (section 'model')");
  const auto bytes = r.bytes(kModelNameSection, DType::u8);
  const std::string name(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const auto& names = model_kind_names();
  if (const auto it = names.find(name); it != names.end()) return it->second;
  std::vector<std::string> known;
  for (const auto& [n, kind] : names) known.push_back(n);
  throw file_error(r.path(), fmt::format("model file records model '{}', which this build does not know (it knows {})",
                                         printable(name), fmt::join(known, ", ")));
}

void load_model(const std::string& path, const ModelConfig& cfg, ModelParams& params) {
  ContainerReader r(path, kModelMagic, kModelVersion, ReadOptions{.oldest_version = kModelOldestVersion});
  const ModelKind kind = recorded_model_kind(r);
  if (kind != cfg.kind || r.meta(1) != static_cast<uint64_t>(cfg.num_layers()))
    throw file_error(path, fmt::format("checkpoint is a {} with {} layers; the requested model is a {} with {} layers",
                                       model_title(kind), r.meta(1), model_title(cfg.kind), cfg.num_layers()));
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
