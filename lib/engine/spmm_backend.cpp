#include "engine/spmm_backend.hpp"

#include <limits>

namespace ht {

const NameTable<SpmmBackend>& spmm_backend_names() {
  static const NameTable<SpmmBackend> names{
      {"auto", SpmmBackend::automatic}, {"own", SpmmBackend::own}, {"cusparse", SpmmBackend::cusparse}};
  return names;
}

std::string name_of(SpmmBackend backend) { return name_in(spmm_backend_names(), backend); }

bool cusparse_takes(const SpmmCase& c) {
  constexpr int64_t kInt32 = std::numeric_limits<int32_t>::max();
  return c.src_rows <= kInt32 && c.rows <= kInt32 && c.edges <= kInt32 && c.cols > 0 &&
         (c.product != SpmmProduct::gat || (c.heads > 0 && c.cols % c.heads == 0));
}

SpmmBackend choose_spmm_backend(SpmmBackend requested, const SpmmCase& c) {
  if (requested == SpmmBackend::own || !cusparse_takes(c)) return SpmmBackend::own;
  if (requested == SpmmBackend::cusparse) return SpmmBackend::cusparse;
  // automatic: the faster per case, from bench/spmm_backends.sh: the own
  // kernels in every case measured (bench/RESULTS.md, session 9: cuSPARSE took
  // 1.01-1.22x as long on products-like and community, GCN and GAT).
  return SpmmBackend::own;
}

}  // namespace ht
