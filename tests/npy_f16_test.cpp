// The .npy reader's float16 path: '<f2' files read into float32, exactly, where the caller's
// npy::Accept takes them; refused with the dtype and the accepted ones named where it does not.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "npy_test_support.hpp"

using namespace npy_testing;

namespace {

constexpr npy::Accept kF16{.float16 = true};
constexpr npy::Accept kKv{.float16 = true, .who = "K and V"};

std::string dict_f2(std::string_view shape) {
  return "{'descr': '<f2', 'fortran_order': False, 'shape': " + std::string(shape) + ", }";
}

// A version 1.0 '<f2' file holding `halves` as little-endian binary16, shape (halves.size(),).
Bytes f2_file(const std::vector<std::uint16_t>& halves) {
  Bytes f = make_npy(dict_f2("(" + std::to_string(halves.size()) + ",)"), 2 * halves.size());
  std::memcpy(f.data() + data_offset(f), halves.data(), 2 * halves.size());
  return f;
}

}  // namespace

TEST(NpyFloat16, EdgeValuesReadExactly) {
  const struct {
    std::uint16_t half;
    float value;
  } cases[] = {
      {0x0000, 0.0f},         {0x8000, -0.0f},    {0x3c00, 1.0f},      {0xc000, -2.0f},
      {0x3555, 0x1.554p-2f},  {0x7bff, 65504.0f}, {0xfbff, -65504.0f}, {0x0001, 0x1p-24f},
      {0x03ff, 0x1.ff8p-15f}, {0x0400, 0x1p-14f}, {0x7c00, INFINITY},  {0xfc00, -INFINITY},
  };
  std::vector<std::uint16_t> halves;
  for (const auto& c : cases) halves.push_back(c.half);
  halves.push_back(0x7e00);  // quiet NaN
  halves.push_back(0xfd01);  // signalling NaN with a payload, negative
  const npy::Array a = npy::parse(f2_file(halves), "<memory>", kF16);
  EXPECT_EQ(a.dtype, npy::Dtype::float16);
  ASSERT_EQ(a.shape, std::vector<std::size_t>{halves.size()});
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(a.data[i]), std::bit_cast<std::uint32_t>(cases[i].value))
        << "half 0x" << std::hex << cases[i].half << ": " << a.data[i];
  }
  EXPECT_TRUE(std::isnan(a.data[std::size(cases)]));
  EXPECT_TRUE(std::isnan(a.data[std::size(cases) + 1]) &&
              std::signbit(a.data[std::size(cases) + 1]));
}

TEST(NpyFloat16, EveryHalfIsAttnbenchsConversionAndRoundTrips) {
  std::vector<std::uint16_t> halves(1 << 16);
  for (std::size_t h = 0; h < halves.size(); ++h) halves[h] = static_cast<std::uint16_t>(h);
  const npy::Array a = npy::parse(f2_file(halves), "<memory>", kF16);
  ASSERT_EQ(a.data.size(), halves.size());
  for (std::size_t h = 0; h < halves.size(); ++h) {
    const std::uint16_t half = halves[h];
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a.data[h]),
              std::bit_cast<std::uint32_t>(attnbench::f16_to_float(half)))
        << h;
    // Exact: converting back gives the same half (a NaN comes back quiet, its payload kept).
    const bool nan = (half & 0x7c00) == 0x7c00 && (half & 0x3ff) != 0;
    ASSERT_EQ(attnbench::float_to_f16(a.data[h]), nan ? half | 0x200 : half) << h;
  }
}

TEST(NpyFloat16, NumpyLayoutAndSerialiseAsFloat32) {
  // np.save(f, np.arange(6, dtype=np.float16).reshape(2, 3)): the '<f4' file's header with '<f2',
  // then 0..5 as little-endian halves.
  const std::string header = dict_f2("(2, 3)") + std::string(58, ' ') + "\n";
  const std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header +
                           std::string("\x00\x00\x00\x3c\x00\x40\x00\x42\x00\x44\x00\x45", 12);
  const npy::Array a = npy::parse(to_bytes(file), "<memory>", kF16);
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // The writer writes float32: the same values, now '<f4'.
  const npy::Array back = npy::parse(npy::serialise(a.shape, a.data));
  EXPECT_EQ(back.dtype, npy::Dtype::float32);
  expect_bits_equal(back.data, a.data);
  EXPECT_EQ(npy::descr(a.dtype), "<f2");
  EXPECT_EQ(npy::descr(back.dtype), "<f4");
}

