// `sparrow run --local` checks a run's memory estimate (core::EstimateMemory,
// the estimate sparrowd checks against --max-job-memory) before it trains, so
// that a model too large for the machine is refused with what it would need
// instead of ending in an out-of-memory abort part way.
#ifndef SPARROW_CLIENT_CLI_LOCAL_MEMORY_H_
#define SPARROW_CLIENT_CLI_LOCAL_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/train/trainer.h"

namespace sparrow::cli {

// The memory this process may use and where the bound comes from.
struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // "this machine's memory", "ulimit -v", ...
};

// max_gib > 0: that many GiB (--max-memory). Otherwise the smallest of the
// machine's physical memory, the address-space limit (ulimit -v) and the
// cgroup's memory.max (a container's limit).
MemoryLimit LocalMemoryLimit(double max_gib);

// The data of a local run as the estimate counts it.
struct LocalDataSize {
  int inputs = 0, outputs = 0;
  int64_t rows = 0;        // data rows of every file read
  int64_t file_bytes = 0;  // bytes of those files
};

// OK when the `concurrent` largest estimates of `configs` (the trials a sweep
// trains at once) fit in the limit; otherwise ResourceExhausted saying what
// they would need, mostly for what, and how to proceed.
// An estimate's own error (an impossible model, RLS options the network
// refuses) is prefixed with the config's entry in `labels` ("sweep trial 3
// (seed=4): "; may be empty).
absl::Status CheckLocalMemory(const std::vector<core::TrainConfig>& configs,
                              const std::vector<std::string>& labels,
                              int concurrent, const LocalDataSize& data,
                              const MemoryLimit& limit);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_LOCAL_MEMORY_H_
