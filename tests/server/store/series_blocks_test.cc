// Series blocks: events fold into blocks of 8^level seqs; merging keeps the
// extremes (earlier on a tie, never a NaN), the last event and the best and
// last validation metric and sparsity.
#include "server/store/series_blocks.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace sparrow::server {
namespace {

v1::ProgressEvent Event(int64_t seq, double loss) {
  v1::ProgressEvent e;
  e.set_seq(seq);
  e.set_kind(v1::ProgressEvent::ITERATION);
  e.set_iteration(static_cast<int>(seq));
  e.set_loss(loss);
  return e;
}

TEST(SeriesBlocksTest, BlockSizesArePowersOfEight) {
  EXPECT_EQ(SeriesBlockSize(1), 8);
  EXPECT_EQ(SeriesBlockSize(2), 64);
  EXPECT_EQ(SeriesBlockSize(kSeriesLevels), 262144);
}

TEST(SeriesBlocksTest, EventsFoldIntoTheBlocksTheirSeqsFallIn) {
  std::vector<v1::ProgressEvent> events;
  for (int64_t seq = 5; seq <= 20; ++seq) events.push_back(Event(seq, seq));
  v1::ProgressEvent state;
  state.set_seq(21);
  state.set_kind(v1::ProgressEvent::STATE);
  events.push_back(state);
  const std::vector<v1::SeriesBlock> blocks = SummarizeEvents(events, 1);
  ASSERT_EQ(blocks.size(), 3u);  // seqs 5-7, 8-15, 16-20
  EXPECT_EQ(blocks[0].index(), 0);
  EXPECT_EQ(blocks[0].count(), 3);
  EXPECT_EQ(blocks[1].index(), 1);
  EXPECT_EQ(blocks[1].count(), 8);
  EXPECT_EQ(blocks[1].min().seq(), 8);
  EXPECT_EQ(blocks[1].max().seq(), 15);
  EXPECT_EQ(blocks[2].count(), 5);  // the STATE event is not counted
  EXPECT_EQ(blocks[2].last().seq(), 20);
  EXPECT_EQ(SummarizeEvents(events, 2).size(), 1u);
}

TEST(SeriesBlocksTest, MergingInPiecesEqualsSummarizingAtOnce) {
  std::vector<v1::ProgressEvent> events;
  for (int64_t seq = 1; seq <= 200; ++seq) {
    v1::ProgressEvent e = Event(seq, std::sin(0.37 * seq) + 0.001 * seq);
    if (seq % 7 == 0) e.set_validation_metric(std::cos(0.11 * seq));
    if (seq % 5 == 0) e.set_sparsity_pct(seq / 4.0);
    events.push_back(e);
  }
  const v1::SeriesBlock whole = SummarizeEvents(events, 3)[0];
  v1::SeriesBlock pieces;
  for (size_t at = 0; at < events.size(); at += 13) {
    const size_t n = std::min<size_t>(13, events.size() - at);
    MergeSeriesBlock(
        SummarizeEvents(absl::MakeConstSpan(events).subspan(at, n), 3)[0],
        &pieces);
  }
  EXPECT_EQ(pieces.SerializeAsString(), whole.SerializeAsString());
  EXPECT_EQ(whole.count(), 200);
  EXPECT_EQ(whole.last().seq(), 200);
  EXPECT_EQ(whole.last_validation_metric(), std::cos(0.11 * 196));
  EXPECT_EQ(whole.last_sparsity_pct(), 50.0);
  double best = 1e9;
  for (const auto& e : events) {
    if (e.has_validation_metric()) best = std::min(best, e.validation_metric());
  }
  EXPECT_EQ(whole.best_validation_metric(), best);
}

TEST(SeriesBlocksTest, CoarseningEqualsSummarizingAtTheNextLevel) {
  std::vector<v1::ProgressEvent> events;
  for (int64_t seq = 3; seq <= 1500; ++seq) {
    v1::ProgressEvent e = Event(seq, std::cos(0.05 * seq) / seq);
    if (seq % 3 == 0) e.set_sparsity_pct(seq % 11);
    events.push_back(e);
  }
  for (int level = 1; level < 4; ++level) {
    const auto coarse = CoarsenSeriesBlocks(SummarizeEvents(events, level));
    const auto want = SummarizeEvents(events, level + 1);
    ASSERT_EQ(coarse.size(), want.size()) << level;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(coarse[i].SerializeAsString(), want[i].SerializeAsString())
          << level << " " << i;
    }
  }
}

TEST(SeriesBlocksTest, TheEarlierEventWinsATieAndANaNNeverWins) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<v1::ProgressEvent> events = {Event(1, nan), Event(2, 3.0),
                                           Event(3, 1.0), Event(4, 3.0),
                                           Event(5, 1.0), Event(6, nan)};
  const v1::SeriesBlock b = SummarizeEvents(events, 1)[0];
  EXPECT_EQ(b.min().seq(), 3);
  EXPECT_EQ(b.max().seq(), 2);
  EXPECT_TRUE(std::isnan(b.last().loss()));
  EXPECT_FALSE(b.has_best_validation_metric());
  EXPECT_FALSE(b.has_last_sparsity_pct());
}

}  // namespace
}  // namespace sparrow::server
