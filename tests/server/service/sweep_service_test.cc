// Sweep jobs on sparrowd (JobSpec.sweep): trials run as jobs of their own on
// the worker pool, the sweep job mirrors their progress and ends with the
// chosen trial's model; warm path points wait for the point before; cancel
// reaches every trial; a restart resumes the sweep where it was.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "google/protobuf/util/time_util.h"  // Timestamp comparisons
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

// SmallSpec with a validation split to choose on (rows 251-300).
v1::JobSpec SweepSpec(const std::string& dataset, int epochs) {
  v1::JobSpec spec = SmallSpec(dataset, epochs);
  spec.mutable_split()->mutable_train(0)->set_last(250);
  auto* validation = spec.mutable_split()->add_validation();
  validation->set_first(251);
  validation->set_last(300);
  return spec;
}

int FinalTransitions(const v1::Job& job) {
  return static_cast<int>(
      std::count_if(job.history().begin(), job.history().end(),
                    [](const auto& t) { return v1::IsFinal(t.state()); }));
}

std::map<int, int> MirroredIterations(
    const std::vector<v1::ProgressEvent>& events) {
  std::map<int, int> n;
  for (const auto& e : events) {
    if (e.kind() == v1::ProgressEvent::ITERATION) {
      EXPECT_TRUE(e.has_trial()) << "an event of the sweep job without trial";
      ++n[e.trial()];
    }
  }
  return n;
}

// The sweep's TRIAL_END events: trial index -> count.
std::map<int, int> TrialEnds(const std::vector<v1::ProgressEvent>& events) {
  std::map<int, int> n;
  for (const auto& e : events) {
    if (e.kind() == v1::ProgressEvent::TRIAL_END) ++n[e.trial()];
  }
  return n;
}

class SweepServiceTest : public ServiceFixture {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.workers = 2;
    options->jobs.event_flush_interval = absl::ZeroDuration();
  }
  void SetUp() override {
    ServiceFixture::SetUp();
    dataset_ = UploadOrDie(TanksCsv());
  }
  v1::Job Finished(const std::string& id) {
    return WaitForJob(
        id, [](const v1::Job& j) { return v1::IsFinal(j.state()); }, "",
        absl::Seconds(120));
  }
  std::string dataset_;
};

TEST_F(SweepServiceTest, SeedsRunAsTrialJobsAndTheBestOnValidationIsChosen) {
  v1::JobSpec spec = SweepSpec(dataset_, 60);
  spec.mutable_sweep()->set_seeds(3);
  const v1::Job submitted = SubmitOrDie(spec);
  const v1::Job sweep = Finished(submitted.id());
  ASSERT_EQ(sweep.state(), v1::Job::SUCCEEDED) << sweep.reason();
  EXPECT_NE(sweep.reason().find("chose trial"), std::string::npos)
      << sweep.reason();
  ASSERT_EQ(sweep.trials_size(), 3);

  int best = -1;
  double best_rmse = std::numeric_limits<double>::infinity();
  std::vector<v1::Job> trials;
  for (const v1::SweepTrial& t : sweep.trials()) {
    ASSERT_FALSE(t.job_id().empty());
    EXPECT_EQ(t.state(), v1::Job::SUCCEEDED) << t.reason();
    const v1::Job job = GetJob(t.job_id());
    EXPECT_EQ(job.parent_id(), sweep.id());
    EXPECT_EQ(job.trial_index(), t.index());
    EXPECT_EQ(job.spec().seed(), 1u + t.index());
    EXPECT_FALSE(job.spec().has_sweep());
    EXPECT_EQ(FinalTransitions(job), 1);
    ASSERT_TRUE(std::isfinite(job.metrics().validation_rmse()));
    if (job.metrics().validation_rmse() < best_rmse) {
      best_rmse = job.metrics().validation_rmse();
      best = t.index();
    }
    trials.push_back(job);
  }
  ASSERT_TRUE(sweep.has_chosen_trial());
  EXPECT_EQ(sweep.chosen_trial(), best);
  // The trials' copied events leave the sweep's own progress fields alone.
  EXPECT_EQ(sweep.iterations(), 0);
  EXPECT_FALSE(sweep.has_best_validation_metric());
  EXPECT_FALSE(sweep.has_sparsity_pct());

  // The sweep's model is the chosen trial's, and says which trial it is.
  v1::TrainedModel model, chosen;
  ASSERT_TRUE(GetModel(sweep.id(), &model).ok());
  ASSERT_TRUE(GetModel(trials[best].id(), &chosen).ok());
  EXPECT_FALSE(chosen.has_sweep_trial());
  ASSERT_TRUE(model.has_sweep_trial());
  EXPECT_EQ(model.sweep_trial().index(), best);
  EXPECT_EQ(model.sweep_trial().trials(), 3);
  EXPECT_EQ(model.sweep_trial().label(), sweep.trials(best).label());
  EXPECT_EQ(model.seed(), 1u + best);
  model.clear_sweep_trial();
  EXPECT_EQ(model.SerializeAsString(), chosen.SerializeAsString());

  // Two workers: the second trial was queued before the first ended.
  EXPECT_LT(trials[1].create_time(), trials[0].end_time());

  // Watching the sweep shows every trial's iterations, tagged, then its end.
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(sweep.id(), 0, &events).ok());
  EXPECT_EQ(States(events),
            (std::vector<v1::Job::State>{v1::Job::QUEUED, v1::Job::RUNNING,
                                         v1::Job::SUCCEEDED}));
  const std::map<int, int> mirrored = MirroredIterations(events);
  for (const v1::Job& trial : trials) {
    std::vector<v1::ProgressEvent> own;
    ASSERT_TRUE(Watch(trial.id(), 0, &own).ok());
    EXPECT_GT(CountIterations(own), 0);
    const auto copies = mirrored.find(trial.trial_index());
    ASSERT_NE(copies, mirrored.end())
        << "no events of trial " << trial.trial_index();
    EXPECT_EQ(copies->second, CountIterations(own));
  }
  // One TRIAL_END per trial, with its state and validation error, all
  // before the sweep's own final state.
  EXPECT_EQ(TrialEnds(events), (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));
  ASSERT_TRUE(v1::IsFinalEvent(events.back()));
  for (const v1::ProgressEvent& e : events) {
    if (e.kind() != v1::ProgressEvent::TRIAL_END) continue;
    const v1::Job& trial = trials[e.trial()];
    EXPECT_EQ(e.state(), v1::Job::SUCCEEDED);
    EXPECT_EQ(e.reason(), trial.reason());
    EXPECT_EQ(e.validation_metric(), trial.metrics().validation_rmse());
  }
  EXPECT_EQ(GetJob(sweep.id()).trial_ends_size(), 3);
}

