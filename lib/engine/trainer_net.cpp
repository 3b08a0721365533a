// Rows that cross between processes of a multi-process job: the same rows
// the P2P path moves between the GPUs of one process (Algorithms 2 and 3),
// sent and received through Executor::exchange (NCCL between GPUs, MPI for
// the CPU executor). Every process issues the same exchanges in the same
// order, so a send and its receive match without any handshake.
#include <algorithm>
#include <optional>

#include "core/error.hpp"
#include "engine/rows_by_vertex.hpp"
#include "engine/trainer.hpp"
#include "engine/trainer_state.hpp"

namespace ht {

using engine_detail::bytes_of;
using engine_detail::view;

Trainer::DeviceState* Trainer::local_state(int job) const {
  return exec_.is_local(job) ? dev_[static_cast<size_t>(job - first_)].get() : nullptr;
}

// From the plan, before its lists are freed: per batch, which rows of each
// device other processes' devices read. A device's remote list holds runs of
// rows by owner (PeerRange); each run is one message, in list order. With
// kept remote rows a reader keeps the rows of its previous step's remote list
// (kept_remote_lists): forward, their owner does not send them again.
void Trainer::setup_net(int64_t max_gather) {
  if (!exec_.multi_process()) return;
  const bool keeps = remote_areas(opt_, plan_.m, plan_.n) == RemoteAreas::kept_rows;
  for (auto& st : dev_) st->served.assign(static_cast<size_t>(plan_.n), {});
  std::vector<int64_t> most(dev_.size(), 0), rows(dev_.size());
  for (int j = 0; j < plan_.n; ++j) {
    std::fill(rows.begin(), rows.end(), 0);
    for (int peer = 0; peer < plan_.m; ++peer) {
      if (exec_.is_local(peer)) continue;
      const ChunkPlan& c = plan_.step(j, peer);
      std::optional<RowsByVertex> kept;  // the peer's previous step's remote rows
      if (keeps && j > 0) kept.emplace(plan_.step(j - 1, peer).remote_vid, 0, plan_.part_offsets.back());
      for (size_t r = 0; r < c.remote_gpu.size();) {
        size_t e = r;
        while (e < c.remote_gpu.size() && c.remote_gpu[e] == c.remote_gpu[r]) ++e;
        if (DeviceState* st = local_state(c.remote_gpu[r])) {
          Device& d = *st->dev;
          int64_t& at = rows[static_cast<size_t>(st->job - first_)];
          DeviceState::Served& s = st->served[static_cast<size_t>(j)].emplace_back();
          s.peer = peer;
          s.slots = d.upload(std::span<const uint32_t>(c.remote_slot.data() + r, e - r));
          s.fresh = s.slots;
          if (kept) {
            std::vector<uint32_t> fresh;
            for (size_t i = r; i < e; ++i)
              if ((*kept)(c.remote_vid[i]) < 0) fresh.push_back(c.remote_slot[i]);
            if (fresh.size() < e - r) s.fresh = d.upload(std::span<const uint32_t>(fresh));
          }
          s.row0 = at;
          at += static_cast<int64_t>(e - r);
        }
        r = e;
      }
    }
    for (size_t i = 0; i < dev_.size(); ++i) most[i] = std::max(most[i], rows[i]);
  }
  for (size_t i = 0; i < dev_.size(); ++i)
    dev_[i]->net = dev_[i]->dev->alloc_floats(std::max<int64_t>(most[i], 1) * max_gather);
}

namespace {

// Batch j of device plan dp keeps remote rows: its forward receives only the rest.
bool keeps_rows(const DevicePlan& dp, int j) { return dp.areas == RemoteAreas::kept_rows && j > 0; }

// Where range r's rows of batch j cross: all of them, at their place in the
// step's remote area; or only the fresh ones (`fresh`: a forward that keeps
// rows), contiguous at their place among the step's fresh rows in the other
// remote area, from where exchange_pulls puts them into place.
struct Crossing {
  int64_t row = 0, count = 0;
};
Crossing crossing(const DevicePlan& dp, int j, const PeerRange& r, bool fresh) {
  if (!fresh) return {dp.remote_base(j) + r.begin, r.count};
  return {dp.remote_base(j - 1) + (r.fresh_begin - dp.steps[static_cast<size_t>(j)].kept_remote), r.fresh_count};
}

}  // namespace

// The transfers of device st's own remote rows in batch j (its plan's
// ranges owned by other processes' devices), rows of `buffer` (crossing):
// received (pulls) or sent from their place (pushes).
void Trainer::add_remote_ranges(DeviceState& st, DevMat buffer, int j, bool send, std::vector<RowTransfer>& group) {
  auto& c = exec_.counters();
  const bool fresh = !send && keeps_rows(st.plan, j);
  for (const PeerRange& r : st.plan.steps[static_cast<size_t>(j)].peers) {
    if (exec_.is_local(r.peer)) continue;
    const Crossing x = crossing(st.plan, j, r, fresh);
    group.push_back({st.job - first_, r.peer, send, buffer.row(x.row), x.count * buffer.cols});
    c.p2p_rows += x.count;
    c.p2p_bytes += bytes_of(x.count, buffer.cols);
    c.net_rows += x.count;
    c.net_bytes += bytes_of(x.count, buffer.cols);
  }
}

// Forward: each device gathers the rows other processes' devices read from
// its merged buffer and sends them; it receives the rows it reads from
// theirs straight into place (the remote area of its merged buffer), or,
// keeping remote rows, only the rest: into the other remote area (whose kept
// rows issue_exchange has copied out before, on the same queue), then into
// place.
void Trainer::exchange_pulls(int64_t width, int j) {
  if (!exec_.multi_process()) return;
  std::vector<RowTransfer> group;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const int local = st->job - first_;
    const DevMat X = view(st->x, st->plan.buffer_rows, width);
    const DevMat net = view(st->net, st->net.size / width, width);
    d.use(Queue::compute);
    d.begin_work();
    for (const auto& e : st->served[static_cast<size_t>(j)]) {
      d.pull_from_peer(d, X, e.fresh, net, e.row0);
      group.push_back({local, e.peer, true, net.row(e.row0), e.fresh.size * width});
    }
    add_remote_ranges(*st, X, j, false, group);
    d.end_work(WorkKind::d2d);
  }
  run_exchange(group);
  for (auto& st : dev_) {
    if (!keeps_rows(st->plan, j)) continue;
    Device& d = *st->dev;
    const DeviceStep& step = st->plan.steps[static_cast<size_t>(j)];
    const DevMat X = view(st->x, st->plan.buffer_rows, width);
    const DevIdx dst = st->lists[st->slot_of[j]].pull_dst;
    d.use(Queue::compute);
    d.begin_work();
    for (const PeerRange& r : step.peers) {
      if (exec_.is_local(r.peer) || r.fresh_count == 0) continue;
      const HostMat got{X.row(crossing(st->plan, j, r, true).row), r.fresh_count, width, d.index()};
      d.gather_from_host(got, DevIdx{nullptr, r.fresh_count}, dst.sub(r.fresh_begin, r.fresh_count), X,
                         DropoutSpec{});
    }
    d.end_work(WorkKind::d2d);
  }
}

