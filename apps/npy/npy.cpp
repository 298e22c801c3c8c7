#include "npy/npy.hpp"

#include <unistd.h>  // getpid(): the temporary file is specified as "<path>.tmp.<pid>"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <attnbench/attnbench.hpp>  // f16_to_float

namespace attnbench::npy {
namespace {

namespace fs = std::filesystem;

// Float data is memcpy'd straight between the file's '<f4' (and '<f2') bytes and native values.
static_assert(std::endian::native == std::endian::little,
              "npy: only little-endian hosts are supported");
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559);

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kMaxDims = 8;
constexpr std::size_t kMaxDigits = 19;  // every 19-digit decimal fits in uint64_t
// numpy >= 1.24 refuses longer headers by default (max_header_size). Ours are < 300 bytes; the cap
// also bounds what read() allocates for the header before anything has been validated.
constexpr std::size_t kMaxHeaderLen = 10000;
constexpr std::uintmax_t kMaxFileSize = std::uintmax_t{64} << 30;
// numpy pads the header with room for shape[0] to grow to this many digits
// (GROWTH_AXIS_MAX_DIGITS).
constexpr std::size_t kGrowthDigits = 21;
constexpr std::size_t kAlign = 64;

[[noreturn]] void fail(std::string_view name, const std::string& msg) {
  throw Error(std::string(name) + ": " + msg);
}

// Python repr of a shape tuple: "()", "(5,)", "(2, 3)".
std::string shape_str(std::span<const std::size_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// A header value for an error message, quoted and cut short so the message stays one short line.
std::string quoted(std::string_view v) {
  constexpr std::size_t kMax = 40;
  // Built with append: g++ 12 gives a false -Wrestrict warning for "'" + std::string(...) at -O2.
  std::string s = "'";
  s.append(v.substr(0, kMax));
  s += v.size() > kMax ? "...'" : "'";
  return s;
}

std::size_t element_bytes(Dtype dtype) {
  return dtype == Dtype::float16 || dtype == Dtype::bfloat16 ? 2 : dtype == Dtype::boolean ? 1 : 4;
}

// Validates a shape for both reading and writing; returns the data size in bytes, `dtype`'s.
std::size_t data_bytes(std::span<const std::size_t> shape, Dtype dtype, std::string_view name) {
  if (shape.empty()) fail(name, "header field 'shape' is (): 0-d arrays are not supported");
  if (shape.size() > kMaxDims)
    fail(name, "header field 'shape' has " + std::to_string(shape.size()) +
                   " dimensions: at most " + std::to_string(kMaxDims) + " are supported");
  std::size_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      fail(name, "shape dimension " + std::to_string(i) + " is 0: empty arrays are not supported");
    if (__builtin_mul_overflow(count, shape[i], &count))
      fail(name, "shape " + shape_str(shape) + ": element count overflows size_t");
  }
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, element_bytes(dtype), &bytes))
    fail(name, "shape " + shape_str(shape) + ": byte count overflows size_t");
  return bytes;
}

// Where the header dict lives, from the magic/version/length preamble.
struct Preamble {
  std::size_t header_offset;  // 10 for version 1.0, 12 for 2.0 and 3.0
  std::size_t header_len;     // dict text including its padding and final '\n'
};

// `prefix` holds the first min(file_size, 12) bytes of a file of `file_size` bytes.
Preamble read_preamble(std::span<const std::byte> prefix, std::uintmax_t file_size,
                       std::string_view name) {
  auto byte = [&](std::size_t i) { return std::to_integer<std::size_t>(prefix[i]); };
  for (std::size_t i = 0; i < std::min(prefix.size(), kMagic.size()); ++i)
    if (byte(i) != static_cast<unsigned char>(kMagic[i]))
      fail(name, "not a .npy file: magic string is not \\x93NUMPY");
  auto truncated = [&] {
    fail(name, "truncated: file has " + std::to_string(file_size) +
                   " bytes, too short for the .npy preamble");
  };
  if (prefix.size() < 8) truncated();
  const std::size_t major = byte(6), minor = byte(7);
  if (minor != 0 || major < 1 || major > 3)
    fail(name, "format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " is not supported (only 1.0, 2.0 and 3.0)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (prefix.size() < 8 + len_bytes) truncated();
  std::size_t len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) len |= byte(8 + i) << (8 * i);
  if (len > kMaxHeaderLen)
    fail(name, "header length " + std::to_string(len) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderLen));
  const std::size_t offset = 8 + len_bytes;
  if (len > file_size - offset)
    fail(name, "truncated: header length is " + std::to_string(len) + " bytes, file has " +
                   std::to_string(file_size - offset) + " after the preamble");
  return {offset, len};
}

