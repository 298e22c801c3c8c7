#include "npy/npy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "npy_test_support.hpp"

using namespace npy_testing;

TEST(NpyRoundTrip, ShapesOneToFourDimensionsBitExact) {
  const std::vector<std::vector<std::size_t>> shapes = {
      {1}, {9}, {2, 3}, {1, 17}, {3, 1, 4}, {2, 3, 4, 5}, {1, 1, 1, 1}};
  unsigned seed = 1;
  for (const auto& shape : shapes) {
    SCOPED_TRACE(::testing::Message() << "rank " << shape.size() << " size " << product(shape));
    const std::vector<float> data = test_values(product(shape), seed++);
    const Bytes file = npy::serialise(shape, data);
    const std::size_t off = data_offset(file);
    EXPECT_EQ(off % 64, 0u);
    EXPECT_EQ(static_cast<char>(file[off - 1]), '\n');
    EXPECT_EQ(file.size(), off + 4 * data.size());
    const npy::Array a = npy::parse(file);
    EXPECT_EQ(a.shape, shape);
    expect_bits_equal(a.data, data);
  }
  // The special values really are in the data, not just in the helper.
  const auto v = test_values(8, 0);
  EXPECT_TRUE(std::isnan(v[0]) && std::isinf(v[3]) && std::signbit(v[5]));
}

TEST(NpySerialise, MatchesNumpyByteForByte) {
  // np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3)) with numpy 1.24: the dict, 20 spaces
  // of growth room for shape[0], padding to a 128-byte preamble, '\n', then 0..5 as little-endian
  // floats.
  const std::string header = std::string(kDict23) + std::string(58, ' ') + "\n";
  ASSERT_EQ(header.size(), 118u);
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header +
                               std::string(
                                   "\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40"
                                   "\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40",
                                   24);
  const std::size_t shape[] = {2, 3};
  const float data[] = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(npy::serialise(shape, data), to_bytes(expected));
}

TEST(NpySerialise, HeadersMatchNumpyForOtherShapes) {
  // Dicts and trailing space counts as written by numpy 1.24; every preamble is 128 bytes.
  const struct {
    std::vector<std::size_t> shape;
    std::string_view dict;
    std::size_t spaces;
  } cases[] = {
      {{5}, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 60},
      {{1, 2, 3, 4}, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4), }", 52},
      {{123456, 7}, "{'descr': '<f4', 'fortran_order': False, 'shape': (123456, 7), }", 53},
  };
  for (const auto& c : cases) {
    const std::vector<float> data(product(c.shape), 1.0f);
    const Bytes file = npy::serialise(c.shape, data);
    const std::string header = std::string(c.dict) + std::string(c.spaces, ' ') + "\n";
    ASSERT_EQ(data_offset(file), 128u) << c.dict;
    EXPECT_EQ(Bytes(file.begin() + 10, file.begin() + 128), to_bytes(header)) << c.dict;
  }
}

TEST(NpySerialise, RejectsShapesTheReaderWouldReject) {
  const float data[6] = {};
  const std::size_t s23[] = {2, 3}, s0[] = {2, 0}, s9[] = {1, 1, 1, 1, 1, 1, 1, 1, 6};
  EXPECT_THROW(npy::serialise(s23, std::span(data, 5)), npy::Error);
  EXPECT_THROW(npy::serialise({}, std::span(data, 1)), npy::Error);
  EXPECT_THROW(npy::serialise(s0, std::span(data, 0)), npy::Error);
  EXPECT_THROW(npy::serialise(s9, data), npy::Error);
  EXPECT_NO_THROW(npy::serialise(s23, data));
}