// Backward: each device sends the gradient rows it pushes to other
// processes' devices (contiguous in its gradient buffer) and receives the
// rows theirs push to it into `net`; add_pushes_from adds them.
void Trainer::exchange_pushes(int64_t width, int j) {
  if (!exec_.multi_process()) return;
  std::vector<RowTransfer> group;
  for (auto& st : dev_) {
    const int local = st->job - first_;
    const DevMat G = view(st->g, st->plan.buffer_rows, width);
    const DevMat net = view(st->net, st->net.size / width, width);
    add_remote_ranges(*st, G, j, true, group);
    for (const auto& e : st->served[static_cast<size_t>(j)])
      group.push_back({local, e.peer, false, net.row(e.row0), e.slots.size * width});
  }
  run_exchange(group);
}

// The exchange on every device's compute queue, timed there as device-to-device work.
void Trainer::run_exchange(std::span<const RowTransfer> group) {
  for (auto& st : dev_) {
    st->dev->use(Queue::compute);
    st->dev->begin_work();
  }
  exec_.exchange(group);
  for (auto& st : dev_) st->dev->end_work(WorkKind::d2d);
}

// The pushes of another process's device `pusher` into `owner`'s rows,
// received by exchange_pushes, added into its gradient buffer (on its
// compute queue, within the caller's work stretch).
void Trainer::add_pushes_from(int pusher, DeviceState& owner, int64_t width, int j) {
  Device& d = *owner.dev;
  const DevMat net = view(owner.net, owner.net.size / width, width);
  for (const auto& e : owner.served[static_cast<size_t>(j)])
    if (e.peer == pusher) d.push_add_to_peer(net, e.row0, d, view(owner.g, owner.plan.buffer_rows, width), e.slots);
}

LossStats Trainer::gather_loss_stats() {
  std::vector<LossStats> mine, all(static_cast<size_t>(plan_.m));
  for (auto& st : dev_) mine.push_back(st->dev->take_loss_stats());
  exec_.allgather_devices(std::as_bytes(std::span<const LossStats>(mine)),
                          std::as_writable_bytes(std::span<LossStats>(all)));
  LossStats sum;  // in job order, as one process adds its devices' statistics
  for (const LossStats& ls : all) {
    sum.loss_sum += ls.loss_sum;
    for (int k = 0; k < 4; ++k) {
      sum.correct[k] += ls.correct[k];
      sum.count[k] += ls.count[k];
    }
  }
  return sum;
}

}  // namespace ht
