// sparrow.v1.JobService in-process: Submit (idempotency, priority order,
// limits), Get, List (state filter, pagination), Cancel (queued, running,
// finished), Watch (replay, exact resume, concurrent watchers), the per-job
// deadline, bearer-token tenancy, and a graceful shutdown that a restart
// resumes from the checkpoint.
#include "server/service/job_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/testing/service_fixture.h"

namespace sparrow::server {
namespace {

using testing::CountIterations;
using testing::kLongEpochs;
using testing::ServiceFixture;
using testing::SmallSpec;
using testing::States;
using testing::TanksCsv;

// Seqs are 1, 2, 3, ... with no gap and no repeat.
void ExpectDense(const std::vector<v1::ProgressEvent>& events,
                 int64_t first = 1) {
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(events[i].seq(), first + static_cast<int64_t>(i))
        << "event " << i;
  }
}

std::vector<std::string> Serialized(
    const std::vector<v1::ProgressEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.SerializeAsString());
  return out;
}

int64_t Nanos(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000000 + t.nanos();
}

class JobServiceTest : public ServiceFixture {
 protected:
  void SetUp() override {
    ServiceFixture::SetUp();
    dataset_ = UploadOrDie(TanksCsv());
  }
  // Runs `spec` again, uninterrupted, and expects the resumed job's `model`
  // bit for bit.
  void ExpectSameAsUninterrupted(const v1::JobSpec& spec,
                                 const v1::TrainedModel& model) {
    const v1::Job again = SubmitOrDie(spec);
    WaitForState(again.id(), v1::Job::SUCCEEDED);
    v1::TrainedModel uninterrupted;
    ASSERT_TRUE(GetModel(again.id(), &uninterrupted).ok());
    ASSERT_GT(model.parameters_size(), 0);
    EXPECT_TRUE(std::equal(model.parameters().begin(), model.parameters().end(),
                           uninterrupted.parameters().begin(),
                           uninterrupted.parameters().end()))
        << "the resumed job's model differs from the uninterrupted run's";
    EXPECT_THAT(model.metrics().validation_rmse(),
                ::testing::NanSensitiveDoubleEq(
                    uninterrupted.metrics().validation_rmse()));
  }
  std::string dataset_;
};

// ---- Submit / Get ----

TEST_F(JobServiceTest, SubmittedJobRunsToSuccess) {
  v1::Job job;
  grpc::Status s = Submit(SmallSpec(dataset_, 10), &job);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(job.id().rfind("job-", 0), 0u) << job.id();
  EXPECT_EQ(job.state(), v1::Job::QUEUED);
  EXPECT_EQ(job.spec().SerializeAsString(),
            SmallSpec(dataset_, 10).SerializeAsString());
  EXPECT_GT(job.create_time().seconds(), 0);
  ASSERT_EQ(job.history_size(), 1);
  EXPECT_EQ(job.history(0).state(), v1::Job::QUEUED);
  EXPECT_EQ(job.last_seq(), 1);

  const v1::Job done = WaitForState(job.id(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 1);
  EXPECT_EQ(done.iterations(), 10);
  EXPECT_FALSE(done.summary().empty());
  EXPECT_LE(Nanos(done.create_time()), Nanos(done.start_time()));
  EXPECT_LE(Nanos(done.start_time()), Nanos(done.end_time()));
  std::vector<v1::Job::State> history;
  for (const auto& t : done.history()) history.push_back(t.state());
  EXPECT_EQ(history,
            (std::vector<v1::Job::State>{v1::Job::QUEUED, v1::Job::RUNNING,
                                         v1::Job::SUCCEEDED}));
  // 1 QUEUED + 1 RUNNING + 10 ITERATION + 1 SUCCEEDED.
  EXPECT_EQ(done.last_seq(), 13);
}

TEST_F(JobServiceTest, GetOfAnUnknownJobIsNotFound) {
  for (const std::string id : {"job-0000000000000000", "", "../etc"}) {
    grpc::Status s = GetJobStatus(id);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND)
        << id << ": " << s.error_message();
  }
}

TEST_F(JobServiceTest, RequestIdMakesSubmitIdempotent) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = SmallSpec(dataset_, 5);
  request.set_request_id("retry-me");
  request.set_priority(3);
  v1::Job first, again;
  ASSERT_TRUE(SubmitRequest(request, &first).ok());
  ASSERT_TRUE(SubmitRequest(request, &again).ok());
  EXPECT_EQ(again.id(), first.id());
  EXPECT_EQ(again.request_id(), "retry-me");
  WaitForState(first.id(), v1::Job::SUCCEEDED);
  // Still the same job after it has finished.
  ASSERT_TRUE(SubmitRequest(request, &again).ok());
  EXPECT_EQ(again.id(), first.id());
  EXPECT_EQ(again.state(), v1::Job::SUCCEEDED);

  // The same id with another spec, or another priority, is ALREADY_EXISTS.
  v1::SubmitJobRequest other_spec = request;
  other_spec.mutable_spec()->mutable_stopping()->set_max_epochs(6);
  grpc::Status s = SubmitRequest(other_spec, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS)
      << s.error_message();
  EXPECT_NE(s.error_message().find(first.id()), std::string::npos)
      << s.error_message();
  v1::SubmitJobRequest other_priority = request;
  other_priority.set_priority(4);
  s = SubmitRequest(other_priority, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS)
      << s.error_message();

  // Without a request_id every submission is a new job.
  v1::Job a = SubmitOrDie(SmallSpec(dataset_, 5));
  v1::Job b = SubmitOrDie(SmallSpec(dataset_, 5));
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED).size(), 3u);
}

