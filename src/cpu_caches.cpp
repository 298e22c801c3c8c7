#include "cpu_caches.hpp"

#include <unistd.h>

#include <array>
#include <fstream>
#include <string>

namespace attnbench {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32768K", "1024K", "32M" as sysfs writes a cache's size; 0 for anything else.
std::size_t parse_size(const std::string& text) {
  std::size_t value = 0, i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    value = value * 10 + std::size_t(text[i] - '0');
  if (i == 0) return 0;
  const std::string unit = text.substr(i);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  return 0;
}

std::size_t from_sysfs(int level) {
  for (int index = 0; index < 16; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string at = first_line(dir + "level");
    if (at.empty()) break;
    const std::string type = first_line(dir + "type");
    if (at == std::to_string(level) && (type == "Data" || type == "Unified"))
      return parse_size(first_line(dir + "size"));
  }
  return 0;
}

std::size_t from_sysconf(int level) {
  const long bytes = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                             : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                                          : _SC_LEVEL3_CACHE_SIZE);
  return bytes > 0 ? std::size_t(bytes) : 0;
}

}  // namespace

std::size_t reported_cache_bytes(int level) {
  static const std::array<std::size_t, 3> sizes = [] {
    std::array<std::size_t, 3> s{};
    for (int level = 1; level <= 3; ++level) {
      const std::size_t sysfs = from_sysfs(level);
      s[std::size_t(level - 1)] = sysfs ? sysfs : from_sysconf(level);
    }
    return s;
  }();
  return level >= 1 && level <= 3 ? sizes[std::size_t(level - 1)] : 0;
}

}  // namespace attnbench
