#pragma once
// The processes of one training job (ht-train under mpirun or srun): what the
// engine asks of them. Each process drives the GPUs (or emulated devices) it
// was given; device g of the job (its global index) lives in process
// g / devices_per_process. The implementation is MPI (lib/dist); a job of one
// process needs none (`Transport*` is null, or `size() == 1`).
//
// Every call is collective: every process of the job makes the same calls in
// the same order (the trainer's schedule is the same in every process), which
// is what makes point-to-point messages match without a handshake.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ht {

// One message of an exchange: `bytes` go to (or come from) process `rank`;
// `tag` tells messages between the same two processes apart (the trainer
// uses sender and receiver device, so several devices per process match).
struct TransportMessage {
  int rank = 0;
  int tag = 0;
  std::span<std::byte> bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends every message of `sends` and receives every one of `recvs`, all at
  // once, and returns when all have completed. Messages between two processes
  // with the same tag arrive in the order they were sent.
  virtual void exchange(std::span<const TransportMessage> sends, std::span<const TransportMessage> recvs) = 0;
  // all[r * mine.size() ...] = process r's `mine` (the same size everywhere).
  virtual void allgather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  // `bytes` of process `root` to every process.
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  virtual void barrier() = 0;
  // Ends the whole job at once (every process), exit status `code`: what a
  // process calls after printing its own error, so that no other process
  // waits forever for a message it will never get.
  [[noreturn]] virtual void abort(int code) = 0;
  // What launched the job, for the log: "MPI (Open MPI v4.1.4)".
  virtual std::string describe() const = 0;
};

// Typed helpers over Transport::allgather / broadcast.
template <typename T>
void allgather_values(Transport& t, std::span<const T> mine, std::span<T> all) {
  t.allgather(std::as_bytes(mine), std::as_writable_bytes(all));
}

}  // namespace ht