TEST_F(JobServiceTest, QueuedJobsStartInPriorityThenSubmissionOrder) {
  const v1::Job blocker = StartLongJob(dataset_);
  // name -> priority, in submission order.
  const std::vector<std::pair<std::string, int>> submitted = {
      {"low", 0}, {"high-1", 5}, {"mid", 1}, {"high-2", 5}, {"negative", -3}};
  std::map<std::string, std::string> ids;  // name -> job id
  for (const auto& [name, priority] : submitted) {
    v1::JobSpec spec = SmallSpec(dataset_, 3);
    spec.set_name(name);
    v1::Job job = SubmitOrDie(spec, "", priority);
    EXPECT_EQ(job.priority(), priority);
    ids[name] = job.id();
  }
  CancelAndWait(blocker.id());
  std::vector<std::pair<int64_t, std::string>> started;
  for (const auto& [name, id] : ids) {
    const v1::Job job = WaitForState(id, v1::Job::SUCCEEDED);
    started.emplace_back(Nanos(job.start_time()), name);
  }
  std::sort(started.begin(), started.end());
  std::vector<std::string> order;
  for (const auto& [time, name] : started) order.push_back(name);
  EXPECT_EQ(order, (std::vector<std::string>{"high-1", "high-2", "mid", "low",
                                             "negative"}));
}

// ---- List ----

TEST_F(JobServiceTest, ListFiltersByStateBeforeCuttingPages) {
  const v1::Job running = StartLongJob(dataset_);
  std::vector<std::string> queued;
  for (int i = 0; i < 5; ++i) {
    queued.push_back(SubmitOrDie(SmallSpec(dataset_, 3)).id());
  }
  // Cancel every other queued job: Q0 Q2 Q4 stay QUEUED, Q1 Q3 are CANCELLED.
  for (int i : {1, 3}) {
    v1::Job job;
    ASSERT_TRUE(CancelJob(queued[i], &job).ok());
    EXPECT_EQ(job.state(), v1::Job::CANCELLED);
  }

  // One item per page: filtered items fill every page.
  std::vector<std::string> ids;
  std::vector<int> sizes;
  std::string token;
  do {
    v1::ListJobsResponse page;
    grpc::Status s = ListJobs(v1::Job::QUEUED, 1, token, &page);
    ASSERT_TRUE(s.ok()) << s.error_message();
    sizes.push_back(page.jobs_size());
    for (const auto& j : page.jobs()) {
      EXPECT_EQ(j.state(), v1::Job::QUEUED);
      ids.push_back(j.id());
    }
    token = page.next_page_token();
  } while (!token.empty() && sizes.size() < 10);
  EXPECT_EQ(sizes, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(ids, (std::vector<std::string>{queued[0], queued[2], queued[4]}));

  EXPECT_EQ(AllJobIds(v1::Job::CANCELLED, "", 1),
            (std::vector<std::string>{queued[1], queued[3]}));
  EXPECT_EQ(AllJobIds(v1::Job::RUNNING),
            std::vector<std::string>{running.id()});
  EXPECT_TRUE(AllJobIds(v1::Job::SUCCEEDED).empty());
  std::vector<std::string> all = {running.id()};
  all.insert(all.end(), queued.begin(), queued.end());
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED, "", 2), all);
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED), all);

  // A token is only good for the filter it came from.
  v1::ListJobsResponse page;
  ASSERT_TRUE(ListJobs(v1::Job::QUEUED, 1, "", &page).ok());
  ASSERT_FALSE(page.next_page_token().empty());
  v1::ListJobsResponse other;
  grpc::Status s =
      ListJobs(v1::Job::CANCELLED, 1, page.next_page_token(), &other);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();

  s = ListJobs(v1::Job::STATE_UNSPECIFIED, -5, "", &other);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  s = ListJobs(static_cast<v1::Job::State>(42), 0, "", &other);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("42"), std::string::npos)
      << s.error_message();
  // Huge page sizes are coerced, not refused.
  s = ListJobs(v1::Job::STATE_UNSPECIFIED, 1 << 30, "", &other);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(other.jobs_size(), 6);
}

// ---- Cancel ----

