#pragma once
// --save-model FILE.npz: the parameters as a NumPy .npz archive (one .npy
// member per tensor, named as the tensor: "l0.W", "l0.b", "l1.att_src", ...,
// plus "config", a JSON string of the model), readable with np.load without
// pickle. Layout: docs/FORMATS.md, "Model as .npz". Written to a temporary
// file and renamed into place by the caller (commit()), as every output.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/file_io.hpp"
#include "models/model.hpp"

namespace ht {

inline constexpr int kModelNpzVersion = 1;

// Whether --save-model PATH means the .npz layout (by its extension).
bool is_npz_path(const std::string& path);

// The JSON of the "config" member: {"format": "hongtu-model", "version": 1,
// "model": "gcn", "dims": [...], "heads": h, "out_heads": o, "bias": true,
// "activations": ["relu", ..., "none"], "leaky_slope": 0.2, "tensors": [...]}.
std::string model_config_json(const ModelConfig& cfg, const ModelParams& params);

std::unique_ptr<AtomicFile> write_model_npz(const std::string& path, const ModelConfig& cfg, const ModelParams& params);

// CRC-32 (IEEE 802.3, as zip members carry), continued from `crc`.
uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc = 0);

}  // namespace ht
