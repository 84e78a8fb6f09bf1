// A Store that forwards to a real one and, while told to, fails every write
// with UNAVAILABLE, as a full disk or a lost database connection would.
// Reads keep working.
#ifndef SPARROW_TESTS_SERVER_TESTING_FAULTY_STORE_H_
#define SPARROW_TESTS_SERVER_TESTING_FAULTY_STORE_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/store/store.h"

namespace sparrow::server::testing {

class FaultyStore : public Store {
 public:
  explicit FaultyStore(std::unique_ptr<Store> store)
      : store_(std::move(store)) {}

  void set_fail_writes(bool fail) { fail_writes_ = fail; }
  int failed_writes() const { return failed_writes_; }

  absl::StatusOr<v1::Dataset> PutDataset(const std::string& tenant,
                                         const v1::Dataset& meta,
                                         absl::string_view content,
                                         bool* existed) override {
    if (Fail()) return Error();
    return store_->PutDataset(tenant, meta, content, existed);
  }
  absl::StatusOr<v1::Dataset> GetDataset(const std::string& tenant,
                                         const std::string& id) override {
    return store_->GetDataset(tenant, id);
  }
  absl::StatusOr<std::string> GetDatasetContent(
      const std::string& tenant, const std::string& id) override {
    return store_->GetDatasetContent(tenant, id);
  }
  absl::StatusOr<Page<v1::Dataset>> ListDatasets(
      const std::string& tenant, int page_size,
      const std::string& page_token) override {
    return store_->ListDatasets(tenant, page_size, page_token);
  }
  absl::Status DeleteDataset(const std::string& tenant,
                             const std::string& id) override {
    if (Fail()) return Error();
    return store_->DeleteDataset(tenant, id);
  }
  absl::StatusOr<v1::Job> CreateJob(const std::string& tenant,
                                    const v1::Job& job,
                                    bool* existed) override {
    if (Fail()) return Error();
    return store_->CreateJob(tenant, job, existed);
  }
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override {
    return store_->GetJob(id);
  }
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequestId(
      const std::string& tenant, const std::string& request_id) override {
    return store_->FindJobByRequestId(tenant, request_id);
  }
  absl::StatusOr<Page<v1::Job>> ListJobs(
      const std::string& tenant, v1::Job::State state, int page_size,
      const std::string& page_token) override {
    return store_->ListJobs(tenant, state, page_size, page_token);
  }
  absl::StatusOr<std::vector<JobRecord>> JobsInStates(
      absl::Span<const v1::Job::State> states) override {
    return store_->JobsInStates(states);
  }
  absl::StatusOr<std::pair<v1::Job, v1::ProgressEvent>> TransitionJob(
      const std::string& id, const JobTransition& transition) override {
    if (Fail()) return Error();
    return store_->TransitionJob(id, transition);
  }
  absl::StatusOr<std::vector<v1::ProgressEvent>> AppendEvents(
      const std::string& job_id, std::vector<v1::ProgressEvent> events,
      int32_t fence) override {
    if (Fail()) return Error();
    return store_->AppendEvents(job_id, std::move(events), fence);
  }
  absl::StatusOr<std::vector<v1::ProgressEvent>> ListEvents(
      const std::string& job_id, int64_t after_seq, int limit) override {
    return store_->ListEvents(job_id, after_seq, limit);
  }
  absl::StatusOr<v1::Job> ScanSeriesBlocks(
      const std::string& job_id, int level,
      const std::function<void(const v1::SeriesBlock&)>& visit) override {
    return store_->ScanSeriesBlocks(job_id, level, visit);
  }
  absl::Status PutCheckpoint(const std::string& job_id, absl::string_view bytes,
                             int32_t fence) override {
    if (Fail()) return Error();
    return store_->PutCheckpoint(job_id, bytes, fence);
  }
  absl::StatusOr<std::optional<std::string>> GetCheckpoint(
      const std::string& job_id) override {
    return store_->GetCheckpoint(job_id);
  }
  absl::StatusOr<v1::TrainedModel> GetModel(
      const std::string& job_id) override {
    return store_->GetModel(job_id);
  }

 private:
  bool Fail() {
    if (!fail_writes_) return false;
    ++failed_writes_;
    return true;
  }
  static absl::Status Error() {
    return absl::UnavailableError("database or disk is full (injected)");
  }

  std::unique_ptr<Store> store_;
  std::atomic<bool> fail_writes_{false};
  std::atomic<int> failed_writes_{0};
};

}  // namespace sparrow::server::testing

#endif  // SPARROW_TESTS_SERVER_TESTING_FAULTY_STORE_H_
