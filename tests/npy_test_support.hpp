// What the .npy reader's tests share (npy_test.cpp, npy_f16_test.cpp): hand-built files, error
// expectations, bit-exact comparisons, test values and a scratch-directory fixture.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "npy/npy.hpp"

namespace npy = attnbench::npy;
namespace fs = std::filesystem;

namespace npy_testing {

using Bytes = std::vector<std::byte>;

inline Bytes to_bytes(std::string_view s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

inline std::size_t product(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

// Offset of the first data byte in a well-formed file (version 1.0 or 2.0/3.0).
inline std::size_t data_offset(const Bytes& f) {
  const auto u = [&](std::size_t i) { return std::to_integer<std::size_t>(f[i]); };
  return u(6) == 1 ? 10 + (u(8) | u(9) << 8) : 12 + (u(8) | u(9) << 8 | u(10) << 16 | u(11) << 24);
}

// Builds a file around a hand-written header dict: magic, version `major`.0, the dict padded with
// spaces and '\n' to a 64-byte boundary (unless `raw`, then the dict is used verbatim), then
// `data_bytes` bytes of data.
inline Bytes make_npy(std::string_view dict, std::size_t data_bytes, int major = 1,
                      bool raw = false) {
  std::string header(dict);
  const std::size_t preamble = major == 1 ? 10 : 12;
  if (!raw) {
    header.append(63 - (preamble + header.size()) % 64, ' ');
    header += '\n';
  }
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  for (std::size_t i = 0; i < preamble - 8; ++i)
    s += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  s += header;
  s.append(data_bytes, '\0');
  return to_bytes(s);
}

inline constexpr std::string_view kDict23 =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

// Parses `file`, expecting npy::Error whose message is one line, starts with "<memory>: " and
// contains every string in `needles`.
inline void expect_error(const Bytes& file, std::initializer_list<std::string_view> needles,
                         const npy::Accept& accept = {}) {
  try {
    npy::parse(file, "<memory>", accept);
    ADD_FAILURE() << "parse succeeded, expected an error containing '" << *needles.begin() << "'";
  } catch (const npy::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("<memory>: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (std::string_view n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

inline void expect_dict_error(std::string_view dict,
                              std::initializer_list<std::string_view> needles,
                              std::size_t data_bytes = 24, const npy::Accept& accept = {}) {
  SCOPED_TRACE(std::string(dict));
  expect_error(make_npy(dict, data_bytes), needles, accept);
}

inline void expect_bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i]))
        << "element " << i;
}

// Values including every kind of non-finite and edge float, plus seeded random bit patterns.
inline std::vector<float> test_values(std::size_t n, unsigned seed) {
  const float specials[] = {
      std::numeric_limits<float>::quiet_NaN(),  -std::numeric_limits<float>::quiet_NaN(),
      std::bit_cast<float>(0x7fa00001u),  // signalling NaN with a payload
      std::numeric_limits<float>::infinity(),   -std::numeric_limits<float>::infinity(),  -0.0f,
      std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()};
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = i < std::size(specials) ? specials[i]
                                   : std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
  return v;
}

// A scratch directory removed at the end of each test.
class NpyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / ("npy_test." + std::to_string(::getpid()) + "." + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    return names;
  }
  fs::path dir_;
};

}  // namespace npy_testing