TEST(NpyParse, NumpyWrittenFileForms) {
  // Versions 2.0 and 3.0 (4-byte header length), which np.save uses for huge headers.
  for (int major : {1, 2, 3}) {
    const npy::Array a = npy::parse(make_npy(kDict23, 24, major));
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3})) << "version " << major;
  }
  // Anything Python evaluates to the same dict: either quotes, any key order, whitespace
  // (including tabs and newlines), with or without trailing commas.
  for (std::string_view dict : {
           R"({"descr": "<f4", "fortran_order": False, "shape": (2, 3), })",
           "{'shape':(2,3),'fortran_order':False,'descr':'<f4'}",
           "{ 'fortran_order' : False ,\t'shape' : ( 2 , 3 , ) ,\n 'descr' : \"<f4\" , }",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
       }) {
    const npy::Array a = npy::parse(make_npy(dict, 24));
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3})) << dict;
  }
  EXPECT_EQ(npy::parse(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': ( 6 , ), }", 24))
                .shape,
            std::vector<std::size_t>{6});
  // Older numpy aligned the data to 16 bytes only; the reader does not insist on 64.
  const Bytes old = make_npy(std::string(kDict23) + "    \n", 24, 1, /*raw=*/true);
  ASSERT_NE(data_offset(old) % 64, 0u);
  EXPECT_EQ(npy::parse(old).data.size(), 6u);
}

TEST(NpyParse, AnyBufferAlignment) {
  const std::size_t shape[] = {3, 5};
  const std::vector<float> data = test_values(15, 7);
  const Bytes file = npy::serialise(shape, data);
  for (std::size_t shift = 1; shift < 8; ++shift) {
    Bytes buf(shift + file.size());
    std::memcpy(buf.data() + shift, file.data(), file.size());
    expect_bits_equal(npy::parse(std::span(buf).subspan(shift)).data, data);
  }
}

TEST(NpyErrors, MessageFormatNamesFileFieldAndValue) {
  try {
    npy::parse(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48),
               "Q.npy");
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    EXPECT_STREQ(e.what(), "Q.npy: dtype '<f8' is not supported: expected float32 ('<f4')");
  }
}

TEST(NpyErrors, Preamble) {
  expect_error({}, {"truncated"});
  expect_error(to_bytes("\x93NUM"), {"truncated"});
  expect_error(to_bytes("\x93NUMPY\x01"), {"truncated"});
  expect_error(to_bytes(std::string("\x93NUMPY\x02\x00\x10\x00", 10)),
               {"truncated"});  // needs 4 length bytes
  expect_error(to_bytes("PK\x03\x04 not npy at all"), {"magic"});
  Bytes f = make_npy(kDict23, 24);
  f[0] = std::byte{'N'};
  expect_error(f, {"magic"});
  const struct {
    unsigned char major, minor;
    std::string_view text;
  } versions[] = {{4, 0, "4.0"}, {1, 1, "1.1"}, {0, 0, "0.0"}, {255, 255, "255.255"}};
  for (const auto& v : versions) {
    Bytes g = make_npy(kDict23, 24);
    g[6] = std::byte{v.major};
    g[7] = std::byte{v.minor};
    expect_error(g, {"version", v.text});
  }
  // Header length pointing past the end of the file.
  Bytes h = make_npy(kDict23, 24);
  h[8] = std::byte{0xff};
  h[9] = std::byte{0x00};
  expect_error(h, {"truncated", "header length is 255"});
  // Absurd header length in a version 2.0 file.
  Bytes v2 = make_npy(kDict23, 24, 2);
  v2[11] = std::byte{0x7f};
  expect_error(v2, {"header length"});
}

TEST(NpyErrors, Descr) {
  expect_dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                    {"dtype '<f8' is not supported", "float32 ('<f4')"}, 48);
  expect_dict_error("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                    {"dtype '<i4'", "float32"});
  expect_dict_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
                    {"dtype '>f4'", "big-endian"});
  // Without npy::Accept::float16, a float16 file is refused like any other dtype.
  expect_dict_error("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }",
                    {"dtype '<f2' is not supported: expected float32 ('<f4')"}, 12);
  for (std::string_view d : {"'|f4'", "'=f4'", "'float32'", "''", "'<f4 '"})
    expect_dict_error(
        "{'descr': " + std::string(d) + ", 'fortran_order': False, 'shape': (2, 3), }",
        {"dtype " + std::string(d) + " is not supported"});
  for (std::string_view d : {"[('a', '<f4')]", "b'<f4'"})
    expect_dict_error(
        "{'descr': " + std::string(d) + ", 'fortran_order': False, 'shape': (2, 3), }", {"descr"});
}

