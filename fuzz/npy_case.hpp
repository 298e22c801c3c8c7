// The fuzz case for the .npy reader: any byte string is a file, and npy::parse (bytes in memory)
// and npy::read (the same bytes as a file), both accepting float32 and float16 as the CLI does for
// K and V (kAccept), must either return the same array or throw npy::Error with the same one-line
// message after the name. Shared by the libFuzzer target (fuzz_npy.cpp, which also bounds every
// allocation by twice the input's size) and the corpus replay test (tests/fuzz_replay_test.cpp).
//
// Required of an accepted file: product(shape) elements; the data are exactly the file's last
// 4 x elements bytes for '<f4', or f16_to_float of its last 2 x elements bytes for '<f2' (so it
// never holds more than the file could fill); serialise() takes the array back and parse() of
// that gives the same shape and the same bits. And parse accepting float32 only (as for Q and dO)
// gives the same array for a '<f4' file, and an error for every other.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include <attnbench/attnbench.hpp>
#include "npy/npy.hpp"

namespace attnbench::fuzz {

// The widest reader there is: the CLI's for K and V.
inline constexpr npy::Accept kAccept{.float16 = true};

struct NpyOutcome {
  std::optional<npy::Array> array;  // set on success
  std::string error;                // npy::Error's message on failure
  std::string unexpected;           // any other exception: always a failure
};

inline NpyOutcome npy_outcome(const std::function<npy::Array()>& call) {
  NpyOutcome outcome;
  try {
    outcome.array = call();
  } catch (const npy::Error& e) {
    outcome.error = e.what();
  } catch (const std::exception& e) {
    outcome.unexpected = e.what();
  }
  return outcome;
}

inline NpyOutcome parse_outcome(std::span<const std::byte> bytes,
                                const npy::Accept& accept = kAccept) {
  return npy_outcome([&] { return npy::parse(bytes, "<memory>", accept); });
}

// npy::read of the bytes as a file: a memfd, opened through /proc/self/fd like any path.
inline NpyOutcome read_outcome(std::span<const std::byte> bytes, std::string& path) {
  const int fd = memfd_create("npy_fuzz", 0);
  if (fd < 0) return {std::nullopt, "", "memfd_create failed"};
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      ::close(fd);
      return {std::nullopt, "", "write to memfd failed"};
    }
    written += static_cast<std::size_t>(n);
  }
  path = "/proc/self/fd/" + std::to_string(fd);
  NpyOutcome outcome = npy_outcome([&] { return npy::read(path, kAccept); });
  ::close(fd);
  return outcome;
}

inline bool same_array(const npy::Array& a, const npy::Array& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

// The message after "<name>: ", or nullopt if it does not start so or is not one line.
inline std::optional<std::string> message_after(const std::string& message,
                                                const std::string& name) {
  if (message.rfind(name + ": ", 0) != 0 || message.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  return message.substr(name.size() + 2);
}

// Are the array's data what the file's last bytes say?
inline bool data_are_files(const npy::Array& a, std::span<const std::byte> bytes) {
  const std::size_t element = a.dtype == npy::Dtype::float16 ? 2 : 4;
  const std::size_t data_bytes = a.data.size() * element;
  if (data_bytes > bytes.size()) return false;
  const std::byte* data = bytes.data() + (bytes.size() - data_bytes);
  if (a.dtype == npy::Dtype::float32) return std::memcmp(a.data.data(), data, data_bytes) == 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    std::uint16_t half;
    std::memcpy(&half, data + 2 * i, sizeof half);
    const float want = f16_to_float(half);
    if (std::memcmp(&a.data[i], &want, sizeof want) != 0) return false;
  }
  return true;
}

// `narrow`: parse accepting float32 only.
inline std::optional<std::string> check_npy_outcomes(std::span<const std::byte> bytes,
                                                     const NpyOutcome& parsed,
                                                     const NpyOutcome& read,
                                                     const NpyOutcome& narrow,
                                                     const std::string& path) {
  if (!parsed.unexpected.empty()) return "parse threw a non-npy::Error: " + parsed.unexpected;
  if (!narrow.unexpected.empty()) return "float32-only parse threw: " + narrow.unexpected;
  const bool float32_file = parsed.array && parsed.array->dtype == npy::Dtype::float32;
  if (narrow.array.has_value() != float32_file) {
    return "float32-only parse " + std::string(narrow.array ? "accepts" : "refuses") +
           " what parse " + (parsed.array ? "accepts" : "refuses");
  }
  if (float32_file && !same_array(*narrow.array, *parsed.array))
    return std::string("float32-only parse returns another array");
  if (!narrow.array && !message_after(narrow.error, "<memory>"))
    return "float32-only parse's message is not one line naming <memory>: " + narrow.error;
  if (!read.unexpected.empty()) return "read threw a non-npy::Error: " + read.unexpected;
  if (parsed.array.has_value() != read.array.has_value()) {
    return "parse and read disagree: parse " +
           (parsed.array ? std::string("accepts") : "says '" + parsed.error + "'") + ", read " +
           (read.array ? std::string("accepts") : "says '" + read.error + "'");
  }
  if (!parsed.array) {
    const auto from_parse = message_after(parsed.error, "<memory>");
    const auto from_read = message_after(read.error, path);
    if (!from_parse) return "parse's message is not one line naming <memory>: " + parsed.error;
    if (!from_read) return "read's message is not one line naming the path: " + read.error;
    if (*from_parse != *from_read) {
      return "parse and read give different errors: '" + parsed.error + "' and '" + read.error +
             "'";
    }
    return std::nullopt;
  }

  const npy::Array& a = *parsed.array;
  std::size_t elements = 1;
  for (std::size_t n : a.shape) elements *= n;
  if (a.shape.empty() || elements != a.data.size()) return std::string("shape and data disagree");
  if (!data_are_files(a, bytes)) return std::string("data are not the file's last bytes");
  if (!same_array(a, *read.array)) return std::string("parse and read return different arrays");
  NpyOutcome again = npy_outcome([&] {
    const std::vector<std::byte> file = npy::serialise(a.shape, a.data);
    return npy::parse(file);
  });
  if (!again.array) return "serialise then parse fails: " + again.error + again.unexpected;
  if (a.shape != again.array->shape ||
      std::memcmp(a.data.data(), again.array->data.data(), a.data.size() * sizeof(float)) != 0)
    return std::string("serialise then parse changes the array");
  return std::nullopt;
}

inline std::optional<std::string> check_npy_input(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::string path;
  const NpyOutcome parsed = parse_outcome(bytes);
  const NpyOutcome read = read_outcome(bytes, path);
  const NpyOutcome narrow = parse_outcome(bytes, npy::Accept{});
  return check_npy_outcomes(bytes, parsed, read, narrow, path);
}

}  // namespace attnbench::fuzz
