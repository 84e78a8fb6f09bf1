#include "server/worker/worker.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/train/memory.h"
#include "core/train/resume.h"
#include "core/train/trainer.h"
#include "server/jobs/resume.h"
#include "server/worker/pipe.h"
#include "sparrow/v1/worker.pb.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/model.h"
#include "translate/warm_start.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPARROW_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SPARROW_SANITIZED 1
#endif
#endif

namespace sparrow::server {
namespace {

using Outcome = v1::WorkerReport::Outcome;

// Exit codes that tell sparrowd how a worker ended without an Outcome.
constexpr int kExitParentGone = 3;
constexpr int64_t kMaxRequestBytes = int64_t{8} << 30;

// The worker's writer: the training thread and the control thread share it.
// A failed write means sparrowd is gone, and so the worker ends.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  void Send(const v1::WorkerReport& report) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!WriteMessage(fd_, report).ok()) std::_Exit(kExitParentGone);
  }
  void Log(std::string line) {
    v1::WorkerReport report;
    report.set_log(std::move(line));
    Send(report);
  }
  // Sends a batch of events and waits until sparrowd has stored it.
  void SendEvents(const v1::WorkerReport& report) {
    Send(report);
    std::unique_lock<std::mutex> lock(ack_mu_);
    ++batches_sent_;
    acked_.wait(lock, [this] { return batches_stored_ >= batches_sent_; });
  }
  void EventsStored() {
    std::lock_guard<std::mutex> lock(ack_mu_);
    ++batches_stored_;
    acked_.notify_all();
  }
  void SendOutcome(Outcome outcome) {
    v1::WorkerReport report;
    *report.mutable_outcome() = std::move(outcome);
    Send(report);
  }

 private:
  std::mutex mu_;
  const int fd_;
  std::mutex ack_mu_;
  std::condition_variable acked_;
  int64_t batches_sent_ = 0;
  int64_t batches_stored_ = 0;
};

Channel* g_channel = nullptr;  // for the terminate handler
int64_t g_memory_limit = 0;

std::string OutOfMemoryReason() {
  if (g_memory_limit <= 0) {
    return "the job ran out of memory: this machine could not give it what "
           "it asked for; use a smaller model or less data";
  }
  return absl::StrCat(
      "the job ran out of memory: it needed more than its limit of ",
      core::FormatBytes(g_memory_limit),
      " (sparrowd --max-job-memory); use a smaller model or less data, or "
      "raise the limit");
}

Outcome Failed(std::string reason) {
  Outcome o;
  o.set_kind(Outcome::FAILED);
  o.set_reason(std::move(reason));
  return o;
}

// An exception that escapes a thread of the optimizer (an allocation of an
// Eigen matrix past the memory limit, say) ends the job with its reason
// rather than as an anonymous crash.
[[noreturn]] void OnTerminate() {
  if (g_channel != nullptr && std::current_exception() != nullptr) {
    try {
      std::rethrow_exception(std::current_exception());
    } catch (const std::bad_alloc&) {
      g_channel->SendOutcome(Failed(OutOfMemoryReason()));
      std::_Exit(0);
    } catch (const std::exception& e) {
      g_channel->SendOutcome(
          Failed(absl::StrCat("the optimizer failed: ", e.what())));
      std::_Exit(0);
    } catch (...) {
    }
  }
  std::abort();
}

