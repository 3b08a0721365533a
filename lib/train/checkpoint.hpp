#pragma once
// Model checkpoints (--save-model / --load-model): a container file with magic
// "HTMODEL\0" holding every parameter tensor (section name = tensor name,
// f32 [rows, cols]), the model's name (section "model": "gcn", "gat", as
// model_kind_names) and its shape in the meta values, so a checkpoint is
// refused by a model of another kind or shape. Version 1 files (the kind as
// a number: 0 GCN, 1 GAT) still read. docs/FORMATS.md, "Model checkpoint".
#include <memory>
#include <string>

#include "core/container.hpp"

#include "models/model.hpp"

namespace ht {

inline constexpr char kModelMagic[9] = "HTMODEL\0";
inline constexpr uint32_t kModelVersion = 2;
inline constexpr uint32_t kModelOldestVersion = 1;
inline constexpr char kModelNameSection[] = "model";

void save_model(const std::string& path, const ModelConfig& cfg, const ModelParams& params);
// The same file, written but not yet renamed into place (commit() does).
std::unique_ptr<ContainerWriter> write_model(const std::string& path, const ModelConfig& cfg,
                                             const ModelParams& params);
// Reads the tensors into `params` (which must come from init_params(cfg)).
void load_model(const std::string& path, const ModelConfig& cfg, ModelParams& params);
// The model kind a model file records (its name, or version 1's number);
// one this build does not know is refused naming the file.
ModelKind recorded_model_kind(const ContainerReader& r);

}  // namespace ht
