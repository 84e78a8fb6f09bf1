// A job's progress as columns for plotting, kept in memory and brought up to
// date from the store on each request (only the events after the last one
// read), and the min/max downsampling of the series endpoint.
#ifndef SPARROW_SERVER_HTTP_SERIES_H_
#define SPARROW_SERVER_HTTP_SERIES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/store/store.h"

namespace sparrow::server::http {

// One state change of the job.
struct StateMark {
  int64_t seq = 0;
  int state = 0;  // v1::Job::State
  int64_t unix_nanos = 0;
  std::string reason;
};

// The job's iteration events, one entry per event in every column; a value
// the event did not carry is NaN.
struct SeriesColumns {
  std::vector<int64_t> seq;
  std::vector<int> iteration;
  std::vector<double> elapsed_seconds, loss, validation_metric, sparsity_pct,
      step_size;
  std::vector<StateMark> states;
  int64_t last_seq = 0;               // the last event read (either kind)
  double best_loss, best_validation;  // NaN until one is seen

  SeriesColumns();
  size_t size() const { return seq.size(); }
  size_t bytes() const;
};

// The indices of the samples to plot: all of them when there are at most
// `points`; otherwise the samples are cut into points / 2 buckets of equal
// length and each bucket keeps its smallest and its largest value (in sample
// order), so that no spike is lost. Ascending.
std::vector<size_t> DownsampleMinMax(absl::Span<const double> values,
                                     int points);

// Thread-safe. Least recently used jobs are dropped beyond max_bytes.
class SeriesCache {
 public:
  SeriesCache(Store* store, size_t max_bytes);

  // Brings the job's columns up to date and calls `use` with them (under the
  // job's lock: `use` must not call back into the cache).
  absl::Status Use(const std::string& job_id,
                   const std::function<void(const SeriesColumns&)>& use);

 private:
  struct Entry {
    std::mutex mu;
    SeriesColumns columns;
  };
  absl::Status Refresh(const std::string& job_id, Entry* entry);
  std::shared_ptr<Entry> Acquire(const std::string& job_id);
  void Account(const std::string& job_id, size_t bytes);

  Store* const store_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::map<std::string, size_t> bytes_;
  std::list<std::string> lru_;  // most recent first
  size_t total_bytes_ = 0;
};

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_SERIES_H_