// Caps the data the process may map (RLIMIT_DATA: heap and private writable
// mappings, which is where Eigen's matrices live; code and shared libraries
// do not count). Sanitizer runtimes reserve terabytes of shadow memory, so
// their builds run without the cap (the admission estimate still applies).
void LimitMemory(int64_t bytes, Channel* channel) {
  g_memory_limit = bytes;
#ifdef SPARROW_SANITIZED
  (void)channel;
#else
  if (bytes <= 0) return;
  const rlimit limit{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  if (setrlimit(RLIMIT_DATA, &limit) != 0) {
    channel->Log("cannot set the worker's memory limit (RLIMIT_DATA)");
  }
#endif
}

// The kernel's OOM killer should pick a worker before sparrowd itself.
void PreferOomKill() {
  if (FILE* f = std::fopen("/proc/self/oom_score_adj", "w")) {
    std::fputs("1000", f);
    std::fclose(f);
  }
}

enum class Stop : int { kNone, kCancel, kShutdown, kDeadline };

// Turns optimizer iterations into progress events (sent in batches), takes
// checkpoints, and stops the run on cancel, shutdown or the deadline. The
// control thread may take a checkpoint of the last finished iteration at any
// time (Checkpoint is thread-safe).
class JobCallback : public core::IterationCallback {
 public:
  JobCallback(Channel* channel, const v1::WorkerRequest& request)
      : channel_(channel),
        request_(request),
        iteration_offset_(request.resume() ? request.checkpoint().iteration()
                                           : 0),
        elapsed_offset_(
            request.resume() ? request.checkpoint().elapsed_seconds() : 0.0),
        start_(absl::Now()),
        last_flush_(start_),
        checkpoint_iteration_(iteration_offset_) {}

  void RequestStop(Stop stop) {
    int none = static_cast<int>(Stop::kNone);
    stop_.compare_exchange_strong(none, static_cast<int>(stop));
  }
  Stop stop() const { return static_cast<Stop>(stop_.load()); }
  int last_iteration() const { return last_.iteration; }
  int iteration_offset() const { return iteration_offset_; }
  double elapsed_offset() const { return elapsed_offset_; }

  core::CallbackResult OnIteration(core::IterationRecord* r) override {
    if (r->stage_start) return StartStage(*r);
    const absl::Time now = absl::Now();
    Record(*r, now);
    core::KeepCheckpoint(*r, iteration_offset_, elapsed_offset_, &last_);
    // Progress may be reported every few iterations (stopping.report_every):
    // checkpoint at the first report at least checkpoint_every past the last
    // (and at least checkpoint_min_seconds after it).
    const bool checkpoint =
        request_.checkpoint_every() > 0 &&
        last_.iteration - checkpoint_iteration_ >=
            request_.checkpoint_every() &&
        now - last_checkpoint_ >=
            absl::Seconds(request_.checkpoint_min_seconds());
    if (checkpoint ||
        now - last_flush_ >= absl::Seconds(request_.event_flush_seconds())) {
      Flush();
      if (checkpoint) {
        checkpoint_iteration_ = last_.iteration;
        last_checkpoint_ = now;
        Checkpoint();
      }
    }
    if (request_.deadline_seconds() > 0 &&
        absl::ToDoubleSeconds(now - start_) > request_.deadline_seconds()) {
      RequestStop(Stop::kDeadline);
    }
    return stop() == Stop::kNone ? core::CallbackResult::kContinue
                                 : core::CallbackResult::kAbort;
  }

  // Between two stages: every event so far is sent, and a checkpoint from
  // here on resumes the next stage from its start.
  core::CallbackResult StartStage(const core::IterationRecord& r) {
    FlushFinal();
    core::KeepCheckpoint(r, iteration_offset_, elapsed_offset_, &last_);
    {
      std::lock_guard<std::mutex> lock(sent_mu_);
      sent_ = last_;
    }
    Checkpoint();  // once per stage: a restart goes on in the next stage
    return stop() == Stop::kNone ? core::CallbackResult::kContinue
                                 : core::CallbackResult::kAbort;
  }

  // At the end of the run: the held-back last iteration is sent too.
  void FlushFinal() {
    SendHeldBest();
    if (has_held_) {
      *pending_.mutable_events()->Add() = held_;
      has_held_ = false;
    }
    Flush();
  }

  // Sends a checkpoint of the last iteration whose event was sent, if any,
  // so that a resumed run repeats no reported iteration. Thread-safe.
  void Checkpoint() {
    v1::WorkerReport report;
    v1::JobCheckpoint& c = *report.mutable_checkpoint();
    {
      std::lock_guard<std::mutex> lock(sent_mu_);
      if (sent_.params.size() == 0) return;
      c.set_iteration(sent_.iteration);
      c.set_elapsed_seconds(sent_.elapsed_seconds);
      c.mutable_params()->Add(sent_.params.data(),
                              sent_.params.data() + sent_.params.size());
      c.mutable_optimizer_state()->Add(sent_.state.data(),
                                       sent_.state.data() + sent_.state.size());
      if (std::isfinite(sent_.step_size)) c.set_step_size(sent_.step_size);
      if (sent_.best_params.size() > 0) {
        c.mutable_best_params()->Add(
            sent_.best_params.data(),
            sent_.best_params.data() + sent_.best_params.size());
        c.set_best_validation_metric(sent_.best_validation_metric);
      }
      c.set_reports_since_best(sent_.reports_since_best);
      if (std::isfinite(sent_.loss)) c.set_loss(sent_.loss);
      if (std::isfinite(sent_.stall_reference)) {
        c.set_stall_reference(sent_.stall_reference);
      }
      c.set_stall_since(sent_.stall_since);
      c.set_stage(sent_.stage);
      c.set_stage_start_iteration(sent_.stage_start_iteration);
      c.set_stage_start_seconds(sent_.stage_start_seconds);
    }
    channel_->Send(report);
  }

 private:
  // Thinning: an event within min_event_interval of the last sent one is
  // held back, replaced by the next, and sent at the end of the run. One
  // whose validation metric is the best so far is not lost: it goes out
  // before the next event that is sent (so the job's best validation metric,
  // which the store takes from the events, is the run's).
  void Record(const core::IterationRecord& r, absl::Time now) {
    const bool keep = now - last_event_ >=
                      absl::Seconds(request_.min_event_interval_seconds());
    if (keep) {
      last_event_ = now;
      has_held_ = false;
      SendHeldBest();
    }
    v1::ProgressEvent& e = keep ? *pending_.mutable_events()->Add() : held_;
    if (!keep) {
      e.Clear();
      has_held_ = true;
    }
    Fill(r, &e);
    if (!keep && std::isfinite(r.validation_metric) &&
        r.reports_since_best == 0) {
      held_best_ = e;
      has_held_best_ = true;
    }
  }

  // The held-back best event, unless it is the held-back last one (which
  // FlushFinal sends).
  void SendHeldBest() {
    if (has_held_best_ &&
        !(has_held_ && held_.iteration() == held_best_.iteration())) {
      *pending_.mutable_events()->Add() = held_best_;
    }
    has_held_best_ = false;
  }

  void Fill(const core::IterationRecord& r, v1::ProgressEvent* out) const {
    v1::ProgressEvent& e = *out;
    e.set_kind(v1::ProgressEvent::ITERATION);
    e.set_iteration(iteration_offset_ + r.iteration);
    e.set_elapsed_seconds(elapsed_offset_ + r.elapsed_seconds);
    e.set_loss(r.loss);
    if (std::isfinite(r.validation_metric)) {
      e.set_validation_metric(r.validation_metric);
    }
    if (std::isfinite(r.sparsity_pct)) e.set_sparsity_pct(r.sparsity_pct);
    if (std::isfinite(r.step_size)) e.set_step_size(r.step_size);
    for (const auto& [name, value] : r.extras) {
      if (std::isfinite(value)) (*e.mutable_extras())[name] = value;
    }
  }

  void Flush() {
    last_flush_ = absl::Now();
    if (pending_.events_size() == 0) return;
    {
      std::lock_guard<std::mutex> lock(sent_mu_);
      sent_ = last_;
    }
    v1::WorkerReport report;
    report.mutable_events()->Swap(&pending_);
    channel_->SendEvents(report);
  }

  Channel* channel_;
  const v1::WorkerRequest& request_;
  const int iteration_offset_;
  const double elapsed_offset_;
  const absl::Time start_;
  absl::Time last_flush_;
  absl::Time last_event_ = absl::InfinitePast();
  v1::ProgressEvent held_;  // the newest thinned-out event
  bool has_held_ = false;
  v1::ProgressEvent held_best_;  // a thinned-out event with a new best
  bool has_held_best_ = false;
  v1::WorkerReport::Events pending_;
  std::atomic<int> stop_{static_cast<int>(Stop::kNone)};

  // What a checkpoint holds: of the last iteration, and of the last one
  // whose event was sent (for the control thread, under sent_mu_).
  core::ResumePoint last_;
  std::mutex sent_mu_;
  core::ResumePoint sent_;
  int checkpoint_iteration_;  // of the last checkpoint
  absl::Time last_checkpoint_ = absl::InfinitePast();
};

// Reads WorkerControl messages until sparrowd closes the pipe. SHUTDOWN
// sends the last finished iteration at once, so that sparrowd can stop the
// worker without waiting for the epoch in progress.
void ControlLoop(int in_fd, Channel* channel, JobCallback* callback) {
  while (true) {
    v1::WorkerControl control;
    if (!ReadMessage(in_fd, 1 << 10, &control).ok()) std::_Exit(0);
    if (control.events_stored()) channel->EventsStored();
    if (control.stop() == v1::WorkerControl::CANCEL) {
      callback->RequestStop(Stop::kCancel);
    } else if (control.stop() == v1::WorkerControl::SHUTDOWN) {
      callback->RequestStop(Stop::kShutdown);
      callback->Checkpoint();
    }
  }
}

// Submission counted each categorical column as one input or output; only
// the data knows how many levels they one-hot encode into.
absl::Status CheckOneHotSize(const v1::WorkerRequest& request,
                             const core::TrainConfig& config,
                             const translate::DataSummary& summary) {
  if (request.spec().data().categorical().empty()) return absl::OkStatus();
  auto params =
      core::CountParameters(config.model, summary.inputs, summary.outputs);
  if (!params.ok()) return params.status();
  if (*params <= request.max_model_params()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "with its categorical columns one-hot encoded into %d input and %d "
      "output columns the model has %d parameters; this server allows at "
      "most %d (sparrowd --max-model-params)",
      summary.inputs, summary.outputs, *params, request.max_model_params()));
}

