#include "core/container.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>

#include <fmt/format.h>

#include "core/container_verify.hpp"
#include "core/hash.hpp"

namespace ht {
namespace {
// Header field offsets (docs/FORMATS.md, "Container").
constexpr size_t kOffMagic = 0, kOffVersion = 8, kOffBom = 12, kOffHeaderBytes = 16, kOffNumSections = 20,
                 kOffFlags = 24, kOffHeaderChecksum = 32, kOffFileBytes = 40, kOffMeta = 64,
                 kOffSections = 192, kSectionEntry = 96;

template <typename T>
void put(std::vector<unsigned char>& h, size_t off, T v) {
  std::memcpy(h.data() + off, &v, sizeof(T));
}
template <typename T>
T get(const std::byte* h, size_t off) {
  T v;
  std::memcpy(&v, h + off, sizeof(T));
  return v;
}
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Section checksum: XXH64 over the bytes; a section longer than one block
// is hashed per 64 MiB block and its checksum is XXH64 over the block
// digests, seeded with the length (docs/FORMATS.md), so that blocks can be
// hashed in parallel.
constexpr uint64_t kChecksumBlock = uint64_t{64} << 20;

uint64_t checksum_blocks(uint64_t len) { return len <= kChecksumBlock ? 1 : (len + kChecksumBlock - 1) / kChecksumBlock; }

uint64_t combine_digests(const std::vector<uint64_t>& digests, uint64_t len) {
  if (digests.size() == 1) return digests[0];
  return xxh64(digests.data(), digests.size() * sizeof(uint64_t), len);
}

// The checksum of every section: the blocks of all sections in one parallel
// loop, largest first, so that a file of many small sections keeps every
// thread busy instead of hashing one section after another.
std::vector<uint64_t> all_section_checksums(const std::byte* base, const std::vector<SectionInfo>& sections) {
  struct Block {
    size_t section;
    uint64_t index, offset, length;
  };
  std::vector<Block> blocks;
  std::vector<std::vector<uint64_t>> digests(sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    const uint64_t len = sections[i].length;
    digests[i].resize(checksum_blocks(len));
    for (uint64_t b = 0; b < digests[i].size(); ++b) {
      const uint64_t off = b * kChecksumBlock;
      blocks.push_back({i, b, sections[i].offset + off, std::min(kChecksumBlock, len - off)});
    }
  }
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.length > b.length; });
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < static_cast<int64_t>(blocks.size()); ++k) {
    const Block& b = blocks[k];
    digests[b.section][b.index] = xxh64(base + b.offset, b.length);
  }
  std::vector<uint64_t> sums(sections.size());
  for (size_t i = 0; i < sections.size(); ++i) sums[i] = combine_digests(digests[i], sections[i].length);
  return sums;
}
// Throws at the first of `sections` (of the file mapped at `base`) whose
// checksum differs from the recorded one.
void verify_checksums(const std::string& path, const std::byte* base, const std::vector<SectionInfo>& sections) {
  const std::vector<uint64_t> sums = all_section_checksums(base, sections);
  for (size_t i = 0; i < sections.size(); ++i) {
    const SectionInfo& s = sections[i];
    if (sums[i] != s.checksum)
      throw offset_error(path, s.offset, "checksum mismatch in section '" + s.name + "' (corrupted data)");
  }
}
}  // namespace

void verify_section_checksums(const ContainerReader& r, std::span<const std::string> skip) {
  std::vector<SectionInfo> verified;
  for (const SectionInfo& s : r.sections())
    if (std::find(skip.begin(), skip.end(), s.name) == skip.end()) verified.push_back(s);
  if (verified.empty()) return;
  // The map's base, from any section's bytes and its offset in the file.
  const SectionInfo& first = verified.front();
  const std::byte* base = r.bytes(first.name, first.dtype).data() - first.offset;
  verify_checksums(r.path(), base, verified);
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::bf16:
    case DType::f16: return 2;
    case DType::i32:
    case DType::u32:
    case DType::f32: return 4;
    case DType::i64:
    case DType::u64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
    case DType::i64: return "i64";
    case DType::u64: return "u64";
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
  }
  return "?";
}