TEST(NpyFloat16, AcceptSaysWhichDtypesAndWhose) {
  const Bytes f2 = make_npy(dict_f2("(2, 3)"), 12), f4 = make_npy(kDict23, 24);
  EXPECT_EQ(npy::parse(f4, "<memory>", kF16).dtype, npy::Dtype::float32);
  const auto message = [](const Bytes& file, const npy::Accept& accept) {
    try {
      npy::parse(file, "K.npy", accept);
    } catch (const npy::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(f2, {.who = "Q"}),
            "K.npy: dtype '<f2' is not supported: Q must be float32 ('<f4')");
  EXPECT_EQ(message(f4, {.float32 = false, .float16 = true}),
            "K.npy: dtype '<f4' is not supported: expected float16 ('<f2')");
  EXPECT_EQ(
      message(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48), kKv),
      "K.npy: dtype '<f8' is not supported: K and V must be float32 ('<f4') or float16 ('<f2')");
  EXPECT_EQ(
      message(make_npy("{'descr': '>f2', 'fortran_order': False, 'shape': (2, 3), }", 12), kKv),
      "K.npy: dtype '>f2' is not supported: big-endian byte order; K and V must be float32 "
      "('<f4') or float16 ('<f2')");
  for (std::string_view d : {"'|f2'", "'=f2'", "'float16'", "'<e'", "'<f2 '"}) {
    expect_dict_error(
        "{'descr': " + std::string(d) + ", 'fortran_order': False, 'shape': (2, 3), }",
        {"dtype " + std::string(d) + " is not supported", "float16 ('<f2')"}, 12, kF16);
  }
  expect_error(f2, {"accepts no dtype"}, {.float32 = false});
}

TEST(NpyFloat16, DataSizeIsTwoBytesAnElement) {
  expect_dict_error(dict_f2("(2, 3)"),
                    {"truncated", "shape (2, 3) = 12 bytes of data, file has 11"}, 11, kF16);
  expect_dict_error(dict_f2("(2, 3)"), {"trailing", "file has 24"}, 24, kF16);
  expect_dict_error(dict_f2("(2, 3)"), {"trailing", "file has 13"}, 13, kF16);
  // 2^62 halves fit a size_t of bytes (2^62 floats did not); 2^63 do not.
  expect_dict_error(dict_f2("(4611686018427387904,)"), {"truncated", "9223372036854775808 bytes"},
                    8, kF16);
  expect_dict_error(dict_f2("(9223372036854775808,)"), {"byte count overflow"}, 8, kF16);
  const Bytes file = f2_file({0x3c00, 0x4000, 0x4200});
  for (std::size_t len = 0; len < file.size(); ++len)
    EXPECT_THROW(npy::parse(std::span(file).first(len), "<memory>", kF16), npy::Error) << len;
  EXPECT_EQ(npy::parse(file, "<memory>", kF16).data, (std::vector<float>{1, 2, 3}));
}

