#include "server/http/http_server.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "server/http/assets.h"
#include "server/http/event_stream.h"
#include "server/http/event_text.h"

namespace sparrow::server::http {
namespace {

constexpr char kCookie[] = "sparrow_session";
constexpr absl::Duration kSessionLifetime = absl::Hours(12);
constexpr int kCsvBatch = 4096;
constexpr size_t kMaxBodyBytes = 64 << 10;
constexpr char kJobPath[] = R"(/api/v1/jobs/([A-Za-z0-9_.-]+))";

void Write(const Reply& reply, httplib::Response& res) {
  res.status = reply.status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(reply.body, reply.content_type);
}

// The value of one cookie of the request ("" when absent).
std::string CookieValue(const httplib::Request& req, absl::string_view name) {
  for (absl::string_view part :
       absl::StrSplit(req.get_header_value("Cookie"), ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, name) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-listen is '", listen,
        "'; use HOST:PORT, e.g. 127.0.0.1:8080 (port 0 = any free port)"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, port);
}

// The seq a stream starts after: Last-Event-ID, else ?after_seq=, else 0.
absl::StatusOr<int64_t> AfterSeq(const httplib::Request& req) {
  const bool header = req.has_header("Last-Event-ID");
  const std::string text = header ? req.get_header_value("Last-Event-ID")
                                  : req.get_param_value("after_seq");
  int64_t seq = 0;
  if (!text.empty() && (!absl::SimpleAtoi(text, &seq) || seq < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(header ? "Last-Event-ID" : "after_seq", " is '", text,
                     "'; it must be a seq >= 0"));
  }
  return seq;
}

// Debian's cpp-httplib compresses every text and JSON answer with brotli at
// its highest quality when the client accepts it, as every browser does:
// 60-100 ms per script, minutes for a large CSV (bench/README.md). It has no
// switch for this, so the request is made to accept gzip only (fast, and as
// small for our text). The Request is non-const in httplib; only the handler
// sees it as const.
void OfferOnlyGzip(const httplib::Request& const_req) {
  auto& req = const_cast<httplib::Request&>(const_req);
  const bool gzip =
      absl::StrContains(req.get_header_value("Accept-Encoding"), "gzip");
  req.headers.erase("Accept-Encoding");
  if (gzip) req.headers.emplace("Accept-Encoding", "gzip");
}

}  // namespace

HttpServer::HttpServer(const HttpOptions& options, const HttpDeps& deps)
    : options_(options),
      deps_(deps),
      api_(deps.store, deps.jobs),
      frame_logs_(deps.store, options.frame_log_bytes),
      sessions_(options.max_sessions, kSessionLifetime),
      open_csrf_token_(RandomToken()) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpOptions& options, const HttpDeps& deps) {
  auto host_port = SplitHostPort(options.listen);
  if (!host_port.ok()) return host_port.status();
  std::unique_ptr<HttpServer> s(new HttpServer(options, deps));
  if (!options.tls_cert.empty()) {
    s->server_ = std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(),
                                                      options.tls_key.c_str());
  } else {
    s->server_ = std::make_unique<httplib::Server>();
  }
  if (!s->server_->is_valid()) {
    return absl::InvalidArgumentError(
        "the HTTP port cannot use --tls-cert / --tls-key; check both PEM "
        "files");
  }
  // Each open event stream holds a thread while it waits for news.
  const size_t threads = options.threads + options.max_streams;
  s->server_->new_task_queue = [threads] {
    return new httplib::ThreadPool(threads);
  };
  // No request needs a body beyond a login form; httplib's default is no
  // limit at all.
  s->server_->set_payload_max_length(kMaxBodyBytes);
  s->server_->set_pre_routing_handler(
      [](const httplib::Request& req, httplib::Response&) {
        OfferOnlyGzip(req);
        return httplib::Server::HandlerResponse::Unhandled;
      });
  s->Routes();
  const auto& [host, port] = *host_port;
  s->port_ = port == 0 ? s->server_->bind_to_any_port(host)
                       : (s->server_->bind_to_port(host, port) ? port : -1);
  if (s->port_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on --http-listen ", options.listen,
                     " (in use, or not an address of this machine)"));
  }
  s->thread_ =
      std::thread([server = s->server_.get()] { server->listen_after_bind(); });
  // httplib's stop() does nothing until the accept loop runs: a SIGTERM right
  // after the start would leave sparrowd waiting for this thread forever.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!s->server_->is_running()) {
    if (absl::Now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("the HTTP server on --http-listen ", options.listen,
                       " did not start within 10 s"));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return s;
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (stopping_) return;
    stopping_ = true;
    for (EventStream* s : open_streams_) s->Stop();
  }
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<HttpServer::Caller> HttpServer::Authenticate(
    const httplib::Request& req) {
  if (req.has_header("Authorization")) {
    auto tenant =
        deps_.auth->TenantOfHeader(req.get_header_value("Authorization"));
    if (!tenant.ok()) return tenant.status();
    return Caller{*tenant, "bearer", ""};
  }
  if (std::optional<Session> s = sessions_.Find(CookieValue(req, kCookie))) {
    return Caller{s->tenant, "cookie", s->csrf_token};
  }
  if (!deps_.auth->enabled())
    return Caller{"default", "none", open_csrf_token_};
  return absl::UnauthenticatedError(
      "log in at /login, or send 'Authorization: Bearer TOKEN' (a token of "
      "sparrowd's --tokens-file)");
}

