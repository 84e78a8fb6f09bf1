// sparrowd's HTTP port: the dashboard pages, the JSON API, Server-Sent Events
// and CSV downloads (docs/dashboard.md), served by cpp-httplib on its own
// threads. Same tenants as gRPC: a bearer token, or a login cookie for
// browsers, whose state-changing requests also need the CSRF token.
#ifndef SPARROW_SERVER_HTTP_HTTP_SERVER_H_
#define SPARROW_SERVER_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/auth.h"
#include "server/http/api.h"
#include "server/http/frame_log.h"
#include "server/http/sessions.h"
#include "server/jobs/event_hub.h"
#include "server/jobs/job_manager.h"
#include "server/store/store.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace sparrow::server::http {

class EventStream;

struct HttpOptions {
  // HOST:PORT; port 0 = any free port; empty = off (sparrowd's --http-listen
  // defaults to 127.0.0.1:8080).
  std::string listen;
  int threads = 16;       // for everything but event streams
  int max_streams = 256;  // event streams open at once
  int max_sessions = 10000;
  absl::Duration keep_alive = absl::Seconds(15);
  // An event stream sends at most one batch of events per interval.
  absl::Duration stream_batch_interval = absl::Milliseconds(200);
  // Formatted recent frames kept per watched job (server/http/frame_log.h).
  size_t frame_log_bytes = size_t{256} << 10;
  std::string tls_cert, tls_key;  // PEM files: serve HTTPS
};

struct HttpDeps {
  Store* store = nullptr;
  JobManager* jobs = nullptr;
  EventHub* hub = nullptr;
  const Authenticator* auth = nullptr;
};

class HttpServer {
 public:
  // Binds options.listen and starts serving; the error names the flag.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpOptions& options, const HttpDeps& deps);
  ~HttpServer();

  int port() const { return port_; }
  // Ends the event streams and stops serving. Idempotent.
  void Stop();

 private:
  HttpServer(const HttpOptions& options, const HttpDeps& deps);

  // Who is calling; how they authenticated decides the CSRF rule.
  struct Caller {
    std::string tenant;
    std::string auth;  // "none", "cookie" or "bearer"
    std::string csrf_token;
  };
  absl::StatusOr<Caller> Authenticate(const httplib::Request& req);
  absl::Status CheckCsrf(const Caller& caller, const httplib::Request& req);

  void Routes();
  void ApiRoutes();
  void PageRoutes();
  // Runs an API call for an authenticated caller and writes its reply.
  void Serve(const httplib::Request& req, httplib::Response& res,
             bool changes_state,
             const std::function<Reply(const Caller&)>& call);
  // OK when the caller is authenticated and the job is one of its tenant's.
  absl::Status CheckJobAccess(const httplib::Request& req,
                              const std::string& id);
  void ServeEvents(const httplib::Request& req, httplib::Response& res);
  void ServeEventsCsv(const httplib::Request& req, httplib::Response& res);
  void ServeAsset(const httplib::Request& req, httplib::Response& res);
  void Login(const httplib::Request& req, httplib::Response& res);
  // A page opened with ?token=: log in and drop the token from the address.
  bool LoginFromQuery(const httplib::Request& req, httplib::Response& res);
  std::string SessionCookie(const Session& s) const;

  const HttpOptions options_;
  const HttpDeps deps_;
  Api api_;
  FrameLogs frame_logs_;
  SessionStore sessions_;
  const std::string open_csrf_token_;  // without --tokens-file
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> streams_{0};
  std::mutex streams_mu_;
  std::set<EventStream*> open_streams_;
  bool stopping_ = false;  // under streams_mu_
};

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_HTTP_SERVER_H_
