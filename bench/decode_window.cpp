// attnbench_bench --decode: decoding against a persistent KvCache in each storage type, the
// decode loop, and prefill (decode_window.hpp says what each family measures).
#include "decode_window.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <attnbench/attnbench.hpp>
#include "bench_inputs.hpp"
#include "ceilings.hpp"
#include "window_support.hpp"

namespace attnbench::bench {
namespace {

constexpr std::size_t kHeadDim = 128;

struct Layout {
  const char* name;
  std::size_t q_heads, kv_heads;
};
constexpr Layout kHead{"head", 1, 1};
constexpr Layout kLlama{"llama", 32, 8};  // Llama-style grouped-query attention, 4 heads a group

struct DecodePreset {
  std::vector<std::size_t> kv_lens;        // decode points, both layouts
  std::vector<std::size_t> llama_kv_lens;  // further decode points, the llama layout only
  bool types_beyond_l3;                    // types points of both layouts at beyond_l3_kv too
  std::vector<std::size_t> generate_starts;
  std::size_t generate_tokens;
  std::size_t prefill_len;
  bool every_isa;  // also the avx2 kernel by name where a wider ISA dispatches
  int repetitions;
  double min_time;
  double types_seconds;  // a types point's repetition: at least this long, at least types_rounds
  std::size_t types_rounds;
};

// An fp32 token of the llama layout's K and V is 8 KiB, of one head 1 KiB: at kv 16384 the llama
// cache (128 MiB) and at 65536 the head's (64 MiB) lie beyond a 32 MiB L3; the types points at
// beyond_l3_kv lie beyond the L3 this CPU reports.
DecodePreset decode_preset(const std::string& name) {
  if (name == "full") {
    return {.kv_lens = {4096, 16384, 65536},
            .llama_kv_lens = {131072},
            .types_beyond_l3 = true,
            .generate_starts = {4096, 16384, 65536},
            .generate_tokens = 256,
            .prefill_len = 4096,
            .every_isa = true,
            .repetitions = 5,
            .min_time = 0.2,
            .types_seconds = 1.0,
            .types_rounds = 9};
  }
  // Both layouts beyond the L3, and prefill at the target's n = 4096.
  if (name == "standard") {
    return {.kv_lens = {4096, 16384, 65536},
            .llama_kv_lens = {},
            .types_beyond_l3 = true,
            .generate_starts = {16384},
            .generate_tokens = 64,
            .prefill_len = 4096,
            .every_isa = false,
            .repetitions = 3,
            .min_time = 0.1,
            .types_seconds = 0.3,
            .types_rounds = 5};
  }
  return {.kv_lens = {4096, 16384},
          .llama_kv_lens = {},
          .types_beyond_l3 = false,
          .generate_starts = {4096},
          .generate_tokens = 64,
          .prefill_len = 1024,
          .every_isa = false,
          .repetitions = 3,
          .min_time = 0.05,
          .types_seconds = 0.2,
          .types_rounds = 5};
}

// The smallest power of two from 4096 whose K/V in the smallest storage type (q4_0) outgrow the L3
// this CPU reports: every type's cache lies beyond it (a guest's L3 can be a whole socket's: 260
// MiB on the Emerald Rapids guest, where 65536 keys of the llama layout's fp16 K/V still fit).
std::size_t beyond_l3_kv(const Layout& layout) {
  const std::size_t l3 = cache_bytes(3, std::size_t{32} << 20);
  std::size_t kv = 4096;
  while (layout.kv_heads * kv * 2 * kv_row_bytes(KvType::q4_0, kHeadDim) < l3) kv *= 2;
  return kv;
}

const std::map<std::size_t, double>* g_triad = nullptr;
const std::map<std::size_t, double>* g_peak = nullptr;

// Tokens of K and V per input block: caches are filled by appending this block again and again
// (the values repeat every kBlockTokens tokens, which no kernel's speed depends on).
constexpr std::size_t kBlockTokens = 4096;

// One block of K or V for `layout`: [1][kv_heads][kBlockTokens][d].
const std::vector<float>& block(const Layout& layout, int which) {
  return random_tensor(layout.kv_heads * kBlockTokens * kHeadDim, 10 + which);
}

// Appends `tokens` tokens of the repeating block to `cache`. The block is laid out per head, so
// each append takes a run of tokens that starts at the same block offset in every head.
void fill(KvCache& cache, const Layout& layout, std::size_t tokens, std::size_t threads) {
  const std::vector<float>& k = block(layout, 0);
  const std::vector<float>& v = block(layout, 1);
  std::vector<float> kc, vc;
  for (std::size_t done = 0; done < tokens;) {
    const std::size_t run = std::min(kBlockTokens, tokens - done);
    if (run == kBlockTokens) {
      cache.append(k.data(), v.data(), run, threads);
    } else {
      kc.resize(layout.kv_heads * run * kHeadDim);
      vc.resize(kc.size());
      for (std::size_t h = 0; h < layout.kv_heads; ++h) {
        std::copy_n(k.begin() + h * kBlockTokens * kHeadDim, run * kHeadDim,
                    kc.begin() + h * run * kHeadDim);
        std::copy_n(v.begin() + h * kBlockTokens * kHeadDim, run * kHeadDim,
                    vc.begin() + h * run * kHeadDim);
      }
      cache.append(kc.data(), vc.data(), run, threads);
    }
    done += run;
  }
}

// A new cache of `capacity` tokens, filled with `filled`.
std::unique_ptr<KvCache> filled_cache(const Kernel& kernel, const Layout& layout, KvType type,
                                      std::size_t capacity, std::size_t filled) {
  auto cache = std::make_unique<KvCache>(kernel, 1, layout.kv_heads, kHeadDim, capacity, type);
  fill(*cache, layout, filled, 0);
  return cache;
}

// The caches, made once per (kernel, layout, type, capacity) on first use and filled to their
// capacity (the generation loop's: to their start), so that interleaved points share them.
KvCache& cache_for(const Kernel& kernel, const Layout& layout, KvType type, std::size_t capacity,
                   std::size_t filled) {
  static std::map<std::string, std::unique_ptr<KvCache>> caches;
  const std::string key = std::string(kernel.name) + layout.name + std::string(to_string(type)) +
                          std::to_string(capacity);
  auto& cache = caches[key];
  if (!cache) cache = filled_cache(kernel, layout, type, capacity, filled);
  return *cache;
}

void run_decode(benchmark::State& state, const Kernel* kernel, Layout layout, std::size_t rows,
                std::size_t kv_len, KvType type, std::size_t threads) {
  try {
    KvCache& cache = cache_for(*kernel, layout, type, kv_len, kv_len);
    const Shape shape{1, layout.q_heads, layout.kv_heads, rows, kv_len, kHeadDim};
    const std::vector<float>& q = random_tensor(shape.q_elements(), 20);
    std::vector<float> o(shape.q_elements());
    const Tensors t{.q = q.data(), .o = o.data(), .kv_cache = &cache};
    Options options;
    options.threads = threads;
    Workspace ws;
    attention(*kernel, shape, options, t, ws);  // warm-up: workspace, thread pool
    for (auto _ : state) {
      attention(*kernel, shape, options, t, ws);
      benchmark::DoNotOptimize(o.data());
    }
    using benchmark::Counter;
    const double bytes = double(cache.kv_bytes());
    state.counters["kv_bytes"] = Counter(bytes);
    state.counters["GB/s"] = Counter(bytes / 1e9, Counter::kIsIterationInvariantRate);
    state.counters["pct_triad"] =
        Counter(100.0 * bytes / 1e9 / g_triad->at(threads), Counter::kIsIterationInvariantRate);
    // Microseconds per call and per token, as inverted rates: time / (value x iterations).
    state.counters["call_us"] =
        Counter(1e-6, Counter::kIsIterationInvariantRate | Counter::kInvert);
    state.counters["token_us"] =
        Counter(1e-6 * double(rows), Counter::kIsIterationInvariantRate | Counter::kInvert);
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

// The storage types, as the types points call them by turns; the decode points add the quantised
// types with Options::quantise_query (ggml's q8_0 query: integer Q K^T on AVX-512 VNNI), read from
// the same caches.
constexpr KvType kTypes[] = {KvType::f32, KvType::f16, KvType::bf16, KvType::q8_0, KvType::q4_0};
constexpr std::size_t kTypeCount = std::size(kTypes);
struct Variant {
  std::size_t type;  // index into kTypes
  bool quantise_query;
  std::string_view name;  // of its counters
};
constexpr Variant kDecodeVariants[] = {
    {0, false, "f32"},  {1, false, "f16"},    {2, false, "bf16"},  {3, false, "q8_0"},
    {4, false, "q4_0"}, {3, true, "q8_0_q8"}, {4, true, "q4_0_q8"}};

// The storage types against one another call by call: `call(i)` runs variant i (named names[i],
// names[0] f32's) once and returns its seconds. A round calls each variant once (the order turning
// with the round), and each ratio is taken within a round, milliseconds apart (the decode points'
// repetitions, interleaved at random, put two types' sides seconds apart: over the Llama layer's
// points two runs gave 1.3x to 2.9x). Each iteration of `state` runs at least `min_rounds` rounds
// and `seconds`; its time is the median f32 call. Counters us_<name> and speedup_<name> (the
// median over rounds of the f32 call's time over the variant's within the round), rounds. Returns
// each variant's median call, in seconds.
template <class Call>
std::vector<double> by_turns(benchmark::State& state, Call&& call, double seconds,
                             std::size_t min_rounds, const std::vector<std::string>& names) {
  const std::size_t count = names.size();
  for (std::size_t i = 0; i < count; ++i) call(i);               // warm-up: workspace, thread pool
  std::vector<std::vector<double>> times(count), ratios(count);  // ratios[i]: f32 over i, i > 0
  for (auto _ : state) {
    for (std::size_t i = 0; i < count; ++i) times[i].clear(), ratios[i].clear();
    double spent = 0;
    for (std::size_t round = 0; round < min_rounds || spent < seconds; ++round) {
      std::vector<double> t(count);
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t i = (k + round) % count;
        t[i] = call(i);
        times[i].push_back(t[i]);
        spent += t[i];
      }
      for (std::size_t i = 1; i < count; ++i) ratios[i].push_back(t[0] / t[i]);
    }
    state.SetIterationTime(median(times[0]));
  }
  std::vector<double> medians(count);
  for (std::size_t i = 0; i < count; ++i) {
    medians[i] = median(times[i]);
    state.counters["us_" + names[i]] = 1e6 * medians[i];
    if (i > 0) state.counters["speedup_" + names[i]] = median(ratios[i]);
  }
  state.counters["rounds"] = double(times[0].size());
  return medians;
}
std::vector<std::string> type_names() {
  std::vector<std::string> names;
  for (KvType t : kTypes) names.emplace_back(to_string(t));
  return names;
}

// Decode by turns (by_turns), plus gbs_<name>. A cache keeps the streaming speed its memory got
// when it was allocated (two caches of one type in one process read up to 1.25x apart, round after
// round, on the Zen 5 guest), so each repetition allocates and fills its own caches: the spread of
// allocations shows in the repetitions' CV instead of biasing the whole run
// (docs/studies/2026-12-02-decode.md).
void run_types(benchmark::State& state, const Kernel* kernel, Layout layout, std::size_t rows,
               std::size_t kv_len, std::size_t threads, double seconds, std::size_t min_rounds) {
  try {
    std::size_t all_bytes = 0;  // the five caches'
    for (KvType type : kTypes)
      all_bytes += layout.kv_heads * kv_len * 2 * kv_row_bytes(type, kHeadDim);
    const std::size_t memory = memory_bytes();
    if (all_bytes > memory / 4) {
      skip_all(state, "skipped: the caches of kv " + std::to_string(kv_len) + " take " +
                          std::to_string(all_bytes >> 20) +
                          " MiB, more than a quarter of memory (" + std::to_string(memory >> 20) +
                          " MiB)");
      return;
    }
    std::unique_ptr<KvCache> caches[kTypeCount];
    for (std::size_t i = 0; i < kTypeCount; ++i)
      caches[i] = filled_cache(*kernel, layout, kTypes[i], kv_len, kv_len);
    const Shape shape{1, layout.q_heads, layout.kv_heads, rows, kv_len, kHeadDim};
    const std::vector<float>& q = random_tensor(shape.q_elements(), 20);
    std::vector<float> o(shape.q_elements());
    Workspace ws;
    std::vector<std::string> names;
    for (const Variant& v : kDecodeVariants) names.emplace_back(v.name);
    const auto medians = by_turns(
        state,
        [&](std::size_t i) {
          const Variant& v = kDecodeVariants[i];
          Options options;
          options.threads = threads;
          options.quantise_query = v.quantise_query;
          const auto a = std::chrono::steady_clock::now();
          attention(*kernel, shape, options,
                    Tensors{.q = q.data(), .o = o.data(), .kv_cache = caches[v.type].get()}, ws);
          benchmark::DoNotOptimize(o.data());
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
        },
        seconds, min_rounds, names);
    for (std::size_t i = 0; i < names.size(); ++i) {
      state.counters["gbs_" + names[i]] =
          double(caches[kDecodeVariants[i].type]->kv_bytes()) / medians[i] / 1e9;
    }
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

void run_generate(benchmark::State& state, const Kernel* kernel, Layout layout, std::size_t start,
                  std::size_t tokens, KvType type, std::size_t threads) {
  try {
    KvCache& cache = cache_for(*kernel, layout, type, start + tokens, start);
    const Shape step{1, layout.q_heads, layout.kv_heads, 1, 0, kHeadDim};
    const std::vector<float>& q = random_tensor(step.q_elements(), 21);
    const std::vector<float>& k = block(layout, 0);
    std::vector<float> o(step.q_elements()), k1(layout.kv_heads * kHeadDim), v1(k1.size());
    Options options;
    options.threads = threads;
    Workspace ws;
    std::vector<double> token_s, append_s;
    using clock = std::chrono::steady_clock;
    for (auto _ : state) {
      cache.truncate(start);
      token_s.clear();
      append_s.clear();
      const auto t0 = clock::now();
      for (std::size_t i = 0; i < tokens; ++i) {
        const auto a = clock::now();
        for (std::size_t h = 0; h < layout.kv_heads; ++h) {  // the new token's K and V
          std::copy_n(k.begin() + (h * kBlockTokens + i % kBlockTokens) * kHeadDim, kHeadDim,
                      k1.begin() + h * kHeadDim);
        }
        v1 = k1;
        cache.append(k1.data(), v1.data(), 1);
        const auto b = clock::now();
        Shape shape = step;
        shape.kv_len = cache.length();
        attention(*kernel, shape, options,
                  Tensors{.q = q.data(), .o = o.data(), .kv_cache = &cache}, ws);
        benchmark::DoNotOptimize(o.data());
        const auto c = clock::now();
        append_s.push_back(std::chrono::duration<double>(b - a).count());
        token_s.push_back(std::chrono::duration<double>(c - a).count());
      }
      state.SetIterationTime(std::chrono::duration<double>(clock::now() - t0).count());
    }
    state.counters["token_us"] = 1e6 * median(token_s);
    state.counters["first_us"] = 1e6 * token_s.front();
    state.counters["last_us"] = 1e6 * token_s.back();
    state.counters["append_us"] = 1e6 * median(append_s);
    state.counters["kv_bytes_end"] = double(cache.kv_bytes());
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

// The prefill's inputs, one head of n tokens, d = kHeadDim, and its call: fill the empty cache with
// the n tokens (packing and converting them to its type), then causal attention of the n rows over
// it; returns its seconds, and adds the fill's to pack_s.
struct Prefill {
  Shape shape;
  const std::vector<float>& q = random_tensor(shape.q_elements(), 22);
  const std::vector<float>& k = random_tensor(shape.kv_elements(), 23);
  const std::vector<float>& v = random_tensor(shape.kv_elements(), 24);
  std::vector<float> o = std::vector<float>(shape.q_elements());
  Options options;
  Workspace ws;
  double pack_s = 0;

  Prefill(std::size_t n, std::size_t threads) : shape{1, 1, 1, n, n, kHeadDim} {
    options.causal = true;
    options.threads = threads;
  }

  double call(const Kernel& kernel, KvCache& cache) {
    using clock = std::chrono::steady_clock;
    const auto a = clock::now();
    cache.clear();
    cache.append(k.data(), v.data(), shape.kv_len, options.threads);
    const auto b = clock::now();
    attention(kernel, shape, options, Tensors{.q = q.data(), .o = o.data(), .kv_cache = &cache},
              ws);
    benchmark::DoNotOptimize(o.data());
    pack_s += std::chrono::duration<double>(b - a).count();
    return std::chrono::duration<double>(clock::now() - a).count();
  }

  // The causal scores' 4 d FLOPs a call counts.
  double flops() const { return 4.0 * scored_pairs(shape, true) * double(kHeadDim); }
};

void run_prefill(benchmark::State& state, const Kernel* kernel, std::size_t n, KvType type,
                 std::size_t threads) {
  try {
    KvCache& cache = cache_for(*kernel, kHead, type, n, 0);
    Prefill prefill(n, threads);
    prefill.call(*kernel, cache);  // warm-up
    prefill.pack_s = 0;
    for (auto _ : state) prefill.call(*kernel, cache);
    using benchmark::Counter;
    state.counters["GFLOP/s"] = Counter(prefill.flops() / 1e9, Counter::kIsIterationInvariantRate);
    state.counters["pct_peak"] = Counter(100.0 * prefill.flops() / (g_peak->at(threads)),
                                         Counter::kIsIterationInvariantRate);
    state.counters["pack_ms"] = 1e3 * prefill.pack_s / double(state.iterations());
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

// Prefill by turns (by_turns), plus gflops_<type>; each repetition allocates its own three caches,
// as run_types does. Prefill is compute-bound, and its 16-bit types' target is a ratio of speeds
// (issue 15: fp16 >= 0.9x fp32): the prefill points' repetitions, seconds apart, put it anywhere
// from 0.74x to 1.47x in one run on the Zen 5 guest (docs/studies/2026-12-02-decode.md).
void run_prefill_types(benchmark::State& state, const Kernel* kernel, std::size_t n,
                       std::size_t threads, double seconds, std::size_t min_rounds) {
  try {
    std::unique_ptr<KvCache> caches[kTypeCount];
    for (std::size_t i = 0; i < kTypeCount; ++i)
      caches[i] = filled_cache(*kernel, kHead, kTypes[i], n, 0);
    Prefill prefill(n, threads);
    const auto medians = by_turns(
        state, [&](std::size_t i) { return prefill.call(*kernel, *caches[i]); }, seconds,
        min_rounds, type_names());
    for (std::size_t i = 0; i < kTypeCount; ++i) {
      state.counters["gflops_" + std::string(to_string(kTypes[i]))] =
          prefill.flops() / medians[i] / 1e9;
    }
  } catch (const std::exception& e) {
    skip_all(state, std::string("failed: ") + e.what());
  }
}

// The triad again, as points of the window: interleaved with the decode points, so that their
// share of the triad compares two sides measured in the same minutes (the context's triad was
// measured once, before the window; neighbours move memory bandwidth by a third within minutes).
void run_triad(benchmark::State& state, std::size_t threads) {
  double gbs = 0;
  for (auto _ : state) gbs = measure_triad_bandwidth(threads);
  state.counters["GB/s"] = gbs;
}

}  // namespace

void register_decode(const std::string& preset_name, std::size_t all_threads,
                     const std::map<std::size_t, double>& triad_gbs,
                     const std::map<std::size_t, double>& peak_flops,
                     std::map<std::string, double>& predicted) {
  g_triad = &triad_gbs;
  g_peak = &peak_flops;
  const DecodePreset preset = decode_preset(preset_name);
  std::vector<const Kernel*> kernels{&resolve(*find_kernel("tiled/simd"))};
  const Kernel* avx2 = find_kernel("tiled/simd/avx2");
  if (preset.every_isa && avx2->available() && kernels[0] != avx2) kernels.push_back(avx2);
  std::vector<std::size_t> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  // Predictions for the progress line: 10 GB/s of K/V, 50 GFLOP/s a thread.
  const double prefill_n = double(preset.prefill_len);
  auto prefill_s = [&](std::size_t t) {
    return 2.0 * prefill_n * prefill_n * double(kHeadDim) / (50e9 * double(t));
  };
  auto add = [&](benchmark::internal::Benchmark* b, const std::string& name, double call,
                 bool manual_time = false) {
    if (!manual_time) b->UseRealTime();
    b->Unit(benchmark::kMicrosecond)->Repetitions(preset.repetitions);
    b->ReportAggregatesOnly(true);
    predicted[name] = std::max(call, preset.min_time) * preset.repetitions;
  };
  for (std::size_t t : thread_counts) {
    const std::string name = "triad/threads:" + std::to_string(t);
    auto* b = benchmark::RegisterBenchmark(name.c_str(), run_triad, t);
    b->Iterations(1);
    add(b, name, 0.5);
  }
  std::vector<std::size_t> llama_lens = preset.kv_lens;  // the llama layout's: both lists
  llama_lens.insert(llama_lens.end(), preset.llama_kv_lens.begin(), preset.llama_kv_lens.end());
  for (const Kernel* kernel : kernels) {
    const std::string kname(kernel->name);
    // The types points: the llama layout at its decode lengths, and both layouts beyond the L3.
    std::vector<std::pair<Layout, std::size_t>> types_shapes;
    for (std::size_t kv : llama_lens) types_shapes.emplace_back(kLlama, kv);
    if (preset.types_beyond_l3) {
      for (const Layout& layout : {kHead, kLlama}) {
        const std::size_t kv = beyond_l3_kv(layout);
        if (layout.q_heads == kHead.q_heads ||
            std::find(llama_lens.begin(), llama_lens.end(), kv) == llama_lens.end())
          types_shapes.emplace_back(layout, kv);
      }
    }
    for (std::size_t t : thread_counts) {
      for (const auto& [layout, kv] : types_shapes) {
        const std::string name = "types/" + kname + "/layout:" + layout.name +
                                 "/rows:1/kv:" + std::to_string(kv) +
                                 "/threads:" + std::to_string(t);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), run_types, kernel, layout, 1, kv, t,
                                               preset.types_seconds, preset.types_rounds);
        b->Iterations(1)->UseManualTime();
        // A round reads the f32 bytes and about twice the 16-bit ones; a repetition first fills
        // the caches (about 2.5 times the f32 bytes, packed at about 2 GB/s).
        const double f32_bytes =
            double(layout.kv_heads * kv * 2 * kv_row_bytes(KvType::f32, kHeadDim));
        add(b, name,
            std::max(preset.types_seconds, 2.0 * f32_bytes / 10e9 * double(preset.types_rounds)) +
                2.5 * f32_bytes / 2e9,
            true);
      }
    }
    for (std::size_t t : thread_counts) {
      const std::string name = "types/" + kname + "/prefill:" + std::to_string(preset.prefill_len) +
                               "/d:128/threads:" + std::to_string(t);
      auto* b =
          benchmark::RegisterBenchmark(name.c_str(), run_prefill_types, kernel, preset.prefill_len,
                                       t, preset.types_seconds, preset.types_rounds);
      b->Iterations(1)->UseManualTime();
      const double call = prefill_s(t);
      add(b, name,
          std::max(preset.types_seconds, 3.0 * call * double(preset.types_rounds)) + 3.0 * call,
          true);
    }
    for (KvType type : kTypes) {
      const std::string tname(to_string(type));
      for (std::size_t t : thread_counts) {
        const std::string suffix = "/type:" + tname + "/threads:" + std::to_string(t);
        for (const Layout& layout : {kHead, kLlama}) {
          const std::vector<std::size_t>& lens =
              layout.q_heads == kLlama.q_heads ? llama_lens : preset.kv_lens;
          for (std::size_t rows : {1, 4}) {
            for (std::size_t kv : lens) {
              const std::string name = "decode/" + kname + "/layout:" + layout.name +
                                       "/rows:" + std::to_string(rows) +
                                       "/kv:" + std::to_string(kv) + suffix;
              auto* b = benchmark::RegisterBenchmark(name.c_str(), run_decode, kernel, layout, rows,
                                                     kv, type, t);
              b->MinTime(preset.min_time);
              add(b, name, double(layout.kv_heads * kv * 2 * kv_row_bytes(type, kHeadDim)) / 10e9);
            }
          }
        }
        for (std::size_t start : preset.generate_starts) {
          const std::string name = "generate/" + kname +
                                   "/layout:llama/start:" + std::to_string(start) +
                                   "/tokens:" + std::to_string(preset.generate_tokens) + suffix;
          auto* b = benchmark::RegisterBenchmark(name.c_str(), run_generate, kernel, kLlama, start,
                                                 preset.generate_tokens, type, t);
          b->Iterations(1)->UseManualTime();
          add(b, name,
              double(preset.generate_tokens) *
                  double(kLlama.kv_heads * start * 2 * kv_row_bytes(type, kHeadDim)) / 10e9,
              true);
        }
        const std::string name =
            "prefill/" + kname + "/n:" + std::to_string(preset.prefill_len) + "/d:128" + suffix;
        auto* b = benchmark::RegisterBenchmark(name.c_str(), run_prefill, kernel,
                                               preset.prefill_len, type, t);
        b->MinTime(preset.min_time);
        add(b, name, prefill_s(t));
      }
    }
  }
}

}  // namespace attnbench::bench
