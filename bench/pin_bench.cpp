// Pinned host memory for the vertex store: how fast it can be had (issue 20,
// "host memory registered in parallel"; setup <= 20 s at 20 M / 400 M). Four
// ways to get B bytes of zeroed, pinned, mapped host memory, each timed in
// its steps, then the H2D bandwidth of a copy from it (pinned speed or not):
//   alloc       cudaHostAlloc, then zeroed by all threads (the store's way today)
//   register    anonymous mmap, zeroed by all threads (first touch), one cudaHostRegister
//   register-hp the same with transparent huge pages asked for (madvise)
//   chunks      as register-hp, cudaHostRegister of K pieces from K threads
//   grain64k    as register-hp, zeroed in 64 KiB blocks handed out dynamically
//               (PinnedBuffer before setup-overlap: threads fault the same
//               huge page at once, each clearing 2 MiB)
//   prefault    as register-hp, one byte per page written by all threads,
//               each a contiguous range (PinnedBuffer now: prefault_pages)
// (H100 machine, 32 GiB: alloc 17.1 s, register 3.0 s, register-hp 1.6 s; a
// copy across two pieces of `chunks` is refused by the driver, so the store
// registers each buffer as one range: lib/cuda/cuda_device.cpp PinnedBuffer.)
// Usage: ht-bench-pin [GiB=16] [pieces=8] [first=0]  (first = 1 skips cudaHostAlloc)
#include <cuda_runtime.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/bulk_memory.hpp"
#include "cuda/cuda_check.hpp"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void zero_parallel(char* p, size_t bytes, size_t block = size_t{64} << 20) {
  const int64_t blocks = static_cast<int64_t>((bytes + block - 1) / block);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t at = static_cast<size_t>(b) * block;
    std::memset(p + at, 0, std::min(block, bytes - at));
  }
}

// GB/s of a 1 GiB H2D copy starting at `from`, median of 5; -1 when the
// driver refuses the copy (measured: a range spanning two registrations).
double h2d_gbps(const char* from, void* dev, size_t bytes) {
  cudaStream_t s;
  HT_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    const double a = now();
    if (cudaMemcpyAsync(dev, from, bytes, cudaMemcpyHostToDevice, s) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamDestroy(s);
      return -1;
    }
    HT_CUDA_TRY(cudaStreamSynchronize(s));
    if (i > 0) t.push_back(bytes / (now() - a) / 1e9);
  }
  cudaStreamDestroy(s);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* name, double get, double zero, double pin, const char* p, size_t bytes, void* dev,
            size_t piece) {
  const size_t copy = size_t{1} << 30;
  const double mid = h2d_gbps(p + bytes / 2 - copy / 2, dev, copy);
  // A copy across two pieces (the chunks method) and one inside the first.
  const double across = piece ? h2d_gbps(p + piece - copy / 2, dev, copy) : mid;
  std::printf("%-12s %6.1f GiB: get %6.2f s, zero %6.2f s, pin %6.2f s, total %6.2f s (%5.1f GiB/s); H2D %5.1f GB/s, across pieces %5.1f GB/s\n",
              name, bytes / double(1 << 30), get, zero, pin, get + zero + pin,
              bytes / double(1 << 30) / (get + zero + pin), mid, across);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 16.0;
  const int pieces = argc > 2 ? std::atoi(argv[2]) : 8;
  const int first = argc > 3 ? std::atoi(argv[3]) : 0;
  const size_t bytes = static_cast<size_t>(gib * (1ull << 30)) / (size_t{2} << 20) * (size_t{2} << 20);
  void* dev = nullptr;
  HT_CUDA_TRY(cudaMalloc(&dev, size_t{1} << 30));
  std::printf("threads %d, pieces %d\n", omp_get_max_threads(), pieces);
  if (first == 0) {
    double a = now();
    void* p = nullptr;
    HT_CUDA_TRY(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    const double get = now() - a;
    a = now();
    zero_parallel(static_cast<char*>(p), bytes);
    const double zero = now() - a;
    report("alloc", get, zero, 0, static_cast<char*>(p), bytes, dev, 0);
    a = now();
    cudaFreeHost(p);
    std::printf("             free %.2f s\n", now() - a);
  }
  const char* names[] = {"register", "register-hp", "chunks", "grain64k", "prefault"};
  for (int mode = 0; mode < 5; ++mode) {
    double a = now();
    char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return 1;
    if (mode > 0) madvise(p, bytes, MADV_HUGEPAGE);
    const double get = now() - a;
    a = now();
    if (mode == 3) {
      zero_parallel(p, bytes, size_t{64} << 10);
    } else if (mode == 4) {
      ht::prefault_pages(p, bytes);
    } else {
      zero_parallel(p, bytes);
    }
    const double zero = now() - a;
    a = now();
    const size_t piece = mode == 2 ? (bytes / pieces) / (size_t{2} << 20) * (size_t{2} << 20) : 0;
    if (mode != 2) {
      HT_CUDA_TRY(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
    } else {
#pragma omp parallel for num_threads(pieces) schedule(static, 1)
      for (int k = 0; k < pieces; ++k) {
        const size_t at = k * piece, len = k + 1 == pieces ? bytes - at : piece;
        HT_CUDA_TRY(cudaHostRegister(p + at, len, cudaHostRegisterPortable | cudaHostRegisterMapped));
      }
    }
    const double pin = now() - a;
    report(names[mode], get, zero, pin, p, bytes, dev, piece);
    a = now();
    if (mode != 2) {
      cudaHostUnregister(p);
    } else {
      for (int k = 0; k < pieces; ++k) cudaHostUnregister(p + k * piece);
    }
    munmap(p, bytes);
    std::printf("             free %.2f s\n", now() - a);
  }
  cudaFree(dev);
  return 0;
}
