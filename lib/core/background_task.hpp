#pragma once
// One task on a thread of its own beside the caller's work (ht-train's setup
// starts the devices beside reading the files: issue 33). Joined in every
// path: wait() joins and rethrows the task's error; the destructor joins
// too (an unwinding caller waits for the task, and drops its error: the
// caller's own is the one that surfaces), so that no thread outlives its
// inputs and none is left joinable (std::terminate).
#include <exception>
#include <functional>
#include <thread>
#include <utility>

#include "core/timer.hpp"

namespace ht {

class BackgroundTask {
 public:
  BackgroundTask() = default;
  explicit BackgroundTask(std::function<void()> work) : running_(true) {
    thread_ = std::thread([this, work = std::move(work)] {
      try {
        work();
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;
  ~BackgroundTask() { join(); }

  // Joins; rethrows the task's exception (once). Returns the seconds the
  // caller waited (0 when it had finished, or when there is no task).
  double wait() {
    const Timer t;
    join();
    const double waited = t.seconds();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return waited;
  }

  // Joins without rethrowing: the task's error, if any (then taken).
  std::exception_ptr join_for_error() {
    join();
    return std::exchange(error_, nullptr);
  }

 private:
  void join() {
    if (!running_) return;
    thread_.join();
    running_ = false;
  }

  std::thread thread_;
  std::exception_ptr error_;  // written by the task, read after the join
  bool running_ = false;
};

}  // namespace ht
