// The summaries of a job's progress curves that every Store keeps beside its
// events (sparrow/v1/series.proto): how events fold into the blocks of each
// level, and how blocks merge. Pure functions, shared by the stores.
#ifndef SPARROW_SERVER_STORE_SERIES_BLOCKS_H_
#define SPARROW_SERVER_STORE_SERIES_BLOCKS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/series.pb.h"

namespace sparrow::server {

// Levels 1 .. kSeriesLevels; a block of level L spans 8^L seqs, so the top
// level's blocks span 262,144 events.
inline constexpr int kSeriesLevels = 6;
int64_t SeriesBlockSize(int level);

v1::SeriesPoint ToSeriesPoint(const v1::ProgressEvent& event);

// Folds a point (after all of *block's) into *block.
void AddSeriesPoint(const v1::SeriesPoint& point, v1::SeriesBlock* block);

// Folds `later` (events after all of *block's) into *block.
void MergeSeriesBlock(const v1::SeriesBlock& later, v1::SeriesBlock* block);

// The blocks of `level` that the ITERATION events touch, each summarizing
// only these events, in index order. `events` are in seq order. A sweep
// job's copies of its trials' events (ProgressEvent.trial set) are left out.
std::vector<v1::SeriesBlock> SummarizeEvents(
    absl::Span<const v1::ProgressEvent> events, int level);

// The blocks of the next level up that hold `blocks` (of one level, in
// index order): the same as summarizing their events at that level.
std::vector<v1::SeriesBlock> CoarsenSeriesBlocks(
    const std::vector<v1::SeriesBlock>& blocks);

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_STORE_SERIES_BLOCKS_H_
