// Subnormal doubles flushed to zero on the calling thread, for a scope.
//
// Sensitivities that decay along a long trace pass through the subnormal
// range (below 2.2e-308), where x86 arithmetic takes a microcode assist of
// ~100 cycles per operation: a Gauss-Newton epoch on one 90,000-sample record
// ran 8x slower once its rows held them. Values that small are zero for any
// least-squares row, so flushing them changes no result that matters.
#ifndef SPARROW_CORE_UTIL_DENORMALS_H_
#define SPARROW_CORE_UTIL_DENORMALS_H_

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace sparrow::core {

// Sets the SSE control register's flush-to-zero and denormals-are-zero bits
// while in scope and restores the previous mode after. A no-op on machines
// without SSE2.
class ScopedFlushDenormals {
 public:
#if defined(__SSE2__)
  ScopedFlushDenormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
  }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }
#else
  ScopedFlushDenormals() = default;
#endif
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
#if defined(__SSE2__)
  static constexpr unsigned int kFlushToZero = 0x8000;       // MXCSR bit 15
  static constexpr unsigned int kDenormalsAreZero = 0x0040;  // MXCSR bit 6
  unsigned int saved_;
#endif
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_UTIL_DENORMALS_H_
