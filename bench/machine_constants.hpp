// The machine constants the cost model prices a kernel's operations with
// (python/attnbench_report/model.py), measured beside the FMA peak and triad (ceilings.hpp) and
// written into the JSON context: the kernels' own vector exp, the FMA rate per ISA, read bandwidth
// from each cache level and from DRAM, and what a parallel task and a call on the thread pool cost.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attnbench::bench {

// One measured constant: its JSON context key, value and unit (for the stderr summary).
struct MachineConstant {
  std::string key;
  double value;
  const char* unit;
};

// Every constant, one thread unless the key says otherwise (`_threads_<all>`):
//   exp_per_s_<isa>            the SIMD kernels' exp (SimdTable::exp) over an L1-resident array
//   exp_per_s_scalar           the scalar kernels' exp (kernels::scalar_exp)
//   fma_flops_<isa>            independent FMA chains on registers (an FMA counts 2 FLOPs);
//                              fma_flops_scalar: scalar multiply and add chains
//   read_gbs_<level>           a read-only sweep of a working set sized from the cache the CPU
//                              reports: l1 (half of L1d), l2 (half of L2), l3 (a quarter of L3),
//                              dram (twice L3, at least 1 GiB); read_set_bytes_<level> its size
//   read_gbs_set_<bytes>       the same sweep over sets from twice the L2 doubling up to the DRAM
//                              sweep's: the curve the cost model reads a working set's price from
//   products_flops_<isa>_d<d>, softmax_s_per_score_<isa>_d<d>
//                              the tiled kernel's two products, and its softmax sweeps, alone on
//                              one key block in L2 (measure_phases)
//   products_flops_<isa>_d<d>_threads_<t>, softmax_s_per_score_<isa>_d<d>_threads_<t>
//                              the same phases per thread while t threads each run them at once
//   pack_bytes_per_s_<isa>_set_<bytes>
//                              the tiled kernel's packing of K and V at d = 128, packed again and
//                              again, over heads of 4, 16 and 64 L2s of K and V: bytes read and
//                              written a second (`bytes` a call, as the cost counts' pack_bytes)
//   read_gbs_threads_<t>_set_<bytes>
//                              that curve on t threads, each sweeping its share of the set
//   read_gbs_dram_threads_<t>  the DRAM sweep on t threads
//   task_s_threads_<t>         one empty task of a parallel loop on a t-thread arena
//   call_start_s_threads_<t>   starting a t-thread call as the driver does (driver::TaskRunner on
//                              its kept arena) and running one loop of t empty tasks on it
std::vector<MachineConstant> measure_machine_constants(std::size_t all_threads);

}  // namespace attnbench::bench
