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

// Folds units (blocks, or single events) arriving in index order into
// `buckets` buckets over the indices [0, span) (a later index joins the last
// bucket) and appends each bucket's extremes to the series, in seq order;
// every unit is also folded into the total. Holds one bucket at a time.
class Bucketer {
 public:
  Bucketer(int64_t span, int64_t buckets, Series* out)
      : span_(std::max<int64_t>(span, 1)), buckets_(buckets), out_(out) {}

  void Add(const v1::SeriesBlock& block) {
    Start(block.index());
    MergeSeriesBlock(block, &merged_);
  }
  void Add(const v1::SeriesPoint& point, int64_t index) {
    Start(index);
    AddSeriesPoint(point, &merged_);
  }
  void Finish() { Flush(); }

 private:
  void Start(int64_t index) {
    const int64_t bucket = std::min(index, span_ - 1) * buckets_ / span_;
    if (bucket != bucket_) Flush();
    bucket_ = bucket;
  }
  void Flush() {
    if (merged_.count() == 0) return;
    MergeSeriesBlock(merged_, &out_->total);
    const v1::SeriesPoint* first = &merged_.min();
    const v1::SeriesPoint* second = &merged_.max();
    if (second->seq() < first->seq()) std::swap(first, second);
    out_->points.push_back(*first);
    if (second->seq() != first->seq()) out_->points.push_back(*second);
    merged_.Clear();
  }

  const int64_t span_, buckets_;
  Series* const out_;
  int64_t bucket_ = -1;
  v1::SeriesBlock merged_;
};

StateMark Mark(int64_t seq, v1::Job::State state,
               const google::protobuf::Timestamp& time,
               const std::string& reason) {
  return {seq, state, TimeUtil::TimestampToNanoseconds(time), reason};
}

// Every event up to seq last_seq: each its own bucket when there are at most
// `points`, else points / 2 buckets.
absl::StatusOr<Series> FromEvents(Store* store, const std::string& job_id,
                                  int64_t last_seq, int points) {
  Series out;
  const int64_t span = last_seq + 1;
  Bucketer bucketer(span, last_seq <= points ? span : points / 2, &out);
  while (out.last_seq < last_seq) {
    const int limit = static_cast<int>(
        std::min<int64_t>(kReadBatch, last_seq - out.last_seq));
    SPARROW_ASSIGN_OR_RETURN(std::vector<v1::ProgressEvent> events,
                             store->ListEvents(job_id, out.last_seq, limit));
    for (const v1::ProgressEvent& e : events) {
      out.last_seq = e.seq();
      if (e.kind() == v1::ProgressEvent::STATE) {
        out.states.push_back(Mark(e.seq(), e.state(), e.time(), e.reason()));
      } else if (e.kind() == v1::ProgressEvent::ITERATION && !e.has_trial()) {
        // A sweep's copies of its trials' events are in the trials' series.
        bucketer.Add(ToSeriesPoint(e), e.seq());
      }
    }
    if (static_cast<int>(events.size()) < limit) break;
  }
  bucketer.Finish();
  return out;
}

absl::StatusOr<Series> FromBlocks(Store* store, const std::string& job_id,
                                  int64_t last_seq, int level,
                                  int64_t buckets) {
  Series out;
  Bucketer bucketer(last_seq / SeriesBlockSize(level) + 1, buckets, &out);
  SPARROW_ASSIGN_OR_RETURN(
      v1::Job job,
      store->ScanSeriesBlocks(job_id, level, [&](const v1::SeriesBlock& block) {
        bucketer.Add(block);
      }));
  bucketer.Finish();
  out.last_seq = job.last_seq();
  for (const v1::Job::Transition& t : job.history()) {
    out.states.push_back(Mark(t.seq(), t.state(), t.time(), t.reason()));
  }
  return out;
}

}  // namespace

absl::StatusOr<Series> LoadSeries(Store* store, const std::string& job_id,
                                  int64_t last_seq, int points) {
  const int64_t buckets = std::max(1, points / 2);
  const int level = ChooseLevel(last_seq, buckets);
  if (level == 0) return FromEvents(store, job_id, last_seq, points);
  return FromBlocks(store, job_id, last_seq, level, buckets);
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
