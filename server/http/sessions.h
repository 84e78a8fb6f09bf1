// Browser login sessions of the HTTP port: an opaque id in an HttpOnly cookie
// maps to a tenant and a CSRF token, in memory only (a restart logs everyone
// out). Bounded: at most max_sessions live at once, the oldest ends first,
// and each ends after a fixed lifetime.
#ifndef SPARROW_SERVER_HTTP_SESSIONS_H_
#define SPARROW_SERVER_HTTP_SESSIONS_H_

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace sparrow::server::http {

struct Session {
  std::string id;  // the cookie's value
  std::string tenant;
  std::string csrf_token;
  absl::Time expires;
};

class SessionStore {
 public:
  SessionStore(int max_sessions, absl::Duration lifetime);

  Session Create(const std::string& tenant);
  // The live session with this id, if any.
  std::optional<Session> Find(absl::string_view id);

 private:
  const int max_sessions_;
  const absl::Duration lifetime_;
  std::mutex mu_;
  std::map<std::string, Session, std::less<>> sessions_;
  std::deque<std::string> order_;  // ids, oldest first
};

// 32 random bytes from OpenSSL's CSPRNG, hex-encoded.
std::string RandomToken();

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_SESSIONS_H_
