#pragma once
#include <cstdint>

namespace ht {

// Vertex ids in memory are 32-bit (graphs up to 2^31 - 1 vertices); edge
// counts and offsets are always 64-bit. The file format can also carry 64-bit
// ids (docs/FORMATS.md); the in-memory tools reject N >= 2^31 with a clear error.
using vid_t = uint32_t;
using eid_t = int64_t;
inline constexpr int64_t kMaxVertices32 = (int64_t{1} << 31) - 1;

// Split codes of the `split` section.
enum class Split : uint8_t { none = 0, train = 1, val = 2, test = 3 };

}  // namespace ht