TEST(NpyErrors, FortranOrder) {
  expect_dict_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                    {"fortran_order", "Fortran-order"});
  for (std::string_view v : {"1", "false", "'False'", "None", "Falsey"})
    expect_dict_error(
        "{'descr': '<f4', 'fortran_order': " + std::string(v) + ", 'shape': (2, 3), }",
        {"fortran_order"});
}

TEST(NpyErrors, Keys) {
  expect_dict_error("{'fortran_order': False, 'shape': (2, 3), }", {"missing", "descr"});
  expect_dict_error("{'descr': '<f4', 'shape': (2, 3), }", {"missing", "fortran_order"});
  expect_dict_error("{'descr': '<f4', 'fortran_order': False, }", {"missing", "shape"});
  expect_dict_error("{}", {"missing", "descr"});
  expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'descr': '<f4'}",
                    {"descr", "more than once"});
  expect_dict_error("{'descr': '<f4', 'shape': (2, 3), 'fortran_order': False, 'shape': (2, 3)}",
                    {"shape", "more than once"});
  expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'align': 0}",
                    {"unknown", "'align'"});
  expect_dict_error("{'Descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                    {"unknown", "'Descr'"});
}

TEST(NpyErrors, Shape) {
  auto dict = [](std::string_view shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(shape) + ", }";
  };
  expect_dict_error(dict("()"), {"shape", "0-d"}, 4);
  expect_dict_error(dict("(0,)"), {"shape dimension 0 is 0"}, 0);
  expect_dict_error(dict("(2, 0, 3)"), {"shape dimension 1 is 0"}, 0);
  expect_dict_error(dict("(1, 1, 1, 1, 1, 1, 1, 1, 1)"), {"shape", "8"}, 4);
  expect_dict_error(dict("(4294967296, 4294967296)"), {"shape", "element count overflow"});
  expect_dict_error(dict("(4611686018427387904,)"),
                    {"shape", "byte count overflow"});  // 2**62 floats
  expect_dict_error(dict("(12345678901234567890,)"), {"shape dimension 0", "digits"});
  expect_dict_error(dict("(2, 00000000000000000000000000003)"), {"shape dimension 1", "digits"});
  expect_dict_error(dict("(05,)"), {"shape dimension 0", "leading zeros"});
  expect_dict_error(dict("(6)"), {"shape", "not a tuple"});
  for (std::string_view s : {"[2, 3]", "(2 3)", "(-2, 3)", "(2, -3)", "(2.0, 3)", "(,)", "(2,,)",
                             "(2, 3", "6", "(0x2, 3)", "(2_0, 3)"})
    expect_dict_error(dict(s), {"shape"});
}

TEST(NpyErrors, DictSyntax) {
  for (std::string_view d : {
           "",
           "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",
           "{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),,}",
           "{, 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{'descr\": '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{'de\\scr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
           "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2, 3)}",
       })
    expect_dict_error(d, {"header"});
  // The header must end in '\n' and be printable ASCII.
  expect_error(make_npy(std::string(kDict23) + "   ", 24, 1, true), {"header", "'\\n'"});
  std::string bad(kDict23);
  bad[2] = '\xe9';
  expect_dict_error(bad, {"header byte 2", "0xe9", "ASCII"});
  bad[2] = '\0';
  expect_dict_error(bad, {"header byte 2", "0x00"});
}

