// Reader and writer for NumPy .npy files holding float32 C-order arrays.
//
// Only the subset this project exchanges with Python is supported: descr '<f4' (and, where the
// caller accepts them, '<f2', '<V2' for bfloat16 and '|b1', read into float32), fortran_order
// False, 1 to 8 non-zero dimensions. Everything else is rejected with npy::Error rather than
// guessed at. The reader is strict and bounds-checked throughout, so it is safe on untrusted or
// corrupt input. The writer writes '<f4', or '<V2' (bfloat16) when asked.
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
// '|b1' (bool, a byte of 0 or 1) and bfloat16. NumPy has no bfloat16 of its own: np.save writes an
// ml_dtypes.bfloat16 array (as JAX and PyTorch users hold one) with descr '<V2', two raw bytes, the
// bfloat16's bits little-endian; np.load gives them back as '|V2', which .view(ml_dtypes.bfloat16)
// reads. The data always come back as float32: a float16 or bfloat16 file is widened exactly by
// attnbench::f16_to_float or bf16_to_float (a NaN comes back quiet, its payload kept), a bool file
// as 0 and 1 (another byte is an Error).
enum class Dtype { float32, float16, boolean, bfloat16 };
// The descr numpy writes for it: "<f4", "<f2", "|b1", "<V2".
std::string_view descr(Dtype dtype);

// The dtypes a read accepts, and whose arrays they are, for the error about any other dtype:
// {.float16 = true, .who = "K and V"} refuses a '<f8' file with "dtype '<f8' is not supported:
// K and V must be float32 ('<f4') or float16 ('<f2')"; an empty `who` says "expected ...".
struct Accept {
  bool float32 = true;
  bool float16 = false;
  bool boolean = false;
  bool bfloat16 = false;  // descr '<V2' or '|V2', read as bfloat16
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
// With Dtype::bfloat16, descr '<V2' and each value rounded to bfloat16 (attnbench::float_to_bf16:
// to nearest, ties to even), as np.save writes an ml_dtypes.bfloat16 array. Throws Error if
// data.size() != product(shape), the shape is one parse() would reject, or the dtype is another.
std::vector<std::byte> serialise(std::span<const std::size_t> shape, std::span<const float> data,
                                 Dtype dtype = Dtype::float32);

// Write atomically: the bytes go to "<path>.tmp.<pid>" which is then renamed over `path`. On any
// failure the temporary is removed and Error is thrown; `path` is never left partially written.
void write(const std::filesystem::path& path, std::span<const std::size_t> shape,
           std::span<const float> data, Dtype dtype = Dtype::float32);

// One array of a write_all().
struct Output {
  std::filesystem::path path;
  std::span<const std::size_t> shape;
  std::span<const float> data;
  Dtype dtype = Dtype::float32;  // as serialise() writes it
};

// Several files as write() writes one, all or none: every array goes to its temporary first, and
// only once all of them are written are they renamed into place, in order. On a failure before
// the renames every temporary is removed and no `path` is touched. (A rename failing after an
// earlier one succeeded, which takes a directory changing under the call, leaves the earlier
// files in place; Error names the one that failed.) Two outputs naming one file are an Error.
void write_all(std::span<const Output> outputs);

}  // namespace attnbench::npy
