// The CPU's cache sizes as the operating system reports them, which the SIMD kernels size their
// blocks from and the benchmark's windows size their working sets by.
#pragma once

#include <cstddef>

namespace attnbench {

// Bytes of the level-`level` data or unified cache of CPU 0 (1: the L1 data cache; 2, 3: the
// unified L2 and L3, the L3 as one instance, shared by the cores sysfs lists), or 0 where the
// system reports none. Read once: Linux's sysfs (/sys/devices/system/cpu/cpu0/cache, what lscpu
// and Google Benchmark read), else sysconf's _SC_LEVEL*_CACHE_SIZE. Sysfs first because glibc's
// sysconf can disagree with it and with the CPU's cache leaf on an AMD guest
// (docs/studies/2026-12-07-zen4-onednn-and-caches.md).
std::size_t reported_cache_bytes(int level);

}  // namespace attnbench
