// Thread control for OpenMP and OpenBLAS (whose own pool is separate from OpenMP's).
#include "nnperf/core/threads.h"

#include <fmt/format.h>
#include <omp.h>

#include "nnperf/core/cpu.h"

extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_parallel(void);
}

namespace nnperf {

namespace {
int g_threads = 0;
}

int set_threads(int n) {
  if (n <= 0) n = cpu_info().logical_cpus;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
  g_threads = n;
  return n;
}

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

int num_threads() { return g_threads > 0 ? g_threads : omp_get_max_threads(); }

int blas_threads() { return openblas_get_num_threads(); }

std::string blas_description() {
  const char* model[] = {"sequential", "pthread", "openmp"};
  const int p = openblas_get_parallel();
  return fmt::format("OpenBLAS ({}; core {}; {} parallel; {} threads)", openblas_get_config(),
                     openblas_get_corename(), (p >= 0 && p <= 2) ? model[p] : "unknown",
                     openblas_get_num_threads());
}

}  // namespace nnperf
