// Data movement of the trainer's schedule: loads on each device's load
// queue, P2P exchange on the compute queue, write-behind on the store queue,
// gradient returns through the staging ring to host tasks on each device's
// host queue (own_host_queues). Event rules: engine/trainer_state.hpp.
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "engine/host_rows.hpp"
#include "engine/store_layout.hpp"
#include "engine/trainer.hpp"
#include "engine/trainer_state.hpp"

namespace ht {

using engine_detail::bytes_of;
using engine_detail::view;

namespace {

// Peers in the order i+1, i+2, ... (mod m) so that the GPUs do not all read
// from (or push to) the same peer at once (Algorithms 2 and 3).
std::vector<PeerRange> interleaved(const std::vector<PeerRange>& peers, int self, int m) {
  std::vector<PeerRange> out(peers);
  std::sort(out.begin(), out.end(), [&](const PeerRange& a, const PeerRange& b) {
    return (a.peer - self + m) % m < (b.peer - self + m) % m;
  });
  return out;
}

}  // namespace

void Trainer::count_host_rows(int64_t rows, int64_t width, bool to_device) {
  auto& c = exec_.counters();
  const int64_t bytes = bytes_of(rows, width, store_dtype());
  if (store_.residence == Residence::device) {
    c.reuse_rows += rows;
    c.reuse_bytes += bytes;
  } else if (to_device) {
    c.h2d_rows += rows;
    c.h2d_bytes += bytes;
  } else {
    c.d2h_rows += rows;
    c.d2h_bytes += bytes;
  }
}

void Trainer::count_rows(const HostMat& m, int64_t rows, int64_t width, bool to_device) {
  if (!m.on_device() || store_on_device()) return count_host_rows(rows, width, to_device);
  auto& c = exec_.counters();  // the GPU cache
  c.cache_rows += rows;
  c.cache_bytes += bytes_of(rows, width, m.dtype);
}

// Rows [v0, v0 + src.rows) of `dst` = src, on the device's current queue;
// 16-bit rows were rounded into `raw` on the compute queue (publish).
void Trainer::write_out(DeviceState& st, DevMat src, DevArray<std::byte> raw, const HostMat& stored, int64_t v0) {
  const HostMat& dst = source(st, stored);
  count_rows(dst, src.rows, src.cols, false);
  if (dst.dtype == StoreDtype::f32) return st.dev->copy_to_host(src, 0, src.rows, dst, v0);
  st.dev->copy_bytes_out(raw, dst.row_bytes(v0), src.rows * src.cols * dst.elem_bytes());
}

// dst = rows [v0, v0 + dst.rows) of `src` (a batch's own rows), on the
// current queue. 16-bit rows land in the slot's raw inputs and are widened
// when the batch starts (start_batch).
void Trainer::read_in(DeviceState& st, int slot, const HostMat& stored, int64_t v0, DevMat dst) {
  const HostMat& src = source(st, stored);
  count_rows(src, dst.rows, dst.cols, true);
  if (src.dtype == StoreDtype::f32) return st.dev->copy_from_host(src, v0, dst.rows, dst, 0);
  const int64_t bytes = dst.rows * dst.cols * src.elem_bytes();
  HT_ASSERT(st.raw_in_used[slot] + bytes <= st.raw_in[slot].size);
  const DevArray<std::byte> raw = st.raw_in[slot].sub(st.raw_in_used[slot], bytes);
  st.raw_in_used[slot] += bytes;
  st.dev->copy_bytes_in(src.row_bytes(v0), raw, bytes);
  st.widen_pending[slot].push_back({raw, dst});
}

// The one barrier between passes: the next pass reads rows that any device
// (or a host add) produced in this one. Device 0's host queue collects every
// device's end of pass; every load queue waits for it.
void Trainer::end_phase() {
  Device& h = *dev_[0]->dev;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    d.use(Queue::compute);
    d.record(st->phase_stored);
    d.use(Queue::store);
    d.wait(d, st->phase_stored);  // the store queue passes the compute queue's end of pass
    d.record(st->phase_stored);
    if (own_host_queues() && st != dev_[0]) {  // its host adds (own_host_queues)
      d.use(Queue::host);
      d.record(st->phase_host);
    }
  }
  h.use(Queue::host);
  for (auto& st : dev_) {
    h.wait(*st->dev, st->phase_stored);
    if (own_host_queues() && st != dev_[0]) h.wait(*st->dev, st->phase_host);
  }
  h.record(dev_[0]->phase_host);
}

