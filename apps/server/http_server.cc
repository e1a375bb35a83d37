// HttpServer: connections, framing, limits and timeouts; see http_server.h.
// The endpoints are http_routes.cc's.
#include "apps/server/http_server.h"

#include <cerrno>
#include <csignal>
#include <limits>
#include <list>
#include <malloc.h>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "apps/server/http_routes.h"
#include "apps/server/log.h"

namespace strata::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One client connection. `evictable` connections (waiting for a request, or
// reading its headers) are on the server's eviction list, oldest first.
struct Connection {
  explicit Connection(tcp::socket socket) : executor(socket.get_executor()), stream(std::move(socket)) {}
  // The connection's strand, copied once: other threads post to it without
  // touching the stream, which only its strand may use.
  const asio::any_io_executor executor;
  beast::tcp_stream stream;
  bool listed = false;   // guarded by Impl::connections_mutex_
  bool evicted = false;  // guarded by Impl::connections_mutex_; its close is on the way, never list it again
  std::list<std::shared_ptr<Connection>>::iterator position;
};

// Errors that mean the process or the system ran out of something, not that
// one connection failed: accepting again at once would spin.
bool IsResourceError(const boost::system::error_code& ec) {
  const int value = ec.value();
  return ec.category() == boost::system::system_category() &&
         (value == EMFILE || value == ENFILE || value == ENOBUFS || value == ENOMEM);
}

// The status a framing error gets, or 0 when the connection just closes (the
// client went away, or a timeout already closed the socket).
int FramingStatus(const boost::system::error_code& ec) {
  if (ec == http::error::body_limit) return 413;
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted || ec == asio::error::eof || ec == asio::error::connection_reset) {
    return 0;
  }
  return ec.category() == boost::system::error_code(http::error::end_of_stream).category() ? 400 : 0;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(InferenceService* service, HttpOptions options)
      : service_(service),
        options_(std::move(options)),
        codec_pool_(static_cast<size_t>(options_.codec_threads)),
        routes_(service, &codec_pool_),
        acceptor_(ioc_),
        signals_(ioc_, SIGINT, SIGTERM),
        exit_timer_(ioc_) {}

  ~Impl() {
    codec_pool_.stop();
    codec_pool_.join();
    // Run() returned: every request was answered (or the exit timeout passed,
    // and main() exits without destructors), so this wait is short.
    routes_.WaitForSchedulerCallbacks();
  }

  Status Listen() {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(options_.address, ec);
    if (ec) return Status(ErrorStatus() << "--address '" << options_.address << "': " << ec.message());
    const tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(ErrorStatus(StatusCode::kFailedPrecondition)
                    << "cannot listen on " << options_.address << ":" << options_.port << ": " << ec.message());
    }
    return Status::Ok();
  }

  uint16_t bound_port() const { return acceptor_.local_endpoint().port(); }

  bool Run() {
    // SIGTERM / SIGINT start the graceful shutdown. asio's signal_set takes the
    // signal on whichever thread the kernel picks and hands it to the io_context.
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;  // cancelled by a Shutdown() called directly
      Log(LogLevel::kInfo, "shutdown",
          {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
           {"exit_timeout_s", static_cast<int64_t>(options_.exit_timeout.count() / 1000)}});
      Shutdown();
    });
    asio::co_spawn(ioc_, Accept(), asio::detached);
    asio::co_spawn(ioc_, TrimMemory(), asio::detached);
    std::vector<std::thread> threads;
    for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (std::thread& t : threads) t.join();
    std::lock_guard<std::mutex> lock(flight_mutex_);
    return !forced_;
  }

  void Shutdown() {
    asio::post(ioc_, [this] {
      {
        std::lock_guard<std::mutex> lock(flight_mutex_);
        if (stopping_) return;
        stopping_ = true;
      }
      service_->SetShuttingDown();
      if (options_.on_shutdown) options_.on_shutdown();
      boost::system::error_code ec;
      signals_.cancel(ec);
      acceptor_.close(ec);
      CloseWaitingConnections();
      exit_timer_.expires_after(options_.exit_timeout);
      exit_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        std::lock_guard<std::mutex> lock(flight_mutex_);
        if (stopped_) return;
        Log(LogLevel::kWarning, "exit_timeout", {{"requests_unanswered", in_flight_}});
        forced_ = true;
        StopLocked();
      });
      std::lock_guard<std::mutex> lock(flight_mutex_);
      if (in_flight_ == 0) StopLocked();
    });
  }

 private:
  asio::awaitable<void> Accept() {
    std::chrono::milliseconds backoff{5};
    auto last_log = std::chrono::steady_clock::time_point();
    asio::steady_timer timer(ioc_);
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket =
          co_await acceptor_.async_accept(asio::make_strand(ioc_), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (stopping_ || ec == asio::error::operation_aborted) co_return;
        if (!IsResourceError(ec)) continue;  // a connection that failed before it was accepted
        // Out of descriptors: free the longest-waiting connection and wait, rather
        // than retrying at once (the pending connection stays in the backlog).
        service_->metrics().RecordConnectionRefused("accept_" +
                                                    std::string(ec.value() == ENFILE ? "enfile" : "emfile"));
        if (std::chrono::steady_clock::now() - last_log > std::chrono::seconds(1)) {
          Log(LogLevel::kWarning, "accept_backoff",
              {{"error", ec.message()}, {"connections", open_connections()}, {"backoff_ms", backoff.count()}});
          last_log = std::chrono::steady_clock::now();
        }
        // A connection closed frees a descriptor as soon as its strand runs the
        // close: retry after a millisecond. With nothing to close (every connection
        // has a request in progress, or the descriptors are the process's own),
        // back off, doubling to half a second.
        const bool freed = EvictOldestWaiting();
        timer.expires_after(freed ? std::chrono::milliseconds(1) : backoff);
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (!freed) backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
        continue;
      }
      backoff = std::chrono::milliseconds(5);
      if (open_connections() >= options_.max_connections && !EvictOldestWaiting()) {
        // Every connection is busy with a request: this one gets an answer, not a hang.
        service_->metrics().RecordConnectionRefused("max_connections");
        auto executor = socket.get_executor();
        asio::co_spawn(executor, Refuse(std::move(socket)), asio::detached);
        continue;
      }
      // Counted and listed here, in accept order, not when the session first runs on
      // its strand: the next accept must see it, and the oldest client is evicted first.
      auto connection = std::make_shared<Connection>(std::move(socket));
      {
        std::lock_guard<std::mutex> lock(connections_mutex_);
        ++open_;
        connection->position = waiting_.insert(waiting_.end(), connection);
        connection->listed = true;
      }
      auto executor = connection->executor;
      asio::co_spawn(executor, Session(std::move(connection)), [](std::exception_ptr e) {
        if (!e) return;
        // Nothing in a session should throw; if something does, it ends that connection only, and says so.
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& error) {
          Log(LogLevel::kError, "connection_failed", {{"error", error.what()}});
        } catch (...) {
          Log(LogLevel::kError, "connection_failed", {{"error", "an exception of unknown type"}});
        }
      });
    }
  }

  // Freed request bodies and decoded tensors leave glibc's heaps holding pages
  // (large blocks are mmap'd, main.cc, but the many medium ones are not); giving
  // them back every few seconds returns the process to its baseline after a burst.
  asio::awaitable<void> TrimMemory() {
    asio::steady_timer timer(ioc_);
    boost::system::error_code ec;
    while (!stopping_) {
      timer.expires_after(std::chrono::seconds(5));
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      malloc_trim(0);
    }
  }

  asio::awaitable<void> Refuse(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    stream.expires_after(std::chrono::seconds(1));
    HttpRequest head;
    HttpResponse res = ErrorResponse(503,
                                     "the server has " + std::to_string(options_.max_connections) +
                                         " connections, each with a request in progress (--http-max-connections)",
                                     head);
    res.keep_alive(false);
    boost::system::error_code ec;
    co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  }

  int64_t open_connections() {
    std::lock_guard<std::mutex> lock(connections_mutex_);
    return open_;
  }

  // Puts `c` on (or takes it off) the eviction list.
  void SetEvictable(const std::shared_ptr<Connection>& c, bool evictable) {
    std::lock_guard<std::mutex> lock(connections_mutex_);
    if (evictable == c->listed || (evictable && c->evicted)) return;
    if (evictable) {
      c->position = waiting_.insert(waiting_.end(), c);
    } else {
      waiting_.erase(c->position);
    }
    c->listed = evictable;
  }

  // Closes the connection that has waited longest without a request in
  // progress; false when there is none.
  bool EvictOldestWaiting() {
    std::shared_ptr<Connection> victim;
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      if (waiting_.empty()) return false;
      victim = waiting_.front();
      waiting_.pop_front();
      victim->listed = false;
      victim->evicted = true;
    }
    service_->metrics().RecordConnectionRefused("evicted");
    asio::post(victim->executor, [victim] { victim->stream.cancel(); });
    return true;
  }

  void CloseWaitingConnections() {
    std::list<std::shared_ptr<Connection>> all;
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      all.swap(waiting_);
      for (auto& c : all) c->listed = false;
    }
    for (auto& c : all) asio::post(c->executor, [c] { c->stream.cancel(); });
  }

  // A request was read: it counts as in flight until its answer is written.
  // False when the server stopped meanwhile (it is dropped with its connection).
  bool BeginRequest() {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    if (stopped_) return false;
    ++in_flight_;
    return true;
  }
  void EndRequest() {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    if (--in_flight_ == 0 && stopping_) StopLocked();
  }
  void StopLocked() {
    stopped_ = true;
    ioc_.stop();
  }

  // Writes an error for a request that could not be read whole and closes.
  asio::awaitable<void> RefuseRequest(std::shared_ptr<Connection> c, int status, const std::string& message,
                                      unsigned version) {
    HttpRequest head;
    head.version(version == 0 ? 11 : version);
    HttpResponse res = ErrorResponse(status, message, head);
    res.keep_alive(false);
    LogV(1, "request_refused", {{"status", status}, {"reason", message}});
    c->stream.expires_after(options_.write_timeout);
    boost::system::error_code ec;
    co_await http::async_write(c->stream, res, asio::redirect_error(asio::use_awaitable, ec));
  }

  // After an error for a request whose body was not read: closing with unread
  // bytes makes the kernel send a reset, which can destroy the error before the
  // client reads it. Read and drop what the client still sends (clients without
  // 100-continue send a whole body before reading the answer), for at most 5 s
  // and 128 MB, into one small buffer.
  asio::awaitable<void> Drain(std::shared_ptr<Connection> c) {
    c->stream.expires_after(std::chrono::seconds(5));
    std::vector<char> sink(64 << 10);
    size_t total = 0;
    boost::system::error_code ec;
    while (total < (size_t{128} << 20)) {
      const size_t n =
          co_await c->stream.async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      total += n;
    }
  }

  // 414 when the request line alone is past --max-url-bytes, else 431.
  // Beast consumes the request line once it has parsed it, so what is left
  // says where the limit was hit: still in the request line ("GET /...") or in
  // the fields ("Name: value").
  static int HeaderLimitStatus(const beast::flat_buffer& buffer) {
    const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
    const size_t space = data.find(' ');
    const bool in_request_line = space != std::string_view::npos && space > 0 && data[space - 1] != ':';
    return in_request_line ? 414 : 431;
  }

  asio::awaitable<void> Session(std::shared_ptr<Connection> c) {
    bool refused = false;  // an error was written for a request not read whole
    beast::flat_buffer buffer;
    for (;;) {
      boost::system::error_code ec;
      if (stopping_) break;
      // Waiting for the next request's first byte: evictable, idle timeout.
      SetEvictable(c, true);
      if (buffer.size() == 0) {
        c->stream.expires_after(options_.idle_timeout);
        const size_t n =
            co_await c->stream.async_read_some(buffer.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          LogV(2, "connection_closed", {{"while", "waiting for a request"}, {"error", ec.message()}});
          break;
        }
        buffer.commit(n);
      }
      // The headers: still evictable, within the header timeout.
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
      // The body's limit depends on the headers (JSON or binary): checked once they are read.
      // (Not boost::none: Beast 1.74 compares the Content-Length with the optional itself,
      // and every length is greater than none.)
      parser.body_limit(std::numeric_limits<uint64_t>::max());
      c->stream.expires_after(options_.header_timeout);
      co_await http::async_read_header(c->stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      SetEvictable(c, false);
      if (ec) {
        LogV(2, "connection_closed", {{"while", "reading headers"}, {"error", ec.message()}});
        const int status = ec == http::error::header_limit ? HeaderLimitStatus(buffer) : FramingStatus(ec);
        if (status == 414) {
          refused = true;
          co_await RefuseRequest(c, 414,
                                 "the request line is longer than " + std::to_string(options_.max_url_bytes) +
                                     " bytes (--http-max-url-bytes)",
                                 11);
        } else if (status == 431) {
          refused = true;
          co_await RefuseRequest(c, 431,
                                 "the request headers are larger than " + std::to_string(options_.max_header_bytes) +
                                     " bytes (--http-max-header-bytes)",
                                 11);
        } else if (status != 0) {
          refused = true;
          co_await RefuseRequest(c, status, "malformed HTTP request: " + ec.message(), 11);
        }
        break;
      }
      const HttpRequest& head = parser.get();
      if (static_cast<int64_t>(head.target().size()) > options_.max_url_bytes) {
        refused = true;
        co_await RefuseRequest(c, 414,
                               "the request target is longer than " + std::to_string(options_.max_url_bytes) +
                                   " bytes (--http-max-url-bytes)",
                               head.version());
        break;
      }
      if (head.count(http::field::transfer_encoding) > 0 && head.count(http::field::content_length) > 0) {
        // RFC 9112 6.1: a message with both is a request-smuggling vector.
        refused = true;
        co_await RefuseRequest(c, 400, "malformed HTTP request: both Transfer-Encoding and Content-Length are set",
                               head.version());
        break;
      }
      // The body's limit: a JSON body (or JSON part) has its own, smaller one.
      const bool json_smaller = options_.max_json_bytes < options_.max_body_bytes;
      int64_t limit = json_smaller ? options_.max_json_bytes : options_.max_body_bytes;
      const char* limit_flag = json_smaller ? "--max-json-body-bytes" : "--max-body-bytes";
      if (auto it = head.find("Inference-Header-Content-Length"); it != head.end()) {
        const int64_t json_part = std::strtoll(std::string(it->value()).c_str(), nullptr, 10);
        if (json_part > options_.max_json_bytes) {
          refused = true;
          co_await RefuseRequest(c, 413,
                                 "the request's JSON part (Inference-Header-Content-Length " +
                                     std::to_string(json_part) + ") is larger than the limit of " +
                                     std::to_string(options_.max_json_bytes) + " bytes (--max-json-body-bytes)",
                                 head.version());
          break;
        }
        limit = options_.max_body_bytes;
        limit_flag = "--max-body-bytes";
      }
      const std::string too_large =
          "the request body is larger than the limit of " + std::to_string(limit) + " bytes (" + limit_flag + ")";
      const boost::optional<uint64_t> declared = parser.content_length();
      if (declared && *declared > static_cast<uint64_t>(limit)) {
        // Refused before any of it is read (and before 100 Continue invites it).
        refused = true;
        co_await RefuseRequest(c, 413, too_large, head.version());
        break;
      }
      parser.body_limit(static_cast<uint64_t>(limit));
      if (beast::iequals(head[http::field::expect], "100-continue")) {
        http::response<http::empty_body> go_on(http::status::continue_, head.version());
        c->stream.expires_after(options_.write_timeout);
        co_await http::async_write(c->stream, go_on, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
      }
      c->stream.expires_after(options_.body_timeout);
      co_await http::async_read(c->stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        LogV(2, "connection_closed", {{"while", "reading the body"}, {"error", ec.message()}});
        if (ec == http::error::body_limit) {
          refused = true;
          co_await RefuseRequest(c, 413, too_large, head.version());
        } else if (const int status = FramingStatus(ec); status != 0) {
          refused = true;
          co_await RefuseRequest(c, status, "malformed HTTP request body: " + ec.message(), head.version());
        }
        break;
      }
      if (!BeginRequest()) break;
      HttpRequest req = parser.release();
      c->stream.expires_never();  // the request runs as long as its model's timeout lets it
      HttpResponse res = co_await routes_.Handle(req);
      if (stopping_) res.keep_alive(false);
      c->stream.expires_after(options_.write_timeout);
      co_await http::async_write(c->stream, res, asio::redirect_error(asio::use_awaitable, ec));
      EndRequest();
      if (ec) LogV(2, "connection_closed", {{"while", "writing a response"}, {"error", ec.message()}});
      if (ec || !res.keep_alive()) break;
    }
    SetEvictable(c, false);
    boost::system::error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (refused) co_await Drain(c);
    std::lock_guard<std::mutex> lock(connections_mutex_);
    --open_;
  }

  InferenceService* service_;
  HttpOptions options_;
  asio::thread_pool codec_pool_;
  HttpRoutes routes_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer exit_timer_;
  std::atomic<bool> stopping_{false};
  // Requests read and not yet answered; Run() returns when it is 0 after Shutdown().
  std::mutex flight_mutex_;
  int64_t in_flight_ = 0;
  bool stopped_ = false;
  bool forced_ = false;
  std::mutex connections_mutex_;
  int64_t open_ = 0;
  std::list<std::shared_ptr<Connection>> waiting_;
};

HttpServer::HttpServer(InferenceService* service, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}
HttpServer::~HttpServer() = default;
Status HttpServer::Listen() { return impl_->Listen(); }
uint16_t HttpServer::bound_port() const { return impl_->bound_port(); }
bool HttpServer::Run() { return impl_->Run(); }
void HttpServer::Shutdown() { impl_->Shutdown(); }

}  // namespace strata::server