TEST(NpyErrors, DataSize) {
  expect_dict_error(kDict23, {"truncated", "shape (2, 3) = 24 bytes of data, file has 20"}, 20);
  expect_dict_error(kDict23, {"truncated", "file has 0"}, 0);
  expect_dict_error(kDict23, {"trailing", "file has 28"}, 28);
  expect_dict_error(kDict23, {"trailing", "file has 25"}, 25);
  // A huge declared shape is rejected from the sizes alone, before any allocation.
  expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000000,), }",
                    {"truncated", "4000000000000000 bytes"}, 8);
}

TEST(NpyParse, EveryTruncationThrows) {
  const std::size_t shape[] = {2, 3};
  const std::vector<float> data = test_values(6, 3);
  for (const Bytes& file : {npy::serialise(shape, data), make_npy(kDict23, 24, 2)}) {
    for (std::size_t len = 0; len < file.size(); ++len)
      EXPECT_THROW(npy::parse(std::span(file).first(len)), npy::Error)
          << "prefix of " << len << " bytes";
    EXPECT_NO_THROW(npy::parse(file));
    Bytes longer = file;
    longer.push_back(std::byte{0});
    EXPECT_THROW(npy::parse(longer), npy::Error);
  }
}

TEST(NpyParse, RandomHeaderMutationsParseOrThrow) {
  const std::size_t shape[] = {2, 3};
  const std::vector<float> data = test_values(6, 4);
  const Bytes base = npy::serialise(shape, data);
  const std::size_t header_end = data_offset(base);
  // Mostly syntax-relevant characters, so mutations reach deep into the dict parser.
  using namespace std::literals;
  const std::string_view interesting =
      "{}()[],:'\" \t\n\r0123456789<>|=fi48TrueFalsdcpho_\\\x93\x00\xff-"sv;
  std::mt19937 rng(12345);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    Bytes f = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % header_end;
      f[pos] =
          rng() % 2 ? std::byte(rng() & 0xff) : std::byte(interesting[rng() % interesting.size()]);
    }
    try {
      const npy::Array a = npy::parse(f);
      ++parsed;
      ASSERT_EQ(a.data.size(), product(a.shape));
      ASSERT_EQ(data_offset(f) + 4 * a.data.size(), f.size());
    } catch (const npy::Error&) {
      ++rejected;
    }
  }
  // Both outcomes occur (e.g. a padding space turned into a tab still parses).
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST_F(NpyFile, WriteThenReadReturnsIdenticalArray) {
  const fs::path path = dir_ / "a.npy";
  const std::size_t shape[] = {4, 2, 3};
  const std::vector<float> data = test_values(24, 5);
  npy::write(path, shape, data);
  const npy::Array a = npy::read(path);
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{4, 2, 3}));
  expect_bits_equal(a.data, data);
  // The file holds exactly serialise()'s bytes.
  std::ifstream in(path, std::ios::binary);
  const std::string disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Bytes expected = npy::serialise(shape, data);
  EXPECT_EQ(to_bytes(disk), expected);
  // Overwriting replaces the file and leaves no temporary behind.
  const std::size_t shape2[] = {5};
  const std::vector<float> data2 = test_values(5, 6);
  npy::write(path, shape2, data2);
  expect_bits_equal(npy::read(path).data, data2);
  EXPECT_EQ(listing(), std::vector<std::string>{"a.npy"});
}

TEST_F(NpyFile, WriteIntoMissingDirectoryLeavesNothing) {
  const fs::path path = dir_ / "no_such_dir" / "a.npy";
  const std::size_t shape[] = {2};
  const float data[] = {1, 2};
  try {
    npy::write(path, shape, data);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "no_such_dir"));
  EXPECT_TRUE(listing().empty());
}