// Where a device's staged gradient pieces are added on the host. In the p2p
// and full modes a device returns only rows of its own partition (the others
// were pushed to their owners), so the devices' returns never meet in a row:
// each device adds on its own host queue, in its batch order, and a row's
// adds keep the order one queue gives them. In the baseline mode every
// device returns every neighbor row: one queue (device 0's) orders them.
bool Trainer::own_host_queues() const { return opt_.comm != CommMode::baseline; }

// Own rows a batch reads were written by the same batch of the previous pass
// (same chunk, same device): wait for that batch's store, not for the pass.
void Trainer::wait_producer(DeviceState& st, int j) {
  if (early_ && prev_produced_) st.dev->wait(*st.dev, st.batch_stored[(pass_seq_ - 1) & 1][j]);
}

void Trainer::phase_barrier() {
  for (auto& st : dev_) {
    st->dev->use(Queue::load);
    st->dev->wait(*dev_[0]->dev, dev_[0]->phase_host);
  }
}

// Batch j takes the next slot on every device: the step's packed topology
// (unless the ring slot still holds it) and the inputs the pass reads.
void Trainer::issue_loads(Pass pass, int l, int j, int epoch, bool training, bool first) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l);
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const int s = static_cast<int>(st->seq++ % kSlots);
    st->slot_of[j] = s;
    const DeviceStep& step = st->plan.steps[j];
    const ChunkPlan& c = *step.plan;
    const int64_t nd = c.num_dst(), v0 = c.dst_begin;
    d.use(Queue::load);
    d.wait(d, st->computed[s]);  // batch k - 2 is done with the slot
    st->raw_in_used[s] = 0;      // (and its inputs were widened: issued before this batch's loads)
    HT_ASSERT(st->widen_pending[s].empty() && st->tier_patch[s].empty());
    if (pass != Pass::forward) wait_producer(*st, j);
    d.begin_work();
    // Vertex-wise passes read no topology: only batches over chunks need the step.
    const bool chunk_pass = pass == Pass::forward || pass == Pass::backward;
    const int r = st->ring_slot(j, s);
    if (chunk_pass && st->ring_step[r] != j) {
      d.copy_bytes_in(step.bytes.data(), st->ring[r], static_cast<int64_t>(step.bytes.size()));
      st->ring_step[r] = j;
    }
    st->lists[s] = chunk_pass ? step.bind(st->ring[r]) : StepLists{};
    switch (pass) {
      case Pass::forward: break;
      case Pass::transform: read_in(*st, s, store_.h[l], v0, view(st->in_a[s], nd, in_w)); break;
      case Pass::backward: {
        // With the next layer's transform fused, ∇t^{l+1} instead of ∇x^{l+1} (computed from it).
        const bool fused = l + 1 < m.num_layers() && fused_transform(l + 1);
        // A backward that gathers x^l again (GAT, SAGE's transform-first
        // layers) loads nothing more; else it reads what forward stored:
        // GCN's, and SAGE's mean (no second sparse product) with x_v, the
        // destinations' own rows of x^l, in place of a gather (in_h: h^{l+1}
        // is not read here; its dropout at the batch's start, backward_batch).
        if (!traits_.backward_gathers) {
          if (transform_first(l)) {
            if (m.activation(l) == Activation::relu || fused)
              read_in(*st, s, store_.h[l + 1], v0, view(st->in_h[s], nd, out_w));
          } else {
            read_in(*st, s, store_.agg[l], v0, view(st->in_a[s], nd, in_w));  // cached aggregate: no neighbor reload
          }
        } else if (stores_layer_matrix(opt_, l)) {
          read_in(*st, s, store_.agg[l], v0, view(st->in_a[s], nd, in_w));
          if (loads_own_rows(l)) read_in(*st, s, store_.h[l], v0, view(st->in_h[s], nd, in_w));
        }
        // Rows handed off by the previous pass are on the device (take_handoff);
        // the others come from the host once its returns are complete there:
        // the barrier, waited for after the loads above when the pass started early.
        const HostMat& src = fused ? store_.agg[l + 1] : store_.grad[l + 1];
        const DevMat dst = fused ? view(st->in_t[s], nd, m.out_width(l + 1)) : view(st->in_dh[s], nd, out_w);
        if (receiving_ && early_ && first) d.wait(*dev_[0]->dev, dev_[0]->phase_host);
        if (!receiving_) {
          read_in(*st, s, src, v0, dst);
        } else if (const DevIdx rows = st->handoff_host_rows[j]; rows.size > 0) {
          const HostMat& from = source(*st, src);
          d.gather_from_host(from, st->handoff_host_vids[j], rows, dst, DropoutSpec{});
          count_rows(from, rows.size, dst.cols, true);
        }
        if (st->tier_returns(src)) st->tier_patch[s].push_back({j, dst});
        break;
      }
      case Pass::transform_backward:
        read_in(*st, s, store_.agg[l], v0, view(st->in_dh[s], nd, out_w));
        if (st->tier_returns(store_.agg[l])) st->tier_patch[s].push_back({j, view(st->in_dh[s], nd, out_w)});
        read_in(*st, s, store_.h[l], v0, view(st->in_a[s], nd, in_w));
        break;
    }
    d.end_work(WorkKind::h2d);
  }
  if (gathers(pass, l)) issue_gather(l, j, epoch, training, first);
  for (auto& st : dev_) {
    st->dev->use(Queue::load);
    st->dev->record(st->loaded[st->slot_of[j]]);
  }
}