ContainerWriter::ContainerWriter(std::string path, const char (&magic)[9], uint32_t version)
    : file_(std::move(path)), version_(version) {
  std::memcpy(magic_, magic, 8);
  file_.pad_to(container::kHeaderBytes);
}

void ContainerWriter::set_meta(int index, uint64_t value) { meta_.at(index) = value; }

SectionInfo ContainerWriter::begin_section(const std::string& name, DType dtype, uint64_t rows, uint64_t cols,
                                           int ndim) {
  HT_CHECK(sections_.size() < container::kMaxSections, "too many sections in {}", file_.path());
  HT_CHECK(name.size() < container::kNameBytes, "section name too long: {}", name);
  SectionInfo s;
  s.name = name;
  s.dtype = dtype;
  s.ndim = static_cast<uint32_t>(ndim);
  s.shape[0] = rows;
  s.shape[1] = ndim == 2 ? cols : 1;
  s.length = s.count() * dtype_size(dtype);
  s.offset = align_up(static_cast<uint64_t>(file_.position()), container::kAlign);
  file_.pad_to(static_cast<int64_t>(s.offset));
  file_.append_space(static_cast<int64_t>(s.length));
  return s;
}

FileWindow ContainerWriter::map_section(const SectionInfo& s) {
  // One block is one pwrite by one thread, with nothing to run beside it.
  if (!mapped_writes_ || checksum_blocks(s.length) < 2) return {};
  if (!file_.allocate(static_cast<int64_t>(s.offset), static_cast<int64_t>(s.length))) return {};
  try {
    return file_.map_window(static_cast<int64_t>(s.offset), static_cast<int64_t>(s.length));
  } catch (const Error&) {
    return {};  // a file system that cannot map files for writing: pwrite it is
  }
}

namespace {
// A mapped section is written in windows of at most kMapWindow bytes,
// prefaulted, filled and dropped from the map, so that a thread holds at
// most that much of the file mapped (the process's RSS counts mapped file
// pages), and filled in pieces of kMapPiece, each hashed right after it is
// made, while it is still in the core's cache.
constexpr uint64_t kMapWindow = uint64_t{16} << 20;
constexpr uint64_t kMapPiece = uint64_t{1} << 20;

// Nanoseconds of one kind of work, summed over the threads.
struct Laps {
  std::atomic<int64_t> fill{0}, hash{0}, store{0}, writeback{0};
};
// Adds its lifetime to a Laps counter.
class Lap {
 public:
  explicit Lap(std::atomic<int64_t>& ns) : ns_(ns), start_(std::chrono::steady_clock::now()) {}
  ~Lap() {
    ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count(),
                  std::memory_order_relaxed);
  }
  Lap(const Lap&) = delete;
  Lap& operator=(const Lap&) = delete;

 private:
  std::atomic<int64_t>& ns_;
  std::chrono::steady_clock::time_point start_;
};
double seconds_of(const std::atomic<int64_t>& ns) { return static_cast<double>(ns.load()) * 1e-9; }
}  // namespace