// The model of spec.warm_start: inline in the spec, or read by sparrowd.
absl::Status SetWarmStart(const v1::WorkerRequest& request,
                          core::TrainConfig* config) {
  auto model = translate::WarmStartModel(
      request.spec(),
      request.has_warm_start() ? &request.warm_start() : nullptr);
  if (!model.ok()) return model.status();
  if (!model->has_value()) return absl::OkStatus();
  config->warm_start_from_path = request.warm_start_from_path();
  return translate::ApplyWarmStart(request.spec(), **model, 0, config);
}

Outcome Stopped(const JobCallback& callback, const v1::WorkerRequest& r) {
  Outcome o;
  o.set_last_iteration(callback.last_iteration());
  switch (callback.stop()) {
    case Stop::kShutdown:
      o.set_kind(Outcome::STOPPED);
      break;
    case Stop::kCancel:
      o.set_kind(Outcome::CANCELLED);
      o.set_reason(absl::StrCat("cancelled by the user at iteration ",
                                callback.last_iteration()));
      break;
    default:
      o.set_kind(Outcome::DEADLINE);
      o.set_reason(
          DeadlineReason(callback.last_iteration(), r.deadline_seconds()));
      break;
  }
  return o;
}

// A resumed attempt trained only the iterations after the checkpoint: the
// model and the summary count the whole run.
void CountWholeRun(const JobCallback& callback, core::TrainResult* result) {
  result->summary.iterations += callback.iteration_offset();
  result->summary.seconds += callback.elapsed_offset();
  result->train_seconds += callback.elapsed_offset();
}

