// Where dataset uploads wait until they are complete: each upload streams its
// chunks into its own spool file under DATA_DIR/uploads (hashing them as they
// arrive), so an unfinished upload holds disk, not memory. The bytes of
// unfinished uploads are capped overall and per tenant. A spool file is
// removed when its upload ends, whichever way, and at start-up (the uploads a
// crash interrupted); nothing in the spool is ever visible to clients.
//
// Thread-safe; each SpooledUpload is used by one call at a time.
#ifndef SPARROW_SERVER_SERVICE_UPLOAD_SPOOL_H_
#define SPARROW_SERVER_SERVICE_UPLOAD_SPOOL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "translate/sha256.h"

namespace sparrow::server {

struct UploadLimits {
  // Bytes of all unfinished uploads together (--max-upload-bytes-in-flight).
  int64_t max_in_flight = int64_t{1} << 30;
  // ... and of one tenant's (--max-upload-bytes-in-flight-per-tenant).
  int64_t max_in_flight_per_tenant = int64_t{512} << 20;
};

class SpooledUpload;

class UploadSpool {
 public:
  // Creates `dir`, or empties it when it holds spool files of an earlier run.
  static absl::StatusOr<std::unique_ptr<UploadSpool>> Open(
      const std::string& dir, const UploadLimits& limits);

  // A new, empty upload of the tenant. The spool must outlive it.
  absl::StatusOr<std::unique_ptr<SpooledUpload>> Begin(
      const std::string& tenant);

  // Bytes of unfinished uploads: all, and one tenant's.
  int64_t bytes_in_flight() const;
  int64_t bytes_in_flight(const std::string& tenant) const;
  const std::string& dir() const { return dir_; }

 private:
  friend class SpooledUpload;
  UploadSpool(std::string dir, UploadLimits limits)
      : dir_(std::move(dir)), limits_(limits) {}

  // RESOURCE_EXHAUSTED naming the flag when n more bytes would pass a cap.
  absl::Status Reserve(const std::string& tenant, int64_t n);
  void Release(const std::string& tenant, int64_t n);

  const std::string dir_;
  const UploadLimits limits_;
  mutable std::mutex mu_;
  int64_t total_ = 0;
  std::map<std::string, int64_t> per_tenant_;
};

// One upload in progress: its spool file, hash and share of the budget, all
// given back when it is destroyed.
class SpooledUpload {
 public:
  ~SpooledUpload();
  SpooledUpload(const SpooledUpload&) = delete;
  SpooledUpload& operator=(const SpooledUpload&) = delete;

  // Counts the bytes against the caps (RESOURCE_EXHAUSTED naming the flag),
  // then writes them to the spool file and hashes them.
  absl::Status Append(absl::string_view data);
  int64_t size() const { return size_; }
  // The hex SHA-256 of everything appended; call once, after the last Append.
  std::string FinishSha256Hex() { return sha_.FinishHex(); }
  // Everything appended, memory-mapped from the spool file (page cache, not
  // heap); valid until this upload is destroyed. Call after the last Append.
  absl::StatusOr<absl::string_view> Content();

 private:
  friend class UploadSpool;
  SpooledUpload(UploadSpool* spool, std::string tenant, std::string path,
                int fd)
      : spool_(spool),
        tenant_(std::move(tenant)),
        path_(std::move(path)),
        fd_(fd) {}

  UploadSpool* spool_;
  const std::string tenant_;
  const std::string path_;
  int fd_;
  int64_t size_ = 0;
  translate::Sha256 sha_;
  void* map_ = nullptr;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_SERVICE_UPLOAD_SPOOL_H_
