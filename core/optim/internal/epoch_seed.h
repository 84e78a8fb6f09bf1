// The seed of a minibatch method's epoch.
#ifndef SPARROW_CORE_OPTIM_INTERNAL_EPOCH_SEED_H_
#define SPARROW_CORE_OPTIM_INTERNAL_EPOCH_SEED_H_

#include <cstdint>

namespace sparrow::core::internal {

// The seed of the epoch that starts after `updates` updates: SplitMix64's
// finalizer of the run's seed and the update count, so that the epoch's
// shuffle depends on (seed, updates) only and a run resumed from a reported
// state (which holds the update count) draws the uninterrupted run's order.
inline uint64_t EpochSeed(uint64_t seed, long long updates) {
  uint64_t z =
      seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(updates) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace sparrow::core::internal

#endif  // SPARROW_CORE_OPTIM_INTERNAL_EPOCH_SEED_H_