v1::TrainedModel JobModel(const v1::WorkerRequest& request,
                          const core::TrainConfig& config,
                          const core::TrainResult& result) {
  v1::TrainedModel model = translate::ToProto(request.spec(), result);
  model.set_seed(config.seed);
  return model;
}

Outcome Finished(const v1::WorkerRequest& request, const JobCallback& callback,
                 const core::TrainConfig& config, core::TrainResult result) {
  CountWholeRun(callback, &result);
  if (result.summary.termination == core::Termination::kDiverged) {
    std::string reason = result.summary.message.empty()
                             ? result.summary.BriefReport()
                             : result.summary.message;
    if (reason.find("try ") == std::string::npos) {
      absl::StrAppend(&reason,
                      "; try a smaller learning rate or stronger "
                      "regularization");
    }
    Outcome o = Failed(std::move(reason));
    // The last finite iterate, kept (marked partial) when its fit is finite.
    const core::Metrics& m = result.metrics;
    if (std::isfinite(m.train_rmse) || std::isfinite(m.train_accuracy)) {
      *o.mutable_model() = JobModel(request, config, result);
    }
    return o;
  }
  Outcome o;
  o.set_kind(Outcome::SUCCEEDED);
  // A stalled run keeps its model, and its reason says what to try.
  o.set_reason(result.summary.termination == core::Termination::kStalled
                   ? absl::StrCat("stalled: ", result.summary.message)
                   : "finished");
  o.set_summary(result.summary.BriefReport());
  o.set_last_iteration(result.summary.iterations);
  *o.mutable_model() = JobModel(request, config, result);
  return o;
}

