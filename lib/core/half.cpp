#include "core/half.hpp"

namespace ht {

const NameTable<StoreDtype>& store_dtype_names() {
  static const NameTable<StoreDtype> names = [] {
    NameTable<StoreDtype> t;
    for (StoreDtype d : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) t.emplace(std::string(dtype_name(d)), d);
    return t;
  }();
  return names;
}

}  // namespace ht
