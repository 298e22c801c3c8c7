// Ring attention over MPI (include/attnbench/ring.hpp): the layout, the collective error check,
// and the forward and backward rings, each step's blocks computed by attention() and
// attention_backward() of the core library.
#include "attnbench/ring.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace attnbench::ring {
namespace {

// Piece `i` of `count` near-equal pieces of [0, n): the first n % count pieces one longer.
KeySpan piece(std::size_t n, std::size_t count, std::size_t i) {
  const std::size_t base = n / count, extra = n % count;
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

std::size_t rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return std::size_t(r);
}
std::size_t size_of(MPI_Comm comm) {
  int p = 1;
  MPI_Comm_size(comm, &p);
  return std::size_t(p);
}

// A rank's failure: an Error's field and value and the rest of its message, or (`error` false) any
// other exception's message in `why`.
struct Failure {
  std::string field, value, why;
  bool error = true;
};

// Every rank learns whether any rank failed; if one did, every rank throws the lowest failing
// rank's Error, its field prefixed with the rank ("rank 1: seq_len = 51: ..."; any other exception
// as a std::runtime_error "rank 1: ..."), so that the error is the same everywhere and rank 0 can
// report it.
void agree(MPI_Comm comm, const std::optional<Failure>& failure) {
  const int rank = int(rank_of(comm));
  const int mine = failure ? rank : INT_MAX;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  Failure f = rank == first ? *failure : Failure{};
  int error = f.error ? 1 : 0;
  MPI_Bcast(&error, 1, MPI_INT, first, comm);
  for (std::string* part : {&f.field, &f.value, &f.why}) {
    int length = int(part->size());
    MPI_Bcast(&length, 1, MPI_INT, first, comm);
    part->resize(std::size_t(length));
    MPI_Bcast(part->data(), length, MPI_CHAR, first, comm);
  }
  const std::string at = "rank " + std::to_string(first) + ": ";
  if (error == 0) throw std::runtime_error(at + f.why);
  throw Error(at + f.field, f.value, f.why);
}

// Runs f, turning an Error (or any other exception) into the Failure agree() shares.
template <class F>
std::optional<Failure> attempt(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (const Error& e) {
    const std::string prefix = e.field() + " = " + e.value() + ": ", what = e.what();
    return Failure{e.field(), e.value(),
                   what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what};
  } catch (const std::exception& e) {
    return Failure{"", "", e.what(), false};
  }
}

// The checks every rank makes before the ring starts: the same shape and options as rank 0's,
// options the ring supports, and this rank's call as attention() would check it.
std::optional<Failure> check(MPI_Comm comm, const Kernel& kernel, const RingShape& shape,
                                 const Options& options, const Tensors& local, bool backward,
                                 const Gradients* gradients) {
  // rank 0's values, sent to every rank whatever this rank's input (a collective every rank makes)
  unsigned long long fields[7] = {shape.batch, shape.q_heads,   shape.kv_heads,
                                  shape.seq_len, shape.head_dim, options.causal ? 1ull : 0ull,
                                  (unsigned long long)options.threads};
  unsigned long long root[7];
  std::memcpy(root, fields, sizeof fields);
  MPI_Bcast(root, 7, MPI_UNSIGNED_LONG_LONG, 0, comm);
  float scale = options.scale.value_or(0.0f), root_scale = scale;
  MPI_Bcast(&root_scale, 1, MPI_FLOAT, 0, comm);
  return attempt([&] {
    static const char* kNames[7] = {"batch",    "q_heads", "kv_heads", "seq_len",
                                    "head_dim", "causal",  "threads"};
    for (int f = 0; f < 6; ++f) {  // threads may differ per rank
      if (fields[f] != root[f]) {
        throw Error(kNames[f], std::to_string(fields[f]),
                    "rank 0 has " + std::to_string(root[f]) +
                        ": every rank must call with the same shape and options");
      }
    }
    if (!(std::memcmp(&scale, &root_scale, sizeof scale) == 0)) {
      throw Error("options.scale", std::to_string(scale),
                  "rank 0 has " + std::to_string(root_scale) +
                      ": every rank must call with the same options");
    }
    if (options.window_left)
      throw Error("options.window_left", std::to_string(*options.window_left),
                  "ring attention takes no sliding window");
    if (options.window_right)
      throw Error("options.window_right", std::to_string(*options.window_right),
                  "ring attention takes no sliding window");
    if (!options.alibi_slopes.empty())
      throw Error("options.alibi_slopes", std::to_string(options.alibi_slopes.size()) + " slopes",
                  "ring attention takes no ALiBi (its distances need the keys' global positions)");
    if (!options.mask.empty())
      throw Error("options.mask", "a mask tensor", "ring attention takes no mask tensor");
    if (local.kv_cache != nullptr)
      throw Error("tensors.kv_cache", "a KvCache", "ring attention takes K and V, not a cache");
    if (shape.seq_len == 0)
      throw Error("seq_len", "0", "the sequence needs at least one position");
    const std::size_t n = local_len(shape.seq_len, size_of(comm), rank_of(comm), options.causal);
    // This rank's rows as one local call (a rank with no rows still checks its options).
    const Shape call{shape.batch, shape.q_heads, shape.kv_heads, std::max<std::size_t>(n, 1),
                     std::max<std::size_t>(n, 1), shape.head_dim};
    if (backward && n > 0) {
      if (local.o == nullptr) throw Error("forward.o", "null", "the backward needs the forward's O");
      if (local.lse == nullptr)
        throw Error("forward.lse", "null", "the backward needs the forward's LSE");
    }
    if (n == 0) {  // no rows here: the shape and options alone
      validate(call, options);
    } else if (backward) {
      validate_backward(kernel, call, options, local, *gradients);
    } else {
      validate(kernel, call, options, local);
    }
  });
}

// Rows [begin, begin + len) of each of `heads` heads of `rows` rows of `width` floats, gathered
// into heads x len rows (and scattered back). No rows: nothing (an empty span's pointers may be
// null).
void gather(const float* src, std::size_t heads, std::size_t rows, std::size_t width,
            std::size_t begin, std::size_t len, float* dst) {
  if (len == 0) return;
  for (std::size_t h = 0; h < heads; ++h)
    std::memcpy(dst + h * len * width, src + (h * rows + begin) * width, len * width * sizeof(float));
}
void scatter(const float* src, std::size_t heads, std::size_t rows, std::size_t width,
             std::size_t begin, std::size_t len, float* dst) {
  if (len == 0) return;
  for (std::size_t h = 0; h < heads; ++h)
    std::memcpy(dst + (h * rows + begin) * width, src + h * len * width, len * width * sizeof(float));
}

// How a query span meets a key span: every key before every query (all), the same span (the
// causal diagonal), or every key after (none). Spans of the one layout never overlap otherwise.
enum class Meet { all, diagonal, none };
Meet meet(KeySpan q, KeySpan k, bool causal) {
  if (!causal || k.end <= q.begin) return Meet::all;
  if (k.begin == q.begin) return Meet::diagonal;
  return Meet::none;
}

// One rank's view of the ring: its spans, and the spans of the block it holds at each step.
struct Ring {
  MPI_Comm comm;
  std::size_t ranks, rank;
  RingShape shape;
  bool causal;
  std::vector<KeySpan> mine;  // this rank's spans (its Q rows)
  std::size_t q_heads_all() const { return shape.batch * shape.q_heads; }
  std::size_t kv_heads_all() const { return shape.batch * shape.kv_heads; }
  std::size_t owner(std::size_t step) const { return (rank + ranks - step % ranks) % ranks; }
  std::vector<KeySpan> spans(std::size_t owner) const {
    return local_spans(shape.seq_len, ranks, owner, causal);
  }
  // Floats of one span's K (or V) in a travelling block, and of the largest block's K and V.
  std::size_t kv_floats(std::size_t len) const { return kv_heads_all() * len * shape.head_dim; }
  std::size_t block_floats() const {
    std::size_t most = 0;
    for (std::size_t r = 0; r < ranks; ++r)
      most = std::max(most, local_len(shape.seq_len, ranks, r, causal));
    return 2 * kv_floats(most);
  }
  int left() const { return int((rank + ranks - 1) % ranks); }
  int right() const { return int((rank + 1) % ranks); }
};

// A travelling block's layout: every span's K, then every span's V, each [heads][len][d].
struct BlockView {
  std::vector<const float*> k, v;
};
BlockView view(const Ring& ring, const std::vector<KeySpan>& spans, const float* block) {
  BlockView b;
  std::size_t total = 0;
  for (const KeySpan& s : spans) total += s.size();
  std::size_t at = 0;
  for (const KeySpan& s : spans) {
    b.k.push_back(block + ring.kv_floats(at));
    b.v.push_back(block + ring.kv_floats(total) + ring.kv_floats(at));
    at += s.size();
  }
  return b;
}

// This rank's K and V (local layout) as a travelling block.
void pack_block(const Ring& ring, const float* k, const float* v, float* block) {
  const std::size_t n = local_len(ring.shape.seq_len, ring.ranks, ring.rank, ring.causal);
  const BlockView b = view(ring, ring.mine, block);
  std::size_t at = 0;
  for (std::size_t j = 0; j < ring.mine.size(); ++j) {
    const std::size_t len = ring.mine[j].size();
    gather(k, ring.kv_heads_all(), n, ring.shape.head_dim, at, len, const_cast<float*>(b.k[j]));
    gather(v, ring.kv_heads_all(), n, ring.shape.head_dim, at, len, const_cast<float*>(b.v[j]));
    at += len;
  }
}

Shape pair_shape(const Ring& ring, std::size_t q_len, std::size_t kv_len) {
  return {ring.shape.batch, ring.shape.q_heads, ring.shape.kv_heads, q_len, kv_len,
          ring.shape.head_dim};
}
Options pair_options(const Options& options, Meet m) {
  Options o = options;
  o.causal = m == Meet::diagonal;  // equal spans: either alignment is the same diagonal
  return o;
}

double now() { return MPI_Wtime(); }

// Merges a partial result (o_p, lse_p) of `rows` rows into the running (o, lse): weights
// exp(lse - lse_new) in double, rows with no keys yet (-inf) replaced.
void merge(std::size_t rows, std::size_t d, const float* o_p, const float* lse_p, float* o,
           float* lse) {
  for (std::size_t r = 0; r < rows; ++r) {
    const double la = lse[r], lb = lse_p[r];
    if (lb == -INFINITY) continue;
    if (la == -INFINITY) {
      std::memcpy(o + r * d, o_p + r * d, d * sizeof(float));
      lse[r] = lse_p[r];
      continue;
    }
    const double m = std::max(la, lb);
    const double l = m + std::log(std::exp(la - m) + std::exp(lb - m));
    const double wa = std::exp(la - l), wb = std::exp(lb - l);
    for (std::size_t c = 0; c < d; ++c)
      o[r * d + c] = float(wa * double(o[r * d + c]) + wb * double(o_p[r * d + c]));
    lse[r] = float(std::isnan(l) ? NAN : l);
  }
}

// Posts the exchange of a travelling buffer: send `out` right, receive `in` from the left.
void exchange(const Ring& ring, const float* out, float* in, std::size_t floats, int tag,
              MPI_Request* requests) {
  MPI_Irecv(in, int(floats), MPI_FLOAT, ring.left(), tag, ring.comm, &requests[0]);
  MPI_Isend(out, int(floats), MPI_FLOAT, ring.right(), tag, ring.comm, &requests[1]);
}

}  // namespace

