#pragma once
// Files: a read-only memory map (RAII) and an atomic writer that writes to a
// temporary file beside the target and renames it into place on commit(), so
// an interrupted run never leaves a file that looks valid.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace ht {

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  const std::byte* data() const { return static_cast<const std::byte*>(data_); }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Gives the pages of [p, p + len) (inside the map) back to the kernel: the
  // process's RSS no longer counts them, and a later read faults them in
  // again from the page cache or the file. The map is read-only and private,
  // so nothing is lost. Whole pages inside the range only; best effort.
  void drop_pages(const void* p, size_t len) const noexcept;
  void drop_all_pages() const noexcept { drop_pages(data_, size_); }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Asks the kernel to drop the page cache of a file that has been read
// through and will not be read again (posix_fadvise DONTNEED; best effort):
// a multi-GB plan read into memory would otherwise hold as much page cache,
// which the vertex store's allocation then has to reclaim.
void drop_file_cache(const std::string& path) noexcept;

// A writable shared map of part of a file (AtomicFile::map_window), unmapped
// on destruction; what was written stays in the file's page cache, dirty.
class FileWindow {
 public:
  FileWindow() = default;
  FileWindow(void* map, size_t map_len, size_t skip, size_t len) : map_(map), map_len_(map_len), skip_(skip), len_(len) {}
  ~FileWindow() { release(); }
  FileWindow(FileWindow&& o) noexcept { *this = std::move(o); }
  FileWindow& operator=(FileWindow&& o) noexcept;
  FileWindow(const FileWindow&) = delete;
  FileWindow& operator=(const FileWindow&) = delete;
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(map_) + skip_, len_}; }
  // Faults in the pages of bytes [begin, begin + len) for writing in one
  // call (MADV_POPULATE_WRITE, where the kernel has it) instead of a fault
  // per page; best effort.
  void prefault(size_t begin, size_t len) const noexcept;
  // Unmaps the pages wholly inside bytes [begin, begin + len): written, they
  // stay in the page cache (dirty until written back), but leave the
  // process's RSS, so that a thread going through a large window holds only
  // its current piece. Best effort.
  void drop(size_t begin, size_t len) const noexcept;

 private:
  void release() noexcept;
  // The page-aligned map starts skip_ bytes before the window.
  void* map_ = nullptr;
  size_t map_len_ = 0, skip_ = 0, len_ = 0;
};

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t len);                       // append
  void pwrite(const void* data, size_t len, int64_t offset);      // overwrite at offset
  void pad_to(int64_t offset);                                    // append zeros
  // Appends `len` bytes of space and returns their offset; the caller fills
  // them with pwrite, from any number of threads at once (pwrite touches no
  // shared state), so that a large section is written in parallel.
  int64_t append_space(int64_t len);
  // Allocates [offset, offset + len) on disk now (fallocate; the file grows
  // to offset + len if shorter), so that the range can be written through
  // map_window with no risk of running out of space midway, which a map
  // reports as SIGBUS instead of an error. Returns false where the file
  // system cannot allocate ahead (callers then use pwrite); throws when the
  // disk has no room for it.
  bool allocate(int64_t offset, int64_t len);
  // A writable shared map of [offset, offset + len), which allocate() must
  // have covered. Many threads can fill parts of it at once and their copies
  // run in parallel: a pwrite holds the file's inode lock for its whole copy
  // into the page cache (Linux ext4 and XFS), so parallel pwrites to one
  // file run one after another, while page faults of a shared map do not
  // take it. One map per section, not per piece: mmap and munmap take the
  // process's map lock exclusively, prefault and drop do not.
  FileWindow map_window(int64_t offset, int64_t len);
  // Asks the kernel to start writing [offset, offset + len) to disk now
  // (Linux sync_file_range; best effort, errors surface at commit()'s fsync).
  // Writers call it behind each large block: the disk then works while the
  // next blocks are produced, instead of commit()'s fsync finding the whole
  // file dirty at the end (measured: 12 GB at 1.6 GB/s is 7.5 s of waiting).
  void start_writeback(int64_t offset, int64_t len) noexcept;
  int64_t position() const { return pos_; }
  // Off: commit() renames without waiting for the disk (no fsync), and
  // start_writeback does nothing (it would wait where the disk's queue is
  // full); the kernel writes the page cache back later. An interrupted run
  // still leaves no file; only a machine that stops before the write-back
  // (power, kernel) can leave the renamed file incomplete.
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }
  void commit();  // fsync (unless set_sync(false)) + rename into place
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_path_;
  int fd_ = -1;
  int temp_handle_ = -1;  // registered for removal on SIGINT / SIGTERM (core/signals.hpp)
  int64_t pos_ = 0;
  bool committed_ = false;
  bool sync_ = true;
};

// Whole-file helpers for small files (configs, JSON, text outputs).
std::string read_text_file(const std::string& path);
void write_text_file_atomic(const std::string& path, const std::string& text);
bool file_exists(const std::string& path);
int64_t file_size(const std::string& path);

// Fails before any work when `path` (the value of `option`) could not be
// written at the end: empty, a directory, a directory that does not exist or
// is not writable, or one of the run's `inputs` (the same path, a symbolic
// link to it or a hard link of it). Throws option_error.
void check_output_path(const std::string& path, const std::string& option,
                       std::span<const std::string> inputs = {});

// Whether two paths name the same file: the same normalized absolute path
// (after resolving symbolic links of existing parts), or both exist with the
// same device and inode (hard links). Empty paths are never the same file.
bool same_file(const std::string& a, const std::string& b);

// An output of a run and the option that named it.
struct OutputPath {
  std::string path;  // empty = not asked for (skipped)
  std::string option;
};

// check_output_path for every output given, and no two outputs the same file.
void check_output_paths(std::span<const OutputPath> outputs, std::span<const std::string> inputs);

}  // namespace ht
