#include "plan/plan.hpp"

namespace ht {

const NameTable<CommMode>& comm_mode_names() {
  static const NameTable<CommMode> names{{"baseline", CommMode::baseline}, {"p2p", CommMode::p2p}, {"full", CommMode::full}};
  return names;
}

std::string name_of(CommMode mode) { return name_in(comm_mode_names(), mode); }

}  // namespace ht
