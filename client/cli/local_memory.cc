#include "client/cli/local_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/train/memory.h"

namespace sparrow::cli {
namespace {

// cgroup v2's memory.max of this process ("max" or absent: none).
int64_t CgroupMemoryMax() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  int64_t bytes = 0;
  if (!std::getline(in, text) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &bytes)) {
    return 0;
  }
  return bytes;
}

}  // namespace

MemoryLimit LocalMemoryLimit(double max_gib) {
  if (max_gib > 0) {
    return {static_cast<int64_t>(max_gib * (int64_t{1} << 30)),
            absl::StrFormat("--max-memory %g", max_gib)};
  }
  MemoryLimit limit{
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE),
      "this machine's memory"};
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      static_cast<int64_t>(as.rlim_cur) < limit.bytes) {
    limit = {static_cast<int64_t>(as.rlim_cur),
             "the address-space limit (ulimit -v)"};
  }
  const int64_t cgroup = CgroupMemoryMax();
  if (cgroup > 0 && cgroup < limit.bytes) {
    limit = {cgroup, "the container's memory limit (cgroup memory.max)"};
  }
  return limit;
}

absl::Status CheckLocalMemory(const std::vector<core::TrainConfig>& configs,
                              const std::vector<std::string>& labels,
                              int concurrent, const LocalDataSize& data,
                              const MemoryLimit& limit) {
  std::vector<core::MemoryEstimate> estimates;
  for (size_t i = 0; i < configs.size(); ++i) {
    absl::StatusOr<core::MemoryEstimate> e = core::EstimateMemory(
        configs[i], data.inputs, data.outputs, data.rows, data.file_bytes);
    if (!e.ok()) {
      return absl::Status(e.status().code(),
                          absl::StrCat(i < labels.size() ? labels[i] : "",
                                       e.status().message()));
    }
    estimates.push_back(*std::move(e));
  }
  std::sort(estimates.begin(), estimates.end(),
            [](const auto& a, const auto& b) { return a.total > b.total; });
  const int n = std::clamp<int>(concurrent, 1, estimates.size());
  double total = 0;  // double: each estimate saturates at INT64_MAX / 2
  for (int i = 0; i < n; ++i) total += estimates[i].total;
  if (total <= static_cast<double>(limit.bytes)) return absl::OkStatus();
  const core::MemoryEstimate& largest = estimates.front();
  return absl::ResourceExhaustedError(absl::StrCat(
      n > 1 ? absl::StrFormat("the %d trials trained at once would need", n)
            : std::string("the run would need"),
      " about ", core::FormatBytes(static_cast<int64_t>(std::min(total, 9e18))),
      " of memory, mostly for ", largest.dominant, "; ", limit.source, " is ",
      core::FormatBytes(limit.bytes), ". Use a smaller model or less data",
      largest.curvature > largest.total / 2
          ? ", or a first-order method or L-BFGS, which need no n x n matrix"
          : "",
      n > 1 ? ", or train fewer trials at once (--threads)" : "",
      "; --max-memory GIB overrides the limit when the estimate is too "
      "high"));
}

}  // namespace sparrow::cli
