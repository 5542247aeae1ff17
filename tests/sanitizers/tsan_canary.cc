// A data race seeded on purpose: scripts/tsan.sh builds and runs this first and requires
// ThreadSanitizer to report it, so that "no report" from the suites means the detector, Archer
// and the suppressions left races visible.
#include <cstdio>

int main() {
  int counter = 0;
#pragma omp parallel num_threads(2)
  {
    counter += 1;  // both threads read and write it, unsynchronised
  }
  std::printf("%d\n", counter);
  return 0;
}
