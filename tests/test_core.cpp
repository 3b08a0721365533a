#include <array>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/hash.hpp"
#include "core/json.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "test_util.hpp"

namespace ht {

TEST(Hash, Xxh64KnownVectors) {
  EXPECT_EQ(xxh64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxh64(nullptr, 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxh64("abc", 3), 0x44BC2CF5AD770999ULL);
  // Digests of the hand-written XXH64 this project used before libxxhash
  // (files written then keep verifying): 1000 bytes, several 32-byte stripes
  // and a tail, seeds 0 and 42.
  std::string s(1000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 31 + 7);
  EXPECT_EQ(xxh64(s.data(), s.size(), 0), 0x99594F4828043D35ULL);
  EXPECT_EQ(xxh64(s.data(), s.size(), 42), 0xEBBB006470311EBCULL);
}

TEST(Hash, StreamingEqualsOneShot) {
  std::string s(1000, 'x');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 31 + 7);
  for (size_t split : {0, 1, 7, 31, 32, 33, 500, 999}) {
    Xxh64Stream st(42);
    st.update(s.data(), split);
    st.update(s.data() + split, s.size() - split);
    EXPECT_EQ(st.digest(), xxh64(s.data(), s.size(), 42)) << split;
  }
}

TEST(Error, MessageCarriesContext) {
  EXPECT_STREQ(line_error("a.txt", 12, "bad token").what(), "a.txt:12: bad token");
  EXPECT_STREQ(offset_error("g.htg", 4096, "bad").what(), "g.htg (byte 4096): bad");
  EXPECT_STREQ(option_error("--parts", "must be >= 1").what(), "option --parts: must be >= 1");
}

// Byte positions are unsigned: 2^63 and above print as such, never negative.
TEST(Error, ByteOffsetsAtOrAbove2To63PrintUnsigned) {
  EXPECT_STREQ(offset_error("g.htg", uint64_t{1} << 63, "bad").what(), "g.htg (byte 9223372036854775808): bad");
  EXPECT_STREQ(offset_error("g.htg", ~uint64_t{0}, "bad").what(), "g.htg (byte 18446744073709551615): bad");
}

// A section table entry whose offset is forged to 2^63 + 4096 (header resealed
// so that the checksum passes) names that byte, not a negative one.
TEST(Error, ForgedSectionOffsetAbove2To63IsNamedUnsigned) {
  test::TempDir dir;
  const std::string path = dir.file("c.bin");
  constexpr char kMagic[9] = "HTTEST\0\0";
  {
    ContainerWriter w(path, kMagic, 1);
    w.add<int64_t>("a", std::vector<int64_t>(100, 7));
    w.commit();
  }
  std::vector<char> f = test::read_bytes(path);
  const uint64_t forged = (uint64_t{1} << 63) + 4096;
  std::memcpy(f.data() + 192 + 56, &forged, 8);  // section 0's offset (docs/FORMATS.md)
  std::memset(f.data() + 32, 0, 8);              // header checksum, computed with the field zeroed
  const uint64_t h = xxh64(f.data(), container::kHeaderBytes, 0);
  std::memcpy(f.data() + 32, &h, 8);
  test::write_bytes(path, f);
  std::string msg;
  try {
    ContainerReader r(path, kMagic, 1);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("(byte 9223372036854779904)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("byte -"), std::string::npos) << msg;
}

TEST(Json, WritesNestedValues) {
  JsonWriter w;
  w.begin_object().field("a", int64_t{1}).field("b", "x\"y").key("c").begin_array().value(1.5).value(true).end_array().end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":"x\"y","c":[1.5,true]})");
}

TEST(Json, WritesAllBitsOfUnsigned) {
  JsonWriter w;
  w.begin_array().value(uint64_t{18446744073709551615ULL}).value(uint64_t{1} << 63).value(int64_t{-5}).end_array();
  EXPECT_EQ(w.str(), "[18446744073709551615,9223372036854775808,-5]");
}

TEST(AtomicFile, NothingLeftWithoutCommit) {
  test::TempDir dir;
  const std::string path = dir.file("out.bin");
  {
    AtomicFile f(path);
    f.write("hello", 5);
  }
  EXPECT_FALSE(file_exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  {
    AtomicFile f(path);
    f.write("hello", 5);
    f.commit();
  }
  EXPECT_EQ(read_text_file(path), "hello");
}

// What a writable map of an allocated range holds lands in the file, at any
// offset (the map starts at the page below it), beside pwritten bytes.
TEST(AtomicFile, MappedWindowWritesLandInTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("out.bin");
  {
    AtomicFile f(path);
    f.write("head", 4);
    const int64_t at = f.append_space(10000);
    if (!f.allocate(at, 10000)) GTEST_SKIP() << "the file system cannot allocate ahead";
    {
      const FileWindow w = f.map_window(at + 5000, 5000);
      ASSERT_EQ(w.bytes().size(), 5000u);
      std::memset(w.bytes().data(), 'b', 5000);
    }
    const FileWindow w = f.map_window(at, 5000);
    std::memset(w.bytes().data(), 'a', 5000);
    f.pwrite("xy", 2, at + 4999);  // through the page cache, beside the map
    f.commit();
  }
  const std::string text = read_text_file(path);
  ASSERT_EQ(text.size(), 10004u);
  EXPECT_EQ(text, "head" + std::string(4999, 'a') + "xy" + std::string(4999, 'b'));
}

TEST(AtomicFile, UnwritableDirectoryIsAClearError) {
  try {
    AtomicFile f("/nonexistent-dir/x.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.bin"), std::string::npos);
  }
}

TEST(OutputPath, RefusedBeforeAnyWorkWithTheReason) {
  test::TempDir dir;
  const std::string input = dir.file("in.htg");
  test::write_file(input, "x");
  const std::array inputs{input};
  EXPECT_NO_THROW(check_output_path(dir.file("out.htg"), "--output", inputs));
  EXPECT_NE(test::error_of([&] { check_output_path("", "--output"); }).find("--output"), std::string::npos);
  EXPECT_NE(test::error_of([&] { check_output_path(dir.path().string(), "-o"); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { check_output_path(dir.file("no/x.htg"), "-o"); }).find("does not exist"),
            std::string::npos);
  const std::string same = test::error_of([&] { check_output_path(input, "--stats-json", inputs); });
  EXPECT_NE(same.find("is an input of this run"), std::string::npos) << same;
  EXPECT_NE(same.find("--stats-json"), std::string::npos) << same;
}

TEST(Rng, CounterBasedIsPureAndUniform) {
  EXPECT_EQ(rng::hash(1, 2, 3, 4, 5), rng::hash(1, 2, 3, 4, 5));
  EXPECT_NE(rng::hash(1, 2, 3, 4, 5), rng::hash(1, 2, 3, 4, 6));
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) sum += rng::to_unit_float(rng::hash(7, i));
  EXPECT_NEAR(sum / n, 0.5, 0.01);
}

TEST(Memory, PeakRssIsPositive) { EXPECT_GT(peak_rss_bytes(), 0); }

// A phase that ran beside another keeps its own time and parts, says beside
// which, survives append(), and is not in total() (its time was the other's).
TEST(PhaseTimes, BesideAnotherPhase) {
  PhaseTimes t;
  t.add("device plans", 3.0);
  t.add_part("device plans", "steps", 2.0);
  t.add("vertex store", 2.5);
  t.add_part("vertex store", "pages", 1.0);
  t.set_beside("vertex store", "device plans");
  t.add("h^0", 0.5);
  EXPECT_EQ(t.beside("vertex store"), "device plans");
  EXPECT_EQ(t.beside("device plans"), "");
  EXPECT_DOUBLE_EQ(t.total(), 3.5);
  PhaseTimes all;
  all.add("graph file", 1.0);
  all.append(t);
  EXPECT_EQ(all.phases().size(), 4u);
  EXPECT_EQ(all.beside("vertex store"), "device plans");
  ASSERT_EQ(all.parts("vertex store").size(), 1u);
  EXPECT_DOUBLE_EQ(all.total(), 4.5);
}

// A phase's system CPU seconds (set_system) are its own, -1 where not
// measured, survive append() and change no total.
TEST(PhaseTimes, SystemSecondsPerPhase) {
  PhaseTimes t;
  t.add("device plans", 3.0);
  t.set_system("device plans", 1.25);
  t.add("vertex store", 2.5);
  t.set_beside("vertex store", "device plans");
  EXPECT_DOUBLE_EQ(t.system("device plans"), 1.25);
  EXPECT_DOUBLE_EQ(t.system("vertex store"), -1);
  EXPECT_DOUBLE_EQ(t.system("nothing"), -1);
  PhaseTimes all;
  all.add("graph file", 1.0);
  all.set_system("graph file", 0.5);
  all.append(t);
  EXPECT_DOUBLE_EQ(all.system("graph file"), 0.5);
  EXPECT_DOUBLE_EQ(all.system("device plans"), 1.25);
  EXPECT_DOUBLE_EQ(all.total(), 4.0);
}

}  // namespace ht