TEST_F(NpyFile, FailedWriteKeepsOldFileAndRemovesTemporary) {
  const fs::path path = dir_ / "a.npy";
  const std::size_t shape[] = {2};
  const float data[] = {1, 2};
  npy::write(path, shape, data);
  // Bad arguments: nothing is touched.
  const std::size_t wrong[] = {3};
  EXPECT_THROW(npy::write(path, wrong, data), npy::Error);
  EXPECT_EQ(npy::read(path).data, (std::vector<float>{1, 2}));
  // The rename fails because the target is a non-empty directory: the temporary is cleaned up.
  fs::create_directories(dir_ / "d.npy" / "x");
  EXPECT_THROW(npy::write(dir_ / "d.npy", shape, data), npy::Error);
  EXPECT_TRUE(fs::is_directory(dir_ / "d.npy"));
  EXPECT_EQ(listing().size(), 2u);  // a.npy and d.npy only
}

TEST_F(NpyFile, WriteAllWritesEveryFileOrNone) {
  const std::size_t shape[] = {2}, shape3[] = {3};
  const std::vector<float> a = test_values(2, 7), b = test_values(3, 8);
  auto files = [&] {
    std::vector<std::string> names = listing();
    std::sort(names.begin(), names.end());
    return names;
  };
  npy::write(dir_ / "old.npy", shape, a);
  // Every file written, no temporary left.
  const npy::Output both[] = {{dir_ / "a.npy", shape, a}, {dir_ / "b.npy", shape3, b}};
  npy::write_all(both);
  expect_bits_equal(npy::read(dir_ / "a.npy").data, a);
  expect_bits_equal(npy::read(dir_ / "b.npy").data, b);
  EXPECT_EQ(files(), (std::vector<std::string>{"a.npy", "b.npy", "old.npy"}));
  // The last one cannot be created: the earlier ones are not written either, an existing file
  // keeps its bytes, and no temporary is left.
  const npy::Output broken[] = {{dir_ / "c.npy", shape, a},
                                {dir_ / "old.npy", shape3, b},
                                {dir_ / "no_such_dir" / "d.npy", shape, a}};
  try {
    npy::write_all(broken);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir"), std::string::npos) << e.what();
  }
  EXPECT_EQ(files(), (std::vector<std::string>{"a.npy", "b.npy", "old.npy"}));
  expect_bits_equal(npy::read(dir_ / "old.npy").data, a);
  // One file named twice (also through another spelling of the path): an error, nothing written.
  const npy::Output twice[] = {{dir_ / "e.npy", shape, a}, {dir_ / "." / "e.npy", shape, a}};
  EXPECT_THROW(npy::write_all(twice), npy::Error);
  EXPECT_FALSE(fs::exists(dir_ / "e.npy"));
  EXPECT_EQ(listing().size(), 3u);
}

TEST_F(NpyFile, ReadErrorsNameThePath) {
  const fs::path missing = dir_ / "missing.npy";
  try {
    npy::read(missing);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(missing.string() + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(std::strerror(ENOENT)), std::string::npos) << msg;
  }
  try {
    npy::read(dir_);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos) << e.what();
  }
  // A file cut short on disk, and one with trailing bytes.
  const fs::path cut = dir_ / "cut.npy";
  const Bytes file = make_npy(kDict23, 20);
  std::ofstream(cut, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  try {
    npy::read(cut);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(cut.string() + ": truncated", 0), 0u) << msg;
  }
  const Bytes longer = make_npy(kDict23, 32);
  std::ofstream(cut, std::ios::binary)
      .write(reinterpret_cast<const char*>(longer.data()),
             static_cast<std::streamsize>(longer.size()));
  EXPECT_THROW(npy::read(cut), npy::Error);
  // Empty and preamble-only files.
  std::ofstream(cut, std::ios::binary | std::ios::trunc).flush();
  EXPECT_THROW(npy::read(cut), npy::Error);
  std::ofstream(cut, std::ios::binary).write("\x93NUMPY\x01\x00", 8);
  EXPECT_THROW(npy::read(cut), npy::Error);
}