// Algorithm 2, host part: the rows of batch j's transition set (or baseline
// neighbor set) not kept in place. The first batch of a pass and every batch
// without read-ahead load straight into the merged buffer (their issue comes
// after the previous batch's compute and the peers' pulls); later batches
// with read-ahead gather into the slot's incoming rows, scattered into place
// on the compute queue after the previous batch (issue_exchange).
void Trainer::issue_gather(int l, int j, int epoch, bool training, bool first) {
  const bool tf = transform_first(l);
  const HostMat& stored = gathered(l);
  const int64_t width = gather_width(opt_.model, opt_.gcn_order, l);
  const bool ahead = read_ahead() && !first;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const HostMat& src = source(*st, stored);
    // With the row tier, only its cold rows come from here (read_tier: the rest).
    const DeviceState::RowTier* tier = st->tier_of(stored);
    const WorkKind kind = src.on_device() ? WorkKind::d2d : WorkKind::h2d;
    const int s = st->slot_of[j];
    const DeviceStep& step = st->plan.steps[j];
    const StepLists& lists = st->lists[s];
    const DevIdx vids = tier ? tier->cold_vids[j] : lists.load_vids;
    const DevIdx rows = tier ? tier->cold_rows[j] : lists.load_rows;
    const int64_t count = vids.size;
    const DropoutSpec drop = tf ? DropoutSpec{} : input_dropout(l, epoch, training, st->keys.data);
    d.use(Queue::load);
    if (!ahead && !first) {
      d.wait(d, st->computed[st->slot_of[j - 1]]);
      for (auto& peer : dev_)
        if (peer != st) d.wait(*peer->dev, peer->pulled);
    } else if (ahead && st->plan.areas == RemoteAreas::early_pulls) {
      d.wait(d, st->early_packed);  // its early pulls of batch j - 2 read the incoming slot this overwrites
    }
    const bool produced = early_ && prev_produced_;
    const bool on_device = first && forwarded_;
    if (on_device) {
      // The previous pass wrote these rows into the buffer on the device (forward_rows).
      HT_ASSERT(produced);
    } else if (first && produced) {
      // Rows in the order their producers stored them: the gather starts as
      // soon as the previous pass's first batch is on host.
      const Event* stored = st->batch_stored[(pass_seq_ - 1) & 1].data();
      int64_t covered = 0;
      for (int k = 0; k < plan_.n; ++k) {
        const Slice piece = tier ? tier->cold_by_producer[k] : step.load_by_producer[k];
        d.wait(d, stored[k]);
        if (piece.count == 0) continue;
        d.begin_work();
        d.gather_from_host(src, vids.sub(piece.offset, piece.count), rows.sub(piece.offset, piece.count),
                           view(st->x, st->plan.buffer_rows, width), drop);
        d.end_work(kind);
        covered += piece.count;
      }
      HT_ASSERT(covered == count);
    } else {
      wait_producer(*st, plan_.n - 1);  // the store queue is in order: all of them
      d.begin_work();
      if (ahead) {
        d.gather_from_host(src, vids, DevIdx{nullptr, count}, view(st->incoming[s], count, width), drop);
      } else {
        d.gather_from_host(src, vids, rows, view(st->x, st->plan.buffer_rows, width), drop);
      }
      d.end_work(kind);
    }
    const int64_t kept = step.reused_rows + (on_device ? step.load_count() : 0);
    if (!on_device) count_rows(src, count, width, true);
    if (!on_device && tier) count_rows(tier->rows, tier->hot_slots[j].size, width, true);
    exec_.counters().reuse_rows += kept;
    exec_.counters().reuse_bytes += bytes_of(kept, width, store_dtype());
  }
}