// sweep.metric on sparrowd: the choice reads the named figure of each trial.
TEST_F(SweepServiceTest, TheSweepsMetricDecidesTheChoice) {
  v1::JobSpec spec = SweepSpec(dataset_, 30);
  spec.mutable_sweep()->set_seeds(3);
  spec.mutable_sweep()->set_metric(v1::Sweep::METRIC_ONE_STEP_RMSE);
  const v1::Job sweep = Finished(SubmitOrDie(spec).id());
  ASSERT_EQ(sweep.state(), v1::Job::SUCCEEDED) << sweep.reason();
  int best = -1;
  double best_rmse = std::numeric_limits<double>::infinity();
  for (const v1::SweepTrial& t : sweep.trials()) {
    const double rmse = t.metrics().validation_one_step_rmse();
    ASSERT_TRUE(std::isfinite(rmse)) << t.index();
    EXPECT_NE(rmse, t.metrics().validation_rmse());
    if (rmse < best_rmse) {
      best_rmse = rmse;
      best = t.index();
    }
  }
  ASSERT_TRUE(sweep.has_chosen_trial());
  EXPECT_EQ(sweep.chosen_trial(), best);
  EXPECT_NE(sweep.reason().find("validation_one_step_rmse"), std::string::npos)
      << sweep.reason();
}

TEST_F(SweepServiceTest, WarmPathPointsStartFromThePointBefore) {
  v1::JobSpec spec = SweepSpec(dataset_, 20);
  v1::Sweep::Path* path = spec.mutable_sweep()->mutable_path();
  path->set_field("optimizer.adam.learning_rate");
  path->set_from(0.001);
  path->set_to(0.01);
  path->set_points(3);
  const v1::Job sweep = Finished(SubmitOrDie(spec).id());
  ASSERT_EQ(sweep.state(), v1::Job::SUCCEEDED) << sweep.reason();
  ASSERT_EQ(sweep.trials_size(), 3);
  EXPECT_NE(sweep.trials(0).label().find("learning_rate=0.001"),
            std::string::npos)
      << sweep.trials(0).label();
  for (int i = 1; i < 3; ++i) {
    const v1::Job before = GetJob(sweep.trials(i - 1).job_id());
    const v1::Job point = GetJob(sweep.trials(i).job_id());
    EXPECT_EQ(point.spec().warm_start().job_id(), before.id());
    EXPECT_GE(point.create_time(), before.end_time());
  }
  // The sweep's model names the chosen point's learning rate.
  v1::TrainedModel model;
  ASSERT_TRUE(GetModel(sweep.id(), &model).ok());
  ASSERT_EQ(model.sweep_trial().settings_size(), 1);
  EXPECT_EQ(model.sweep_trial().settings(0).field(),
            "optimizer.adam.learning_rate");
  const v1::Job chosen =
      GetJob(sweep.trials(model.sweep_trial().index()).job_id());
  EXPECT_EQ(std::stod(model.sweep_trial().settings(0).value()),
            chosen.spec().optimizer().adam().learning_rate());
}

