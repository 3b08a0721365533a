#pragma once
// 64-bit keys sorted ascending (what std::sort gives) by a serial LSD radix
// sort: for the long single-threaded sorts of setup and plan reading (a
// step's flush list, remote rows per owner, staged returns), where a
// comparison sort was the critical path at friendster size (issue 33).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ht {

// Least significant 16-bit digit first, a stable counting pass per digit,
// the passes whose digit is the same in every key skipped; std::sort below
// `comparison_below` keys.
void radix_sort(std::vector<uint64_t>& keys, size_t comparison_below);

}  // namespace ht