TEST_F(JobServiceTest, CancelOfAQueuedJobIsImmediate) {
  const v1::Job blocker = StartLongJob(dataset_);
  const v1::Job queued = SubmitOrDie(SmallSpec(dataset_, 5));
  v1::Job cancelled;
  grpc::Status s = CancelJob(queued.id(), &cancelled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(cancelled.state(), v1::Job::CANCELLED);
  EXPECT_EQ(cancelled.attempts(), 0);
  EXPECT_GT(cancelled.end_time().seconds(), 0);
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(queued.id(), 0, &events).ok());
  EXPECT_EQ(States(events),
            (std::vector<v1::Job::State>{v1::Job::QUEUED, v1::Job::CANCELLED}));
  // A second cancel is refused: the job has finished.
  s = CancelJob(queued.id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  CancelAndWait(blocker.id());
  // The cancelled job never ran.
  EXPECT_EQ(GetJob(queued.id()).attempts(), 0);
}

class CancelTest : public ServiceFixture {
 protected:
  // Every progress event is stored as it happens, so that the event log
  // shows exactly which iterations ran after the cancel request.
  void Configure(ServerOptions* options) override {
    options->jobs.event_flush_interval = absl::ZeroDuration();
  }
};

TEST_F(CancelTest, CancelOfARunningJobStopsWithinOneIteration) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job job = SubmitOrDie(SmallSpec(dataset, kLongEpochs));
  WaitForIterations(job.id(), 5);
  v1::Job cancelling;
  grpc::Status s = CancelJob(job.id(), &cancelling);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(cancelling.state(), v1::Job::CANCELLING);
  // Cancelling twice is harmless: the job is still stopping, or it has
  // already stopped (within an iteration: a millisecond here).
  v1::Job again;
  s = CancelJob(job.id(), &again);
  if (s.ok()) {
    EXPECT_EQ(again.state(), v1::Job::CANCELLING);
  } else {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
        << s.error_message();
  }

  const v1::Job done = WaitForState(job.id(), v1::Job::CANCELLED);
  EXPECT_NE(done.reason().find("iteration"), std::string::npos)
      << done.reason();
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  ExpectDense(events);
  EXPECT_EQ(States(events), (std::vector<v1::Job::State>{
                                v1::Job::QUEUED, v1::Job::RUNNING,
                                v1::Job::CANCELLING, v1::Job::CANCELLED}));
  auto at = std::find_if(events.begin(), events.end(), [](const auto& e) {
    return e.state() == v1::Job::CANCELLING;
  });
  ASSERT_NE(at, events.end());
  const int after =
      CountIterations(std::vector<v1::ProgressEvent>(at, events.end()));
  EXPECT_LE(after, 1) << "iterations after the cancel request";
  EXPECT_LT(done.iterations(), 1000);

  s = CancelJob(job.id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find("cancelled"), std::string::npos)
      << s.error_message();
}