// Algorithm 2, device part, on the compute queues: read-ahead rows into place
// (after the peers have pulled the previous batch's rows), then P2P pulls of
// the remote rows from their owners' merged buffers.
void Trainer::issue_exchange(int l, int j, bool scatter, bool pulled_early, int epoch, bool training) {
  const int64_t width = gather_width(opt_.model, opt_.gcn_order, l);
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const int s = st->slot_of[j];
    const DeviceState::RowTier* tier = st->tier_of(gathered(l));
    d.use(Queue::compute);
    // (Waited for before the other devices' scatters are issued: the CPU
    // executor's late copies then run the pulls before the owners' loads a
    // missing wait would have let them overtake.)
    if (pulled_early)  // issue_early_pulls, on the owners' peer queues
      for (const PeerRange& r : st->plan.steps[j].peers)
        if (const DeviceState* owner = local_state(r.peer)) d.wait(*owner->dev, owner->early_sent);
    d.wait(d, st->loaded[s]);
    if (scatter) {
      for (auto& peer : dev_)
        if (peer != st) d.wait(*peer->dev, peer->pulled);
      if (st->plan.areas == RemoteAreas::early_pulls) d.wait(d, st->early_packed);  // its early pulls of batch j - 1 read x
      const DevIdx rows = tier ? tier->cold_rows[j] : st->lists[s].load_rows;
      d.begin_work();
      const HostMat incoming{st->incoming[s].data, rows.size, width, d.index()};
      d.gather_from_host(incoming, DevIdx{nullptr, rows.size}, rows, view(st->x, st->plan.buffer_rows, width),
                         DropoutSpec{});
      d.end_work(WorkKind::compute);
    }
    if (tier) read_tier(*st, l, j, epoch, training);
    d.record(st->x_ready);
  }
  if (opt_.comm == CommMode::baseline) return;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const int s = st->slot_of[j];
    const DeviceStep& step = st->plan.steps[j];
    d.use(Queue::compute);
    if (pulled_early) continue;  // issue_early_pulls, waited for above
    for (const PeerRange& r : step.peers)
      if (const DeviceState* peer = local_state(r.peer)) d.wait(*peer->dev, peer->x_ready);
    const DevMat X = view(st->x, st->plan.buffer_rows, width);
    const StepLists& lists = st->lists[s];
    // Kept remote rows (RemoteAreas::kept_rows): the rows batch j - 1 read
    // too, from the other remote area (still in place: the next pulls into it
    // come after this batch's exchange), then only the rest from the peers.
    const bool kept = st->plan.areas == RemoteAreas::kept_rows && j > 0;
    d.begin_work();
    if (kept) {
      d.gather_rows(X, lists.pull_src.sub(0, step.kept_remote), X, lists.pull_dst.sub(0, step.kept_remote));
      exec_.counters().reuse_rows += step.kept_remote;
      exec_.counters().reuse_bytes += bytes_of(step.kept_remote, width);
    }
    for (const PeerRange& r : interleaved(step.peers, st->job, plan_.m)) {
      DeviceState* peer = local_state(r.peer);
      if (!peer) continue;  // another process's device: exchange_pulls
      const DevMat peer_x = view(peer->x, peer->plan.buffer_rows, width);
      if (kept) {
        d.gather_rows(peer_x, lists.pull_src.sub(r.fresh_begin, r.fresh_count), X,
                      lists.pull_dst.sub(r.fresh_begin, r.fresh_count));
      } else {
        d.pull_from_peer(*peer->dev, peer_x, lists.remote_slots.sub(r.begin, r.count), X,
                         st->plan.remote_base(j) + r.begin);
      }
      const int64_t pulled = kept ? r.fresh_count : r.count;
      exec_.counters().p2p_rows += pulled;
      exec_.counters().p2p_bytes += bytes_of(pulled, width);
    }
    d.end_work(WorkKind::d2d);
  }
  exchange_pulls(width, j);
  for (auto& st : dev_) {
    st->dev->use(Queue::compute);
    st->dev->record(st->pulled);
  }
}

