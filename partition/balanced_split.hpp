#pragma once
// Cutting a sequence into contiguous pieces of about equal weight: used for
// chunking (§4.1's range-based partitioning) and for --method range/random.
#include <cstdint>
#include <span>
#include <vector>

namespace ht {

// Splits items 0..k-1 with non-negative `weights` into `pieces` contiguous
// ranges, returned as pieces+1 offsets (0, ..., k). Boundary j is put at the
// prefix whose weight is nearest to j·W/pieces (W = total weight), so every
// piece is within one item's weight of W/pieces on each side; then clamped so
// that each piece holds at least `min_size` items (k >= pieces·min_size).
std::vector<int64_t> balanced_split(std::span<const double> weights, int pieces, int64_t min_size);

}  // namespace ht
