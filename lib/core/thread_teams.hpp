#pragma once
// Tasks side by side, each with a share of the threads, without nested
// OpenMP: the teams are std::threads, each the initial thread of OpenMP
// regions of its own. libgomp reuses its worker threads only for a thread's
// outermost regions; every region nested in an OpenMP team starts fresh
// threads (ht-partition's chunk runs: 1495 thread starts at 8 threads, 19 on
// std::thread teams; partition/chunking.cpp). Each std::thread keeps a pool
// of its own for all the regions its tasks open.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace ht {

// body(t) for t in [0, tasks), `teams` at a time (at least one; this thread
// leads the first team), each team's OpenMP loops with threads / teams
// threads, the first threads % teams teams one more. A team takes the next
// task when it finishes one, so which team runs a task, with how many
// threads, must not change what the task computes. The tasks all run even
// when some throw; the exception of the lowest task is rethrown at the end.
// This thread's OpenMP thread count is restored.
template <typename Body>
void run_in_teams(int64_t tasks, int teams, int threads, Body body) {
  if (tasks <= 0) return;
  teams = static_cast<int>(std::clamp<int64_t>(teams, 1, tasks));
  threads = std::max(threads, teams);
  std::atomic<int64_t> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(tasks));
  auto team = [&](int k) {
    omp_set_num_threads(threads / teams + (k < threads % teams ? 1 : 0));
    for (int64_t t = next++; t < tasks; t = next++) {
      try {
        body(t);
      } catch (...) {
        errors[static_cast<size_t>(t)] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> others;
  try {
    for (int k = 1; k < teams; ++k) others.emplace_back(team, k);
  } catch (...) {  // no thread to start: the teams started take every task
  }
  const int saved = omp_get_max_threads();
  team(0);
  omp_set_num_threads(saved);
  for (std::thread& th : others) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ht
