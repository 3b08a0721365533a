#include "core/npy_header.hpp"

#include <fmt/format.h>

namespace ht {

std::string npy_header(std::string_view descr, std::string_view shape) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string pre = "\x93NUMPY";
  pre += '\x01';
  pre += '\x00';
  pre += static_cast<char>(header.size() & 0xff);
  pre += static_cast<char>(header.size() >> 8);
  return pre + header;
}

}  // namespace ht
