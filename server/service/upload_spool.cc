#include "server/service/upload_spool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/internal_error.h"
#include "spdlog/spdlog.h"

namespace sparrow::server {
namespace {

// An I/O failure of the spool: the path and errno are for the log.
absl::Status SpoolError(const std::string& what, const std::string& path,
                        int error) {
  const std::string detail =
      absl::StrCat("upload spool ", path, ": ", what, ": ", strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    return WithClientMessage(
        absl::ResourceExhaustedError(detail),
        "the server's disk is full; nothing was stored; retry after its "
        "operator has freed space");
  }
  return WithClientMessage(
      absl::UnavailableError(detail),
      "the server cannot write the upload to disk; nothing was stored; "
      "retry later, and report it to the server's operator if it persists");
}

}  // namespace

absl::StatusOr<std::unique_ptr<UploadSpool>> UploadSpool::Open(
    const std::string& dir, const UploadLimits& limits) {
  std::error_code ec;
  const auto removed = std::filesystem::remove_all(dir, ec);
  if (!ec) std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("the upload spool ", dir,
                     " cannot be emptied or created (", ec.message(),
                     "); check that the user running sparrowd may write "
                     "--data-dir"));
  }
  // remove_all counts the directory itself.
  if (removed > 1) {
    spdlog::info("upload spool {}: removed {} files of unfinished uploads", dir,
                 removed - 1);
  }
  return std::unique_ptr<UploadSpool>(new UploadSpool(dir, limits));
}

absl::StatusOr<std::unique_ptr<SpooledUpload>> UploadSpool::Begin(
    const std::string& tenant) {
  std::string path = absl::StrCat(dir_, "/upload-XXXXXX");
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return SpoolError("creating a file", path, errno);
  path.assign(name.data());
  return std::unique_ptr<SpooledUpload>(
      new SpooledUpload(this, tenant, std::move(path), fd));
}

int64_t UploadSpool::bytes_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

int64_t UploadSpool::bytes_in_flight(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = per_tenant_.find(tenant);
  return it == per_tenant_.end() ? 0 : it->second;
}

absl::Status UploadSpool::Reserve(const std::string& tenant, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& mine = per_tenant_[tenant];
  if (mine + n > limits_.max_in_flight_per_tenant) {
    if (mine == 0) per_tenant_.erase(tenant);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "your unfinished uploads would hold more than %d bytes, the most "
        "this server allows per tenant (sparrowd "
        "--max-upload-bytes-in-flight-per-tenant); finish or cancel your "
        "other uploads first; nothing was stored",
        limits_.max_in_flight_per_tenant));
  }
  if (total_ + n > limits_.max_in_flight) {
    if (mine == 0) per_tenant_.erase(tenant);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the unfinished uploads on this server would hold more than %d bytes "
        "(sparrowd --max-upload-bytes-in-flight); retry when other uploads "
        "have finished; nothing was stored",
        limits_.max_in_flight));
  }
  mine += n;
  total_ += n;
  return absl::OkStatus();
}

void UploadSpool::Release(const std::string& tenant, int64_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  total_ -= n;
  auto it = per_tenant_.find(tenant);
  if (it != per_tenant_.end() && (it->second -= n) <= 0) per_tenant_.erase(it);
}

SpooledUpload::~SpooledUpload() {
  if (map_ != nullptr) munmap(map_, static_cast<size_t>(size_));
  close(fd_);
  unlink(path_.c_str());
  spool_->Release(tenant_, size_);
}

absl::Status SpooledUpload::Append(absl::string_view data) {
  if (data.empty()) return absl::OkStatus();
  const auto n = static_cast<int64_t>(data.size());
  if (absl::Status s = spool_->Reserve(tenant_, n); !s.ok()) return s;
  size_ += n;  // reserved: the destructor releases it
  for (absl::string_view rest = data; !rest.empty();) {
    const ssize_t w = write(fd_, rest.data(), rest.size());
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return SpoolError("writing", path_, errno);
    rest.remove_prefix(static_cast<size_t>(w));
  }
  sha_.Update(data);
  return absl::OkStatus();
}

absl::StatusOr<absl::string_view> SpooledUpload::Content() {
  if (size_ == 0) return absl::string_view();
  if (map_ == nullptr) {
    void* map = mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED,
                     fd_, 0);
    if (map == MAP_FAILED) return SpoolError("mapping", path_, errno);
    map_ = map;
  }
  return absl::string_view(static_cast<const char*>(map_),
                           static_cast<size_t>(size_));
}

}  // namespace sparrow::server
