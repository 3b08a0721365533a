#pragma once
// Reader of the MUSAE feature files: one JSON object mapping a vertex id
// (a decimal string key) to the list of its nonzero binary feature ids,
//   {"0": [1, 17, 250], "1": [3], ...}
// Only this shape is accepted; anything else is an error naming the line.
#include <cstdint>
#include <string>
#include <vector>

namespace ht::data {

struct IdLists {
  std::vector<int64_t> keys;     // vertex id of each entry, in file order
  std::vector<int64_t> offsets;  // entry i's values are values[offsets[i] .. offsets[i+1])
  std::vector<int64_t> values;
  int64_t max_value = -1;
};

IdLists read_id_lists_json(const std::string& path);

}  // namespace ht::data
