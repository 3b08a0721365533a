#include "engine/layer_math.hpp"
#include "engine/trainer_options.hpp"

namespace ht {

RemoteAreas remote_areas(const TrainerOptions& opt, int m, int chunks) {
  if (m <= 1 || !reads_ahead(opt, chunks)) return RemoteAreas::one;
  if (opt.overlap_pulls) return RemoteAreas::early_pulls;
  switch (opt.keep_remote_rows) {
    case KeepRemoteRows::on: return RemoteAreas::kept_rows;
    case KeepRemoteRows::off: return RemoteAreas::one;
    case KeepRemoteRows::automatic: break;
  }
  return model_traits(opt.model.kind).buffer_wide_products ? RemoteAreas::one : RemoteAreas::kept_rows;
}

}  // namespace ht
