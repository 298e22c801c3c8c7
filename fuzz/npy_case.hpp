// The fuzz case for the .npy reader: any byte string is a file, and npy::parse (bytes in memory)
// and npy::read (the same bytes as a file) must both either return the same array or throw
// npy::Error with the same one-line message after the name. Shared by the libFuzzer target
// (fuzz_npy.cpp, which also bounds every allocation by the input's size) and the corpus replay
// test (tests/fuzz_replay_test.cpp).
//
// Required of an accepted file: product(shape) elements; the data are exactly the file's last
// 4 x elements bytes (so it never holds more than the file could fill); serialise() takes the
// array back and parse() of that gives the same shape and the same bits.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "npy/npy.hpp"

namespace attnbench::fuzz {

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

inline NpyOutcome parse_outcome(std::span<const std::byte> bytes) {
  return npy_outcome([&] { return npy::parse(bytes, "<memory>"); });
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
  NpyOutcome outcome = npy_outcome([&] { return npy::read(path); });
  ::close(fd);
  return outcome;
}

inline bool same_array(const npy::Array& a, const npy::Array& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
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

inline std::optional<std::string> check_npy_outcomes(std::span<const std::byte> bytes,
                                                     const NpyOutcome& parsed,
                                                     const NpyOutcome& read,
                                                     const std::string& path) {
  if (!parsed.unexpected.empty()) return "parse threw a non-npy::Error: " + parsed.unexpected;
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
  const std::size_t data_bytes = a.data.size() * sizeof(float);
  if (data_bytes > bytes.size()) return std::string("more data than the file holds");
  if (std::memcmp(a.data.data(), bytes.data() + (bytes.size() - data_bytes), data_bytes) != 0) {
    return std::string("data are not the file's last bytes");
  }
  if (!same_array(a, *read.array)) return std::string("parse and read return different arrays");
  NpyOutcome again = npy_outcome([&] {
    const std::vector<std::byte> file = npy::serialise(a.shape, a.data);
    return npy::parse(file);
  });
  if (!again.array) return "serialise then parse fails: " + again.error + again.unexpected;
  if (!same_array(a, *again.array)) return std::string("serialise then parse changes the array");
  return std::nullopt;
}

inline std::optional<std::string> check_npy_input(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::string path;
  const NpyOutcome parsed = parse_outcome(bytes);
  const NpyOutcome read = read_outcome(bytes, path);
  return check_npy_outcomes(bytes, parsed, read, path);
}

}  // namespace attnbench::fuzz
