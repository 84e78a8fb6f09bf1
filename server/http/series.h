// A job's progress curves for plotting (the series endpoint): downsampled
// with min/max buckets, from the store's series blocks (series_blocks.h) for
// a long job and from its events for a short one, so that a request reads a
// bounded number of rows however many events the job has.
#ifndef SPARROW_SERVER_HTTP_SERIES_H_
#define SPARROW_SERVER_HTTP_SERIES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

struct Series {
  int64_t last_seq = 0;                 // the last event included
  std::vector<v1::SeriesPoint> points;  // the samples to plot, in seq order
  std::vector<StateMark> states;
  // Every ITERATION event folded together: the count, the best and the final
  // values.
  v1::SeriesBlock total;
};

// The job's curves as of its event `last_seq` (or later), as at most
// `points` (>= 2) samples. When the job has more than `points` events, its
// seqs are cut into points / 2 buckets of consecutive seqs and each bucket
// keeps its smallest- and its largest-loss event, so that no spike is lost.
// A job of fewer than 8 * points events is read event by event up to
// last_seq; a longer one from the stored blocks of the largest level that
// still puts two blocks in a bucket, at most 8 * points of them (with any
// events after last_seq in the last bucket). Either way one bucket at a time
// is held.
absl::StatusOr<Series> LoadSeries(Store* store, const std::string& job_id,
                                  int64_t last_seq, int points);

// The indices of the samples to plot: all of them when there are at most
// `points`; otherwise the samples are cut into points / 2 buckets of equal
// length and each bucket keeps its smallest and its largest value (in sample
// order), so that no spike is lost. Ascending.
std::vector<size_t> DownsampleMinMax(absl::Span<const double> values,
                                     int points);

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_SERIES_H_