absl::Status HttpServer::CheckCsrf(const Caller& caller,
                                   const httplib::Request& req) {
  // A bearer token is not sent by the browser on its own: no CSRF risk.
  if (caller.auth == "bearer") return absl::OkStatus();
  if (req.get_header_value("X-CSRF-Token") == caller.csrf_token) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      "missing or wrong X-CSRF-Token header; read the token from GET "
      "/api/v1/session");
}

void HttpServer::Serve(const httplib::Request& req, httplib::Response& res,
                       bool changes_state,
                       const std::function<Reply(const Caller&)>& call) {
  auto caller = Authenticate(req);
  if (!caller.ok()) return Write(ErrorReply(caller.status()), res);
  if (changes_state) {
    if (absl::Status s = CheckCsrf(*caller, req); !s.ok()) {
      return Write(ErrorReply(s), res);
    }
  }
  Write(call(*caller), res);
}

void HttpServer::Routes() {
  ApiRoutes();
  PageRoutes();
  server_->set_error_handler([](const httplib::Request&,
                                httplib::Response& res) {
    if (!res.body.empty()) return;
    // httplib's own refusals (411, 413, 414, 400 on a malformed request)
    // keep their status and get a JSON body; only a missing route is 404.
    const int status = res.status;
    if (status == 404) {
      Write(ErrorReply(absl::NotFoundError(
                "no such page or API call; see docs/dashboard.md")),
            res);
      return;
    }
    Write(
        ErrorReply(absl::InvalidArgumentError(absl::StrCat(
                       "the request was refused (HTTP ", status,
                       status == 411 ? ": a body needs a Content-Length" : "",
                       status == 413 ? ": a body may have at most 64 KiB" : "",
                       status == 414 ? ": the URI is too long" : "", ")")),
                   status),
        res);
  });
}

void HttpServer::ApiRoutes() {
  httplib::Server& s = *server_;
  s.Get("/api/v1/session", [this](const auto& req, auto& res) {
    Serve(req, res, false, [](const Caller& c) {
      return Reply{200, "application/json",
                   nlohmann::json{{"tenant", c.tenant},
                                  {"auth", c.auth},
                                  {"csrf_token", c.csrf_token}}
                       .dump()};
    });
  });
  s.Get("/api/v1/jobs", [this](const auto& req, auto& res) {
    Serve(req, res, false, [&](const Caller& c) {
      return api_.ListJobs(c.tenant, req.get_param_value("page_size"),
                           req.get_param_value("page_token"),
                           req.get_param_value("state"));
    });
  });
  s.Get(kJobPath, [this](const auto& req, auto& res) {
    Serve(req, res, false, [&](const Caller& c) {
      return api_.GetJob(c.tenant, req.matches[1]);
    });
  });
  s.Get(std::string(kJobPath) + "/series", [this](const auto& req, auto& res) {
    Serve(req, res, false, [&](const Caller& c) {
      return api_.Series(c.tenant, req.matches[1],
                         req.get_param_value("points"));
    });
  });
  s.Get(std::string(kJobPath) + "/model", [this](const auto& req, auto& res) {
    Serve(req, res, false, [&](const Caller& c) {
      return api_.Model(c.tenant, req.matches[1]);
    });
  });
  s.Get(std::string(kJobPath) + "/fit", [this](const auto& req, auto& res) {
    Serve(req, res, false, [&](const Caller& c) {
      return api_.Fit(c.tenant, req.matches[1], req.get_param_value("points"));
    });
  });
  s.Post(std::string(kJobPath) + ":cancel", [this](const auto& req, auto& res) {
    Serve(req, res, true, [&](const Caller& c) {
      return api_.Cancel(c.tenant, req.matches[1]);
    });
  });
  s.Get(std::string(kJobPath) + "/events",
        [this](const auto& req, auto& res) { ServeEvents(req, res); });
  s.Get(std::string(kJobPath) + "/events.csv",
        [this](const auto& req, auto& res) { ServeEventsCsv(req, res); });
}

void HttpServer::PageRoutes() {
  httplib::Server& s = *server_;
  auto asset = [this](const auto& req, auto& res) { ServeAsset(req, res); };
  s.Get("/", asset);
  s.Get("/login", asset);
  s.Get(R"(/[A-Za-z0-9_.-]+\.(js|css|png|svg|ico))", asset);
  s.Get(R"(/assets/[A-Za-z0-9_.-]+)", asset);
  s.Post("/login", [this](const auto& req, auto& res) { Login(req, res); });
}