// Batch j's rows that the tier holds, into their places in the merged buffer,
// on the compute queue: after the batch's loads and the peers' pulls of the
// previous batch's rows (the waits before), and after the batches that wrote
// the rows (this device's, earlier on the same queue). None for a first
// batch whose rows were forwarded on the device.
// Batch j's pulls between this process's devices, issued after batch j - 1's
// exchange and before its compute, on each owner's peer queue: the rows it
// keeps in place from batch j - 1 come from its merged buffer (after its
// scatter of batch j - 1: x_ready), the rows it reads ahead for batch j from
// its incoming slot (loaded); it packs each puller's range (index lists on
// the puller, bound when the puller loaded the step) and copies it on the copy
// engines into the puller's remote area of batch j, which the puller's batch
// j - 2 was the last to read (its compute precedes the puller's x_ready of
// batch j - 1). The pullers' exchange of batch j waits for early_sent; the
// owner's next scatter and read-ahead into the same incoming slot wait for
// early_packed. Packing on the owner reads local memory: the copy crosses
// NVLink on a copy engine instead of warps waiting for remote loads beside the
// compute (measured: SM pulls on a second stream slowed the compute as much
// as they saved).
void Trainer::issue_early_pulls(int l, int j) {
  const int64_t width = gather_width(opt_.model, opt_.gcn_order, l);
  struct Range {
    DeviceState* puller;
    const PeerRange* r;
  };
  for (auto& owner : dev_) {
    Device& d = *owner->dev;
    std::vector<Range> ranges;  // the pullers' ranges of this owner's rows, in device order
    for (auto& p : dev_)
      if (p != owner)
        for (const PeerRange& r : p->plan.steps[j].peers)
          if (r.peer == owner->job && r.count > 0) ranges.push_back({p.get(), &r});
    if (ranges.empty()) continue;
    d.use(Queue::peer);
    d.wait(d, owner->x_ready);
    d.wait(d, owner->loaded[owner->slot_of[j]]);
    for (const Range& g : ranges) d.wait(*g.puller->dev, g.puller->loaded[g.puller->slot_of[j]]);
    const DevMat X = view(owner->x, owner->plan.buffer_rows, width);
    const DevArray<float> in = owner->incoming[owner->slot_of[j]];
    const DevMat ahead = view(in, in.size / width, width);
    d.begin_work();
    int64_t row0 = 0;
    for (const Range& g : ranges) {
      const StepLists& lists = g.puller->lists[g.puller->slot_of[j]];
      const int64_t kept = g.r->kept, count = g.r->count;
      const DevIdx src = lists.pull_src.sub(g.r->begin, count), dst = lists.pull_dst.sub(g.r->begin, count);
      const DevMat packed{owner->send.data + row0 * width, count, width};
      d.gather_rows(X, src.sub(0, kept), packed, dst.sub(0, kept));
      d.gather_rows(ahead, src.sub(kept, count - kept), packed, dst.sub(kept, count - kept));
      row0 += count;
    }
    d.end_work(WorkKind::compute);
    d.record(owner->early_packed);
    row0 = 0;
    for (const Range& g : ranges) {
      DeviceState& p = *g.puller;
      const int64_t count = g.r->count;
      d.wait(*p.dev, p.x_ready);
      d.begin_work();
      d.copy_to_peer({owner->send.data + row0 * width, count, width}, *p.dev,
                     {p.x.data + (p.plan.remote_base(j) + g.r->begin) * width, count, width});
      d.end_work(WorkKind::d2d);
      row0 += count;
      exec_.counters().p2p_rows += count;
      exec_.counters().p2p_early_rows += count;
      exec_.counters().p2p_bytes += bytes_of(count, width);
    }
    HT_ASSERT(row0 * width <= owner->send.size);
    d.record(owner->early_sent);
  }
}

