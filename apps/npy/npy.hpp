// Reader and writer for NumPy .npy files holding float32 C-order arrays.
//
// Only the subset this project exchanges with Python is supported: descr '<f4' (and, where the
// caller accepts them, '<f2' and '|b1', read into float32), fortran_order False, 1 to 8 non-zero
// dimensions. Everything else is rejected with npy::Error rather than guessed at. The reader is
// strict and bounds-checked throughout, so it is safe on untrusted or corrupt input. The writer
// writes '<f4'.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace attnbench::npy {

// The only exception type thrown for malformed input or I/O failure. what() is a single line that
// starts with the file name (or "<memory>") and names the offending field and value.
class Error : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The element types a file may hold: '<f4' (float32), '<f2' (IEEE float16), both little-endian,
// and '|b1' (bool, a byte of 0 or 1). The data always come back as float32: a float16 file is
// widened exactly by attnbench::f16_to_float (every half is a float32; a NaN comes back quiet, its
// payload kept), a bool file as 0 and 1 (another byte is an Error).
enum class Dtype { float32, float16, boolean };
// The descr numpy writes for it: "<f4", "<f2", "|b1".
std::string_view descr(Dtype dtype);

// The dtypes a read accepts, and whose arrays they are, for the error about any other dtype:
// {.float16 = true, .who = "K and V"} refuses a '<f8' file with "dtype '<f8' is not supported:
// K and V must be float32 ('<f4') or float16 ('<f2')"; an empty `who` says "expected ...".
struct Accept {
  bool float32 = true;
  bool float16 = false;
  bool boolean = false;
  std::string_view who;
};

struct Array {
  std::vector<std::size_t> shape;  // C order
  std::vector<float> data;         // product(shape) elements
  Dtype dtype = Dtype::float32;    // what the file held
};

// Parse a whole .npy file already in memory (format 1.0, 2.0 or 3.0). `bytes` may have any
// alignment. `name` is used in error messages.
Array parse(std::span<const std::byte> bytes, std::string_view name = "<memory>",
            const Accept& accept = {});

// Read a regular file. Missing or unreadable files, directories and files over 64 GiB are errors.
Array read(const std::filesystem::path& path, const Accept& accept = {});

// Serialise as numpy 1.24's np.save does for a C-contiguous float32 array: format 1.0, descr '<f4',
// header padded with spaces and terminated by '\n' so the data starts at a multiple of 64 bytes.
// Throws Error if data.size() != product(shape) or the shape is one parse() would reject.
std::vector<std::byte> serialise(std::span<const std::size_t> shape, std::span<const float> data);

// Write atomically: the bytes go to "<path>.tmp.<pid>" which is then renamed over `path`. On any
// failure the temporary is removed and Error is thrown; `path` is never left partially written.
void write(const std::filesystem::path& path, std::span<const std::size_t> shape,
           std::span<const float> data);

// One array of a write_all().
struct Output {
  std::filesystem::path path;
  std::span<const std::size_t> shape;
  std::span<const float> data;
};

// Several files as write() writes one, all or none: every array goes to its temporary first, and
// only once all of them are written are they renamed into place, in order. On a failure before
// the renames every temporary is removed and no `path` is touched. (A rename failing after an
// earlier one succeeded, which takes a directory changing under the call, leaves the earlier
// files in place; Error names the one that failed.) Two outputs naming one file are an Error.
void write_all(std::span<const Output> outputs);

}  // namespace attnbench::npy
