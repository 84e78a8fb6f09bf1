#include "server/service/job_service.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "sparrow/v1/job_state.h"
#include "translate/config.h"
#include "translate/data.h"
#include "translate/json.h"
#include "translate/model.h"

namespace sparrow::server {
namespace {

// Streams a job's events after after_seq: it reads them from the store in
// batches, writes one at a time, and when it has caught up parks on the
// EventHub until a newer event is committed. Replay and live delivery are the
// same path, so each seq is sent exactly once, in order. The stream ends OK
// after the final state's event, UNAVAILABLE when the server shuts down.
class WatchReactor : public grpc::ServerWriteReactor<v1::ProgressEvent> {
 public:
  WatchReactor(const ServiceDeps& deps, grpc::CallbackServerContext* context,
               const v1::WatchJobRequest& request)
      : deps_(deps),
        active_(deps.active_calls),
        guard_(std::make_shared<Guard>()) {
    guard_->reactor = this;
    auto tenant = Admit(deps_, context);
    absl::Status s = tenant.status();
    if (s.ok()) s = deps_.jobs->GetJob(*tenant, request.id()).status();
    if (s.ok() && request.after_seq() < 0) {
      s = absl::InvalidArgumentError(absl::StrCat(
          "after_seq is ", request.after_seq(), "; it must be >= 0"));
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(guard_->mu);
      End(ToGrpcStatus(s));
      return;
    }
    job_id_ = request.id();
    last_sent_ = request.after_seq();
    std::lock_guard<std::mutex> lock(guard_->mu);
    Pump();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(guard_->mu);
    writing_ = false;
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    if (!batch_.empty() || final_sent_) {
      Pump();  // no store access: the next event is in memory
      return;
    }
    // Refill from the store on the hub thread, keeping gRPC's callback
    // threads free for other calls.
    parked_ = true;
    std::weak_ptr<Guard> weak = guard_;
    deps_.hub->Post([weak] {
      std::shared_ptr<Guard> guard = weak.lock();
      if (guard == nullptr) return;
      std::lock_guard<std::mutex> lock(guard->mu);
      if (guard->reactor != nullptr) guard->reactor->Wake(false);
    });
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(guard_->mu);
    if (parked_) {
      deps_.hub->Cancel(job_id_, handle_);
      parked_ = false;
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    }
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(guard_->mu);
      guard_->reactor = nullptr;
    }
    delete this;
  }

 private:
  // Outlives the reactor so that a late EventHub wake-up finds it gone.
  struct Guard {
    std::mutex mu;
    WatchReactor* reactor = nullptr;
  };

  // guard_->mu held, no write in flight.
  void Pump() {
    if (finished_ || writing_) return;
    if (final_sent_) {
      End(grpc::Status::OK);
      return;
    }
    // The seq to wait past when caught up: normally the last one sent; the
    // job's last one when the client asked to start beyond it, so that the
    // job's next event (at the latest its final one) still wakes this watch.
    int64_t wait_after = last_sent_;
    for (int attempt = 0; batch_.empty() && attempt < 2; ++attempt) {
      auto events = deps_.store->ListEvents(job_id_, last_sent_, 256);
      if (!events.ok()) {
        End(ToGrpcStatus(events.status()));
        return;
      }
      for (auto& e : *events) batch_.push_back(std::move(e));
      if (!batch_.empty()) break;
      // Caught up. A finished job has no more events to wait for (its final
      // event was committed before its state, so read once more first).
      auto job = deps_.store->GetJob(job_id_);
      if (!job.ok()) {
        End(ToGrpcStatus(job.status()));
        return;
      }
      if (!v1::IsFinal(job->job.state())) {
        wait_after = std::min(last_sent_, job->job.last_seq());
        break;
      }
      if (attempt == 1) {
        End(grpc::Status::OK);
        return;
      }
    }
    if (batch_.empty()) {
      parked_ = true;
      std::weak_ptr<Guard> weak = guard_;
      handle_ = deps_.hub->Wait(job_id_, wait_after, [weak](bool shutting) {
        std::shared_ptr<Guard> guard = weak.lock();
        if (guard == nullptr) return;
        std::lock_guard<std::mutex> lock(guard->mu);
        if (guard->reactor != nullptr) guard->reactor->Wake(shutting);
      });
      return;
    }
    current_ = std::move(batch_.front());
    batch_.pop_front();
    last_sent_ = current_.seq();
    final_sent_ = v1::IsFinalEvent(current_);
    writing_ = true;
    StartWrite(&current_);
  }

  // From the hub thread, guard_->mu held.
  void Wake(bool shutting_down) {
    if (!parked_) return;
    parked_ = false;
    if (shutting_down) {
      End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                       "the server is shutting down; reconnect and watch "
                       "again with after_seq = the last seq you received"));
      return;
    }
    Pump();
  }

  void End(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    deps_.metrics->CountRpc("JobService.Watch", status.error_code());
    Finish(status);
  }

  const ServiceDeps& deps_;
  ActiveCall active_;
  std::shared_ptr<Guard> guard_;
  std::string job_id_;
  int64_t last_sent_ = 0;
  std::deque<v1::ProgressEvent> batch_;
  v1::ProgressEvent current_;
  uint64_t handle_ = 0;
  bool writing_ = false;
  bool parked_ = false;
  bool final_sent_ = false;
  bool finished_ = false;
};

}  // namespace

grpc::ServerUnaryReactor* JobService::Submit(
    grpc::CallbackServerContext* context, const v1::SubmitJobRequest* request,
    v1::Job* response) {
  return RunUnary(
      deps_, context, "JobService.Submit",
      [&](const std::string& tenant) -> absl::Status {
        SPARROW_RETURN_IF_ERROR(translate::RejectUnknownFields(*request, ""));
        SPARROW_ASSIGN_OR_RETURN(*response,
                                 deps_.jobs->Submit(tenant, *request));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* JobService::Get(grpc::CallbackServerContext* context,
                                          const v1::GetJobRequest* request,
                                          v1::Job* response) {
  return RunUnary(deps_, context, "JobService.Get",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_ASSIGN_OR_RETURN(
                        *response, deps_.jobs->GetJob(tenant, request->id()));
                    return absl::OkStatus();
                  });
}

grpc::ServerUnaryReactor* JobService::List(grpc::CallbackServerContext* context,
                                           const v1::ListJobsRequest* request,
                                           v1::ListJobsResponse* response) {
  return RunUnary(
      deps_, context, "JobService.List",
      [&](const std::string& tenant) -> absl::Status {
        SPARROW_ASSIGN_OR_RETURN(int size, PageSize(request->page_size()));
        if (!v1::Job::State_IsValid(request->state())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "state is ", request->state(), "; not a Job.State value"));
        }
        SPARROW_ASSIGN_OR_RETURN(
            Page<v1::Job> page,
            deps_.store->ListJobs(tenant, request->state(), size,
                                  request->page_token()));
        for (v1::Job& j : page.items) *response->add_jobs() = std::move(j);
        response->set_next_page_token(page.next_page_token);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* JobService::Cancel(
    grpc::CallbackServerContext* context, const v1::CancelJobRequest* request,
    v1::Job* response) {
  return RunUnary(deps_, context, "JobService.Cancel",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_ASSIGN_OR_RETURN(
                        *response, deps_.jobs->Cancel(tenant, request->id()));
                    return absl::OkStatus();
                  });
}

grpc::ServerWriteReactor<v1::ProgressEvent>* JobService::Watch(
    grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) {
  return new WatchReactor(deps_, context, *request);
}

}  // namespace sparrow::server
