#include "server/service/common.h"

#include "absl/strings/str_cat.h"

namespace sparrow::server {

absl::StatusOr<std::string> Admit(const ServiceDeps& deps,
                                  const grpc::CallbackServerContext* context) {
  if (deps.starting != nullptr && deps.starting->load()) {
    return absl::UnavailableError(
        "the server is starting (recovering its jobs); retry in a moment");
  }
  if (deps.draining->load()) {
    return absl::UnavailableError(
        "the server is shutting down; retry after it restarts");
  }
  return deps.auth->Tenant(context);
}

absl::StatusOr<int> PageSize(int requested) {
  if (requested < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size is ", requested, "; it must be >= 0 (0 = the default, 50)"));
  }
  if (requested == 0) return 50;
  return std::min(requested, 1000);
}

}  // namespace sparrow::server
