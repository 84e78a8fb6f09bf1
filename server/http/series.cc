#include "server/http/series.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "google/protobuf/util/time_util.h"

namespace sparrow::server::http {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kReadBatch = 4096;

void Append(const v1::ProgressEvent& e, SeriesColumns* s) {
  s->last_seq = e.seq();
  if (e.kind() == v1::ProgressEvent::STATE) {
    s->states.push_back(
        {e.seq(), e.state(),
         google::protobuf::util::TimeUtil::TimestampToNanoseconds(e.time()),
         e.reason()});
    return;
  }
  if (e.kind() != v1::ProgressEvent::ITERATION) return;
  s->seq.push_back(e.seq());
  s->iteration.push_back(e.iteration());
  s->elapsed_seconds.push_back(e.elapsed_seconds());
  s->loss.push_back(e.loss());
  s->validation_metric.push_back(
      e.has_validation_metric() ? e.validation_metric() : kNaN);
  s->sparsity_pct.push_back(e.has_sparsity_pct() ? e.sparsity_pct() : kNaN);
  s->step_size.push_back(e.has_step_size() ? e.step_size() : kNaN);
  // fmin ignores a NaN operand.
  s->best_loss = std::fmin(s->best_loss, e.loss());
  if (e.has_validation_metric()) {
    s->best_validation = std::fmin(s->best_validation, e.validation_metric());
  }
}

}  // namespace

SeriesColumns::SeriesColumns() : best_loss(kNaN), best_validation(kNaN) {}

size_t SeriesColumns::bytes() const {
  return size() * (sizeof(int64_t) + sizeof(int) + 5 * sizeof(double)) +
         states.size() * sizeof(StateMark);
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

SeriesCache::SeriesCache(Store* store, size_t max_bytes)
    : store_(store), max_bytes_(max_bytes) {}

absl::Status SeriesCache::Use(
    const std::string& job_id,
    const std::function<void(const SeriesColumns&)>& use) {
  std::shared_ptr<Entry> entry = Acquire(job_id);
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(entry->mu);
    if (absl::Status s = Refresh(job_id, entry.get()); !s.ok()) return s;
    use(entry->columns);
    bytes = entry->columns.bytes();
  }
  Account(job_id, bytes);
  return absl::OkStatus();
}

absl::Status SeriesCache::Refresh(const std::string& job_id, Entry* entry) {
  SeriesColumns& s = entry->columns;
  while (true) {
    auto events = store_->ListEvents(job_id, s.last_seq, kReadBatch);
    if (!events.ok()) return events.status();
    for (const v1::ProgressEvent& e : *events) Append(e, &s);
    if (static_cast<int>(events->size()) < kReadBatch) return absl::OkStatus();
  }
}

std::shared_ptr<SeriesCache::Entry> SeriesCache::Acquire(
    const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Entry>& e = entries_[job_id];
  if (e == nullptr) e = std::make_shared<Entry>();
  lru_.remove(job_id);
  lru_.push_front(job_id);
  return e;
}

// Records the job's size and drops the least recently used other jobs while
// the total is over the limit (a request in flight keeps its entry alive
// through its shared_ptr).
void SeriesCache::Account(const std::string& job_id, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(job_id) == 0) return;
  size_t& recorded = bytes_[job_id];
  total_bytes_ = total_bytes_ - recorded + bytes;
  recorded = bytes;
  while (total_bytes_ > max_bytes_ && lru_.size() > 1) {
    const std::string victim = lru_.back();
    if (victim == job_id) break;
    lru_.pop_back();
    total_bytes_ -= bytes_[victim];
    bytes_.erase(victim);
    entries_.erase(victim);
  }
}

}  // namespace sparrow::server::http
