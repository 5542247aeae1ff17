// Thread control for OpenMP and OpenBLAS (whose own pool is separate from OpenMP's).
#include "nnperf/core/threads.h"

#include <fmt/format.h>
#include <omp.h>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"

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
  const int cpus = cpu_info().logical_cpus;
  if (n <= 0) n = cpus;
  if (n > cpus) {
    // More threads than CPUs only time the scheduler (and a huge count can exhaust memory for
    // thread stacks and hang OpenBLAS's pool at exit): capped, and the cap is what gets recorded.
    static int warned_for = 0;  // once per process and count (the activation study runs 8 times)
    if (warned_for != n) warn("--threads {}: this machine has {} logical CPUs; using {}", n, cpus, cpus);
    warned_for = n;
    n = cpus;
  }
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
  g_threads = n;
  return n;
}

void set_blas_threads(int n) {
  // OpenBLAS's OpenMP build sets OpenMP's default team to n as well; ours stays (and that build
  // then keeps to one thread, as its calls check its own count before OpenMP's).
  const int team = omp_get_max_threads();
  openblas_set_num_threads(n < 1 ? 1 : n);
  omp_set_num_threads(team);
}

bool blas_uses_openmp() { return openblas_get_parallel() == 2; }

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
