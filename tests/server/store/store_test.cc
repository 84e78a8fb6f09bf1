// The Store contract on every backend (SQLite, and a real PostgreSQL 15):
// datasets, jobs, transitions, events, checkpoints, models, listings,
// durability across reopening, and concurrent appends.
#include "server/store/store.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "tests/server/testing/store_backend.h"

namespace sparrow::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using State = v1::Job::State;

class StoreTest : public testing::BackendStoreTest {
 protected:
  v1::Dataset PutDataset(const std::string& tenant, const std::string& id,
                         const std::string& content = "x,y\n1,2\n") {
    v1::Dataset meta;
    meta.set_id(id);
    meta.set_name(id + ".csv");
    meta.set_size_bytes(content.size());
    meta.set_rows(1);
    meta.add_columns("x");
    meta.add_columns("y");
    bool existed = true;
    absl::StatusOr<v1::Dataset> stored =
        store_->PutDataset(tenant, meta, content, &existed);
    EXPECT_TRUE(stored.ok()) << stored.status();
    EXPECT_FALSE(existed);
    return stored.value_or(v1::Dataset());
  }

  v1::Job CreateJob(const std::string& tenant, const std::string& id,
                    const std::string& dataset_id = "ds",
                    const std::string& request_id = "") {
    v1::Job job;
    job.set_id(id);
    job.mutable_spec()->set_name("spec of " + id);
    job.mutable_spec()->mutable_data()->set_dataset_id(dataset_id);
    job.set_priority(3);
    job.set_request_id(request_id);
    bool existed = true;
    absl::StatusOr<v1::Job> created = store_->CreateJob(tenant, job, &existed);
    EXPECT_TRUE(created.ok()) << created.status();
    EXPECT_FALSE(existed);
    return created.value_or(v1::Job());
  }

  // Moves job id to `to`, expecting success.
  v1::Job Transition(const std::string& id, State to,
                     std::vector<State> from = {},
                     const v1::TrainedModel* model = nullptr) {
    JobTransition transition;
    transition.to = to;
    transition.reason = absl::StrCat("to ", v1::Job::State_Name(to));
    transition.from = std::move(from);
    transition.model = model;
    auto result = store_->TransitionJob(id, transition);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->first : v1::Job();
  }

  std::vector<v1::ProgressEvent> Append(const std::string& job_id,
                                        std::vector<int> iterations) {
    std::vector<v1::ProgressEvent> events;
    for (int iteration : iterations) {
      v1::ProgressEvent event;
      event.set_iteration(iteration);
      event.set_loss(1.0 / iteration);
      events.push_back(event);
    }
    auto appended = store_->AppendEvents(job_id, std::move(events), kNoFence);
    EXPECT_TRUE(appended.ok()) << appended.status();
    return appended.value_or(std::vector<v1::ProgressEvent>());
  }

  std::vector<int64_t> Seqs(const std::string& job_id, int64_t after_seq = 0,
                            int limit = 1000) {
    auto events = store_->ListEvents(job_id, after_seq, limit);
    EXPECT_TRUE(events.ok()) << events.status();
    std::vector<int64_t> seqs;
    for (const v1::ProgressEvent& e :
         events.value_or(std::vector<v1::ProgressEvent>())) {
      EXPECT_EQ(e.job_id(), job_id);
      seqs.push_back(e.seq());
    }
    return seqs;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest,
                         ::testing::ValuesIn(testing::kBackends),
                         testing::BackendName);

std::vector<std::string> Ids(const std::vector<v1::Dataset>& datasets) {
  std::vector<std::string> ids;
  for (const v1::Dataset& d : datasets) ids.push_back(d.id());
  return ids;
}

std::vector<std::string> Ids(const std::vector<v1::Job>& jobs) {
  std::vector<std::string> ids;
  for (const v1::Job& j : jobs) ids.push_back(j.id());
  return ids;
}

std::vector<std::string> Ids(const std::vector<JobRecord>& records) {
  std::vector<std::string> ids;
  for (const JobRecord& r : records) ids.push_back(r.tenant + "/" + r.job.id());
  return ids;
}

// ---- opening
// ------------------------------------------------------------------

// ---- datasets
// -----------------------------------------------------------------

TEST_P(StoreTest, PutGetAndContent) {
  const v1::Dataset put = PutDataset("acme", "3fa1", "a,b\n1,2\n3,4\n");
  EXPECT_EQ(put.id(), "3fa1");
  EXPECT_TRUE(put.has_create_time());

  absl::StatusOr<v1::Dataset> got = store_->GetDataset("acme", "3fa1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->SerializeAsString(), put.SerializeAsString());
  absl::StatusOr<std::string> content =
      store_->GetDatasetContent("acme", "3fa1");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "a,b\n1,2\n3,4\n");

  absl::StatusOr<v1::Dataset> missing = store_->GetDataset("acme", "3fa2");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "dataset 3fa2 not found");
  EXPECT_EQ(store_->GetDatasetContent("acme", "3fa2").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreTest, EmptyContentIsStoredAsEmpty) {
  PutDataset("acme", "e3b0", "");
  absl::StatusOr<std::string> content =
      store_->GetDatasetContent("acme", "e3b0");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "");
}

