// SqlStore: a job's series blocks (series_blocks.h), one row per (job,
// level, index), and the migration that builds them for a store written
// before they existed.
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/store/internal/sql_store.h"
#include "server/store/series_blocks.h"

namespace sparrow::server::sql {
namespace {

constexpr char kSelectBlock[] =
    "SELECT block FROM series_blocks "
    "WHERE job_id = ?1 AND level = ?2 AND idx = ?3";
constexpr char kPutBlock[] =
    "INSERT INTO series_blocks (job_id, level, idx, block) "
    "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (job_id, level, idx) "
    "DO UPDATE SET block = excluded.block";

// Events read per statement while building a job's blocks.
constexpr int kMigrationBatch = 4096;

}  // namespace

// Only the first block of each level the events touch can be stored already
// (the events come after every stored one); the others are new.
absl::Status SqlStore::UpdateSeriesBlocks(
    const std::string& job_id, absl::Span<const v1::ProgressEvent> events) {
  SPARROW_ASSIGN_OR_RETURN(Statement select, conn().Prepare(kSelectBlock));
  SPARROW_ASSIGN_OR_RETURN(Statement put, conn().Prepare(kPutBlock));
  // The events' own blocks at every level, before any is merged with a
  // stored one.
  std::vector<std::vector<v1::SeriesBlock>> levels = {
      SummarizeEvents(events, 1)};
  if (levels[0].empty()) return absl::OkStatus();  // no ITERATION event
  while (levels.size() < kSeriesLevels) {
    levels.push_back(CoarsenSeriesBlocks(levels.back()));
  }
  for (int level = 1; level <= kSeriesLevels; ++level) {
    std::vector<v1::SeriesBlock>& blocks = levels[level - 1];
    select.Reset();
    select.BindText(1, job_id);
    select.BindInt64(2, level);
    select.BindInt64(3, blocks[0].index());
    SPARROW_ASSIGN_OR_RETURN(bool found, select.Step());
    if (found) {
      SPARROW_ASSIGN_OR_RETURN(
          v1::SeriesBlock stored,
          Parse<v1::SeriesBlock>(
              select.ColumnBytes(0),
              absl::StrCat("series block ", level, "/", blocks[0].index(),
                           " of job ", job_id)));
      MergeSeriesBlock(blocks[0], &stored);
      blocks[0] = std::move(stored);
    }
    for (const v1::SeriesBlock& block : blocks) {
      put.Reset();
      put.BindText(1, job_id);
      put.BindInt64(2, level);
      put.BindInt64(3, block.index());
      put.BindBlob(4, block.SerializeAsString());
      SPARROW_RETURN_IF_ERROR(put.Run());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> SqlStore::ScanSeriesBlocks(
    const std::string& job_id, int level,
    const std::function<void(const v1::SeriesBlock&)>& visit) {
  if (level < 1 || level > kSeriesLevels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "series level must be in [1, ", kSeriesLevels, "], got ", level));
  }
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kRead));
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(job_id));
  SPARROW_ASSIGN_OR_RETURN(
      Statement select,
      conn().Prepare("SELECT idx, block FROM series_blocks "
                     "WHERE job_id = ?1 AND level = ?2 ORDER BY idx"));
  select.BindText(1, job_id);
  select.BindInt64(2, level);
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    SPARROW_ASSIGN_OR_RETURN(
        v1::SeriesBlock block,
        Parse<v1::SeriesBlock>(
            select.ColumnBytes(1),
            absl::StrCat("series block ", level, "/", select.ColumnInt64(0),
                         " of job ", job_id)));
    visit(block);
  }
  return std::move(record.job);
}

absl::Status SqlStore::Migrate(const char* schema, const char* set_version) {
  Session session(&pool_);
  Transaction txn(&conn());
  SPARROW_RETURN_IF_ERROR(txn.Begin(Transaction::kWrite));
  SPARROW_RETURN_IF_ERROR(conn().Exec(schema));
  std::vector<std::string> ids;
  {
    SPARROW_ASSIGN_OR_RETURN(Statement select,
                             conn().Prepare("SELECT id FROM jobs"));
    while (true) {
      SPARROW_ASSIGN_OR_RETURN(bool row, select.Step());
      if (!row) break;
      ids.push_back(select.ColumnString(0));
    }
  }
  for (const std::string& id : ids) {
    SPARROW_RETURN_IF_ERROR(BuildSeriesBlocks(id));
  }
  SPARROW_RETURN_IF_ERROR(conn().Exec(set_version));
  return txn.Commit();
}

// Runs inside the caller's write transaction (the schema migration).
absl::Status SqlStore::BuildSeriesBlocks(const std::string& job_id) {
  SPARROW_ASSIGN_OR_RETURN(JobRecord record, LoadJob(job_id));
  int64_t after = 0;
  int history = 0;  // STATE events are the history's entries, in order
  while (true) {
    SPARROW_ASSIGN_OR_RETURN(std::vector<v1::ProgressEvent> events,
                             SelectEvents(job_id, after, kMigrationBatch));
    if (events.empty()) break;
    for (const v1::ProgressEvent& e : events) {
      if (e.kind() == v1::ProgressEvent::STATE &&
          history < record.job.history_size()) {
        record.job.mutable_history(history++)->set_seq(e.seq());
      }
    }
    SPARROW_RETURN_IF_ERROR(UpdateSeriesBlocks(job_id, events));
    after = events.back().seq();
  }
  return UpdateJob(record.job);
}

}  // namespace sparrow::server::sql