// Runs write_block(offset, length, laps) -> digest for every checksum block
// of s in parallel and records the section with its checksum and times. Each
// block is handed to the disk as soon as it is written (start_writeback). An
// exception skips the blocks after the failing one; the lowest failing
// block's exception is rethrown, so the error does not depend on the
// schedule.
template <typename WriteBlock>
void ContainerWriter::write_blocks(SectionInfo& s, WriteBlock write_block) {
  const auto start = std::chrono::steady_clock::now();
  Laps laps;
  std::vector<uint64_t> digests(checksum_blocks(s.length));
  const auto nb = static_cast<int64_t>(digests.size());
  std::atomic<int64_t> first_failed{nb};
  std::exception_ptr error;
  if (s.length > 0) {
#pragma omp parallel for schedule(dynamic, 1) if (nb > 1)
    for (int64_t b = 0; b < nb; ++b) {
      if (b > first_failed.load(std::memory_order_relaxed)) continue;
      const uint64_t off = static_cast<uint64_t>(b) * kChecksumBlock, len = std::min(kChecksumBlock, s.length - off);
      try {
        digests[b] = write_block(off, len, laps);
        const Lap lap(laps.writeback);
        file_.start_writeback(static_cast<int64_t>(s.offset + off), static_cast<int64_t>(len));
      } catch (...) {
#pragma omp critical(ht_container_write_error)
        if (b < first_failed.load()) {
          first_failed = b;
          error = std::current_exception();
        }
      }
    }
  } else {
    digests[0] = xxh64(nullptr, 0);
  }
  if (error) std::rethrow_exception(error);
  s.checksum = combine_digests(digests, s.length);
  sections_.push_back(s);
  times_.push_back({s.name, s.length, false,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    seconds_of(laps.fill), seconds_of(laps.hash), seconds_of(laps.store), seconds_of(laps.writeback)});
}

void ContainerWriter::add_section(const std::string& name, DType dtype, uint64_t rows, uint64_t cols,
                                  const void* data, int ndim) {
  SectionInfo s = begin_section(name, dtype, rows, cols, ndim);
  const FileWindow map = map_section(s);
  const auto* p = static_cast<const unsigned char*>(data);
  write_blocks(s, [&](uint64_t off, uint64_t len, Laps& laps) {
    uint64_t digest;
    {
      const Lap lap(laps.hash);
      digest = xxh64(p + off, len);
    }
    const Lap lap(laps.store);
    if (map.bytes().empty()) {
      file_.pwrite(p + off, len, static_cast<int64_t>(s.offset + off));
      return digest;
    }
    for (uint64_t at = off; at < off + len; at += kMapWindow) {
      const uint64_t n = std::min(kMapWindow, off + len - at);
      map.prefault(at, n);
      std::memcpy(map.bytes().data() + at, p + at, n);
      map.drop(at, n);
    }
    return digest;
  });
  times_.back().mapped = !map.bytes().empty();
}

void ContainerWriter::add_section_filled(const std::string& name, DType dtype, uint64_t rows, uint64_t cols, int ndim,
                                         const FillBytes& fill) {
  SectionInfo s = begin_section(name, dtype, rows, cols, ndim);
  const FileWindow map = map_section(s);
  write_blocks(s, [&](uint64_t off, uint64_t len, Laps& laps) {
    Xxh64Stream hash;
    // Makes bytes [at, at + piece) of the section at `to` and hashes them.
    const auto make = [&](uint64_t at, std::byte* to, uint64_t piece) {
      {
        const Lap lap(laps.fill);
        fill(at, {to, piece});
      }
      const Lap lap(laps.hash);
      hash.update(to, piece);
    };
    if (!map.bytes().empty()) {
      for (uint64_t at = off; at < off + len; at += kMapWindow) {
        const uint64_t n = std::min(kMapWindow, off + len - at);
        {
          const Lap lap(laps.store);
          map.prefault(at, n);
        }
        for (uint64_t done = 0; done < n; done += kMapPiece)
          make(at + done, map.bytes().data() + at + done, std::min(kMapPiece, n - done));
        const Lap lap(laps.store);
        map.drop(at, n);
      }
      return hash.digest();
    }
    // One piece buffer per block (a block is a few pieces): 4 MiB per thread.
    const uint64_t piece_max = std::min(kFillPiece, len);
    const auto buf = std::make_unique_for_overwrite<std::byte[]>(piece_max);
    for (uint64_t at = 0; at < len; at += piece_max) {
      const uint64_t piece = std::min(piece_max, len - at);
      make(off + at, buf.get(), piece);
      const Lap lap(laps.store);
      file_.pwrite(buf.get(), piece, static_cast<int64_t>(s.offset + off + at));
    }
    return hash.digest();
  });
  times_.back().mapped = !map.bytes().empty();
}

