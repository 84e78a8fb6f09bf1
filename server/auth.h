// Bearer-token authentication: `--tokens-file` maps tokens to tenants. Without
// a tokens file every caller is the tenant "default". A tenant sees only its
// own datasets, jobs and models.
#ifndef SPARROW_SERVER_AUTH_H_
#define SPARROW_SERVER_AUTH_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"

namespace sparrow::server {

class Authenticator {
 public:
  // Open server: everyone is "default".
  Authenticator() = default;
  // One "TOKEN TENANT" pair per line; blank lines and lines starting with #
  // are skipped. Errors name the file and line.
  static absl::StatusOr<Authenticator> FromFile(const std::string& path);
  static absl::StatusOr<Authenticator> FromText(const std::string& text,
                                                const std::string& origin);

  // The caller's tenant from the "authorization: Bearer TOKEN" metadata;
  // UNAUTHENTICATED when tokens are configured and it is missing or unknown.
  absl::StatusOr<std::string> Tenant(
      const grpc::CallbackServerContext* context) const;

  // The same for an HTTP "Authorization" header's value, and for a bare token
  // (a login form).
  absl::StatusOr<std::string> TenantOfHeader(
      absl::string_view authorization) const;
  absl::StatusOr<std::string> TenantOfToken(absl::string_view token) const;

  bool enabled() const { return !tenants_.empty(); }

 private:
  std::map<std::string, std::string> tenants_;  // token -> tenant
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_AUTH_H_