TEST_F(SweepServiceTest, MaxParallelOneRunsTrialsOneAfterAnother) {
  v1::JobSpec spec = SweepSpec(dataset_, 20);
  spec.mutable_sweep()->set_seeds(2);
  spec.mutable_sweep()->set_max_parallel(1);
  const v1::Job sweep = Finished(SubmitOrDie(spec).id());
  ASSERT_EQ(sweep.state(), v1::Job::SUCCEEDED) << sweep.reason();
  const v1::Job first = GetJob(sweep.trials(0).job_id());
  const v1::Job second = GetJob(sweep.trials(1).job_id());
  EXPECT_GE(second.create_time(), first.end_time());
}

TEST_F(SweepServiceTest, ATrialThatCannotRunIsRefusedAtSubmissionByIndex) {
  v1::JobSpec spec = SweepSpec(dataset_, 20);
  v1::Sweep::Axis* axis = spec.mutable_sweep()->add_grid();
  axis->set_field("optimizer.adam.learning_rate");
  axis->add_values()->set_number_value(0.01);
  axis->add_values()->set_number_value(-1);
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  grpc::Status s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("trial 1"), std::string::npos)
      << s.error_message();
  // A grid needs a validation split: the choice is never made on test rows.
  spec.mutable_split()->clear_validation();
  axis->mutable_values()->RemoveLast();
  *request.mutable_spec() = spec;
  s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("validation"), std::string::npos)
      << s.error_message();
}

TEST_F(SweepServiceTest, RequestIdsOfTrialsAreReserved) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = SmallSpec(dataset_, 5);
  request.set_request_id("sweep:job-0123456789abcdef:trial-0");
  const grpc::Status s = SubmitRequest(request, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("sweep:"), std::string::npos)
      << s.error_message();
}

class SweepCancelTest : public SweepServiceTest {
 protected:
  void Configure(ServerOptions* options) override {
    options->jobs.workers = 1;
    options->jobs.event_flush_interval = absl::ZeroDuration();
  }
};

TEST_F(SweepCancelTest, CancelStopsTheRunningTrialAndStartsNoOther) {
  v1::JobSpec spec = SweepSpec(dataset_, kLongEpochs);
  spec.mutable_sweep()->set_seeds(3);
  const v1::Job submitted = SubmitOrDie(spec);
  const v1::Job running = WaitForJob(submitted.id(), [](const v1::Job& j) {
    return j.trials_size() == 3 && j.trials(0).state() == v1::Job::RUNNING;
  });
  ASSERT_EQ(running.trials(0).state(), v1::Job::RUNNING);
  v1::Job cancelling;
  ASSERT_TRUE(CancelJob(submitted.id(), &cancelling).ok());
  EXPECT_EQ(cancelling.state(), v1::Job::CANCELLING);
  const v1::Job cancelled = Finished(submitted.id());
  EXPECT_EQ(cancelled.state(), v1::Job::CANCELLED) << cancelled.reason();
  EXPECT_EQ(cancelled.trials(0).state(), v1::Job::CANCELLED);
  // One worker: the other trials never started, and say they never will.
  for (int i : {1, 2}) {
    EXPECT_TRUE(cancelled.trials(i).job_id().empty());
    EXPECT_EQ(cancelled.trials(i).state(), v1::Job::CANCELLED);
    EXPECT_EQ(cancelled.trials(i).reason(),
              "not started: the sweep was cancelled");
  }
  const grpc::Status again = CancelJob(submitted.id());
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << again.error_message();
}

TEST_F(SweepCancelTest, ARestartMidSweepResumesItsTrialsEachEndingOnce) {
  v1::JobSpec spec = SweepSpec(dataset_, kLongEpochs);
  spec.mutable_stopping()->set_max_seconds(5.0);  // each trial's wall time
  spec.mutable_sweep()->set_seeds(2);
  const v1::Job submitted = SubmitOrDie(spec);
  WaitForJob(submitted.id(), [](const v1::Job& j) {
    return j.trials_size() == 2 && j.trials(0).iterations() >= 5;
  });
  RestartServer();
  const v1::Job sweep = Finished(submitted.id());
  ASSERT_EQ(sweep.state(), v1::Job::SUCCEEDED) << sweep.reason();
  EXPECT_EQ(FinalTransitions(sweep), 1);
  const v1::Job first = GetJob(sweep.trials(0).job_id());
  EXPECT_EQ(first.attempts(), 2) << "trial 0 resumes after the restart";
  for (const v1::SweepTrial& t : sweep.trials()) {
    EXPECT_EQ(FinalTransitions(GetJob(t.job_id())), 1);
  }
  // Each trial's end is announced once in the sweep's log, restart or not.
  std::vector<v1::ProgressEvent> events;
  ASSERT_TRUE(Watch(sweep.id(), 0, &events).ok());
  EXPECT_EQ(TrialEnds(events), (std::map<int, int>{{0, 1}, {1, 1}}));
  // The sweep and its two trials, no more.
  EXPECT_EQ(AllJobIds(v1::Job::STATE_UNSPECIFIED).size(), 3u);
}

}  // namespace
}  // namespace sparrow::server