TEST_P(StoreTest, RePutReturnsTheStoredDatasetAndWritesNothing) {
  const v1::Dataset first = PutDataset("acme", "3fa1", "first");
  v1::Dataset again;
  again.set_id("3fa1");
  again.set_name("renamed.csv");
  bool existed = false;
  absl::StatusOr<v1::Dataset> stored =
      store_->PutDataset("acme", again, "second", &existed);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(existed);
  EXPECT_EQ(stored->SerializeAsString(), first.SerializeAsString());
  EXPECT_EQ(*store_->GetDatasetContent("acme", "3fa1"), "first");
  EXPECT_EQ(store_->ListDatasets("acme", 10, "")->items.size(), 1u);
}

TEST_P(StoreTest, PutRefusesAnEmptyId) {
  bool existed = true;
  absl::StatusOr<v1::Dataset> stored =
      store_->PutDataset("acme", v1::Dataset(), "x", &existed);
  EXPECT_EQ(stored.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(existed);
}

TEST_P(StoreTest, DatasetsAreIsolatedByTenant) {
  PutDataset("acme", "3fa1", "acme's");
  EXPECT_EQ(store_->GetDataset("globex", "3fa1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetDatasetContent("globex", "3fa1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteDataset("globex", "3fa1").code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(store_->ListDatasets("globex", 10, "")->items, IsEmpty());

  // The same bytes uploaded by another tenant are that tenant's own copy.
  PutDataset("globex", "3fa1", "globex's");
  EXPECT_EQ(*store_->GetDatasetContent("acme", "3fa1"), "acme's");
  EXPECT_EQ(*store_->GetDatasetContent("globex", "3fa1"), "globex's");
}

TEST_P(StoreTest, ListDatasetsPaginatesInUploadOrder) {
  for (const char* id : {"d1", "d2", "d3", "d4", "d5", "d6", "d7"}) {
    PutDataset("acme", id);
  }
  PutDataset("globex", "g1");

  absl::StatusOr<Page<v1::Dataset>> page = store_->ListDatasets("acme", 3, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("d1", "d2", "d3"));
  ASSERT_THAT(page->next_page_token, Not(IsEmpty()));

  page = store_->ListDatasets("acme", 3, page->next_page_token);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("d4", "d5", "d6"));
  ASSERT_THAT(page->next_page_token, Not(IsEmpty()));

  page = store_->ListDatasets("acme", 3, page->next_page_token);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("d7"));
  EXPECT_THAT(page->next_page_token, IsEmpty());

  // A page that ends exactly at the end of the list is the last page.
  page = store_->ListDatasets("acme", 7, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->items.size(), 7u);
  EXPECT_THAT(page->next_page_token, IsEmpty());
}

TEST_P(StoreTest, ListDatasetsRefusesBadTokensAndPageSizes) {
  PutDataset("acme", "d1");
  PutDataset("acme", "d2");
  CreateJob("acme", "job-1", "d1");
  CreateJob("acme", "job-2", "d1");
  for (const std::string& token :
       {std::string("garbage"), std::string("ZGF0YXNldHM6eA"),
        std::string("!!"),
        store_->ListJobs("acme", v1::Job::STATE_UNSPECIFIED, 1, "")
            ->next_page_token}) {
    absl::StatusOr<Page<v1::Dataset>> page =
        store_->ListDatasets("acme", 3, token);
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument)
        << token;
    EXPECT_EQ(page.status().message(),
              "page_token is not a token this server issued");
  }
  EXPECT_EQ(store_->ListDatasets("acme", 0, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListDatasets("acme", -1, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, DeleteIsRefusedWhileAnUnfinishedJobUsesTheDataset) {
  PutDataset("acme", "3fa1");
  CreateJob("acme", "job-1", "3fa1");
  // Another tenant's job naming the same id does not hold acme's dataset.
  PutDataset("globex", "other");
  CreateJob("globex", "job-g", "other");

  absl::Status refused = store_->DeleteDataset("acme", "3fa1");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("job-1"));
  EXPECT_THAT(refused.message(), HasSubstr("QUEUED"));

  Transition("job-1", v1::Job::RUNNING);
  EXPECT_EQ(store_->DeleteDataset("acme", "3fa1").code(),
            absl::StatusCode::kFailedPrecondition);
  Transition("job-1", v1::Job::CANCELLING);
  EXPECT_EQ(store_->DeleteDataset("acme", "3fa1").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_->GetDataset("acme", "3fa1").ok());

  Transition("job-1", v1::Job::CANCELLED);
  EXPECT_TRUE(store_->DeleteDataset("acme", "3fa1").ok());
  EXPECT_EQ(store_->GetDataset("acme", "3fa1").status().code(),
            absl::StatusCode::kNotFound);
  absl::Status again = store_->DeleteDataset("acme", "3fa1");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "dataset 3fa1 not found");
  // The finished job keeps its record.
  EXPECT_TRUE(store_->GetJob("job-1").ok());
}

// ---- jobs
// ---------------------------------------------------------------------

TEST_P(StoreTest, CreateJobQueuesItWithHistoryAndAFirstEvent) {
  const v1::Job job = CreateJob("acme", "job-1", "3fa1");
  EXPECT_EQ(job.id(), "job-1");
  EXPECT_EQ(job.state(), v1::Job::QUEUED);
  EXPECT_EQ(job.priority(), 3);
  EXPECT_EQ(job.spec().name(), "spec of job-1");
  EXPECT_TRUE(job.has_create_time());
  EXPECT_FALSE(job.has_start_time());
  EXPECT_EQ(job.last_seq(), 1);
  EXPECT_EQ(job.attempts(), 0);
  ASSERT_EQ(job.history_size(), 1);
  EXPECT_EQ(job.history(0).state(), v1::Job::QUEUED);
  EXPECT_EQ(job.history(0).reason(), "submitted");
  EXPECT_EQ(job.history(0).time(), job.create_time());

  absl::StatusOr<JobRecord> record = store_->GetJob("job-1");
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->tenant, "acme");
  EXPECT_EQ(record->job.SerializeAsString(), job.SerializeAsString());

  auto events = store_->ListEvents("job-1", 0, 10);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  const v1::ProgressEvent& first = (*events)[0];
  EXPECT_EQ(first.job_id(), "job-1");
  EXPECT_EQ(first.seq(), 1);
  EXPECT_EQ(first.kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(first.state(), v1::Job::QUEUED);
  EXPECT_EQ(first.reason(), "submitted");
  EXPECT_EQ(first.time(), job.create_time());

  absl::StatusOr<JobRecord> missing = store_->GetJob("job-2");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "job job-2 not found");
}

