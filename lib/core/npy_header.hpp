#pragma once
// The header of a NumPy .npy file (version 1.0) that the tools write: magic,
// version, little-endian u16 header length, then the header dictionary padded
// with spaces and a newline so that the data starts at a multiple of 64 bytes.
#include <string>
#include <string_view>

namespace ht {

// `descr` as NumPy spells it ("<f4", "|S12"), `shape` as a Python tuple ("(3, 4)", "()").
std::string npy_header(std::string_view descr, std::string_view shape);

}  // namespace ht
