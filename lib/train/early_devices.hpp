#pragma once
// ht-train's devices started beside reading the files (issue 33): the host
// link probe (the process's first CUDA use: it makes GPU 0's context) and,
// where the executor's device count is known from a file's header, the
// executor itself (contexts, library handles, streams), on a thread of
// their own from the start of setup while the graph, partition and plan
// are read and derived. Nothing they make feeds those reads: the probe's
// bandwidths are only reported after the epochs, and the executor is first
// used by the trainer. Setup waits for them before the trainer (whose
// uploads would disturb the probe's timing) and before anything that reads
// the GPUs' free memory (--chunks auto), where the memory they hold must be
// what it was in sequence. Errors surface as in sequence: the probe's first
// (it came before everything else), the executor's where it was made.
#include <exception>
#include <future>
#include <memory>
#include <string>

#include "core/timer.hpp"
#include "engine/executor.hpp"
#include "train/train_job.hpp"

namespace ht {

// The probe's result, copied into the summary once waited for.
struct LinkProbe {
  LinkBandwidth link;
  bool measured = false;
  double seconds = 0;
};

// The probe, logged; none when the job has no probe (the CPU backend).
LinkProbe probe_link(const TrainJob& job);

// The executor's device count before the plan is read, where a header
// tells it: the plan file's m, or the GPUs of a partition made in memory
// with a fixed chunk count. 0 where it is not known early (then the
// executor is made after the plan, as before): several processes (their
// executors join the job after a collective check of the files), a
// partition file without a plan, --chunks auto on the GPUs (the chunk
// choice reads their free memory, which an executor made beside would
// change), a plan header that does not read (read_plan names the problem).
int early_device_count(const TrainJob& job);

class EarlyDevices {
 public:
  // in_sequence: the probe now, on this thread, and the executor made
  // after the plan (the order before; ht-train --setup-in-sequence).
  EarlyDevices(const TrainJob& job, const ExecutorFactory& make_executor, bool in_sequence);

  // Whether the thread was started and not yet waited for.
  bool beside() const { return task_.valid(); }

  // Joins the thread (once; later calls return 0): rethrows the probe's
  // error; the executor's is kept for take_executor. Returns the seconds
  // waited.
  double wait();

  // After wait(): the executor made beside when it was made for m devices
  // (its error rethrown), made current on this thread; else null (one made
  // for another m, or its error, is dropped: the caller makes its own, as
  // in sequence, and meets that one's error).
  std::unique_ptr<Executor> take_executor(int m);

  // In a handler of the setup's error: joins, and rethrows the probe's
  // error if it had one (in sequence it would have come first).
  void rethrow_probe_error();

  // The probe's result and the thread's phase ("device start", beside
  // `beside_text`, its parts the probe's and the executor's seconds and
  // `waited`) into sum; the probe's alone, without a phase, in sequence
  // (empty beside_text).
  void report(TrainSummary& sum, const std::string& beside_text, double waited) const;

 private:
  const TrainJob& job_;
  int early_m_ = 0;
  LinkProbe probe_;
  std::exception_ptr probe_error_;
  std::exception_ptr exec_error_;
  std::unique_ptr<Executor> exec_;
  double exec_seconds_ = 0;
  // Last, so that it is destroyed first: a future of std::async waits for
  // its thread in its destructor (an unwinding caller waits for it too).
  std::future<void> task_;
};

}  // namespace ht