TEST(NpyFloat16, RandomHeaderMutationsParseOrThrow) {
  const Bytes base = f2_file({0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600});
  const std::size_t header_end = data_offset(base);
  std::mt19937 rng(54321);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes f = base;
    f[rng() % header_end] = std::byte(rng() % 2 ? rng() & 0xff : "{}(),:'<>f24 \n"[rng() % 14]);
    try {
      const npy::Array a = npy::parse(f, "<memory>", kF16);
      ++parsed;
      ASSERT_EQ(a.data.size(), product(a.shape));
      ASSERT_EQ(data_offset(f) + (a.dtype == npy::Dtype::float16 ? 2 : 4) * a.data.size(),
                f.size());
    } catch (const npy::Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST_F(NpyFile, Float16FileReadsAsParsed) {
  std::mt19937 rng(9);
  std::vector<std::uint16_t> halves(999);
  for (auto& h : halves) h = static_cast<std::uint16_t>(rng());
  const Bytes file = f2_file(halves);
  const fs::path path = dir_ / "K.npy";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  const npy::Array read = npy::read(path, kKv), parsed = npy::parse(file, "<memory>", kKv);
  EXPECT_EQ(read.dtype, npy::Dtype::float16);
  EXPECT_EQ(read.shape, parsed.shape);
  expect_bits_equal(read.data, parsed.data);
  try {
    npy::read(path);
    FAIL() << "expected npy::Error";
  } catch (const npy::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ": dtype '<f2' is not supported: expected float32 ('<f4')");
  }
}

// Bool files ('|b1', as np.save writes a bool array), where the caller accepts them: 0 and 1
// widened to float32, any other byte refused, naming the element.
TEST(NpyBool, ReadAsZeroAndOneWhereAccepted) {
  constexpr npy::Accept kMask{.float32 = true, .boolean = true, .who = "the mask"};
  const std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }";
  Bytes file = make_npy(dict, 6);
  const std::size_t data = file.size() - 6;
  for (std::size_t i : {1, 2, 5}) file[data + i] = std::byte{1};
  const npy::Array a = npy::parse(file, "M.npy", kMask);
  EXPECT_EQ(a.dtype, npy::Dtype::boolean);
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(npy::descr(npy::Dtype::boolean), "|b1");
  file[data + 4] = std::byte{2};
  expect_error(file, {"bool element 4 is the byte 2, not 0 or 1"}, kMask);
  expect_error(make_npy(dict, 6), {"dtype '|b1' is not supported: expected float32 ('<f4')"});
  expect_dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                    {"the mask must be float32 ('<f4') or bool ('|b1')"}, 48, kMask);
}

// bfloat16: np.save writes an ml_dtypes.bfloat16 array with descr '<V2' (np.save(f,
// np.arange(3, dtype=np.float32).astype(ml_dtypes.bfloat16)) gives this header and 0, 1, 2 as the
// bytes 00 00, 80 3f, 00 40).
TEST(NpyBfloat16, MlDtypesFileReadsExactlyWhereAcceptedAndWritesBack) {
  const std::string header =
      "{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n";
  const std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header +
                           std::string("\x00\x00\x80\x3f\x00\x40", 6);
  constexpr npy::Accept kBf16{.bfloat16 = true, .who = "Q"};
  const npy::Array a = npy::parse(to_bytes(file), "<memory>", kBf16);
  EXPECT_EQ(a.dtype, npy::Dtype::bfloat16);
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 2}));
  try {
    npy::parse(to_bytes(file), "Q.npy", {.who = "Q"});
    ADD_FAILURE() << "a '<V2' file read where bfloat16 is not accepted";
  } catch (const npy::Error& e) {
    EXPECT_STREQ(e.what(), "Q.npy: dtype '<V2' is not supported: Q must be float32 ('<f4')");
  }
  // Written back as bfloat16: numpy's bytes, the header the same.
  const Bytes back = npy::serialise(a.shape, a.data, npy::Dtype::bfloat16);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(back.data()), back.size()), file);
}

TEST(NpyBfloat16, EveryBfloat16IsAttnbenchsConversionAndWritingRoundsToNearestEven) {
  std::vector<float> values;
  for (std::uint32_t b = 0; b < (1u << 16); ++b) values.push_back(attnbench::bf16_to_float(b));
  const std::vector<std::size_t> shape{values.size()}, one{1};
  const Bytes file = npy::serialise(shape, values, npy::Dtype::bfloat16);
  const npy::Array a = npy::parse(file, "<memory>", {.bfloat16 = true});
  for (std::size_t b = 0; b < values.size(); ++b) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a.data[b]),
              std::bit_cast<std::uint32_t>(values[b]) | (std::isnan(values[b]) ? 0x400000u : 0))
        << b;
  }
  // 1 + 3 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to the even 1 + 2^-6.
  const std::vector<float> tie{1.0f + 3 * 0x1p-8f};
  EXPECT_EQ(npy::parse(npy::serialise(one, tie, npy::Dtype::bfloat16), "", {.bfloat16 = true}).data,
            std::vector<float>{1.0f + 0x1p-6f});
  EXPECT_THROW(npy::serialise(one, tie, npy::Dtype::float16), npy::Error);
}