TEST_P(StoreTest, CreateJobDeduplicatesRequestIdsPerTenant) {
  const v1::Job first = CreateJob("acme", "job-1", "ds", "req-1");

  v1::Job retry;
  retry.set_id("job-2");
  retry.set_request_id("req-1");
  retry.mutable_spec()->set_name("a different spec");
  bool existed = false;
  absl::StatusOr<v1::Job> again = store_->CreateJob("acme", retry, &existed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(existed);
  EXPECT_EQ(again->SerializeAsString(), first.SerializeAsString());
  EXPECT_EQ(store_->GetJob("job-2").status().code(),
            absl::StatusCode::kNotFound);

  // The same request id from another tenant is another request.
  const v1::Job other = CreateJob("globex", "job-2", "ds", "req-1");
  EXPECT_EQ(other.id(), "job-2");
  // Jobs without a request id are never deduplicated.
  CreateJob("acme", "job-3");
  CreateJob("acme", "job-4");
  EXPECT_EQ(store_->ListJobs("acme", v1::Job::STATE_UNSPECIFIED, 10, "")
                ->items.size(),
            3u);
}

TEST_P(StoreTest, FindJobByRequestIdIsPerTenant) {
  CreateJob("alice", "job-1", "ds", "req-1");
  auto found = store_->FindJobByRequestId("alice", "req-1");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id(), "job-1");
  found = store_->FindJobByRequestId("bob", "req-1");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->has_value());
  found = store_->FindJobByRequestId("alice", "");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->has_value());
}

