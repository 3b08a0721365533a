// Fuzzing of the text converters' readers (issue 17): the SNAP/CSV edge-list
// reader, the Matrix Market reader and the RFC 4180 CSV reader are given
// valid small inputs truncated at every kind of place and with bytes
// replaced (random bytes and the bytes the parsers care about: line ends,
// separators, signs, quotes, NUL, a byte-order mark's first byte). Each
// mutant must give a clean one-line ht::Error naming the file, or a result;
// a mutation inside a comment line (after its comment character) must give
// the original result. A crash, a hang or another exception type fails.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "datasets/csv.hpp"
#include "datasets/edge_list_reader.hpp"
#include "datasets/mtx_reader.hpp"
#include "test_util.hpp"

namespace ht::data {
namespace {

// What a reader returned, as text (equal text = equal results).
std::string digest(const RawEdges& e) {
  std::string out;
  for (int64_t i = 0; i < e.size(); ++i) {
    out += fmt::format("{}>{}", e.src[i], e.dst[i]);
    if (!e.weight.empty()) out += fmt::format(":{}", e.weight[i]);
    out += ';';
  }
  return out;
}

// Structural invariants of any successful edge-list result.
void expect_consistent(const RawEdges& e, const std::string& what) {
  EXPECT_EQ(e.src.size(), e.dst.size()) << what;
  EXPECT_TRUE(e.weight.empty() || e.weight.size() == e.src.size()) << what;
}

using Reader = std::function<std::string(const std::string&)>;

struct Counts {
  int errors = 0, results = 0, same = 0;
};

// Byte positions after the comment character of each comment line (a line
// starting with one of `comment_chars`), up to the line end.
std::vector<size_t> comment_bytes(const std::string& text, const std::string& comment_chars) {
  std::vector<size_t> at;
  size_t line = 0;
  while (line < text.size()) {
    size_t end = text.find('\n', line);
    if (end == std::string::npos) end = text.size();
    if (comment_chars.find(text[line]) != std::string::npos && text.compare(line, 2, "%%") != 0)
      for (size_t i = line + 1; i < end; ++i) at.push_back(i);
    line = end + 1;
  }
  return at;
}

// Runs `read` on `bytes` written to `path`: a clean ht::Error or a result.
// Returns the result, or "" with `failed` set.
std::string attempt(const Reader& read, const std::string& path, const std::string& bytes, bool& failed,
                    const std::string& what) {
  test::write_file(path, bytes);
  failed = false;
  const auto start = std::chrono::steady_clock::now();
  // A read of a few hundred bytes that takes a second is a hang.
  auto timed = [&] {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(s, 1.0) << what << ": the reader took " << s << " s on a small input";
  };
  try {
    std::string got = read(path);
    timed();
    return got;
  } catch (const Error& e) {
    timed();
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
    EXPECT_EQ(msg.rfind(path, 0), 0u) << what << ": the message does not start with the file: " << msg;
    failed = true;
  }
  // Any other exception escapes and fails the test.
  return {};
}

Counts fuzz_text(const std::string& original, const std::string& path, const Reader& read,
                 const std::string& comment_chars, uint64_t seed) {
  Counts c;
  bool failed = false;
  const std::string expected = attempt(read, path, original, failed, "original");
  EXPECT_FALSE(failed) << "the unmodified input must read";
  static const std::string kInteresting = std::string("\n\r\0 \t,#%-+.e\"\xEF\xBB\xBF" "0123456789x", 28);
  const std::vector<size_t> comments = comment_bytes(original, comment_chars);
  rng::Stream rs(seed, 23);
  for (int round = 0; round < 240; ++round) {
    std::string m = original;
    const int kind = round % 4;
    if (kind == 0) {
      m.resize(rs.below(m.size()));
    } else if (kind == 1 || kind == 2) {
      const int flips = 1 + static_cast<int>(rs.below(3));
      for (int k = 0; k < flips; ++k) {
        const size_t at = rs.below(m.size());
        m[at] = kind == 1 ? static_cast<char>(rs.below(256)) : kInteresting[rs.below(kInteresting.size())];
      }
      if (rs.below(4) == 0) m.resize(rs.below(m.size() + 1));
    } else {
      // Inside a comment line: anything but a line end keeps the result.
      if (comments.empty()) continue;
      const size_t at = comments[rs.below(comments.size())];
      char b = static_cast<char>(rs.below(256));
      if (b == '\n') b = '\r';
      m[at] = b;
    }
    const std::string what = "round " + std::to_string(round) + " (kind " + std::to_string(kind) + ")";
    const std::string got = attempt(read, path, m, failed, what);
    if (failed) {
      ++c.errors;
      EXPECT_NE(kind, 3) << what << ": a change inside a comment line made the input unreadable";
      continue;
    }
    ++c.results;
    if (got == expected) ++c.same;
    if (kind == 3) {
      EXPECT_EQ(got, expected) << what << ": a change inside a comment line changed the result";
    }
  }
  EXPECT_GT(c.errors, 0);
  return c;
}

// A temporary directory in memory where there is one (/dev/shm): the test
// writes a few thousand small files, which take seconds on some disks.
class ScratchDir {
 public:
  ScratchDir() {
    const std::filesystem::path base =
        access("/dev/shm", W_OK) == 0 ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
    std::string tmpl = (base / "ht-text-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

TEST(TextFuzz, EdgeListsMatrixMarketAndCsvGiveACleanErrorOrAResult) {
  ScratchDir dir;
  const Reader edges = [](const std::string& p) {
    const RawEdges e = read_edge_list(p);
    expect_consistent(e, p);
    return digest(e);
  };
  fuzz_text("# SNAP-style graph\n% another comment\n0 1 0.5\n1 2 1.5\n\n2\t0\t+2\n3 3 -1e-3\n# end\n",
            dir.file("g.txt"), edges, "#%", 1);
  fuzz_text("0 1\r\n1 2\r\n# windows line ends\r\n2 0\r\n", dir.file("crlf.txt"), edges, "#%", 2);
  fuzz_text("# header below\nsource,target,weight\n0,1,0.25\n1,2,1\n2,3,7e1\n", dir.file("g.csv"), edges, "#%", 3);
  fuzz_text("\xEF\xBB\xBF" "0 1\n1 2\n", dir.file("bom.txt"), edges, "#%", 4);

  const Reader mtx = [](const std::string& p) {
    const MtxData m = read_matrix_market(p);
    expect_consistent(m.edges, p);
    for (int64_t i = 0; i < m.edges.size(); ++i) {
      EXPECT_LT(m.edges.src[i], static_cast<uint64_t>(m.num_vertices)) << p;
      EXPECT_LT(m.edges.dst[i], static_cast<uint64_t>(m.num_vertices)) << p;
    }
    return std::to_string(m.num_vertices) + "|" + digest(m.edges);
  };
  fuzz_text("%%MatrixMarket matrix coordinate real general\n% a comment\n4 4 3\n1 2 0.5\n3 1 2\n4 4 1\n",
            dir.file("m.mtx"), mtx, "%", 5);
  fuzz_text("%%MatrixMarket matrix coordinate pattern symmetric\n%\n% more\n5 5 3\n2 1\n3 3\n5 2\n",
            dir.file("s.mtx"), mtx, "%", 6);

  const Reader csv = [](const std::string& p) {
    const std::vector<char> bytes = test::read_bytes(p);
    const std::string text(bytes.begin(), bytes.end());
    CsvReader r(text, p);
    std::vector<std::string> row;
    std::string out;
    while (r.next(row)) {
      out += std::to_string(r.record_line()) + ":";
      for (const std::string& f : row) out += "[" + f + "]";
    }
    return out;
  };
  fuzz_text("id,page_name,page_type\n0,\"A, b\",tvshow\n1,\"q \"\"x\"\"\",company\n2,plain,government\n",
            dir.file("t.csv"), csv, "", 7);

}

}  // namespace
}  // namespace ht::data
