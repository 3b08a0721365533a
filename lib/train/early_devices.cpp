#include "train/early_devices.hpp"

#include <system_error>

#include <fmt/format.h>

#include "core/log.hpp"
#include "plan/plan_shape.hpp"
#include "train/chunk_choice.hpp"

namespace ht {

// The probe runs before the executor exists (on the same thread when both
// go beside the files' reading), so that its buffers cannot collide with the
// executor's pools; it counts as setup.
LinkProbe probe_link(const TrainJob& job) {
  LinkProbe p;
  if (!job.probe_link) return p;
  const Timer t;
  p.link = job.probe_link();
  p.measured = true;
  p.seconds = t.seconds();
  log::info("host link of GPU 0: H2D {:.1f} GB/s, D2H {:.1f} GB/s (pinned copies; probe took {:.0f} ms)",
            p.link.h2d_bytes_per_s / 1e9, p.link.d2h_bytes_per_s / 1e9, p.seconds * 1e3);
  return p;
}

int early_device_count(const TrainJob& job) {
  if (job.transport) return 0;
  if (!job.plan_path.empty()) {
    try {
      const std::optional<PlanShape> shape = read_plan_shape(job.plan_path);
      return shape ? shape->m : 0;
    } catch (const std::exception&) {
      return 0;  // (read_plan says why, in its place)
    }
  }
  if (!job.partition_path.empty()) return 0;
  if (job.chunks == kChunksAuto && job.device_memory) return 0;
  return job.parts;
}

EarlyDevices::EarlyDevices(const TrainJob& job, const ExecutorFactory& make_executor, bool in_sequence) : job_(job) {
  if (in_sequence) {
    probe_ = probe_link(job);
    return;
  }
  early_m_ = early_device_count(job);
  if (!job.probe_link && early_m_ == 0) return;  // nothing to start
  auto work = [this, &make_executor] {
    try {
      probe_ = probe_link(job_);
    } catch (...) {
      probe_error_ = std::current_exception();
      return;  // (in sequence nothing came after it)
    }
    if (early_m_ == 0) return;
    try {
      const Timer t;
      exec_ = make_executor(early_m_);
      exec_seconds_ = t.seconds();
    } catch (...) {
      exec_error_ = std::current_exception();
    }
  };
  try {
    task_ = std::async(std::launch::async, work);
  } catch (const std::system_error&) {  // no thread to start: here and now, as in sequence
    work();
    if (probe_error_) std::rethrow_exception(std::exchange(probe_error_, nullptr));
  }
}

double EarlyDevices::wait() {
  double waited = 0;
  if (task_.valid()) {
    const Timer t;
    task_.get();  // (the work keeps its errors: nothing to rethrow here)
    waited = t.seconds();
  }
  if (probe_error_) std::rethrow_exception(std::exchange(probe_error_, nullptr));
  return waited;
}

std::unique_ptr<Executor> EarlyDevices::take_executor(int m) {
  if (early_m_ == 0 || m != early_m_) {
    exec_.reset();
    return nullptr;
  }
  if (exec_error_) std::rethrow_exception(std::exchange(exec_error_, nullptr));
  exec_->adopt_thread();
  return std::move(exec_);
}

void EarlyDevices::rethrow_probe_error() {
  if (task_.valid()) task_.get();  // (the work keeps its errors)
  if (probe_error_) std::rethrow_exception(std::exchange(probe_error_, nullptr));
}

void EarlyDevices::report(TrainSummary& sum, const std::string& beside_text, double waited) const {
  sum.link = probe_.link;
  sum.link_measured = probe_.measured;
  sum.link_probe_seconds = probe_.seconds;
  if (beside_text.empty()) return;
  // One name whatever ran ("executor" is the main thread's phase where it
  // is taken or made).
  const std::string phase = "device start";
  PhaseTimes& p = sum.setup_phases;
  p.add(phase, probe_.seconds + exec_seconds_);
  p.set_beside(phase, beside_text);
  if (probe_.measured) p.add_part(phase, "link probe", probe_.seconds);
  if (early_m_ > 0) p.add_part(phase, "executor", exec_seconds_);
  p.add_part(phase, "waited for", waited);
}

}  // namespace ht