void on_every_rank(MPI_Comm comm, const std::function<void()>& f) { agree(comm, attempt(f)); }

std::vector<float> local_rows(const float* whole, std::size_t heads, std::size_t seq_len,
                              std::size_t width, std::size_t ranks, std::size_t rank, bool causal) {
  std::vector<float> out;
  out.reserve(heads * local_len(seq_len, ranks, rank, causal) * width);
  for (std::size_t h = 0; h < heads; ++h)
    for (const KeySpan& s : local_spans(seq_len, ranks, rank, causal))
      out.insert(out.end(), whole + (h * seq_len + s.begin) * width,
                 whole + (h * seq_len + s.end) * width);
  return out;
}

void place_rows(const float* local, std::size_t heads, std::size_t seq_len, std::size_t width,
                std::size_t ranks, std::size_t rank, bool causal, float* whole) {
  for (std::size_t h = 0; h < heads; ++h) {
    for (const KeySpan& s : local_spans(seq_len, ranks, rank, causal)) {
      std::copy_n(local, s.size() * width, whole + (h * seq_len + s.begin) * width);
      local += s.size() * width;
    }
  }
}

std::vector<KeySpan> local_spans(std::size_t seq_len, std::size_t ranks, std::size_t rank,
                                 bool causal) {
  if (!causal) return {piece(seq_len, ranks, rank)};
  return {piece(seq_len, 2 * ranks, rank), piece(seq_len, 2 * ranks, 2 * ranks - 1 - rank)};
}