TEST_P(StoreTest, CreateJobRefusesATakenIdAndAnEmptyId) {
  CreateJob("acme", "job-1");
  v1::Job job;
  job.set_id("job-1");
  bool existed = true;
  EXPECT_EQ(store_->CreateJob("globex", job, &existed).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(existed);
  EXPECT_EQ(store_->CreateJob("acme", v1::Job(), &existed).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, TransitionsRecordHistoryAttemptsAndTimes) {
  CreateJob("acme", "job-1");
  const v1::Job running =
      Transition("job-1", v1::Job::RUNNING, {v1::Job::QUEUED});
  EXPECT_EQ(running.state(), v1::Job::RUNNING);
  EXPECT_EQ(running.reason(), "to RUNNING");
  EXPECT_EQ(running.attempts(), 1);
  EXPECT_TRUE(running.has_start_time());
  EXPECT_FALSE(running.has_end_time());
  ASSERT_EQ(running.history_size(), 2);
  EXPECT_EQ(running.history(1).state(), v1::Job::RUNNING);
  EXPECT_EQ(running.history(1).time(), running.start_time());

  // A restart resumes the job: another attempt, the first start time kept.
  const v1::Job resumed =
      Transition("job-1", v1::Job::RUNNING, {v1::Job::RUNNING});
  EXPECT_EQ(resumed.attempts(), 2);
  EXPECT_EQ(resumed.start_time(), running.start_time());

  v1::TrainedModel model;
  model.set_num_inputs(2);
  model.set_num_outputs(1);
  model.add_parameters(0.5);
  model.add_parameters(-1.5);
  model.mutable_metrics()->set_test_rmse(0.25);
  model.mutable_metrics()->add_removed("y(t-3)");
  EXPECT_EQ(store_->GetModel("job-1").status().code(),
            absl::StatusCode::kNotFound);
  JobTransition success;
  success.to = v1::Job::SUCCEEDED;
  success.reason = "converged";
  success.summary = "gradient norm below 1e-6 after 12 epochs";
  success.model = &model;
  success.from = {v1::Job::RUNNING};
  auto done = store_->TransitionJob("job-1", success);
  ASSERT_TRUE(done.ok()) << done.status();
  const v1::Job& job = done->first;
  EXPECT_EQ(job.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(job.summary(), success.summary);
  EXPECT_TRUE(job.has_end_time());
  EXPECT_EQ(job.attempts(), 2);
  ASSERT_EQ(job.history_size(), 4);
  EXPECT_EQ(job.history(3).reason(), "converged");
  EXPECT_EQ(job.end_time(), job.history(3).time());
  // The job record carries the model's metrics, without the per-layer lists.
  EXPECT_EQ(job.metrics().test_rmse(), 0.25);
  EXPECT_EQ(job.metrics().removed_size(), 0);
  EXPECT_FALSE(job.model_partial());
  EXPECT_EQ(done->second.kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ(done->second.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done->second.seq(), job.last_seq());
  EXPECT_EQ(store_->GetJob("job-1")->job.SerializeAsString(),
            job.SerializeAsString());

  absl::StatusOr<v1::TrainedModel> stored = store_->GetModel("job-1");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->SerializeAsString(), model.SerializeAsString());
}

TEST_P(StoreTest, TransitionFromAFinalStateIsRefusedAndWritesNothing) {
  CreateJob("acme", "job-1");
  Transition("job-1", v1::Job::RUNNING);
  const v1::Job finished = Transition("job-1", v1::Job::SUCCEEDED);

  v1::TrainedModel model;
  model.set_num_inputs(7);
  JobTransition cancel;
  cancel.to = v1::Job::CANCELLING;
  cancel.from = {v1::Job::QUEUED, v1::Job::RUNNING};
  cancel.model = &model;
  auto refused = store_->TransitionJob("job-1", cancel);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("job job-1 is SUCCEEDED;"));

  EXPECT_EQ(store_->GetJob("job-1")->job.SerializeAsString(),
            finished.SerializeAsString());
  EXPECT_EQ(store_->GetModel("job-1").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(Seqs("job-1"), ElementsAre(1, 2, 3));

  JobTransition unknown;
  unknown.to = v1::Job::RUNNING;
  EXPECT_EQ(store_->TransitionJob("job-9", unknown).status().code(),
            absl::StatusCode::kNotFound);
  unknown.to = v1::Job::STATE_UNSPECIFIED;
  EXPECT_EQ(store_->TransitionJob("job-1", unknown).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- progress
// -----------------------------------------------------------------

TEST_P(StoreTest, EventSeqsAreDenseAcrossAppendsAndTransitions) {
  CreateJob("acme", "job-1");             // seq 1
  CreateJob("acme", "job-2");             // seq 1 of its own
  Transition("job-1", v1::Job::RUNNING);  // 2
  const std::vector<v1::ProgressEvent> appended = Append("job-1", {1, 2, 3});
  ASSERT_EQ(appended.size(), 3u);
  for (size_t i = 0; i < appended.size(); ++i) {
    EXPECT_EQ(appended[i].seq(), static_cast<int64_t>(3 + i));
    EXPECT_EQ(appended[i].job_id(), "job-1");
    EXPECT_EQ(appended[i].kind(), v1::ProgressEvent::ITERATION);
    EXPECT_TRUE(appended[i].has_time());
  }
  Append("job-2", {1});
  const v1::Job cancelling = Transition("job-1", v1::Job::CANCELLING);  // 6
  EXPECT_EQ(cancelling.last_seq(), 6);
  Append("job-1", {4, 5});  // 7, 8

  absl::StatusOr<JobRecord> job = store_->GetJob("job-1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->job.last_seq(), 8);
  EXPECT_EQ(job->job.iterations(), 5);
  EXPECT_DOUBLE_EQ(job->job.loss(), 1.0 / 5);

  EXPECT_THAT(Seqs("job-1"), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(Seqs("job-1", 3, 2), ElementsAre(4, 5));
  EXPECT_THAT(Seqs("job-1", 6), ElementsAre(7, 8));
  EXPECT_THAT(Seqs("job-1", 8), IsEmpty());
  EXPECT_THAT(Seqs("job-2"), ElementsAre(1, 2));

  auto events = store_->ListEvents("job-1", 5, 1);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind(), v1::ProgressEvent::STATE);
  EXPECT_EQ((*events)[0].state(), v1::Job::CANCELLING);
  events = store_->ListEvents("job-1", 6, 1);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ((*events)[0].iteration(), 4);
  EXPECT_DOUBLE_EQ((*events)[0].loss(), 0.25);
}

TEST_P(StoreTest, TheJobKeepsItsBestValidationMetricAndSparsity) {
  CreateJob("acme", "job-1");
  Transition("job-1", v1::Job::RUNNING);
  Append("job-1", {1});
  v1::Job job = store_->GetJob("job-1")->job;
  EXPECT_FALSE(job.has_best_validation_metric());
  EXPECT_FALSE(job.has_sparsity_pct());
  std::vector<v1::ProgressEvent> events(4);
  const double validation[] = {0.5, 0.2, 0.3, 0.4};
  for (int i = 0; i < 4; ++i) {
    events[i].set_iteration(2 + i);
    events[i].set_elapsed_seconds(0.1 * (i + 1));
    events[i].set_validation_metric(validation[i]);
    events[i].set_sparsity_pct(10.0 * i);
  }
  ASSERT_TRUE(store_->AppendEvents("job-1", events, kNoFence).ok());
  job = store_->GetJob("job-1")->job;
  EXPECT_EQ(job.best_validation_metric(), 0.2);
  EXPECT_EQ(job.sparsity_pct(), 30.0);
  EXPECT_EQ(job.elapsed_seconds(), 0.4);
  EXPECT_EQ(job.iterations(), 5);
}

TEST_P(StoreTest, EventErrors) {
  CreateJob("acme", "job-1");
  EXPECT_EQ(store_->ListEvents("job-9", 0, 10).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListEvents("job-1", 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->AppendEvents("job-9", {v1::ProgressEvent()}, kNoFence)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  v1::ProgressEvent state;
  state.set_kind(v1::ProgressEvent::STATE);
  EXPECT_EQ(store_->AppendEvents("job-1", {state}, kNoFence).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto none = store_->AppendEvents("job-1", {}, kNoFence);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
  EXPECT_THAT(Seqs("job-1"), ElementsAre(1));
}

// A sweep job's TRIAL_END events keep their kind and are stored once per
// trial, never after the job's final state; other jobs cannot have them.
TEST_P(StoreTest, TrialEndsAreStoredOncePerTrialAndBeforeTheEnd) {
  v1::Job sweep;
  sweep.set_id("job-s");
  sweep.mutable_spec()->mutable_data()->set_dataset_id("ds");
  sweep.mutable_spec()->mutable_sweep()->set_seeds(2);
  bool existed = true;
  ASSERT_TRUE(store_->CreateJob("acme", sweep, &existed).ok());
  CreateJob("acme", "job-1");
  auto end = [](int trial) {
    v1::ProgressEvent e;
    e.set_kind(v1::ProgressEvent::TRIAL_END);
    e.set_trial(trial);
    e.set_state(v1::Job::SUCCEEDED);
    return e;
  };
  auto first = store_->AppendEvents("job-s", {end(0)}, kNoFence);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  // A second copy of trial 0's end (another replica's) is left out.
  auto again = store_->AppendEvents("job-s", {end(0), end(1)}, kNoFence);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].trial(), 1);
  auto events = store_->ListEvents("job-s", 0, 10);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 3u);  // QUEUED, then the two ends
  EXPECT_EQ((*events)[1].kind(), v1::ProgressEvent::TRIAL_END);
  EXPECT_EQ((*events)[2].trial(), 1);
  auto stored = store_->GetJob("job-s");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_THAT(stored->job.trial_ends(), ElementsAre(0, 1));
  // After the job's end, none.
  Transition("job-s", v1::Job::RUNNING);
  Transition("job-s", v1::Job::SUCCEEDED);
  auto late = store_->AppendEvents("job-s", {end(2)}, kNoFence);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_THAT(*late, IsEmpty());
  EXPECT_EQ(Seqs("job-s").size(), 5u);
  // Without a trial, or on a job that is no sweep: refused.
  v1::ProgressEvent unnamed = end(0);
  unnamed.clear_trial();
  EXPECT_EQ(store_->AppendEvents("job-s", {unnamed}, kNoFence).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->AppendEvents("job-1", {end(0)}, kNoFence).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- checkpoints
// ----------------------------------------------------------------

TEST_P(StoreTest, ANewCheckpointReplacesTheOld) {
  CreateJob("acme", "job-1");
  absl::StatusOr<std::optional<std::string>> checkpoint =
      store_->GetCheckpoint("job-1");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_FALSE(checkpoint->has_value());

  ASSERT_TRUE(
      store_->PutCheckpoint("job-1", std::string("one\0two", 7), kNoFence)
          .ok());
  checkpoint = store_->GetCheckpoint("job-1");
  ASSERT_TRUE(checkpoint.ok() && checkpoint->has_value());
  EXPECT_EQ(**checkpoint, std::string("one\0two", 7));

  ASSERT_TRUE(store_->PutCheckpoint("job-1", "three", kNoFence).ok());
  EXPECT_EQ(store_->GetCheckpoint("job-1")->value_or(""), "three");

  EXPECT_EQ(store_->PutCheckpoint("job-9", "x", kNoFence).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetCheckpoint("job-9").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreTest, WritesOfAnEarlierAttemptAreRefusedByTheirFence) {
  CreateJob("acme", "job-1");
  Transition("job-1", v1::Job::RUNNING);  // attempt 1
  Transition("job-1", v1::Job::RUNNING);  // attempt 2 (a crash, a takeover)
  v1::ProgressEvent event;
  event.set_iteration(1);
  auto stale = store_->AppendEvents("job-1", {event}, 1);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(IsLostLease(stale.status())) << stale.status();
  EXPECT_THAT(stale.status().message(), HasSubstr("attempt 1 lost its lease"));
  EXPECT_TRUE(IsLostLease(store_->PutCheckpoint("job-1", "old", 1)));
  JobTransition end{v1::Job::SUCCEEDED, "done", "", nullptr, {}};
  end.fence = 1;
  EXPECT_TRUE(IsLostLease(store_->TransitionJob("job-1", end).status()));
  EXPECT_EQ(store_->GetJob("job-1")->job.last_seq(), 3);  // nothing stored

  EXPECT_TRUE(store_->AppendEvents("job-1", {event}, 2).ok());
  EXPECT_TRUE(store_->PutCheckpoint("job-1", "new", 2).ok());
  end.fence = 2;
  EXPECT_TRUE(store_->TransitionJob("job-1", end).ok());
  EXPECT_FALSE(IsLostLease(absl::AbortedError("a conflict")));
}

// ---- job listings
// -----------------------------------------------------------------

TEST_P(StoreTest, JobsInStatesSpansTenantsInSubmissionOrder) {
  CreateJob("acme", "a1");
  CreateJob("globex", "g1");
  CreateJob("acme", "a2");
  CreateJob("globex", "g2");
  Transition("g1", v1::Job::RUNNING);
  Transition("a2", v1::Job::RUNNING);
  Transition("a2", v1::Job::FAILED);

  auto records = store_->JobsInStates({v1::Job::QUEUED, v1::Job::RUNNING});
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(Ids(*records), ElementsAre("acme/a1", "globex/g1", "globex/g2"));
  records = store_->JobsInStates({v1::Job::RUNNING});
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(Ids(*records), ElementsAre("globex/g1"));
  EXPECT_EQ((*records)[0].job.state(), v1::Job::RUNNING);
  EXPECT_THAT(*store_->JobsInStates({}), IsEmpty());
}

TEST_P(StoreTest, ListJobsFiltersBeforeCuttingThePage) {
  // Queued: q0 .. q4; running: r0 .. r2, interleaved; globex has one of each.
  for (int i = 0; i < 5; ++i) {
    CreateJob("acme", absl::StrCat("q", i));
    if (i < 3) {
      CreateJob("acme", absl::StrCat("r", i));
      Transition(absl::StrCat("r", i), v1::Job::RUNNING);
    }
  }
  CreateJob("globex", "gq");
  CreateJob("globex", "gr");
  Transition("gr", v1::Job::RUNNING);

  auto page = store_->ListJobs("acme", v1::Job::QUEUED, 2, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("q0", "q1"));
  const std::string queued_token = page->next_page_token;
  page = store_->ListJobs("acme", v1::Job::QUEUED, 2, queued_token);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("q2", "q3"));
  page = store_->ListJobs("acme", v1::Job::QUEUED, 2, page->next_page_token);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("q4"));
  EXPECT_THAT(page->next_page_token, IsEmpty());

  page = store_->ListJobs("acme", v1::Job::RUNNING, 3, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("r0", "r1", "r2"));
  EXPECT_THAT(page->next_page_token, IsEmpty());

  page = store_->ListJobs("acme", v1::Job::STATE_UNSPECIFIED, 4, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("q0", "r0", "q1", "r1"));
  page = store_->ListJobs("acme", v1::Job::STATE_UNSPECIFIED, 4,
                          page->next_page_token);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->items), ElementsAre("q2", "r2", "q3", "q4"));
  EXPECT_THAT(page->next_page_token, IsEmpty());

  EXPECT_THAT(Ids(store_->ListJobs("acme", v1::Job::SUCCEEDED, 4, "")->items),
              IsEmpty());

  // A token is good only for the listing that issued it.
  for (const std::string& token : {std::string("nope"), queued_token}) {
    auto bad = store_->ListJobs("acme", v1::Job::RUNNING, 2, token);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store_->ListJobs("acme", v1::Job::QUEUED, 0, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- durability
// -------------------------------------------------------------------

TEST_P(StoreTest, EverythingSurvivesClosingAndReopening) {
  PutDataset("acme", "3fa1", "a,b\n1,2\n");
  CreateJob("acme", "job-1", "3fa1", "req-1");
  Transition("job-1", v1::Job::RUNNING);
  Append("job-1", {1, 2});
  ASSERT_TRUE(store_->PutCheckpoint("job-1", "state", kNoFence).ok());
  v1::TrainedModel model;
  model.set_termination("converged");
  const v1::Job done =
      Transition("job-1", v1::Job::SUCCEEDED, {v1::Job::RUNNING}, &model);
  CreateJob("acme", "job-2", "3fa1");

  Reopen();
  Reopen();  // opening an existing store twice changes nothing

  EXPECT_EQ(*store_->GetDatasetContent("acme", "3fa1"), "a,b\n1,2\n");
  EXPECT_EQ(store_->GetJob("job-1")->job.SerializeAsString(),
            done.SerializeAsString());
  EXPECT_THAT(Seqs("job-1"), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(store_->GetCheckpoint("job-1")->value_or(""), "state");
  EXPECT_EQ(store_->GetModel("job-1")->termination(), "converged");
  EXPECT_THAT(Ids(*store_->JobsInStates({v1::Job::QUEUED})),
              ElementsAre("acme/job-2"));
  // The request id index survives too.
  v1::Job retry;
  retry.set_id("job-3");
  retry.set_request_id("req-1");
  bool existed = false;
  EXPECT_EQ(store_->CreateJob("acme", retry, &existed)->id(), "job-1");
  EXPECT_TRUE(existed);
  // Seqs continue where they were.
  EXPECT_EQ(Transition("job-2", v1::Job::RUNNING).last_seq(), 2);
}

// ---- threads
// ------------------------------------------------------------------------

TEST_P(StoreTest, ConcurrentAppendsKeepSeqsDensePerJob) {
  constexpr int kThreads = 4;
  constexpr int kBatches = 25;
  for (int t = 0; t < kThreads; ++t) CreateJob("acme", absl::StrCat("job-", t));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      const std::string id = absl::StrCat("job-", t);
      for (int b = 0; b < kBatches; ++b) {
        std::vector<v1::ProgressEvent> events(2);
        events[0].set_iteration(2 * b + 1);
        events[1].set_iteration(2 * b + 2);
        auto appended = store_->AppendEvents(id, std::move(events), kNoFence);
        EXPECT_TRUE(appended.ok()) << appended.status();
        if (b % 10 == 0) {
          EXPECT_TRUE(store_->GetJob(id).ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (int t = 0; t < kThreads; ++t) {
    const std::string id = absl::StrCat("job-", t);
    std::vector<int64_t> expected;
    for (int64_t s = 1; s <= 1 + 2 * kBatches; ++s) expected.push_back(s);
    EXPECT_EQ(Seqs(id), expected) << id;
    absl::StatusOr<JobRecord> job = store_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->job.last_seq(), 1 + 2 * kBatches);
    EXPECT_EQ(job->job.iterations(), 2 * kBatches);
  }
}

}  // namespace
}  // namespace sparrow::server