// The dtype a header's descr names, if `accept` takes it; the error names the accepted ones.
Dtype dtype_of(std::string_view descr, const Accept& accept, std::string_view name) {
  if (accept.float32 && descr == "<f4") return Dtype::float32;
  if (accept.float16 && descr == "<f2") return Dtype::float16;
  if (accept.boolean && descr == "|b1") return Dtype::boolean;
  if (accept.bfloat16 && (descr == "<V2" || descr == "|V2")) return Dtype::bfloat16;
  if (!accept.float32 && !accept.float16 && !accept.boolean && !accept.bfloat16) {
    fail(name, "the caller accepts no dtype");
  }
  std::string why = "dtype " + quoted(descr) + " is not supported: ";
  if (descr == ">f4" || descr == ">f2") why += "big-endian byte order; ";
  why += accept.who.empty() ? std::string("expected ") : std::string(accept.who) + " must be ";
  std::vector<std::string_view> kinds;
  if (accept.float32) kinds.push_back("float32 ('<f4')");
  if (accept.float16) kinds.push_back("float16 ('<f2')");
  if (accept.bfloat16) kinds.push_back("bfloat16 ('<V2', as np.save writes ml_dtypes.bfloat16)");
  if (accept.boolean) kinds.push_back("bool ('|b1')");
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    why += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + std::string(kinds[i]);
  }
  fail(name, why);
}

// What a header says of the data.
struct Header {
  std::vector<std::size_t> shape;
  Dtype dtype = Dtype::float32;
  std::size_t data_bytes = 0;
};