// A cancelled run, or one stopped at the deadline, keeps the model it had
// reached, marked partial; a run stopped for a restart goes on instead.
Outcome StoppedWithModel(const v1::WorkerRequest& request,
                         const JobCallback& callback,
                         const core::TrainConfig& config,
                         absl::StatusOr<core::TrainResult> result) {
  Outcome o = Stopped(callback, request);
  if (!result.ok() || callback.stop() == Stop::kShutdown) return o;
  CountWholeRun(callback, &*result);
  if (result->summary.iterations == 0) return o;
  *o.mutable_model() = JobModel(request, config, *result);
  o.mutable_model()->set_termination(
      callback.stop() == Stop::kCancel ? "cancelled" : "deadline");
  return o;
}

Outcome Train(v1::WorkerRequest* request, JobCallback* callback,
              Channel* channel) {
  auto config = translate::ToTrainConfig(request->spec());
  if (!config.ok()) return Failed(std::string(config.status().message()));
  translate::DataSummary summary;
  auto data = translate::LoadTrainData(
      request->spec(), *config,
      translate::DataFiles{request->dataset(), request->validation_dataset(),
                           request->test_dataset()},
      &summary);
  if (!data.ok()) return Failed(std::string(data.status().message()));
  std::string().swap(*request->mutable_dataset());
  std::string().swap(*request->mutable_validation_dataset());
  std::string().swap(*request->mutable_test_dataset());
  if (summary.dropped_rows > 0) {
    channel->Log(absl::StrFormat("dropped %d of %d rows with missing values",
                                 summary.dropped_rows, summary.file_rows));
  }
  if (absl::Status s = CheckOneHotSize(*request, *config, summary); !s.ok()) {
    return Failed(std::string(s.message()));
  }
  if (absl::Status s = SetWarmStart(*request, &*config); !s.ok()) {
    return Failed(std::string(s.message()));
  }
  if (request->resume()) {
    absl::Status s = ApplyCheckpoint(request->checkpoint(), &*config);
    if (!s.ok()) return Failed(std::string(s.message()));
  }
  auto result = core::Train(*config, *data, callback);
  callback->FlushFinal();
  // A run that ended by itself is finished, also when a stop came meanwhile:
  // resumed from its last checkpoint it would train past its end.
  const bool aborted = !result.ok() || result->summary.termination ==
                                           core::Termination::kUserAbort;
  if (aborted && callback->stop() == Stop::kShutdown) callback->Checkpoint();
  if (aborted && callback->stop() != Stop::kNone) {
    return StoppedWithModel(*request, *callback, *config, std::move(result));
  }
  if (!result.ok()) return Failed(std::string(result.status().message()));
  return Finished(*request, *callback, *config, std::move(*result));
}

}  // namespace

std::string DeadlineReason(int iteration, double deadline_seconds) {
  return absl::StrFormat(
      "stopped at iteration %d: the job ran longer than the per-job deadline "
      "of %g s (sparrowd --job-deadline)",
      iteration, deadline_seconds);
}

int RunWorker(int in_fd, int out_fd, int parent_pid) {
  // A worker never outlives sparrowd, also when sparrowd is SIGKILLed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent_pid) std::_Exit(kExitParentGone);
  std::signal(SIGPIPE, SIG_IGN);
  PreferOomKill();
  static Channel channel(out_fd);
  g_channel = &channel;
  std::set_terminate(OnTerminate);

  v1::WorkerRequest request;
  if (!ReadMessage(in_fd, kMaxRequestBytes, &request).ok()) return 2;
  LimitMemory(request.memory_limit_bytes(), &channel);
  JobCallback callback(&channel, request);
  std::thread(ControlLoop, in_fd, &channel, &callback).detach();
  Outcome outcome;
  try {
    outcome = Train(&request, &callback, &channel);
  } catch (const std::bad_alloc&) {
    outcome = Failed(OutOfMemoryReason());
  }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    outcome.set_peak_memory_bytes(int64_t{usage.ru_maxrss} * 1024);
  }
  channel.SendOutcome(std::move(outcome));
  // The control thread is blocked reading the pipe: end without running
  // destructors under it.
  std::_Exit(0);
}

}  // namespace sparrow::server