std::size_t local_len(std::size_t seq_len, std::size_t ranks, std::size_t rank, bool causal) {
  std::size_t n = 0;
  for (const KeySpan& s : local_spans(seq_len, ranks, rank, causal)) n += s.size();
  return n;
}

const Kernel& ring_attention(MPI_Comm comm, const Kernel& kernel, const RingShape& shape,
                             const Options& options, const Tensors& local, Workspace& ws,
                             RingTimings* timings) {
  agree(comm, check(comm, kernel, shape, options, local, false, nullptr));
  const double start = now();
  const Ring ring{comm,  size_of(comm), rank_of(comm), shape, options.causal,
                  local_spans(shape.seq_len, size_of(comm), rank_of(comm), options.causal)};
  const std::size_t d = shape.head_dim, n = local_len(shape.seq_len, ring.ranks, ring.rank,
                                                        options.causal);
  const std::size_t qh = ring.q_heads_all();
  // This rank's Q and running O and LSE per span, [heads][len][d]; two travelling blocks.
  std::vector<std::vector<float>> q(ring.mine.size()), o(ring.mine.size()), lse(ring.mine.size());
  std::size_t at = 0, widest = 0;
  for (std::size_t i = 0; i < ring.mine.size(); ++i) {
    const std::size_t len = ring.mine[i].size();
    q[i].resize(qh * len * d);
    gather(local.q, qh, n, d, at, len, q[i].data());
    o[i].assign(qh * len * d, 0.0f);
    lse[i].assign(qh * len, -INFINITY);
    at += len;
    widest = std::max(widest, len);
  }
  std::vector<float> blocks[2] = {std::vector<float>(ring.block_floats()),
                                  std::vector<float>(ring.block_floats())};
  pack_block(ring, local.k, local.v, blocks[0].data());
  std::vector<float> o_part(qh * widest * d), lse_part(qh * widest);
  const Kernel* ran = &kernel;
  for (std::size_t step = 0; step < ring.ranks; ++step) {
    const float* held = blocks[step % 2].data();
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (step + 1 < ring.ranks)
      exchange(ring, held, blocks[(step + 1) % 2].data(), ring.block_floats(), 1, requests);
    const double computing = now();
    const std::vector<KeySpan> spans = ring.spans(ring.owner(step));
    const BlockView block = view(ring, spans, held);
    const auto failure = attempt([&] {
      for (std::size_t i = 0; i < ring.mine.size(); ++i) {
        for (std::size_t j = 0; j < spans.size(); ++j) {
          const Meet m = meet(ring.mine[i], spans[j], options.causal);
          if (m == Meet::none || ring.mine[i].empty() || spans[j].empty()) continue;
          const std::size_t len = ring.mine[i].size();
          ran = &attention(kernel, pair_shape(ring, len, spans[j].size()), pair_options(options, m),
                           Tensors{.q = q[i].data(),
                                   .k = block.k[j],
                                   .v = block.v[j],
                                   .o = o_part.data(),
                                   .lse = lse_part.data()},
                           ws);
          merge(qh * len, d, o_part.data(), lse_part.data(), o[i].data(), lse[i].data());
        }
      }
    });
    const double waiting = now();
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    if (timings != nullptr) {
      timings->compute.push_back(waiting - computing);
      timings->wait.push_back(now() - waiting);
    }
    agree(comm, failure);
  }
  at = 0;
  for (std::size_t i = 0; i < ring.mine.size(); ++i) {
    const std::size_t len = ring.mine[i].size();
    scatter(o[i].data(), qh, n, d, at, len, local.o);
    if (local.lse != nullptr) scatter(lse[i].data(), qh, n, 1, at, len, local.lse);
    at += len;
  }
  if (timings != nullptr) timings->total = now() - start;
  return *ran;
}

