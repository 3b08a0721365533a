#pragma once
// The binary container shared by every hongtu file (graph, partition, plan):
// a 4096-byte header (magic, version, byte-order mark, 16 kind-specific
// 64-bit meta values, a table of up to 32 sections) followed by 4096-byte
// aligned sections, each with its dtype, shape and XXH64 checksum.
// docs/FORMATS.md is the normative description.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace ht {

// bf16 and f16 (IEEE binary16) elements are 16-bit patterns (core/half.hpp);
// no C++ type maps to them, so they are written with add_section and read
// with ContainerReader::bytes.
enum class DType : uint32_t { u8 = 1, i32 = 2, u32 = 3, i64 = 4, u64 = 5, f32 = 6, bf16 = 7, f16 = 8 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::u64; }
template <> constexpr DType dtype_of<float>() { return DType::f32; }

namespace container {
inline constexpr uint32_t kHeaderBytes = 4096;
inline constexpr uint32_t kAlign = 4096;
inline constexpr uint32_t kByteOrderMark = 0x01020304;
inline constexpr int kMaxSections = 32;
inline constexpr int kNumMeta = 16;
inline constexpr int kNameBytes = 32;
}  // namespace container

struct SectionInfo {
  std::string name;
  DType dtype = DType::u8;
  uint32_t ndim = 1;
  uint64_t shape[2] = {0, 1};
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t checksum = 0;
  uint64_t count() const { return shape[0] * (ndim == 2 ? shape[1] : 1); }
};

// Identity of a file for "made from" checks: its size and header checksum
// (the header checksum covers every section checksum).
struct FileIdentity {
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  bool operator==(const FileIdentity&) const = default;
};

// How one section's write went, for the tools' -v laps: its wall time and,
// summed over the threads, the time spent making its bytes (fill), hashing
// them, storing them (copies into the page cache: pwrite, or a map's page
// faults and copy) and handing them to the disk (start_writeback, which
// waits where the disk's queue is full); mapped = written through a shared
// map (map_window).
struct SectionWriteTime {
  std::string name;
  uint64_t bytes = 0;
  bool mapped = false;
  double seconds = 0, fill_seconds = 0, hash_seconds = 0, store_seconds = 0, writeback_seconds = 0;
};

class ContainerWriter {
 public:
  ContainerWriter(std::string path, const char (&magic)[9], uint32_t version);
  void set_meta(int index, uint64_t value);
  void set_flags(uint64_t flags) { flags_ = flags; }
  // Off: every section is pwritten, as on file systems that cannot allocate
  // ahead (tests compare the two ways; the bytes are the same).
  void set_mapped_writes(bool on) { mapped_writes_ = on; }
  // Off: the file is renamed into place without waiting for the disk
  // (AtomicFile::set_sync).
  void set_sync(bool on) { file_.set_sync(on); }
  bool sync() const { return file_.sync(); }
  // Writes one section now (aligned), computing its checksum. Large sections
  // go in 64 MiB blocks, each hashed and written by one thread; where the
  // file system allocates ahead, a section of more than one block is
  // allocated first and its blocks copied through shared maps, so that the
  // threads' copies do not wait on each other (AtomicFile::map_window).
  void add_section(const std::string& name, DType dtype, uint64_t rows, uint64_t cols, const void* data,
                   int ndim = 1);
  // Produces bytes [offset, offset + out.size()) of a section.
  using FillBytes = std::function<void(uint64_t offset, std::span<std::byte> out)>;
  // Writes one section whose bytes `fill` produces piece by piece, so that it
  // never exists in memory as a whole (generated features): the 64 MiB
  // checksum blocks are filled, hashed and written in parallel, each in
  // pieces of at most kFillPiece bytes, straight into the file's map (as in
  // add_section) or else into a per-thread buffer that is pwritten. `fill` is
  // called from several threads at once and must depend on the offset only.
  // An exception from `fill` stops the section; the one of the lowest block
  // is rethrown, so that the error does not depend on the schedule.
  void add_section_filled(const std::string& name, DType dtype, uint64_t rows, uint64_t cols, int ndim,
                          const FillBytes& fill);
  static constexpr uint64_t kFillPiece = uint64_t{4} << 20;
  template <typename T>
  void add(const std::string& name, std::span<const T> v, uint64_t cols = 1) {
    add_section(name, dtype_of<T>(), cols ? v.size() / cols : 0, cols, v.data(), cols == 1 ? 1 : 2);
  }
  void commit();  // writes the header and renames the file into place
  const std::string& path() const { return file_.path(); }
  // The sections written so far, in order, and commit()'s seconds (most of
  // them the fsync: the disk finishing what the page cache holds).
  const std::vector<SectionWriteTime>& write_times() const { return times_; }
  double commit_seconds() const { return commit_seconds_; }