void ContainerWriter::commit() {
  std::vector<unsigned char> h(container::kHeaderBytes, 0);
  std::memcpy(h.data() + kOffMagic, magic_, 8);
  put<uint32_t>(h, kOffVersion, version_);
  put<uint32_t>(h, kOffBom, container::kByteOrderMark);
  put<uint32_t>(h, kOffHeaderBytes, container::kHeaderBytes);
  put<uint32_t>(h, kOffNumSections, static_cast<uint32_t>(sections_.size()));
  put<uint64_t>(h, kOffFlags, flags_);
  put<uint64_t>(h, kOffFileBytes, static_cast<uint64_t>(file_.position()));
  for (int i = 0; i < container::kNumMeta; ++i) put<uint64_t>(h, kOffMeta + 8 * i, meta_[i]);
  for (size_t i = 0; i < sections_.size(); ++i) {
    const SectionInfo& s = sections_[i];
    const size_t base = kOffSections + i * kSectionEntry;
    std::memcpy(h.data() + base, s.name.data(), s.name.size());
    put<uint32_t>(h, base + 32, static_cast<uint32_t>(s.dtype));
    put<uint32_t>(h, base + 36, s.ndim);
    put<uint64_t>(h, base + 40, s.shape[0]);
    put<uint64_t>(h, base + 48, s.shape[1]);
    put<uint64_t>(h, base + 56, s.offset);
    put<uint64_t>(h, base + 64, s.length);
    put<uint64_t>(h, base + 72, s.checksum);
  }
  put<uint64_t>(h, kOffHeaderChecksum, xxh64(h.data(), h.size()));
  const auto start = std::chrono::steady_clock::now();
  file_.pwrite(h.data(), h.size(), 0);
  file_.commit();
  commit_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ContainerReader::ContainerReader(const std::string& path, const char (&magic)[9], uint32_t version,
                                 ReadOptions opt)
    : file_(path) {
  const std::byte* h = file_.data();
  const uint64_t size = file_.size();
  if (size < container::kHeaderBytes)
    throw offset_error(path, size,
                       fmt::format("file too short for a hongtu header ({} bytes, need {}); truncated or "
                                   "not a hongtu file",
                                   size, container::kHeaderBytes));
  if (std::memcmp(h + kOffMagic, magic, 8) != 0) {
    std::string found(reinterpret_cast<const char*>(h), 8);
    for (char& c : found)
      if (c < 32 || c > 126) c = '.';
    throw offset_error(path, 0, fmt::format("wrong magic '{}', expected '{}' (wrong kind of file?)", found,
                                            std::string(magic, strnlen(magic, 8))));
  }
  if (get<uint32_t>(h, kOffBom) != container::kByteOrderMark)
    throw offset_error(path, kOffBom, "byte-order mark mismatch (file written on a big-endian machine?)");
  const uint32_t ver = get<uint32_t>(h, kOffVersion);
  const uint32_t oldest = opt.oldest_version == 0 ? version : std::min(opt.oldest_version, version);
  if (ver < oldest || ver > version)
    throw offset_error(path, kOffVersion,
                       oldest == version
                           ? fmt::format("format version {} not supported (this build reads version {})", ver, version)
                           : fmt::format("format version {} not supported (this build reads versions {} to {})", ver,
                                         oldest, version));
  version_ = ver;
  if (get<uint32_t>(h, kOffHeaderBytes) != container::kHeaderBytes)
    throw offset_error(path, kOffHeaderBytes, "unexpected header size");
  std::vector<unsigned char> copy(reinterpret_cast<const unsigned char*>(h),
                                  reinterpret_cast<const unsigned char*>(h) + container::kHeaderBytes);
  const uint64_t stored = get<uint64_t>(h, kOffHeaderChecksum);
  std::memset(copy.data() + kOffHeaderChecksum, 0, 8);
  if (xxh64(copy.data(), copy.size()) != stored)
    throw offset_error(path, kOffHeaderChecksum, "header checksum mismatch (corrupted header)");
  const uint64_t file_bytes = get<uint64_t>(h, kOffFileBytes);
  if (file_bytes != size)
    throw offset_error(path, std::min(size, file_bytes),
                       fmt::format("file is {} bytes but its header says {} (truncated or appended to)", size,
                                   file_bytes));
  identity_ = {size, stored};
  flags_ = get<uint64_t>(h, kOffFlags);
  for (int i = 0; i < container::kNumMeta; ++i) meta_[i] = get<uint64_t>(h, kOffMeta + 8 * i);
  const uint32_t nsec = get<uint32_t>(h, kOffNumSections);
  if (nsec > container::kMaxSections)
    throw offset_error(path, kOffNumSections, fmt::format("section count {} out of range", nsec));
  for (uint32_t i = 0; i < nsec; ++i) {
    const size_t base = kOffSections + i * kSectionEntry;
    SectionInfo s;
    const char* name = reinterpret_cast<const char*>(h + base);
    const size_t nlen = strnlen(name, container::kNameBytes);
    if (nlen == 0 || nlen == container::kNameBytes)
      throw offset_error(path, base, "bad section name in section table");
    s.name.assign(name, nlen);
    const uint32_t dt = get<uint32_t>(h, base + 32);
    if (dt < 1 || dt > 8) throw offset_error(path, base + 32, "bad section dtype");
    s.dtype = static_cast<DType>(dt);
    s.ndim = get<uint32_t>(h, base + 36);
    s.shape[0] = get<uint64_t>(h, base + 40);
    s.shape[1] = get<uint64_t>(h, base + 48);
    s.offset = get<uint64_t>(h, base + 56);
    s.length = get<uint64_t>(h, base + 64);
    s.checksum = get<uint64_t>(h, base + 72);
    const uint64_t where = base;
    if (s.ndim != 1 && s.ndim != 2) throw offset_error(path, where, "section '" + s.name + "': bad ndim");
    if (s.ndim == 1 && s.shape[1] != 1) throw offset_error(path, where, "section '" + s.name + "': bad shape");
    const unsigned __int128 expect =
        static_cast<unsigned __int128>(s.shape[0]) * s.shape[1] * dtype_size(s.dtype);
    if (expect != s.length)
      throw offset_error(path, where, "section '" + s.name + "': length does not match its shape");
    if (s.offset % container::kAlign != 0 || s.offset < container::kHeaderBytes || s.offset > size ||
        s.length > size - s.offset)
      throw offset_error(path, s.offset,
                         "section '" + s.name + "' lies outside the file (truncated?)");
    for (const auto& o : sections_)
      if (o.name == s.name) throw offset_error(path, where, "duplicate section '" + s.name + "'");
    sections_.push_back(s);
  }
  if (opt.verify_checksums) verify_checksums(path, file_.data(), sections_);
}

const SectionInfo* ContainerReader::find(const std::string& name) const {
  for (const auto& s : sections_)
    if (s.name == name) return &s;
  return nullptr;
}

const SectionInfo& ContainerReader::section(const std::string& name) const {
  const SectionInfo* s = find(name);
  if (!s) throw file_error(path(), "missing section '" + name + "'");
  return *s;
}

void ContainerReader::check_section(const SectionInfo& s, DType dtype, std::optional<uint64_t> count) const {
  if (s.dtype != dtype)
    fail_in(s.name, fmt::format("dtype {} where {} was expected", dtype_name(s.dtype), dtype_name(dtype)));
  if (count && s.count() != *count)
    fail_in(s.name, fmt::format("{} elements where {} were expected", s.count(), *count));
}

void ContainerReader::fail_in(const std::string& name, const std::string& what) const {
  const SectionInfo* s = find(name);
  throw offset_error(path(), s ? s->offset : 0, "section '" + name + "': " + what);
}

FileIdentity read_identity(const std::string& path) {
  MappedFile f(path);
  if (f.size() < container::kHeaderBytes) throw file_error(path, "not a hongtu file (too short)");
  return {f.size(), get<uint64_t>(f.data(), kOffHeaderChecksum)};
}

}  // namespace ht