// Strict parser for the header's Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// It accepts exactly what Python would evaluate to such a dict (any key order, either quote style,
// whitespace, optional trailing commas) minus escapes and string prefixes, which numpy never
// writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name, const Accept& accept)
      : s_(text), name_(name), accept_(accept) {}

  // Returns the validated shape and the dtype (data_bytes unset); descr is checked against what
  // the caller accepts, fortran_order against what we support.
  Header parse() {
    for (std::size_t i = 0; i < s_.size(); ++i) {
      const auto c = static_cast<unsigned char>(s_[i]);
      if ((c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r')
        fail(name_, "header byte " + std::to_string(i) + " is " + hex(c) +
                        ": the header must be printable ASCII");
    }
    if (s_.empty() || s_.back() != '\n') fail(name_, "header does not end with '\\n'");

    static constexpr std::string_view kKeys[] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {};
    std::string_view descr;
    std::string_view fortran;
    std::vector<std::size_t> shape;

    skip_ws();
    if (!eat('{')) syntax("'{'");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      const std::string_view key = string_literal("a quoted key or '}'");
      const auto k = std::find(std::begin(kKeys), std::end(kKeys), key) - std::begin(kKeys);
      if (k == 3)
        fail(name_,
             "unknown header key " + quoted(key) + " (expected 'descr', 'fortran_order', 'shape')");
      if (seen[k]) fail(name_, "header key " + quoted(key) + " appears more than once");
      seen[k] = true;
      skip_ws();
      if (!eat(':')) syntax("':' after key " + quoted(key));
      skip_ws();
      if (k == 0)
        descr = string_literal("a quoted string for 'descr' (structured dtypes are not supported)");
      if (k == 1) fortran = identifier();
      if (k == 2) shape = shape_tuple();
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      syntax("',' or '}'");
    }
    skip_ws();
    if (i_ != s_.size()) syntax("only whitespace after the closing '}'");
    for (std::size_t k = 0; k < 3; ++k)
      if (!seen[k]) fail(name_, "header is missing key " + quoted(kKeys[k]));

    const Dtype dtype = dtype_of(descr, accept_, name_);
    if (fortran == "True")
      fail(name_, "header field 'fortran_order' is True: Fortran-order arrays are not supported");
    if (fortran != "False")
      fail(name_,
           "header field 'fortran_order' is " + quoted(fortran) + ": expected True or False");
    return {std::move(shape), dtype};
  }

 private:
  static std::string hex(unsigned char c) {
    const char* d = "0123456789abcdef";
    return std::string("0x") + d[c >> 4] + d[c & 15];
  }

  [[noreturn]] void syntax(const std::string& expected) {
    std::string found = "end of header";
    if (i_ < s_.size()) {
      const char c = s_[i_];
      found = c == '\n'   ? "'\\n'"
              : c == '\r' ? "'\\r'"
              : c == '\t' ? "'\\t'"
                          : "'" + std::string(1, c) + "'";
    }
    fail(name_, "malformed header dict: expected " + expected + " at header offset " +
                    std::to_string(i_) + ", found " + found);
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool at_digit() const { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; }

  // 'text' or "text" without escapes; control characters were already rejected, and the final '\n'
  // cannot be inside a string because the closing quote must come before it.
  std::string_view string_literal(const std::string& what) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) syntax(what);
    const char q = s_[i_++];
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\')
        fail(name_,
             "header string escapes are not supported (header offset " + std::to_string(i_) + ")");
      if (s_[i_] == '\n' || s_[i_] == '\r') break;
      ++i_;
    }
    if (i_ >= s_.size() || s_[i_] != q) syntax("closing " + std::string(1, q));
    return s_.substr(start, i_++ - start);
  }

  // A bare word such as True or False; its validity is judged by the caller.
  std::string_view identifier() {
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    if (i_ == start) syntax("True or False for 'fortran_order'");
    return s_.substr(start, i_ - start);
  }

  // (), (N,) or (N, M, ...) with an optional trailing comma; (N) is an int in Python, not a tuple.
  std::vector<std::size_t> shape_tuple() {
    std::vector<std::size_t> dims;
    if (!eat('(')) syntax("a tuple for 'shape'");
    skip_ws();
    if (eat(')')) return dims;
    for (;;) {
      if (dims.size() == kMaxDims)
        fail(name_,
             "header field 'shape' has more than " + std::to_string(kMaxDims) + " dimensions");
      dims.push_back(dimension(dims.size()));
      skip_ws();
      if (eat(')')) {
        if (dims.size() == 1)
          fail(name_, "header field 'shape' is (" + std::to_string(dims[0]) +
                          "): not a tuple, expected (" + std::to_string(dims[0]) + ",)");
        return dims;
      }
      if (!eat(',')) syntax("',' or ')' in 'shape'");
      skip_ws();
      if (eat(')')) return dims;
    }
  }

  std::size_t dimension(std::size_t index) {
    const std::string idx = std::to_string(index);
    if (!at_digit()) syntax("a non-negative integer for shape dimension " + idx);
    const std::size_t start = i_;
    while (at_digit()) ++i_;
    const std::string_view digits = s_.substr(start, i_ - start);
    if (digits.size() > kMaxDigits)
      fail(name_, "shape dimension " + idx + " has " + std::to_string(digits.size()) +
                      " digits: at most " + std::to_string(kMaxDigits) + " are supported");
    if (digits.size() > 1 && digits[0] == '0')
      fail(name_,
           "shape dimension " + idx + " is " + quoted(digits) + ": leading zeros are not valid");
    std::uint64_t v = 0;
    for (char c : digits) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    if (v > std::numeric_limits<std::size_t>::max())
      fail(name_,
           "shape dimension " + idx + " is " + std::string(digits) + ": too large for size_t");
    return static_cast<std::size_t>(v);
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::string_view name_;
  const Accept& accept_;
};

// Parses the header text and checks that exactly the declared number of data bytes follow it,
// so callers can allocate the data only once the file is known to fill it.
Header parse_header(std::string_view text, std::uintmax_t data_available, std::string_view name,
                    const Accept& accept) {
  Header h = HeaderParser(text, name, accept).parse();
  h.data_bytes = data_bytes(h.shape, h.dtype, name);
  if (data_available != h.data_bytes) {
    const std::string what = "header declares shape " + shape_str(h.shape) + " = " +
                             std::to_string(h.data_bytes) + " bytes of data, file has " +
                             std::to_string(data_available);
    fail(name,
         data_available < h.data_bytes
             ? "truncated: " + what
             : what + " (" + std::to_string(data_available - h.data_bytes) + " trailing bytes)");
  }
  return h;
}

// Header text exactly as numpy 1.24 writes it for a C-order array of `dtype`.
std::string header_text(std::span<const std::size_t> shape, Dtype dtype) {
  std::string h = "{'descr': '" + std::string(descr(dtype)) +
                  "', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
  h.append(kGrowthDigits - std::min(kGrowthDigits, std::to_string(shape[0]).size()), ' ');
  // Pad so preamble + header + '\n' is a multiple of 64. Like numpy, an already aligned header
  // still gets a full 64 bytes of padding (pad is 1..64, never 0).
  const std::size_t preamble = kMagic.size() + 2 + 2;
  h.append(kAlign - (preamble + h.size() + 1) % kAlign, ' ');
  return h + '\n';
}