void Trainer::read_tier(DeviceState& st, int l, int j, int epoch, bool training) {
  const DeviceState::RowTier& t = st.tier;
  if ((j == 0 && forwarded_) || t.hot_slots[j].size == 0) return;
  const DropoutSpec drop = transform_first(l) ? DropoutSpec{} : input_dropout(l, epoch, training, t.keys.data);
  st.dev->begin_work();
  st.dev->gather_from_host(t.rows, t.hot_slots[j], t.hot_rows[j], view(st.x, st.plan.buffer_rows, t.rows.cols), drop);
  st.dev->end_work(WorkKind::d2d);
}

// The pushes of batch j into the owners' gradient buffers, in rounds: in
// round r = 1 .. m-1 owner o takes the rows of pusher (o - r) mod m, so every
// owner has one pusher per round and the same order of sums in every run,
// whatever the GPUs' timing or the processes (a pusher of another process:
// the owner adds what exchange_pushes received). A round's adds into an owner
// follow the round before's (push_round, one event per device and round): the
// GPUs push with atomic adds, and at m >= 3 two pushers into one owner would
// otherwise meet in whatever order they arrive.
void Trainer::apply_pushes(int64_t width, int j) {
  const int m = plan_.m;
  // The device that adds round r's rows into owner o, or none in this process.
  auto adder = [&](int r, int o) -> DeviceState* {
    if (DeviceState* pusher = local_state((o - r + m) % m)) return pusher;
    return local_state(o);
  };
  for (auto& st : dev_) {
    Device& d = *st->dev;
    d.use(Queue::compute);
    for (const PeerRange& r : st->plan.steps[j].peers)
      if (const DeviceState* peer = local_state(r.peer)) d.wait(*peer->dev, peer->g_ready);
  }
  for (int r = 1; r < m; ++r) {
    for (auto& st : dev_) {
      Device& d = *st->dev;
      const int p = st->job, owner = (p + r) % m, pusher = (p - r + m) % m;
      const bool remote_pusher = local_state(pusher) == nullptr;
      // The adds of round r - 1 into the owners this device adds into now.
      auto after_round_before = [&](int o) {
        const DeviceState* before = adder(r - 1, o);
        if (r > 1 && before && before != st.get()) d.wait(*before->dev, before->push_round[static_cast<size_t>(r - 2)]);
      };
      d.use(Queue::compute);
      after_round_before(owner);
      if (remote_pusher) after_round_before(p);
      d.begin_work();
      if (remote_pusher) add_pushes_from(pusher, *st, width, j);
      const DeviceStep& step = st->plan.steps[j];
      DeviceState* peer = local_state(owner);
      const auto range = std::find_if(step.peers.begin(), step.peers.end(),
                                      [&](const PeerRange& pr) { return pr.peer == owner; });
      if (peer && range != step.peers.end()) {
        d.push_add_to_peer(view(st->g, st->plan.buffer_rows, width), st->plan.remote_base(j) + range->begin,
                           *peer->dev, view(peer->g, peer->plan.buffer_rows, width),
                           st->lists[st->slot_of[j]].remote_slots.sub(range->begin, range->count));
        exec_.counters().p2p_rows += range->count;
        exec_.counters().p2p_bytes += bytes_of(range->count, width);
      }
      d.end_work(WorkKind::d2d);
      d.record(st->push_round[static_cast<size_t>(r - 1)]);
    }
  }
}

