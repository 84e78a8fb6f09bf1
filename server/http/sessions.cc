#include "server/http/sessions.h"

#include <array>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "openssl/rand.h"

namespace sparrow::server::http {

std::string RandomToken() {
  std::array<unsigned char, 32> bytes;
  // RAND_bytes only fails when the OS has no entropy source at all, where no
  // session can be made safe.
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    std::abort();
  }
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

SessionStore::SessionStore(int max_sessions, absl::Duration lifetime)
    : max_sessions_(max_sessions), lifetime_(lifetime) {}

Session SessionStore::Create(const std::string& tenant) {
  Session s{RandomToken(), tenant, RandomToken(), absl::Now() + lifetime_};
  std::lock_guard<std::mutex> lock(mu_);
  while (static_cast<int>(order_.size()) >= max_sessions_) {
    sessions_.erase(order_.front());
    order_.pop_front();
  }
  sessions_.emplace(s.id, s);
  order_.push_back(s.id);
  return s;
}

std::optional<Session> SessionStore::Find(absl::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.expires < absl::Now()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace sparrow::server::http
