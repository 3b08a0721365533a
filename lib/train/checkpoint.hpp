#pragma once
// Model checkpoints (--save-model / --load-model): a container file with magic
// "HTMODEL\0" holding every parameter tensor (section name = tensor name,
// f32 [rows, cols]) and the model's shape in the meta values, so a checkpoint
// is refused by a model of another shape. docs/FORMATS.md, "Model checkpoint".
#include <memory>
#include <string>

#include "core/container.hpp"

#include "models/model.hpp"

namespace ht {

inline constexpr char kModelMagic[9] = "HTMODEL\0";
inline constexpr uint32_t kModelVersion = 1;

void save_model(const std::string& path, const ModelConfig& cfg, const ModelParams& params);
// The same file, written but not yet renamed into place (commit() does).
std::unique_ptr<ContainerWriter> write_model(const std::string& path, const ModelConfig& cfg,
                                             const ModelParams& params);
// Reads the tensors into `params` (which must come from init_params(cfg)).
void load_model(const std::string& path, const ModelConfig& cfg, ModelParams& params);

}  // namespace ht
