#include "server/http/series.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/store/series_blocks.h"

namespace sparrow::server::http {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kReadBatch = 4096;

// The largest level whose blocks still put two in each of `buckets` buckets
// of a job with last_seq events; 0 when even level 1 does not.
int ChooseLevel(int64_t last_seq, int64_t buckets) {
  int level = 0;
  while (level < kSeriesLevels &&
         2 * SeriesBlockSize(level + 1) * buckets <= last_seq) {
    ++level;
  }
  return level;
}

// Cuts the units (blocks, or one-event blocks) into buckets by index and
// keeps each bucket's extremes; folds every unit into the total.
void Downsample(const std::vector<v1::SeriesBlock>& units, int64_t max_index,
                int64_t buckets, Series* out) {
  const int64_t span = max_index + 1;
  size_t i = 0;
  while (i < units.size()) {
    const int64_t bucket = units[i].index() * buckets / span;
    v1::SeriesBlock merged;
    while (i < units.size() && units[i].index() * buckets / span == bucket) {
      MergeSeriesBlock(units[i++], &merged);
    }
    MergeSeriesBlock(merged, &out->total);
    const v1::SeriesPoint* first = &merged.min();
    const v1::SeriesPoint* second = &merged.max();
    if (second->seq() < first->seq()) std::swap(first, second);
    out->points.push_back(*first);
    if (second->seq() != first->seq()) out->points.push_back(*second);
  }
}

StateMark Mark(int64_t seq, v1::Job::State state,
               const google::protobuf::Timestamp& time,
               const std::string& reason) {
  return {seq, state, TimeUtil::TimestampToNanoseconds(time), reason};
}

absl::StatusOr<Series> FromEvents(Store* store, const std::string& job_id,
                                  int points) {
  Series out;
  std::vector<v1::SeriesBlock> units;
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(
        std::vector<v1::ProgressEvent> events,
        store->ListEvents(job_id, out.last_seq, kReadBatch));
    for (const v1::ProgressEvent& e : events) {
      out.last_seq = e.seq();
      if (e.kind() == v1::ProgressEvent::STATE) {
        out.states.push_back(Mark(e.seq(), e.state(), e.time(), e.reason()));
      } else if (e.kind() == v1::ProgressEvent::ITERATION) {
        units.push_back(PointBlock(ToSeriesPoint(e)));
      }
    }
    if (static_cast<int>(events.size()) < kReadBatch) break;
  }
  // Few enough: every event is its own bucket.
  const int64_t buckets = static_cast<int64_t>(units.size()) <= points
                              ? out.last_seq + 1
                              : points / 2;
  Downsample(units, out.last_seq, buckets, &out);
  return out;
}

absl::StatusOr<Series> FromBlocks(Store* store, const std::string& job_id,
                                  int level, int64_t buckets) {
  SPARROW_ASSIGN_OR_RETURN(SeriesSnapshot snapshot,
                           store->ListSeriesBlocks(job_id, level));
  Series out;
  out.last_seq = snapshot.job.last_seq();
  for (const v1::Job::Transition& t : snapshot.job.history()) {
    out.states.push_back(Mark(t.seq(), t.state(), t.time(), t.reason()));
  }
  Downsample(snapshot.blocks, out.last_seq / SeriesBlockSize(level), buckets,
             &out);
  return out;
}

}  // namespace

absl::StatusOr<Series> LoadSeries(Store* store, const std::string& job_id,
                                  int64_t last_seq_hint, int points) {
  const int64_t buckets = std::max(1, points / 2);
  const int level = ChooseLevel(last_seq_hint, buckets);
  if (level == 0) return FromEvents(store, job_id, points);
  return FromBlocks(store, job_id, level, buckets);
}

std::vector<size_t> DownsampleMinMax(absl::Span<const double> values,
                                     int points) {
  const size_t n = values.size();
  std::vector<size_t> out;
  if (points < 2 || n <= static_cast<size_t>(points)) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  const size_t buckets = static_cast<size_t>(points) / 2;
  out.reserve(2 * buckets);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = b * n / buckets, end = (b + 1) * n / buckets;
    if (begin == end) continue;
    size_t lo = begin, hi = begin;
    for (size_t i = begin + 1; i < end; ++i) {
      // A NaN never wins a comparison (a NaN at `begin` is replaced by the
      // first number after it).
      if (values[i] < values[lo] || std::isnan(values[lo])) lo = i;
      if (values[i] > values[hi] || std::isnan(values[hi])) hi = i;
    }
    out.push_back(std::min(lo, hi));
    if (lo != hi) out.push_back(std::max(lo, hi));
  }
  return out;
}

}  // namespace sparrow::server::http
