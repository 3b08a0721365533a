#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/signals.hpp"

namespace ht {
namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error(path, "cannot open for reading: " + errno_text());
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw file_error(path, "cannot stat: " + errno_text());
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw file_error(path, "is a directory, expected a file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      ::close(fd);
      throw file_error(path, "cannot mmap: " + errno_text());
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() { release(); }

void MappedFile::drop_pages(const void* p, size_t len) const noexcept {
  if (!data_ || len == 0) return;
  const auto base = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t b = std::max(reinterpret_cast<uintptr_t>(p), base);
  uintptr_t e = std::min(reinterpret_cast<uintptr_t>(p) + len, base + size_);
  b = (b + page - 1) / page * page;                  // pages wholly inside the range:
  if (e != base + size_) e = e / page * page;        // a neighbour's rows stay mapped
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void drop_file_cache(const std::string& path) noexcept {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::random_device rd;
  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd() % 1000000);
  // Registered before it exists, so that a signal never leaves it behind.
  temp_handle_ = signals::register_temp_file(tmp_path_);
  // Read and write: a writable shared map (map_window) needs both.
  fd_ = ::open(tmp_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    signals::unregister_temp_file(temp_handle_);
    throw file_error(path_, "cannot create output file: " + errno_text());
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
  signals::unregister_temp_file(temp_handle_);
}

void AtomicFile::write(const void* data, size_t len) {
  pwrite(data, len, pos_);
  pos_ += static_cast<int64_t>(len);
}

void AtomicFile::pwrite(const void* data, size_t len, int64_t offset) {
  auto p = static_cast<const char*>(data);
  while (len > 0) {
    const size_t step = len < (size_t{1} << 30) ? len : (size_t{1} << 30);
    const ssize_t n = ::pwrite(fd_, p, step, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw file_error(path_, "write failed: " + errno_text());
    }
    p += n;
    len -= static_cast<size_t>(n);
    offset += n;
  }
}

void AtomicFile::pad_to(int64_t offset) {
  HT_ASSERT(offset >= pos_);
  static const std::vector<char> zeros(1 << 16, 0);
  while (pos_ < offset) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(offset - pos_, zeros.size()));
    write(zeros.data(), n);
  }
}

int64_t AtomicFile::append_space(int64_t len) {
  HT_ASSERT(len >= 0);
  const int64_t at = pos_;
  pos_ += len;
  return at;
}

bool AtomicFile::allocate(int64_t offset, int64_t len) {
  HT_ASSERT(offset >= 0 && len >= 0);
  if (len == 0) return true;
#if defined(__linux__)
  while (::fallocate(fd_, 0, offset, len) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
      throw file_error(path_, fmt::format("cannot allocate {} bytes at byte {}: {}", len, offset, errno_text()));
    return false;  // EOPNOTSUPP and the like: the file system cannot allocate ahead
  }
  return true;
#else
  return false;
#endif
}

FileWindow AtomicFile::map_window(int64_t offset, int64_t len) {
  HT_ASSERT(offset >= 0 && len > 0);
  static const auto page = static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
  const int64_t start = offset / page * page;
  const auto skip = static_cast<size_t>(offset - start), map_len = skip + static_cast<size_t>(len);
  void* p = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, start);
  if (p == MAP_FAILED) throw file_error(path_, fmt::format("cannot map {} bytes at byte {}: {}", len, offset, errno_text()));
  return FileWindow(p, map_len, skip, static_cast<size_t>(len));
}

namespace {
// The whole pages inside bytes [begin, begin + len) of a map at `base`
// (which is page-aligned); {nullptr, 0} when there are none.
std::pair<std::byte*, size_t> whole_pages(void* base, size_t begin, size_t len) {
  static const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t b = (begin + page - 1) / page * page, e = (begin + len) / page * page;
  if (e <= b) return {nullptr, 0};
  return {static_cast<std::byte*>(base) + b, e - b};
}
}  // namespace

void FileWindow::prefault(size_t begin, size_t len) const noexcept {
#if defined(MADV_POPULATE_WRITE)
  // Partial pages at the ends are left to ordinary faults: the neighbour's
  // bytes in them are another thread's.
  const auto [p, n] = whole_pages(map_, skip_ + begin, len);
  if (n > 0) (void)::madvise(p, n, MADV_POPULATE_WRITE);
#else
  (void)begin;
  (void)len;
#endif
}

void FileWindow::drop(size_t begin, size_t len) const noexcept {
  const auto [p, n] = whole_pages(map_, skip_ + begin, len);
  if (n > 0) (void)::madvise(p, n, MADV_DONTNEED);
}

FileWindow& FileWindow::operator=(FileWindow&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
    skip_ = std::exchange(o.skip_, 0);
    len_ = std::exchange(o.len_, 0);
  }
  return *this;
}

void FileWindow::release() noexcept {
  if (map_) ::munmap(map_, map_len_);
  map_ = nullptr;
}

void AtomicFile::start_writeback(int64_t offset, int64_t len) noexcept {
#if defined(__linux__)
  if (sync_ && len > 0) (void)::sync_file_range(fd_, offset, len, SYNC_FILE_RANGE_WRITE);
#else
  (void)offset;
  (void)len;
#endif
}

void AtomicFile::commit() {
  if (sync_ && ::fsync(fd_) != 0) throw file_error(path_, "fsync failed: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw file_error(path_, "close failed: " + errno_text());
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    throw file_error(path_, "cannot rename temporary file into place: " + errno_text());
  signals::note_output_committed();
  committed_ = true;
  signals::unregister_temp_file(temp_handle_);
  temp_handle_ = -1;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, "cannot open for reading: " + errno_text());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

bool file_exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

int64_t file_size(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw file_error(path, "cannot stat: " + errno_text());
  return st.st_size;
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (a.empty() || b.empty()) return false;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  if (!ea && !eb && ca.lexically_normal() == cb.lexically_normal()) return true;
  struct stat sa{}, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void check_output_path(const std::string& path, const std::string& option, std::span<const std::string> inputs) {
  namespace fs = std::filesystem;
  if (path.empty()) throw usage_error(option, "required: the file to write");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw option_error(option, fmt::format("'{}' is a directory; give a file name", path));
  const fs::path dir = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(dir, ec))
    throw option_error(option, fmt::format("cannot write '{}': directory '{}' does not exist", path, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw option_error(option, fmt::format("cannot write '{}': directory '{}' is not writable", path, dir.string()));
  for (const std::string& input : inputs)
    if (same_file(path, input))
      throw option_error(option, fmt::format("'{}' is an input of this run{}; choose another output file", path,
                                             input == path ? "" : fmt::format(" ('{}')", input)));
}

void check_output_paths(std::span<const OutputPath> outputs, std::span<const std::string> inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    check_output_path(outputs[i].path, outputs[i].option, inputs);
    for (size_t k = 0; k < i; ++k)
      if (same_file(outputs[i].path, outputs[k].path))
        throw option_error(outputs[i].option, fmt::format("'{}' is also the output of {}; give each output its own file",
                                                          outputs[i].path, outputs[k].option));
  }
}

}  // namespace ht