const Kernel& ring_attention_backward(MPI_Comm comm, const Kernel& kernel, const RingShape& shape,
                                      const Options& options, const Tensors& forward,
                                      const Gradients& gradients, Workspace& ws,
                                      RingTimings* timings) {
  agree(comm, check(comm, kernel, shape, options, forward, true, &gradients));
  const double start = now();
  const Ring ring{comm,  size_of(comm), rank_of(comm), shape, options.causal,
                  local_spans(shape.seq_len, size_of(comm), rank_of(comm), options.causal)};
  const std::size_t d = shape.head_dim, n = local_len(shape.seq_len, ring.ranks, ring.rank,
                                                        options.causal);
  const std::size_t qh = ring.q_heads_all(), kvh = ring.kv_heads_all();
  // Per span of this rank: Q, O, LSE and dO gathered ([heads][len][d]), dQ accumulated.
  const std::size_t count = ring.mine.size();
  std::vector<std::vector<float>> q(count), o(count), lse(count), d_o(count), dq(count);
  std::size_t at = 0, widest = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t len = ring.mine[i].size();
    for (auto [src, dst, width] : {std::tuple{forward.q, &q[i], d}, std::tuple{static_cast<const float*>(forward.o), &o[i], d},
                                   std::tuple{gradients.d_o, &d_o[i], d},
                                   std::tuple{static_cast<const float*>(forward.lse), &lse[i],
                                              std::size_t{1}}}) {
      dst->resize(qh * len * width);
      gather(src, qh, n, width, at, len, dst->data());
    }
    dq[i].assign(qh * len * d, 0.0f);
    at += len;
    widest = std::max(widest, len);
  }
  // Two travelling K/V blocks; the travelling dK/dV sums (the same layout): the one received,
  // two sent in turn, and this step's own part.
  const std::size_t bf = ring.block_floats();
  std::vector<float> blocks[2] = {std::vector<float>(bf), std::vector<float>(bf)};
  std::vector<float> sums_in(bf), sums_out[2] = {std::vector<float>(bf), std::vector<float>(bf)};
  std::vector<float> part(bf);
  pack_block(ring, forward.k, forward.v, blocks[0].data());
  std::size_t widest_kv = 0;
  for (std::size_t r = 0; r < ring.ranks; ++r)
    for (const KeySpan& s : ring.spans(r)) widest_kv = std::max(widest_kv, s.size());
  std::vector<float> dq_part(qh * widest * d), dk_part(kvh * widest_kv * d),
      dv_part(kvh * widest_kv * d);
  MPI_Request sent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  const Kernel* ran = &kernel;
  auto add = [](float* to, const float* x, std::size_t count) {
    for (std::size_t e = 0; e < count; ++e) to[e] += x[e];
  };
  for (std::size_t step = 0; step < ring.ranks; ++step) {
    const float* held = blocks[step % 2].data();
    MPI_Request kv[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sums = MPI_REQUEST_NULL;
    if (step + 1 < ring.ranks) exchange(ring, held, blocks[(step + 1) % 2].data(), bf, 1, kv);
    if (step > 0)  // the sums of the block held now, from the rank that held it before
      MPI_Irecv(sums_in.data(), int(bf), MPI_FLOAT, ring.left(), 2, comm, &sums);
    const double computing = now();
    const std::vector<KeySpan> spans = ring.spans(ring.owner(step));
    const BlockView block = view(ring, spans, held);
    const BlockView mine = view(ring, spans, part.data());
    std::size_t block_len = 0;
    for (const KeySpan& s : spans) block_len += s.size();
    std::fill(part.begin(), part.begin() + std::ptrdiff_t(2 * ring.kv_floats(block_len)), 0.0f);
    const auto failure = attempt([&] {
      for (std::size_t i = 0; i < count; ++i) {
        for (std::size_t j = 0; j < spans.size(); ++j) {
          const Meet m = meet(ring.mine[i], spans[j], options.causal);
          if (m == Meet::none || ring.mine[i].empty() || spans[j].empty()) continue;
          const std::size_t len = ring.mine[i].size(), kv_len = spans[j].size();
          ran = &attention_backward(
              kernel, pair_shape(ring, len, kv_len), pair_options(options, m),
              Tensors{.q = q[i].data(),
                      .k = block.k[j],
                      .v = block.v[j],
                      .o = o[i].data(),
                      .lse = lse[i].data()},
              Gradients{
                  .d_o = d_o[i].data(), .dq = dq_part.data(), .dk = dk_part.data(), .dv = dv_part.data()},
              ws);
          add(dq[i].data(), dq_part.data(), qh * len * d);
          add(const_cast<float*>(mine.k[j]), dk_part.data(), kvh * kv_len * d);
          add(const_cast<float*>(mine.v[j]), dv_part.data(), kvh * kv_len * d);
        }
      }
    });
    const double waiting = now();
    MPI_Waitall(2, kv, MPI_STATUSES_IGNORE);
    // The block's sums so far plus this rank's part, sent on to the rank that holds it next (after
    // the last step: its owner).
    std::vector<float>& out = sums_out[step % 2];
    MPI_Wait(&sent[step % 2], MPI_STATUS_IGNORE);
    if (step > 0) {
      MPI_Wait(&sums, MPI_STATUS_IGNORE);
      for (std::size_t e = 0; e < bf; ++e) out[e] = sums_in[e] + part[e];
    } else {
      out = part;
    }
    if (ring.ranks > 1)
      MPI_Isend(out.data(), int(bf), MPI_FLOAT, ring.right(), 2, comm, &sent[step % 2]);
    if (timings != nullptr) {
      timings->compute.push_back(waiting - computing);
      timings->wait.push_back(now() - waiting);
    }
    agree(comm, failure);
  }
  // This rank's own block's sums, home from the left after the last step (one rank: its own).
  const float* home = sums_out[(ring.ranks - 1) % 2].data();
  if (ring.ranks > 1) {
    MPI_Recv(sums_in.data(), int(bf), MPI_FLOAT, ring.left(), 2, comm, MPI_STATUS_IGNORE);
    home = sums_in.data();
  }
  MPI_Waitall(2, sent, MPI_STATUSES_IGNORE);
  const BlockView sums_home = view(ring, ring.mine, home);
  at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t len = ring.mine[i].size();
    scatter(dq[i].data(), qh, n, d, at, len, gradients.dq);
    scatter(sums_home.k[i], kvh, n, d, at, len, gradients.dk);
    scatter(sums_home.v[i], kvh, n, d, at, len, gradients.dv);
    at += len;
  }
  if (timings != nullptr) timings->total = now() - start;
  return *ran;
}

}  // namespace attnbench::ring