TEST_F(JobServiceTest, CancelOfAFinishedOrUnknownJobIsRefused) {
  const v1::Job done = TrainedJob(dataset_, "", 3);
  grpc::Status s = CancelJob(done.id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_NE(s.error_message().find("succeeded"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(GetJob(done.id()).state(), v1::Job::SUCCEEDED);
  s = CancelJob("job-0000000000000000");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

// A job submitted into an idle server and cancelled at once, while the worker
// is picking it up: the cancel is accepted and the job ends CANCELLED. (Here
// the worker records RUNNING before the cancel arrives; the narrower window
// between taking the job and recording RUNNING is not reproduced.)
TEST_F(JobServiceTest, CancelRacingTheWorkerIsAccepted) {
  for (int i = 0; i < 20; ++i) {
    const v1::Job job = SubmitOrDie(SmallSpec(dataset_, kLongEpochs));
    v1::Job cancelled;
    grpc::Status s = CancelJob(job.id(), &cancelled);
    ASSERT_TRUE(s.ok()) << "round " << i << ": " << s.error_message();
    WaitForState(job.id(), v1::Job::CANCELLED);
  }
}

// ---- Watch ----

TEST_F(JobServiceTest, WatchReplaysAFinishedJobAndResumesExactly) {
  const v1::Job job = SubmitOrDie(SmallSpec(dataset_, 20));
  std::vector<v1::ProgressEvent> live;
  ASSERT_TRUE(Watch(job.id(), 0, &live).ok());
  ASSERT_FALSE(live.empty());
  ExpectDense(live);
  EXPECT_EQ(live.back().state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(CountIterations(live), 20);
  for (const auto& e : live) EXPECT_EQ(e.job_id(), job.id());

  // The finished job replays the same events and ends OK.
  std::vector<v1::ProgressEvent> replay;
  ASSERT_TRUE(Watch(job.id(), 0, &replay).ok());
  EXPECT_EQ(Serialized(replay), Serialized(live));

  // From any seq, the tail.
  const int64_t last = live.back().seq();
  for (int64_t after : {int64_t{1}, int64_t{2}, last / 2, last - 1}) {
    std::vector<v1::ProgressEvent> tail;
    ASSERT_TRUE(Watch(job.id(), after, &tail).ok());
    EXPECT_EQ(Serialized(tail), Serialized(std::vector<v1::ProgressEvent>(
                                    live.begin() + after, live.end())))
        << "after_seq " << after;
  }
  // At or beyond the end: nothing, and OK.
  for (int64_t after : {last, last + 1, int64_t{1} << 40}) {
    std::vector<v1::ProgressEvent> none;
    grpc::Status s = Watch(job.id(), after, &none);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(none.empty()) << "after_seq " << after;
  }
}

TEST_F(JobServiceTest, WatchErrors) {
  std::vector<v1::ProgressEvent> events;
  grpc::Status s = Watch("job-0000000000000000", 0, &events);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  const v1::Job job = TrainedJob(dataset_, "", 3);
  s = Watch(job.id(), -1, &events);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("after_seq"), std::string::npos);
  EXPECT_TRUE(events.empty());
}

TEST_F(JobServiceTest, ConcurrentWatchersSeeTheSameSequence) {
  const v1::Job blocker = StartLongJob(dataset_);
  const v1::Job job = SubmitOrDie(SmallSpec(dataset_, 200));
  constexpr int kWatchers = 4;
  std::vector<std::vector<v1::ProgressEvent>> seen(kWatchers);
  std::vector<grpc::Status> status(kWatchers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWatchers; ++i) {
    // Half from the start, half from the second event.
    threads.emplace_back(
        [&, i] { status[i] = Watch(job.id(), i % 2, &seen[i]); });
  }
  // The job starts while they watch.
  CancelAndWait(blocker.id());
  for (auto& t : threads) t.join();
  std::vector<v1::ProgressEvent> all;
  ASSERT_TRUE(Watch(job.id(), 0, &all).ok());
  EXPECT_EQ(all.back().state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(CountIterations(all), 200);
  for (int i = 0; i < kWatchers; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(status[i].ok()) << status[i].error_message();
    EXPECT_EQ(Serialized(seen[i]), Serialized(std::vector<v1::ProgressEvent>(
                                       all.begin() + i % 2, all.end())));
  }
}

// A client that drops its stream mid-job and reconnects with the last seq it
// saw misses nothing and sees nothing twice.
TEST_F(JobServiceTest, ReconnectingWatcherResumesExactly) {
  const v1::Job job = SubmitOrDie(SmallSpec(dataset_, 300));
  std::vector<v1::ProgressEvent> got;
  int64_t last = 0;
  for (int round = 0; round < 100; ++round) {
    v1::WatchJobRequest request;
    request.set_id(job.id());
    request.set_after_seq(last);
    auto context = Context();
    auto reader = jobs_->Watch(context.get(), request);
    v1::ProgressEvent e;
    bool final = false;
    // Read a few events, then hang up.
    for (int i = 0; i < 7 && reader->Read(&e); ++i) {
      got.push_back(e);
      last = e.seq();
      final = v1::IsFinalEvent(e);
    }
    context->TryCancel();
    while (reader->Read(&e)) {
    }
    reader->Finish();
    if (final) break;
  }
  std::vector<v1::ProgressEvent> all;
  ASSERT_TRUE(Watch(job.id(), 0, &all).ok());
  EXPECT_EQ(all.back().state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(Serialized(got), Serialized(all));
}

// Watching a running job from beyond its eventual end: the stream ends (OK,
// no events) when the job ends instead of waiting forever.
TEST_F(JobServiceTest, WatchFromBeyondTheEndOfARunningJobEndsWithIt) {
  const v1::Job job = StartLongJob(dataset_);
  std::vector<v1::ProgressEvent> events;
  grpc::Status status;
  std::thread watcher(
      [&] { status = Watch(job.id(), int64_t{1} << 40, &events); });
  // Give the watcher time to park before the job moves on.
  WaitForIterations(job.id(), GetJob(job.id()).iterations() + 20);
  CancelAndWait(job.id());
  watcher.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(events.empty());
}

// ---- limits ----

class JobLimitsTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.max_queued_jobs = 2;
    options->jobs.limits.max_model_params = 100;
  }
};

TEST_F(JobLimitsTest, ModelAboveMaxModelParamsIsResourceExhausted) {
  const std::string dataset = UploadOrDie(TanksCsv());
  // (1 + 2 + 2) * 8 + 8 + 8 + 1 = 57 parameters: fine.
  v1::Job job;
  ASSERT_TRUE(Submit(SmallSpec(dataset, 2), &job).ok());
  v1::JobSpec big = SmallSpec(dataset, 2);
  big.mutable_model()->mutable_narx_mlp()->set_hidden(0, 16);  // 113
  grpc::Status s = Submit(big, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("--max-model-params"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("113"), std::string::npos)
      << s.error_message();
}

// A free initial state per window is a parameter: 400 rows in windows of 4
// add about 400 / 4 + 1 = 101 to a 19-parameter model.
TEST_F(JobLimitsTest, InitialStatesOfWindowsCountAgainstMaxModelParams) {
  const std::string dataset = UploadOrDie(TanksCsv());
  v1::JobSpec spec = SmallSpec(dataset, 2);
  v1::StateSpaceRnnModel* rnn = spec.mutable_model()->mutable_state_space_rnn();
  rnn->set_nx(1);
  rnn->add_fx_hidden(2);
  rnn->add_fy_hidden(2);
  v1::Job job;
  ASSERT_TRUE(Submit(spec, &job).ok());
  rnn->set_subsequence_length(4);
  grpc::Status s = Submit(spec, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("101 of them the initial states of its "
                                   "windows"),
            std::string::npos)
      << s.error_message();
}

TEST_F(JobLimitsTest, QueueAboveMaxQueuedJobsIsResourceExhausted) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job running = StartLongJob(dataset);  // running: not queued
  const v1::Job q1 = SubmitOrDie(SmallSpec(dataset, 2));
  const v1::Job q2 = SubmitOrDie(SmallSpec(dataset, 2));
  v1::Job job;
  grpc::Status s = Submit(SmallSpec(dataset, 2), &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("--max-queued-jobs"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED).size(), 3u);
  // A cancelled queued job frees its place.
  ASSERT_TRUE(CancelJob(q1.id()).ok());
  s = Submit(SmallSpec(dataset, 2), &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  CancelAndWait(running.id());
}

TEST_F(JobLimitsTest, RetryOfAQueuedSubmissionSucceedsWhenTheQueueIsFull) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job running = StartLongJob(dataset);
  v1::Job q1;
  ASSERT_TRUE(Submit(SmallSpec(dataset, 2), &q1, "retry-me").ok());
  const v1::Job q2 = SubmitOrDie(SmallSpec(dataset, 2));
  v1::Job again;
  grpc::Status s = Submit(SmallSpec(dataset, 2), &again, "retry-me");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(again.id(), q1.id());
  // A different spec under the same request_id is still refused.
  s = Submit(SmallSpec(dataset, 3), &again, "retry-me");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS)
      << s.error_message();
  CancelAndWait(running.id());
}

// ---- data.categorical, data.drop_missing, random split ----

// u, a category k in 0..levels-1 (stored as a number, as uploads must be),
// and y.
std::string CategoricalCsv(int levels) {
  std::string csv = "u,k,y\n";
  for (int i = 0; i < 120; ++i) {
    absl::StrAppendFormat(&csv, "%.17g,%d,%.17g\n", std::sin(0.1 * i),
                          i % levels, std::cos(0.1 * i) + i % levels);
  }
  return csv;
}

v1::JobSpec CategoricalSpec(const std::string& dataset_id) {
  v1::JobSpec spec;
  spec.mutable_data()->set_dataset_id(dataset_id);
  spec.mutable_data()->add_inputs("u");
  spec.mutable_data()->add_inputs("k");
  spec.mutable_data()->add_outputs("y");
  spec.mutable_data()->add_categorical("k");
  spec.mutable_split()->set_test_fraction(0.25);
  spec.mutable_split()->set_shuffle_seed(2024);
  spec.mutable_model()->mutable_mlp()->add_hidden(4);
  spec.mutable_optimizer()->mutable_lbfgs();
  spec.mutable_stopping()->set_max_epochs(5);
  spec.set_seed(1);
  return spec;
}

TEST_F(JobServiceTest, CategoricalJobWithARandomSplitRunsToSuccess) {
  const std::string dataset = UploadOrDie(CategoricalCsv(4));
  const v1::Job job = SubmitOrDie(CategoricalSpec(dataset));
  WaitForState(job.id(), v1::Job::SUCCEEDED);
  v1::JobSpec bad = CategoricalSpec(dataset);
  bad.mutable_data()->add_categorical("w");
  v1::Job refused;
  const grpc::Status s = Submit(bad, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("data.categorical[1] 'w'"),
            std::string::npos)
      << s.error_message();
}

// Submission counts a categorical column as one input (the dataset's
// metadata has no levels); the job checks the one-hot width when it starts.
TEST_F(JobLimitsTest, CategoricalWidthIsCheckedWhenTheJobStarts) {
  const std::string dataset = UploadOrDie(CategoricalCsv(30));
  // Submitted as (2 + 1) * 4 + 5 = 17 parameters, run as (31 + 1) * 4 + 5.
  const v1::Job job = SubmitOrDie(CategoricalSpec(dataset));
  const v1::Job failed = WaitForState(job.id(), v1::Job::FAILED);
  EXPECT_NE(failed.reason().find("into 31 input and 1 output columns the "
                                 "model has 133 parameters"),
            std::string::npos)
      << failed.reason();
  EXPECT_NE(failed.reason().find("--max-model-params"), std::string::npos)
      << failed.reason();
}

class JobDeadlineTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.limits.job_deadline_seconds = 0.3;
  }
};

TEST_F(JobDeadlineTest, JobAboveTheDeadlineFailsNamingTheFlag) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job job = SubmitOrDie(SmallSpec(dataset, kLongEpochs));
  const v1::Job failed = WaitForState(job.id(), v1::Job::FAILED);
  EXPECT_NE(failed.reason().find("--job-deadline"), std::string::npos)
      << failed.reason();
  EXPECT_GT(failed.iterations(), 0);
  EXPECT_LT(failed.iterations(), kLongEpochs);
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  EXPECT_EQ(events.back().state(), v1::Job::FAILED);
  EXPECT_EQ(events.back().reason(), failed.reason());
  // It keeps the model it had reached, marked as such.
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  EXPECT_TRUE(model.partial());
  EXPECT_EQ(model.termination(), "deadline");
  EXPECT_EQ(model.epochs(), failed.iterations());
}