std::vector<std::byte> serialise_as(std::span<const std::size_t> shape, std::span<const float> data,
                                    std::string_view name, Dtype dtype) {
  if (dtype != Dtype::float32 && dtype != Dtype::bfloat16)
    fail(name, "writes float32 or bfloat16 only, not " + quoted(descr(dtype)));
  const std::size_t bytes = data_bytes(shape, dtype, name);
  const std::size_t elements = bytes / element_bytes(dtype);
  if (data.size() != elements)
    fail(name, "data has " + std::to_string(data.size()) + " elements but shape " +
                   shape_str(shape) + " needs " + std::to_string(elements));
  const std::string header = header_text(shape, dtype);  // < 400 bytes with at most 8 dimensions
  std::vector<std::byte> out(kMagic.size() + 4 + header.size() + bytes);
  std::byte* p = out.data();
  auto put = [&](const void* src, std::size_t n) {
    std::memcpy(p, src, n);
    p += n;
  };
  put(kMagic.data(), kMagic.size());
  const unsigned char version_and_len[4] = {1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                            static_cast<unsigned char>(header.size() >> 8)};
  put(version_and_len, 4);
  put(header.data(), header.size());
  if (dtype == Dtype::bfloat16) {
    for (float x : data) {
      const std::uint16_t b = float_to_bf16(x);
      put(&b, sizeof b);
    }
  } else {
    put(data.data(), bytes);
  }
  return out;
}

std::string errno_str() { return std::strerror(errno); }

// The array a header describes, its data not yet read.
Array array_of(Header& h) {
  return {std::move(h.shape), std::vector<float>(h.data_bytes / element_bytes(h.dtype)), h.dtype};
}

// Widens the array's data from the file's float16 values at `halves` to float32, exactly.
// `halves` may be the data's own first bytes (read() converts in place): from the last element
// down, each half is read before its float, and the floats written so far lie past every half
// still to read.
// A bfloat16 file's values (a.dtype) widen the same way, each the upper half of its float32.
void widen_halves(const std::byte* halves, Array& a) {
  std::byte* out = reinterpret_cast<std::byte*>(a.data.data());
  for (std::size_t i = a.data.size(); i-- > 0;) {
    std::uint16_t h;
    std::memcpy(&h, halves + 2 * i, sizeof h);
    const float x = a.dtype == Dtype::bfloat16 ? bf16_to_float(h) : f16_to_float(h);
    std::memcpy(out + 4 * i, &x, sizeof x);
  }
}

// Widens the array's data from the file's bool bytes at `bytes` (0 or 1; another is an Error) to
// float32 0 and 1, in place as widen_halves does.
void widen_bools(const std::byte* bytes, Array& a, std::string_view name) {
  std::byte* out = reinterpret_cast<std::byte*>(a.data.data());
  for (std::size_t i = a.data.size(); i-- > 0;) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    if (b > 1) {
      fail(name, "bool element " + std::to_string(i) + " is the byte " + std::to_string(b) +
                     ", not 0 or 1");
    }
    const float x = float(b);
    std::memcpy(out + 4 * i, &x, sizeof x);
  }
}

}  // namespace

std::string_view descr(Dtype dtype) {
  switch (dtype) {
    case Dtype::float16: return "<f2";
    case Dtype::boolean: return "|b1";
    case Dtype::bfloat16: return "<V2";
    case Dtype::float32: break;
  }
  return "<f4";
}

Array parse(std::span<const std::byte> bytes, std::string_view name, const Accept& accept) {
  const Preamble pre =
      read_preamble(bytes.first(std::min<std::size_t>(bytes.size(), 12)), bytes.size(), name);
  const std::size_t data_offset = pre.header_offset + pre.header_len;
  // char may alias any object, so viewing the bytes as text is fine; floats are memcpy'd below
  // because `bytes` need not be suitably aligned.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + pre.header_offset,
                              pre.header_len);
  Header h = parse_header(text, bytes.size() - data_offset, name, accept);
  Array a = array_of(h);
  if (a.dtype == Dtype::float16 || a.dtype == Dtype::bfloat16) {
    widen_halves(bytes.data() + data_offset, a);
  } else if (a.dtype == Dtype::boolean) {
    widen_bools(bytes.data() + data_offset, a, name);
  } else {
    std::memcpy(a.data.data(), bytes.data() + data_offset, h.data_bytes);
  }
  return a;
}

