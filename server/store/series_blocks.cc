#include "server/store/series_blocks.h"

#include <cmath>

namespace sparrow::server {
namespace {

// Whether a (a later point) replaces b as the smallest or the largest loss: a
// NaN never wins over a number, and the earlier point wins a tie.
bool Smaller(const v1::SeriesPoint& a, const v1::SeriesPoint& b) {
  return a.loss() < b.loss() || (std::isnan(b.loss()) && !std::isnan(a.loss()));
}
bool Larger(const v1::SeriesPoint& a, const v1::SeriesPoint& b) {
  return a.loss() > b.loss() || (std::isnan(b.loss()) && !std::isnan(a.loss()));
}

}  // namespace

int64_t SeriesBlockSize(int level) { return int64_t{1} << (3 * level); }

v1::SeriesPoint ToSeriesPoint(const v1::ProgressEvent& event) {
  v1::SeriesPoint p;
  p.set_seq(event.seq());
  p.set_iteration(event.iteration());
  p.set_elapsed_seconds(event.elapsed_seconds());
  p.set_loss(event.loss());
  if (event.has_validation_metric()) {
    p.set_validation_metric(event.validation_metric());
  }
  if (event.has_sparsity_pct()) p.set_sparsity_pct(event.sparsity_pct());
  if (event.has_step_size()) p.set_step_size(event.step_size());
  return p;
}

void AddSeriesPoint(const v1::SeriesPoint& point, v1::SeriesBlock* block) {
  if (block->count() == 0 || Smaller(point, block->min())) {
    *block->mutable_min() = point;
  }
  if (block->count() == 0 || Larger(point, block->max())) {
    *block->mutable_max() = point;
  }
  *block->mutable_last() = point;
  block->set_count(block->count() + 1);
  if (point.has_validation_metric()) {
    if (!block->has_best_validation_metric() ||
        point.validation_metric() < block->best_validation_metric()) {
      block->set_best_validation_metric(point.validation_metric());
    }
    block->set_last_validation_metric(point.validation_metric());
  }
  if (point.has_sparsity_pct()) {
    block->set_last_sparsity_pct(point.sparsity_pct());
  }
}

void MergeSeriesBlock(const v1::SeriesBlock& later, v1::SeriesBlock* block) {
  if (later.count() == 0) return;
  if (block->count() == 0) {
    const int64_t index = block->index();
    *block = later;
    block->set_index(index);
    return;
  }
  block->set_count(block->count() + later.count());
  if (Smaller(later.min(), block->min())) *block->mutable_min() = later.min();
  if (Larger(later.max(), block->max())) *block->mutable_max() = later.max();
  *block->mutable_last() = later.last();
  if (later.has_best_validation_metric() &&
      (!block->has_best_validation_metric() ||
       later.best_validation_metric() < block->best_validation_metric())) {
    block->set_best_validation_metric(later.best_validation_metric());
  }
  if (later.has_last_validation_metric()) {
    block->set_last_validation_metric(later.last_validation_metric());
  }
  if (later.has_last_sparsity_pct()) {
    block->set_last_sparsity_pct(later.last_sparsity_pct());
  }
}

std::vector<v1::SeriesBlock> SummarizeEvents(
    absl::Span<const v1::ProgressEvent> events, int level) {
  const int64_t size = SeriesBlockSize(level);
  std::vector<v1::SeriesBlock> blocks;
  for (const v1::ProgressEvent& e : events) {
    // A sweep job's copies of its trials' events (ProgressEvent.trial) are
    // in the trials' own series.
    if (e.kind() != v1::ProgressEvent::ITERATION || e.has_trial()) continue;
    const int64_t index = e.seq() / size;
    if (blocks.empty() || blocks.back().index() != index) {
      blocks.emplace_back().set_index(index);
    }
    AddSeriesPoint(ToSeriesPoint(e), &blocks.back());
  }
  return blocks;
}

std::vector<v1::SeriesBlock> CoarsenSeriesBlocks(
    const std::vector<v1::SeriesBlock>& blocks) {
  std::vector<v1::SeriesBlock> coarse;
  for (const v1::SeriesBlock& b : blocks) {
    const int64_t index = b.index() / 8;
    if (coarse.empty() || coarse.back().index() != index) {
      coarse.emplace_back().set_index(index);
    }
    MergeSeriesBlock(b, &coarse.back());
  }
  return coarse;
}

}  // namespace sparrow::server
