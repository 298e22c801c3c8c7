// The ring consumer (built where the installed package has attnbench::ring): one causal ring
// forward over the ranks of MPI_COMM_WORLD through the installed libraries, each rank's rows
// checked against a direct sum. Run under mpirun (tests/consumer_test.cmake: 2 ranks).
#include <mpi.h>
#include <attnbench/attnbench.hpp>
#include <attnbench/ring.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::size_t n = 7, d = 4;
  std::vector<float> q(n * d), k(n * d), v(n * d), want(n * d);
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = std::sin(float(i)), k[i] = std::cos(float(i)), v[i] = float(i % 5);
  for (std::size_t i = 0; i < n; ++i) {  // causal: row i sees keys 0..i
    double s[n], m = -INFINITY, l = 0;
    for (std::size_t j = 0; j <= i; ++j) {
      s[j] = 0;
      for (std::size_t c = 0; c < d; ++c) s[j] += double(q[i * d + c]) * k[j * d + c] / 2.0;
      m = std::fmax(m, s[j]);
    }
    for (std::size_t j = 0; j <= i; ++j) l += (s[j] = std::exp(s[j] - m));
    for (std::size_t c = 0; c < d; ++c) {
      double o = 0;
      for (std::size_t j = 0; j <= i; ++j) o += s[j] / l * v[j * d + c];
      want[i * d + c] = float(o);
    }
  }
  namespace ring = attnbench::ring;
  const auto R = std::size_t(ranks), r = std::size_t(rank);
  std::vector<float> lq = ring::local_rows(q.data(), 1, n, d, R, r, true),
                     lk = ring::local_rows(k.data(), 1, n, d, R, r, true),
                     lv = ring::local_rows(v.data(), 1, n, d, R, r, true),
                     lwant = ring::local_rows(want.data(), 1, n, d, R, r, true), lo(lq.size());
  attnbench::Options options;
  options.causal = true;
  attnbench::Workspace ws;
  const attnbench::Kernel& ran =
      ring::ring_attention(MPI_COMM_WORLD, attnbench::default_kernel(), {1, 1, 1, n, d}, options,
                           {lq.data(), lk.data(), lv.data(), lo.data()}, ws);
  double worst = 0;
  for (std::size_t i = 0; i < lo.size(); ++i) worst = std::fmax(worst, std::fabs(lo[i] - lwant[i]));
  double all = 0;
  MPI_Allreduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("consumer ring: %d ranks, %.*s, max error %.3g\n", ranks, int(ran.name.size()),
                ran.name.data(), all);
  MPI_Finalize();
  return all < 1e-5 ? 0 : 1;
}
