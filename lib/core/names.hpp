#pragma once
// Name tables of enums: each name with its value, kept once, beside the enum,
// in the library that defines it. The tools bind their options to a table
// (cli::add_enum: the names are what the option accepts and --help lists);
// logs, reports and files print name_in(table, value).
#include <map>
#include <string>

namespace ht {

template <typename E>
using NameTable = std::map<std::string, E>;

// The name of `value` in `table`; "unknown(N)" when it has none.
template <typename E>
std::string name_in(const NameTable<E>& table, E value) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return "unknown(" + std::to_string(static_cast<long long>(value)) + ")";
}

}  // namespace ht
