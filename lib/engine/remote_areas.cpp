#include "engine/trainer_options.hpp"

namespace ht {

RemoteAreas remote_areas(const TrainerOptions& opt, int m, int chunks) {
  if (m <= 1 || !reads_ahead(opt, chunks)) return RemoteAreas::one;
  if (opt.overlap_pulls) return RemoteAreas::early_pulls;
  // `auto` keeps remote rows for every model: on 2 and 4 GPUs GCN's epochs
  // were 2-11% shorter with them (bench/RESULTS.md, session 11), GAT's -1.8%
  // and +0.3% on 2 GPUs once its products skip the other remote area (session
  // 12); the peer bytes fall 20-53%.
  return opt.keep_remote_rows == KeepRemoteRows::off ? RemoteAreas::one : RemoteAreas::kept_rows;
}

}  // namespace ht
