#include "server/auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sparrow::server {

absl::StatusOr<Authenticator> Authenticator::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the tokens file '", path, "'"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return FromText(text.str(), path);
}

absl::StatusOr<Authenticator> Authenticator::FromText(
    const std::string& text, const std::string& origin) {
  Authenticator auth;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", line_number,
                       ": expected 'TOKEN TENANT' (two fields separated by "
                       "spaces), found ",
                       fields.size(), " fields"));
    }
    if (!auth.tenants_.emplace(fields[0], fields[1]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", line_number, ": this token appears twice"));
    }
  }
  if (auth.tenants_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, " holds no tokens; add 'TOKEN TENANT' lines"));
  }
  return auth;
}

absl::StatusOr<std::string> Authenticator::Tenant(
    const grpc::CallbackServerContext* context) const {
  if (tenants_.empty()) return std::string("default");
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(
        "this server requires a bearer token: pass --token or set "
        "SPARROW_TOKEN");
  }
  return TenantOfHeader(
      absl::string_view(it->second.data(), it->second.size()));
}

absl::StatusOr<std::string> Authenticator::TenantOfHeader(
    absl::string_view authorization) const {
  if (tenants_.empty()) return std::string("default");
  constexpr absl::string_view kBearer = "Bearer ";
  if (!absl::StartsWithIgnoreCase(authorization, kBearer)) {
    return absl::UnauthenticatedError(
        "the authorization header must be 'Bearer TOKEN'");
  }
  return TenantOfToken(authorization.substr(kBearer.size()));
}

absl::StatusOr<std::string> Authenticator::TenantOfToken(
    absl::string_view token) const {
  if (tenants_.empty()) return std::string("default");
  auto tenant = tenants_.find(std::string(absl::StripAsciiWhitespace(token)));
  if (tenant == tenants_.end()) {
    return absl::UnauthenticatedError("the token is not valid on this server");
  }
  return tenant->second;
}

}  // namespace sparrow::server