// Algorithm 3: remote gradient rows are pushed to their owners' slots (P2P
// accumulate); then the slots that leave each device stream to the host in
// pieces: compacted on the compute queue, copied on the store queue, written
// or added into `dst` by a host task on the device's own host queue (the
// baseline mode: device 0's, so that rows returned by several devices are
// added in one fixed order; own_host_queues). A store in
// device memory (in-memory mode, or `dst` in the GPU cache) takes them on
// the device's compute queue instead.
void Trainer::issue_return(const HostMat& stored, int64_t width, int j) {
  if (opt_.comm != CommMode::baseline) {
    // A push adds into the owner's merged gradient buffer, which the owner's
    // own backward compute of this batch writes with plain read-modify-writes:
    // the push waits for that compute (g_ready), which follows the owner's
    // previous flush on its queue. Waiting only for the flush let a push race
    // the owner's compute on a GPU (lost updates at m = 2; the CPU executor
    // runs the two sums one after the other and cannot show it).
    for (auto& st : dev_) {
      st->dev->use(Queue::compute);
      st->dev->record(st->g_ready);
    }
    // Another process's pushes travel first (exchange_pushes); then every
    // owner takes its rows' pushes in one fixed order (apply_pushes).
    exchange_pushes(width, j);
    apply_pushes(width, j);
    for (auto& st : dev_) {
      Device& d = *st->dev;
      int64_t remote = 0;  // the rows pushed, to this process's devices or sent to others
      for (const PeerRange& r : st->plan.steps[j].peers) remote += r.count;
      d.use(Queue::compute);
      d.zero(view(st->g, st->plan.buffer_rows, width), st->plan.remote_base(j), remote);
      d.record(st->pushed);
    }
  }
  for (auto& st : dev_) {
    Device& d = *st->dev;
    Device& h = own_host_queues() ? d : *dev_[0]->dev;
    const DeviceStep& step = st->plan.steps[j];
    const StepLists& lists = st->lists[st->slot_of[j]];
    const HostMat& dst = source(*st, stored);
    DevMat G = view(st->g, st->plan.buffer_rows, width);
    d.use(Queue::compute);
    if (opt_.comm != CommMode::baseline)
      for (auto& peer : dev_)
        if (peer != st) d.wait(*peer->dev, peer->pushed);
    // A pass that hands off leaves its last batch's handed-off rows in G.
    const int64_t kept = handing_off_ && j == plan_.n - 1 ? step.handoff_count : 0;
    // The row tier's returns (setup_tier_returns): rows it holds stay on the device.
    const DeviceState::RowTier* tier = st->tier_returns(stored);
    const int64_t tier_first = tier ? step.tier_first : 0, tier_staged = tier ? step.tier_staged : 0;
    count_rows(dst, step.flush_count() - kept - tier_first - tier_staged, width, false);
    if (tier) count_rows(tier->rows, tier_first + tier_staged, width, false);
    // First returns: the device writes them into the store itself (none
    // when some row is never returned: mark_first_flushes; none into the
    // in-memory store, cleared per layer).
    const int64_t direct = store_on_device() ? 0 : step.first_count, written = direct - kept;
    if (dst.on_device()) {  // accumulate on the device
      d.begin_work();
      if (written > 0)
        d.scatter_rows_and_zero(G, lists.flush_rows.sub(0, written), lists.flush_vids.sub(0, written), dst);
      if (const int64_t rest = step.flush_count() - direct; rest > 0)
        d.add_rows_and_zero(G, lists.flush_rows.sub(direct, rest), lists.flush_vids.sub(direct, rest), dst);
      d.end_work(WorkKind::compute);
      d.record(st->flushed);
      continue;
    }
    write_first_returns(*st, j, G, dst, kept, tier != nullptr);
    // The rest add to rows another batch (or device) returned before: staged
    // pieces, added on the host after those writes (the other devices'
    // `flushed`, recorded earlier in this loop or in earlier batches).
    const int64_t staged = step.flush_count() - direct - tier_staged;
    if (staged > 0 && !own_host_queues()) {
      h.use(Queue::host);
      for (auto& other : dev_)
        if (other != st) h.wait(*other->dev, other->flushed);
    }
    for (int64_t p0 = 0; p0 < staged; p0 += st->staging_rows) {
      const int64_t cnt = std::min(st->staging_rows, staged - p0);
      const int k = static_cast<int>(st->stage_seq++ % kStagingSlots);
      const DevMat piece = view(st->staging_dev[k], cnt, width);
      d.use(Queue::compute);
      d.wait(d, st->copied[k]);
      d.begin_work();
      d.compact_and_zero(G, lists.flush_rows.sub(direct + p0, cnt), piece);
      if (store_dtype() != StoreDtype::f32) d.narrow_rows(piece, store_dtype(), st->raw_staging[k]);
      d.end_work(WorkKind::compute);
      d.record(st->compacted[k]);
      d.use(Queue::store);
      d.wait(d, st->compacted[k]);
      d.wait(h, st->added[k]);
      d.begin_work();
      const HostMat pinned{st->staging_host[k].data, cnt, width, -1, st->staging_host[k].dtype};
      if (pinned.dtype == StoreDtype::f32)
        d.copy_to_host(piece, 0, cnt, pinned, 0);
      else
        d.copy_bytes_out(st->raw_staging[k], static_cast<std::byte*>(pinned.data), pinned.bytes());
      d.end_work(WorkKind::d2h);
      d.record(st->copied[k]);
      h.use(Queue::host);
      h.wait(d, st->copied[k]);
      h.begin_work();
      const uint32_t* rows = step.staged_vids.data() + p0;
      h.host_task([pinned, rows, dst, cnt] {
        constexpr int64_t kAhead = 16;  // rows ahead (bench/host_add_bench.cpp: ascending rows 2.7x faster with it)
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < cnt; ++r) {
          if (r + kAhead < cnt) prefetch_row(dst, rows[r + kAhead]);
          add_row(dst, rows[r], pinned, r);
        }
      });
      h.end_work(WorkKind::host);
      h.record(st->added[k]);
    }
    d.use(Queue::compute);
    d.record(st->flushed);
  }
}