Array read(const std::filesystem::path& path, const Accept& accept) {
  const std::string name = path.string();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) fail(name, "cannot open: " + ec.message());
  if (fs::is_directory(st)) fail(name, "is a directory, not a .npy file");
  if (!fs::is_regular_file(st)) fail(name, "not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(name, "cannot get file size: " + ec.message());
  if (size > kMaxFileSize)
    fail(name, "file is " + std::to_string(size) + " bytes, more than the 64 GiB limit");

  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"),
                                                          &std::fclose);
  if (!f) fail(name, "cannot open: " + errno_str());
  auto read_exact = [&](void* dst, std::size_t n) {
    if (n != 0 && std::fread(dst, 1, n, f.get()) != n)
      fail(name,
           std::ferror(f.get()) ? "read error: " + errno_str() : "file shrank while being read");
  };

  // Read the preamble and header first, and the data only once the header says how much to expect;
  // this avoids holding the file twice in memory.
  std::byte prefix[12];
  const std::size_t prefix_len =
      static_cast<std::size_t>(std::min<std::uintmax_t>(size, sizeof prefix));
  read_exact(prefix, prefix_len);
  const Preamble pre = read_preamble({prefix, prefix_len}, size, name);
  if (std::fseek(f.get(), static_cast<long>(pre.header_offset), SEEK_SET) != 0)
    fail(name, "seek failed: " + errno_str());
  std::string text(pre.header_len, '\0');
  read_exact(text.data(), text.size());
  Header h = parse_header(text, size - pre.header_offset - pre.header_len, name, accept);
  Array a = array_of(h);
  // A 16-bit file's halves go into the first half of the floats' own memory, then widen in place.
  read_exact(a.data.data(), h.data_bytes);
  if (std::fgetc(f.get()) != EOF) fail(name, "file grew while being read");
  if (a.dtype == Dtype::float16 || a.dtype == Dtype::bfloat16) {
    widen_halves(reinterpret_cast<const std::byte*>(a.data.data()), a);
  }
  if (a.dtype == Dtype::boolean) {
    widen_bools(reinterpret_cast<const std::byte*>(a.data.data()), a, name);
  }
  return a;
}

std::vector<std::byte> serialise(std::span<const std::size_t> shape, std::span<const float> data,
                                 Dtype dtype) {
  return serialise_as(shape, data, "<memory>", dtype);
}

void write(const std::filesystem::path& path, std::span<const std::size_t> shape,
           std::span<const float> data, Dtype dtype) {
  const Output one{path, shape, data, dtype};
  write_all({&one, 1});
}

void write_all(std::span<const Output> outputs) {
  // Every temporary that exists and is not yet renamed into place is removed on any exit.
  struct Temporaries {
    std::vector<fs::path> paths;
    std::size_t renamed = 0;  // paths[0, renamed) are in place
    ~Temporaries() {
      std::error_code ignored;
      for (std::size_t i = renamed; i < paths.size(); ++i) fs::remove(paths[i], ignored);
    }
  } temporaries;
  temporaries.paths.reserve(outputs.size());
  auto where = [](const fs::path& p) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(p, ec);
    return (ec ? p : absolute).lexically_normal();
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (where(outputs[i].path) == where(outputs[j].path))
        fail(outputs[i].path.string(),
             "is written twice in one call (also output " + std::to_string(j) + ")");
    }
  }

  for (const Output& out : outputs) {
    const std::string name = out.path.string();
    const std::vector<std::byte> bytes = serialise_as(out.shape, out.data, name, out.dtype);
    fs::path tmp = out.path;
    tmp += ".tmp." + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(name, "cannot create " + tmp.string() + ": " + errno_str());
    temporaries.paths.push_back(tmp);
    const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const int write_errno = errno;
    const bool closed = std::fclose(f) == 0;  // reports buffered write errors such as ENOSPC
    if (!wrote || !closed)
      fail(name,
           "cannot write " + tmp.string() + ": " + std::strerror(wrote ? errno : write_errno));
  }
  for (const Output& out : outputs) {
    const fs::path& tmp = temporaries.paths[temporaries.renamed];
    std::error_code ec;
    fs::rename(tmp, out.path, ec);
    if (ec)
      fail(out.path.string(), "cannot rename " + tmp.string() + " into place: " + ec.message());
    ++temporaries.renamed;
  }
}

}  // namespace attnbench::npy