void HttpServer::ServeAsset(const httplib::Request& req,
                            httplib::Response& res) {
  if (req.has_param("token") && LoginFromQuery(req, res)) return;
  const std::string path = req.path == "/"        ? "/index.html"
                           : req.path == "/login" ? "/login.html"
                                                  : req.path;
  const Asset* a = FindAsset(path);
  if (a == nullptr) {
    return Write(ErrorReply(absl::NotFoundError(
                     absl::StrCat("no file ", req.path, " in the dashboard"))),
                 res);
  }
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data: blob:; "
                 "style-src 'self' 'unsafe-inline'");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(reinterpret_cast<const char*>(a->data), a->size,
                  a->content_type);
}

std::string HttpServer::SessionCookie(const Session& s) const {
  return absl::StrCat(kCookie, "=", s.id,
                      "; Path=/; HttpOnly; SameSite=Strict; Max-Age=",
                      absl::ToInt64Seconds(kSessionLifetime),
                      options_.tls_cert.empty() ? "" : "; Secure");
}

bool HttpServer::LoginFromQuery(const httplib::Request& req,
                                httplib::Response& res) {
  auto tenant = deps_.auth->TenantOfToken(req.get_param_value("token"));
  if (!tenant.ok()) {
    res.set_redirect("/login?error=1", 303);
    return true;
  }
  res.set_header("Set-Cookie", SessionCookie(sessions_.Create(*tenant)));
  res.set_redirect(req.path, 303);
  return true;
}

void HttpServer::Login(const httplib::Request& req, httplib::Response& res) {
  auto tenant = deps_.auth->TenantOfToken(req.get_param_value("token"));
  if (!tenant.ok() || !deps_.auth->enabled()) {
    res.set_redirect(deps_.auth->enabled() ? "/login?error=1" : "/", 303);
    return;
  }
  res.set_header("Set-Cookie", SessionCookie(sessions_.Create(*tenant)));
  res.set_redirect("/", 303);
}

absl::Status HttpServer::CheckJobAccess(const httplib::Request& req,
                                        const std::string& id) {
  auto caller = Authenticate(req);
  if (!caller.ok()) return caller.status();
  return deps_.jobs->GetJob(caller->tenant, id).status();
}

void HttpServer::ServeEvents(const httplib::Request& req,
                             httplib::Response& res) {
  const std::string id = req.matches[1];
  if (absl::Status s = CheckJobAccess(req, id); !s.ok()) {
    return Write(ErrorReply(s), res);
  }
  auto after = AfterSeq(req);
  if (!after.ok()) return Write(ErrorReply(after.status()), res);
  auto stream = std::make_shared<EventStream>(
      deps_.store, deps_.hub, frame_logs_.Get(id), id, *after,
      EventStream::Timing{options_.keep_alive, options_.stream_batch_interval});
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (stopping_ || streams_ >= options_.max_streams) {
      return Write(ErrorReply(absl::UnavailableError(absl::StrCat(
                       stopping_ ? "sparrowd is shutting down"
                                 : "too many event streams are open (",
                       stopping_ ? ""
                                 : absl::StrCat("--http-max-streams ",
                                                options_.max_streams, ")"),
                       "; try again shortly"))),
                   res);
    }
    ++streams_;
    open_streams_.insert(stream.get());
  }
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream](size_t offset, httplib::DataSink& sink) {
        // The browser reconnects after 2 s (with Last-Event-ID).
        std::string text = offset == 0 ? "retry: 2000\n\n" : "";
        bool done = false;
        text += stream->Next(&done);
        if (!text.empty() && !sink.write(text.data(), text.size()))
          return false;
        if (done) sink.done();
        return true;
      },
      [this, stream](bool) {
        std::lock_guard<std::mutex> lock(streams_mu_);
        open_streams_.erase(stream.get());
        --streams_;
      });
}

void HttpServer::ServeEventsCsv(const httplib::Request& req,
                                httplib::Response& res) {
  const std::string id = req.matches[1];
  if (absl::Status s = CheckJobAccess(req, id); !s.ok()) {
    return Write(ErrorReply(s), res);
  }
  res.set_header("Content-Disposition",
                 absl::StrCat("attachment; filename=\"", id, "-events.csv\""));
  auto last = std::make_shared<int64_t>(0);
  Store* store = deps_.store;
  res.set_chunked_content_provider(
      "text/csv; charset=utf-8",
      [store, id, last](size_t offset, httplib::DataSink& sink) {
        std::string text(offset == 0 ? kEventsCsvHeader : "");
        auto events = store->ListEvents(id, *last, kCsvBatch);
        if (!events.ok()) return false;
        for (const v1::ProgressEvent& e : *events) {
          // A sweep's copies of its trials' events: each trial has its own.
          if (!e.has_trial() || e.kind() == v1::ProgressEvent::TRIAL_END) {
            AppendCsvRow(e, &text);
          }
        }
        if (!events->empty()) *last = events->back().seq();
        if (!text.empty() && !sink.write(text.data(), text.size()))
          return false;
        if (static_cast<int>(events->size()) < kCsvBatch) sink.done();
        return true;
      });
}

}  // namespace sparrow::server::http
