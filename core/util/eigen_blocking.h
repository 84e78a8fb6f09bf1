// Eigen's matrix products sum over the inner (depth) dimension in blocks of kc
// terms, and Eigen derives kc from the L1 data cache size it reads off the CPU
// at run time (Eigen 3.4, evaluateProductBlockingSizesHeuristic: 248 doubles
// for 32 KiB, 376 for 48 KiB). A product deeper than kc, such as a weight
// gradient summed over a 2000-step record in BPTT, therefore adds its terms in
// another order on a 48 KiB-L1 CPU than on a 32 KiB one, and the same binary,
// spec and seed end at a different model: the MR-damper AMSGrad example over
// 10 seeds gave test BFR median 87.83 with the one and 87.26 with the other
// (bench/README.md, "Results that depended on the CPU"). A job resumed, or a
// trial run, on another machine must reproduce to the bit, so every process
// that trains pins the cache sizes Eigen blocks for.
#ifndef SPARROW_CORE_UTIL_EIGEN_BLOCKING_H_
#define SPARROW_CORE_UTIL_EIGEN_BLOCKING_H_

#include <cstddef>

namespace sparrow::core {

// The cache sizes Eigen's products are blocked for, whatever the CPU. 32 KiB
// is the L1 data cache of most x86-64 CPUs (and of the machines most numbers
// in docs/ were measured on); only the L1 size sets kc, the L2 and L3 sizes
// tile the output (Eigen uses 1.5 MiB for that on one thread, whatever the L2).
// On a CPU with a larger L1 the products lose little speed (bench/README.md).
inline constexpr std::ptrdiff_t kEigenBlockingL1Bytes = 32 * 1024;
inline constexpr std::ptrdiff_t kEigenBlockingL2Bytes = 1024 * 1024;
inline constexpr std::ptrdiff_t kEigenBlockingL3Bytes = 32 * 1024 * 1024;

// Sets Eigen's cache sizes to the constants above. Process-wide and not
// thread-safe: call it before any thread starts (sparrow and sparrowd do so
// first thing in main, the test binaries before main).
void PinEigenBlocking();

}  // namespace sparrow::core

#endif  // SPARROW_CORE_UTIL_EIGEN_BLOCKING_H_
