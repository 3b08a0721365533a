#pragma once
// SIGINT / SIGTERM: temporary files of the atomic writer are removed before
// the process ends, and long runs can stop at a safe point.
//
// Two modes, chosen by the tool (library code never installs handlers):
//  - immediate: a signal removes every registered temporary file, prints one
//    line ("<tool>: interrupted by SIGTERM; no output written", or, once an
//    output is in place, "...; the outputs finished before it are complete,
//    nothing else written") and ends the process with exit code 128 + signal;
//  - graceful (ht-train): the first signal only records itself; the training
//    loop polls stop_signal() after each epoch, writes a checkpoint and throws
//    Interrupted. A second SIGINT ends the process at once as in `immediate`;
//    repeated SIGTERMs are one request (schedulers send SIGTERM to the job's
//    shell, which forwards it, and to every process).
#include <stdexcept>
#include <string>

namespace ht::signals {

// Installs the handlers for SIGINT and SIGTERM; `tool` names the process in
// the line printed by an immediate stop.
void install(const std::string& tool, bool graceful);

// The signal received in graceful mode (SIGINT or SIGTERM), or 0.
int stop_signal();

// For tests: forget a recorded signal.
void clear_stop_signal();

// The atomic writer's temporary files, removed by an immediate stop. Paths
// longer than the registry's slots, or more files than slots, are simply not
// removed by a signal (their destructors still remove them on errors).
int register_temp_file(const std::string& path);  // returns a handle (-1: not registered)
void unregister_temp_file(int handle);
// Called by the atomic writer once an output is in place: an immediate stop
// after it no longer says "no output written" (a signal that lands between
// the last output's rename and the process's end leaves a complete file).
void note_output_committed();

// Thrown by a run that stopped on a signal; `message` says what was saved.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, const std::string& message) : std::runtime_error(message), signal_(signal) {}
  int signal() const noexcept { return signal_; }
  int exit_code() const noexcept { return 128 + signal_; }

 private:
  int signal_;
};

const char* signal_name(int signal);

}  // namespace ht::signals