// Batch j's first returns (mark_first_flushes), on the compute queue: the
// device writes them into the host store, except the handed-off rows the
// pass keeps in G (`kept`, the last of them) and, when the row tier takes
// this matrix's returns (split_tier_returns: first returns [others][tier
// rows][handed-off], later returns [others][tier rows]), the tier's rows,
// written or added into the tier. The staged host adds (issue_return) take
// the other later returns.
void Trainer::write_first_returns(DeviceState& st, int j, DevMat G, const HostMat& dst, int64_t kept, bool into_tier) {
  Device& d = *st.dev;
  const DeviceStep& step = st.plan.steps[j];
  const StepLists& lists = st.lists[st.slot_of[j]];
  const int64_t direct = step.first_count;
  const int64_t first = into_tier ? step.tier_first : 0, later = into_tier ? step.tier_staged : 0;
  const int64_t others = direct - step.handoff_count - first;
  auto to_host = [&](int64_t b, int64_t e) {
    if (e <= b) return;
    d.begin_work();
    d.scatter_rows_and_zero(G, lists.flush_rows.sub(b, e - b), lists.flush_vids.sub(b, e - b), dst);
    d.end_work(WorkKind::d2h);
  };
  if (first == 0) {  // one range
    to_host(0, direct - kept);
  } else {
    to_host(0, others);
    to_host(others + first, direct - kept);
  }
  if (first + later == 0) return;
  const DeviceState::RowTier& tier = st.tier;
  const DevIdx slots = tier.ret_slots[j];
  d.begin_work();
  if (first > 0) d.scatter_rows_and_zero(G, lists.flush_rows.sub(others, first), slots.sub(0, first), tier.rows);
  if (later > 0)
    d.add_rows_and_zero(G, lists.flush_rows.sub(step.flush_count() - later, later), slots.sub(first, later), tier.rows);
  d.end_work(WorkKind::compute);
}

// Own rows of batch j whose returns the row tier took, over the rows `dst`
// read from the host (stale there), on the compute queue when the batch
// starts: its own tier rows are consecutive slots (tier vertices ascend).
void Trainer::patch_tier_rows(DeviceState& st, int j, DevMat dst) {
  const DeviceState::RowTier& t = st.tier;
  const DevIdx own = t.own_rows[j];
  if (own.size == 0) return;
  const HostMat src{t.rows.row_bytes(t.own_slot0[j]), own.size, t.rows.cols, st.dev->index(), t.rows.dtype};
  st.dev->gather_from_host(src, DevIdx{nullptr, own.size}, own, dst, DropoutSpec{});
}

}  // namespace ht