 private:
  AtomicFile file_;
  char magic_[8];
  uint32_t version_;
  uint64_t flags_ = 0;
  bool mapped_writes_ = true;
  std::array<uint64_t, container::kNumMeta> meta_{};
  std::vector<SectionInfo> sections_;
  std::vector<SectionWriteTime> times_;
  double commit_seconds_ = 0;

  SectionInfo begin_section(const std::string& name, DType dtype, uint64_t rows, uint64_t cols, int ndim);
  // A map of s's bytes in the file where they are written through one
  // (sections of more than one block, where the file system allocates
  // ahead), else an empty window (pwrite).
  FileWindow map_section(const SectionInfo& s);
  template <typename WriteBlock>
  void write_blocks(SectionInfo& s, WriteBlock write_block);
};

struct ReadOptions {
  bool verify_checksums = true;
  // The oldest format version the reader still reads (0: only the version
  // given to the reader); version() says which one the file has.
  uint32_t oldest_version = 0;
};

class ContainerReader {
 public:
  // Validates the header and section table; verifies section checksums
  // unless options say not to. Throws ht::Error naming the file and offset.
  ContainerReader(const std::string& path, const char (&magic)[9], uint32_t version, ReadOptions opt = {});
  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t meta(int index) const { return meta_.at(index); }
  uint64_t flags() const { return flags_; }
  FileIdentity identity() const { return identity_; }
  bool has(const std::string& name) const { return find(name) != nullptr; }
  const SectionInfo& section(const std::string& name) const;
  const std::vector<SectionInfo>& sections() const { return sections_; }

  // Typed view of a section; checks dtype and (optionally) element count.
  template <typename T>
  std::span<const T> array(const std::string& name, std::optional<uint64_t> expected_count = {}) const {
    const SectionInfo& s = section(name);
    check_section(s, dtype_of<T>(), expected_count);
    return {reinterpret_cast<const T*>(file_.data() + s.offset), static_cast<size_t>(s.count())};
  }
  // Raw bytes of a section of any dtype; checks dtype and (optionally) element count.
  std::span<const std::byte> bytes(const std::string& name, DType dtype,
                                   std::optional<uint64_t> expected_count = {}) const {
    const SectionInfo& s = section(name);
    check_section(s, dtype, expected_count);
    return {file_.data() + s.offset, static_cast<size_t>(s.length)};
  }
  // The map's pages of [p, p + len) / of the whole file leave the process's
  // RSS (MappedFile::drop_pages); views stay valid.
  void drop_pages(const void* p, size_t len) const noexcept { file_.drop_pages(p, len); }
  void drop_all_pages() const noexcept { file_.drop_all_pages(); }
  // Throws an error about `what` located at section `name`.
  [[noreturn]] void fail_in(const std::string& name, const std::string& what) const;

 private:
  const SectionInfo* find(const std::string& name) const;
  void check_section(const SectionInfo& s, DType dtype, std::optional<uint64_t> count) const;
  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t flags_ = 0;
  std::array<uint64_t, container::kNumMeta> meta_{};
  std::vector<SectionInfo> sections_;
  FileIdentity identity_;
};

// Reads only the identity (size + header checksum) of a container file.
FileIdentity read_identity(const std::string& path);

}  // namespace ht
