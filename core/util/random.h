// Deterministic random numbers. std::normal_distribution differs between
// standard libraries, so Sparrow draws normals itself (Box-Muller) to keep
// "same seed = same model" across builds.
#ifndef SPARROW_CORE_UTIL_RANDOM_H_
#define SPARROW_CORE_UTIL_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace sparrow::core {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Standard normal.
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = Uniform();
    while (u1 <= 0.0) u1 = Uniform();
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return engine_() % n; }
  // Fisher-Yates shuffle, identical on every platform.
  template <typename T>
  void Shuffle(std::vector<T>* v) {
    for (size_t i = v->size(); i > 1; --i)
      std::swap((*v)[i - 1], (*v)[Below(i)]);
  }
  uint64_t Next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace sparrow::core

#endif  // SPARROW_CORE_UTIL_RANDOM_H_
