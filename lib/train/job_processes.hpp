#pragma once
// What a training job of several processes (engine/transport.hpp) agrees on
// besides the trainer's own exchanges: that every process read the same
// files, when to stop, and the job-wide numbers of the summary. Every call
// is collective; with no transport (one process) each returns its input.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/container.hpp"
#include "engine/executor.hpp"
#include "engine/transport.hpp"
#include "train/job_options.hpp"

namespace ht {

// Throws, naming the file and the processes, unless every process read files
// with the same identities (size and checksum; a zero identity: not read).
void check_same_inputs(Transport* t, std::span<const std::pair<std::string, FileIdentity>> files);

// Throws unless every process was given the same values of `options` (the
// same list in every process: train/job_options.hpp), in one line naming each
// option that differs and the processes whose value is not process 0's. One
// allgather of a hash per option.
void check_same_options(Transport* t, std::span<const JobOption> options);

// The largest of every process's value (a stop signal, a peak).
int64_t max_over_processes(Transport* t, int64_t mine);

// The job's bytes and rows moved: the sum of every process's counters.
LinkCounters sum_over_processes(Transport* t, const LinkCounters& mine);

// The rows [held.first, held.second) of `rows` (N x cols, the other rows
// unset) from every process, into one N x cols matrix on every process.
std::vector<float> gather_held_rows(Transport* t, std::vector<float> rows, int64_t cols,
                                    std::pair<int64_t, int64_t> held);

}  // namespace ht