// Events thinned by --min-event-interval-ms never lose the run's best
// validation metric: the job's best_validation_metric (status, list) is the
// one its model reached.
class ThinnedEventsTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.min_event_interval = absl::Seconds(60);
  }
};

TEST_F(ThinnedEventsTest, TheBestValidationMetricIsKept) {
  const std::string dataset = UploadOrDie(TanksCsv());
  v1::JobSpec spec = SmallSpec(dataset, 400);
  spec.mutable_split()->mutable_train(0)->set_last(200);
  auto* validation = spec.mutable_split()->add_validation();
  validation->set_first(201);
  validation->set_last(300);
  spec.mutable_stopping()->set_patience(5);
  const v1::Job job = SubmitOrDie(spec);
  const v1::Job done = WaitForState(job.id(), v1::Job::SUCCEEDED);
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  // Thinned: the first iteration, the best one (held back), the last. Here
  // the best is neither: patience ended the run 5 reports after it.
  EXPECT_LT(CountIterations(events), done.iterations());
  ASSERT_TRUE(done.has_best_validation_metric());
  EXPECT_DOUBLE_EQ(done.best_validation_metric(),
                   model.metrics().validation_rmse())
      << "iterations " << done.iterations() << ", events "
      << CountIterations(events);
}

// ---- tenancy ----

class JobAuthTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    WriteTokens(options);
    options->jobs.limits.max_queued_per_tenant = 2;
  }
};

TEST_F(JobAuthTest, MissingOrWrongTokenIsUnauthenticated) {
  const std::string dataset = UploadOrDie(TanksCsv(), kTokenA);
  const v1::Job job = SubmitOrDie(SmallSpec(dataset, 3), kTokenA);
  for (const std::string token : {"", "wrong"}) {
    SCOPED_TRACE(token);
    v1::Job out;
    EXPECT_EQ(Submit(SmallSpec(dataset, 3), &out, "", token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(GetJobStatus(job.id(), nullptr, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::ListJobsResponse list;
    EXPECT_EQ(
        ListJobs(v1::Job::STATE_UNSPECIFIED, 0, "", &list, token).error_code(),
        grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CancelJob(job.id(), nullptr, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    std::vector<v1::ProgressEvent> events;
    EXPECT_EQ(Watch(job.id(), 0, &events, token).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_TRUE(events.empty());
  }
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED, kTokenA).size(), 1u);
}

TEST_F(JobAuthTest, TenantsCannotSeeOrTouchEachOthersJobs) {
  const std::string dataset = UploadOrDie(TanksCsv(), kTokenA);
  const v1::Job running = StartLongJob(dataset, kTokenA);
  v1::SubmitJobRequest request;
  *request.mutable_spec() = SmallSpec(dataset, 3);
  request.set_request_id("shared-request-id");
  v1::Job queued;
  ASSERT_TRUE(SubmitRequest(request, &queued, kTokenA).ok());

  for (const v1::Job& job : {running, queued}) {
    SCOPED_TRACE(job.id());
    grpc::Status s = GetJobStatus(job.id(), nullptr, kTokenB);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_EQ(CancelJob(job.id(), nullptr, kTokenB).error_code(),
              grpc::StatusCode::NOT_FOUND);
    std::vector<v1::ProgressEvent> events;
    EXPECT_EQ(Watch(job.id(), 0, &events, kTokenB).error_code(),
              grpc::StatusCode::NOT_FOUND);
    EXPECT_TRUE(events.empty());
    EXPECT_EQ(GetModel(job.id(), nullptr, kTokenB).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  // Bob's cancel attempts changed nothing.
  EXPECT_EQ(GetJob(running.id(), kTokenA).state(), v1::Job::RUNNING);
  EXPECT_EQ(GetJob(queued.id(), kTokenA).state(), v1::Job::QUEUED);
  // Bob cannot train on Alice's dataset.
  v1::Job job;
  grpc::Status s = Submit(SmallSpec(dataset, 3), &job, "", kTokenB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  // Request ids are per tenant: Bob's "shared-request-id" is his own job.
  const std::string bob_dataset = UploadOrDie(TanksCsv(), kTokenB);
  *request.mutable_spec() = SmallSpec(bob_dataset, 3);
  v1::Job bobs;
  s = SubmitRequest(request, &bobs, kTokenB);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(bobs.id(), queued.id());

  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED, kTokenA),
            (std::vector<std::string>{running.id(), queued.id()}));
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED, kTokenB),
            std::vector<std::string>{bobs.id()});
  EXPECT_TRUE(AllJobIds(v1::Job::RUNNING, kTokenB).empty());
  CancelAndWait(running.id(), kTokenA);
}

TEST_F(JobAuthTest, QueueAboveMaxQueuedPerTenantIsResourceExhausted) {
  const std::string alice = UploadOrDie(TanksCsv(), kTokenA);
  const std::string bob = UploadOrDie(TanksCsv(), kTokenB);
  const v1::Job running = StartLongJob(alice, kTokenA);
  SubmitOrDie(SmallSpec(alice, 2), kTokenA);
  SubmitOrDie(SmallSpec(alice, 2), kTokenA);
  v1::Job job;
  grpc::Status s = Submit(SmallSpec(alice, 2), &job, "", kTokenA);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("--max-queued-per-tenant"),
            std::string::npos)
      << s.error_message();
  // Bob has his own quota.
  s = Submit(SmallSpec(bob, 2), &job, "", kTokenB);
  EXPECT_TRUE(s.ok()) << s.error_message();
  CancelAndWait(running.id(), kTokenA);
}

// ---- graceful shutdown and restart ----

// The resumed job also ends with the uninterrupted run's model, bit for bit,
// including the choice of the best iterate on validation data.
TEST_F(JobServiceTest, ShutdownCheckpointsARunningJobThatTheRestartResumes) {
  constexpr int kEpochs = 1500;
  v1::JobSpec spec = SmallSpec(dataset_, kEpochs);
  spec.mutable_split()->mutable_train(0)->set_last(250);
  auto* validation = spec.mutable_split()->add_validation();
  validation->set_first(251);
  validation->set_last(300);
  const v1::Job job = SubmitOrDie(spec);
  // A watcher through the shutdown.
  std::vector<v1::ProgressEvent> before;
  grpc::Status watch_status;
  std::atomic<bool> watching{false};
  std::thread watcher([&] {
    v1::WatchJobRequest request;
    request.set_id(job.id());
    auto context = Context();
    auto reader = jobs_->Watch(context.get(), request);
    v1::ProgressEvent e;
    while (reader->Read(&e)) {
      before.push_back(e);
      watching = true;
    }
    watch_status = reader->Finish();
  });
  WaitForIterations(job.id(), 25);  // past the checkpoint at 10 and 20
  for (int i = 0; i < 5000 && !watching.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const bool watched = watching.load();
  server_->Shutdown(absl::Seconds(5));
  watcher.join();
  ASSERT_TRUE(watched) << "the watcher saw no event before the shutdown";
  EXPECT_EQ(watch_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << watch_status.error_message();
  ASSERT_FALSE(before.empty());
  ExpectDense(before);
  const int64_t last_seen = before.back().seq();

  // In the store: still RUNNING, with a checkpoint at its last iteration.
  server_.reset();
  int checkpointed = 0;
  {
    auto store = OpenSqliteStore((dir_ / "sparrow.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    auto record = (*store)->GetJob(job.id());
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_EQ(record->job.state(), v1::Job::RUNNING);
    EXPECT_EQ(record->job.attempts(), 1);
    EXPECT_GE(record->job.iterations(), 25);
    EXPECT_LT(record->job.iterations(), kEpochs) << "finished too early";
    auto checkpoint = (*store)->GetCheckpoint(job.id());
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    ASSERT_TRUE(checkpoint->has_value());
    checkpointed = record->job.iterations();
  }

  StartServer();
  std::vector<v1::ProgressEvent> after;
  grpc::Status s = Watch(job.id(), last_seen, &after);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(after.empty());
  ExpectDense(after, last_seen + 1);
  EXPECT_EQ(after.back().state(), v1::Job::SUCCEEDED) << after.back().reason();

  // Every iteration exactly once across both attempts.
  std::vector<v1::ProgressEvent> all = before;
  all.insert(all.end(), after.begin(), after.end());
  std::vector<int> iterations;
  for (const auto& e : all) {
    if (e.kind() == v1::ProgressEvent::ITERATION) {
      iterations.push_back(e.iteration());
    }
  }
  ASSERT_EQ(iterations.size(), static_cast<size_t>(kEpochs));
  for (int i = 0; i < kEpochs; ++i) ASSERT_EQ(iterations[i], i + 1);
  EXPECT_EQ(States(all), (std::vector<v1::Job::State>{
                             v1::Job::QUEUED, v1::Job::RUNNING,
                             v1::Job::RUNNING, v1::Job::SUCCEEDED}));

  const v1::Job done = GetJob(job.id());
  EXPECT_EQ(done.state(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 2);
  EXPECT_EQ(done.iterations(), kEpochs);
  // Its "loss a -> b" starts at the checkpoint, and says so.
  EXPECT_NE(done.summary().find("(at the checkpoint it resumed from) ->"),
            std::string::npos)
      << done.summary();
  ASSERT_EQ(done.history_size(), 4);
  EXPECT_EQ(done.history(2).state(), v1::Job::RUNNING);
  EXPECT_NE(done.history(2).reason().find("checkpoint"), std::string::npos)
      << done.history(2).reason();
  EXPECT_NE(done.history(2).reason().find(std::to_string(checkpointed)),
            std::string::npos)
      << done.history(2).reason();
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  EXPECT_EQ(model.epochs(), kEpochs);
  ExpectSameAsUninterrupted(spec, model);
}

// A multi-stage job stopped by a shutdown in its second stage resumes there,
// and ends with the uninterrupted job's model.
TEST_F(JobServiceTest, AStagedJobResumesInItsStage) {
  constexpr int kFirst = 15, kSecond = 1500;
  v1::JobSpec spec = SmallSpec(dataset_, kSecond);
  spec.clear_optimizer();
  v1::Stage* first = spec.add_stages();
  first->mutable_optimizer()->mutable_adam()->set_learning_rate(0.01);
  *first->mutable_stopping() = spec.stopping();
  first->mutable_stopping()->set_max_epochs(kFirst);
  spec.add_stages()->mutable_optimizer()->mutable_sgd()->set_learning_rate(
      0.01);
  const v1::Job job = SubmitOrDie(spec);
  WaitForIterations(job.id(), kFirst + 15);  // a checkpoint in stage 2
  server_->Shutdown(absl::Seconds(5));
  server_.reset();
  StartServer();
  const v1::Job done = WaitForState(job.id(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 2);
  EXPECT_EQ(done.iterations(), kFirst + kSecond);
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(job.id(), 0, &events).ok());
  int iteration = 0;
  for (const v1::ProgressEvent& e : events) {
    if (e.kind() != v1::ProgressEvent::ITERATION) continue;
    ASSERT_EQ(e.iteration(), ++iteration);
    ASSERT_EQ(e.extras().at("stage"), iteration <= kFirst ? 1 : 2);
  }
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  EXPECT_EQ(model.epochs(), kFirst + kSecond);
  ExpectSameAsUninterrupted(spec, model);
}

// A run whose loss stops falling ends "stalled", in words, not silently.
TEST_F(JobServiceTest, AStalledRunSaysSoInItsReason) {
  v1::JobSpec spec = SmallSpec(dataset_, 1000);
  spec.mutable_optimizer()->mutable_adam()->set_learning_rate(1e-12);
  spec.mutable_stopping()->set_stall_epochs(5);
  const v1::Job job = SubmitOrDie(spec);
  const v1::Job done = WaitForState(job.id(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.iterations(), 5);
  const std::string& reason = done.history(done.history_size() - 1).reason();
  EXPECT_EQ(reason.rfind("stalled: the loss stayed within", 0), 0u) << reason;
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(job.id(), &model).ok());
  EXPECT_EQ(model.termination(), "stalled");
}

TEST_F(JobServiceTest, QueuedJobsSurviveARestart) {
  const v1::Job blocker = StartLongJob(dataset_);
  const v1::Job queued = SubmitOrDie(SmallSpec(dataset_, 3));
  RestartServer();
  // The blocker resumes first (its second attempt); the queued job waits
  // behind it.
  const v1::Job resumed = WaitForJob(
      blocker.id(), [](const v1::Job& j) { return j.attempts() == 2; });
  EXPECT_EQ(resumed.state(), v1::Job::RUNNING);
  EXPECT_EQ(GetJob(queued.id()).state(), v1::Job::QUEUED);
  CancelAndWait(blocker.id());
  const v1::Job done = WaitForState(queued.id(), v1::Job::SUCCEEDED);
  EXPECT_EQ(done.attempts(), 1);
  EXPECT_EQ(GetJob(blocker.id()).attempts(), 2);
}

// Two running jobs, restarted with one worker: the second waits in the queue,
// RUNNING in the store, to resume. A cancel then ends it at once (it used to
// be refused, and the job dropped from the queue, never to resume).
class RecoveryTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override { options->jobs.workers = 2; }
};

TEST_F(RecoveryTest, RecoveredJobWaitingToResumeCanBeCancelled) {
  const std::string dataset = UploadOrDie(TanksCsv());
  const v1::Job first = StartLongJob(dataset);
  const v1::Job second = StartLongJob(dataset);
  server_.reset();
  options_.jobs.workers = 1;
  StartServer();
  // The first resumes (its second attempt); the second waits behind it.
  WaitForJob(first.id(), [](const v1::Job& j) { return j.attempts() == 2; });
  v1::Job waiting = GetJob(second.id());
  EXPECT_EQ(waiting.state(), v1::Job::RUNNING);
  EXPECT_EQ(waiting.attempts(), 1);

  v1::Job cancelled;
  grpc::Status s = CancelJob(second.id(), &cancelled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(cancelled.state(), v1::Job::CANCELLED);
  EXPECT_NE(cancelled.reason().find("before it resumed"), std::string::npos)
      << cancelled.reason();
  CancelAndWait(first.id());
  EXPECT_EQ(GetJob(second.id()).attempts(), 1);
  // Watchers of the cancelled job see its end.
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(second.id(), 0, &events).ok());
  EXPECT_EQ(events.back().state(), v1::Job::CANCELLED);
}

}  // namespace
}  // namespace sparrow::server
