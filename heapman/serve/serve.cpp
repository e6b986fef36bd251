// heapman serve LOG [--port N] [--listen HOST] [--token T] [--threads N] [--time-limit S] [--follow]:
// the log in a browser. One page (its script and style inside the binary) and the JSON API of
// api.h, over cpp-httplib: a pool of worker threads, each with its own replay of the log (the
// index file is shared, read-only), answers the queries; connections have threads of their own
// (cpp-httplib's pool), which hand each query to a worker and wait, so that idle keep-alive
// connections never hold a worker (a browser keeps several open) and status, cancel and the page
// are answered while every worker is busy. Loopback by default; any other address needs a token
// (given, or a random one printed), which every request must carry (?token= or the
// X-Heapman-Token header). Ends on SIGINT or SIGTERM.
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "../json.h"
#include "../session.h"
#include "api.h"
#include "page.h"

namespace heapman::cli {

namespace {

namespace fs = std::filesystem;

constexpr int kDefaultPort = 8080;
constexpr size_t kMaxUriBytes = 8192;  // longer request lines: 414 (cpp-httplib's own check)
constexpr size_t kConnectionThreads = 64;  // connections served at once (idle ones too)

// The query workers: cpp-httplib's thread pool (a FIFO queue; each thread keeps its session,
// api.h), run here with each query's answer handed back to the connection that asked.
class Workers {
 public:
  explicit Workers(size_t n) : pool_(n) {}
  ~Workers() { pool_.shutdown(); }  // runs what is queued, then joins
  // Runs `f` on a worker; waits for its answer.
  serve::Answer run(std::function<serve::Answer()> f) {
    auto task = std::make_shared<std::packaged_task<serve::Answer()>>(std::move(f));
    std::future<serve::Answer> answer = task->get_future();
    pool_.enqueue([task] { (*task)(); });
    return answer.get();
  }

 private:
  httplib::ThreadPool pool_;
};

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("port", po::value<Count>()->value_name("N"),
                  "TCP port (default 8080; 0: any free port, printed)")(
      "listen", po::value<std::string>()->value_name("HOST"),
      "address to listen on (default 127.0.0.1; another needs a token)")(
      "token", po::value<std::string>()->value_name("TOKEN"),
      "every request must carry it (?token= or X-Heapman-Token); beyond loopback a random one "
      "is made when none is given")(
      "threads", po::value<Count>()->value_name("N"),
      "worker threads, each with its own replay of the log (default 4; 1 with --follow)")(
      "time-limit", po::value<Count>()->value_name("SECONDS"),
      "cancel a query running longer than this (default 60)")(
      "follow", "the log is being written: wait for it, and show what it gains as it grows");
  addSymbolOptions(o);
}

bool loopback(const std::string& a) {
  return a == "localhost" || a == "::1" || a.rfind("127.", 0) == 0;
}

std::string randomToken() {
  std::random_device rd;  // the kernel's random source
  std::string t;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) t += hex[rd() % 16];
  return t;
}

// Equal without telling by its time how much of the token was right.
bool sameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

void send(httplib::Response& res, const serve::Answer& a) {
  res.status = a.status;
  if (!a.command.empty()) res.set_header("X-Heapman-Command", a.command);
  res.set_content(a.body, a.contentType.c_str());
}

void refuse(httplib::Response& res, int status, const std::string& message) {
  serve::Answer a;
  a.status = status;
  a.body = JsonObject().str("error", message).str() + "\n";
  send(res, a);
}

int runServe(const std::string& log, const VerbOptions& vm) {
  std::string listen = vm.count("listen") ? vm["listen"].as<std::string>() : "127.0.0.1";
  size_t port = vm.count("port") ? vm["port"].as<Count>().n : kDefaultPort;
  if (port > 65535) throw UsageError("--port: give 0 to 65535");
  // Following, each worker replays every growth it answers after: one replay by default, so that
  // watching costs the recorded program one pass over what it writes, not one a worker.
  size_t threads = vm.count("threads") ? vm["threads"].as<Count>().n : vm.count("follow") ? 1 : 4;
  if (threads == 0 || threads > 64) throw UsageError("--threads: give 1 to 64");
  size_t limit = vm.count("time-limit") ? vm["time-limit"].as<Count>().n : 60;
  if (limit == 0) throw UsageError("--time-limit: give 1 second or more");
  std::string token = vm.count("token") ? vm["token"].as<std::string>() : "";
  if (!loopback(listen) && token.empty()) token = randomToken();
  replay::SymbolSettings symbols = symbolSettingsOf(vm);

  // SIGINT and SIGTERM end the server: blocked in every thread (those made later inherit the
  // mask), one thread waits for them and stops the index build or the server.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  httplib::Server svr;
  std::atomic<bool> stopping{false}, done{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop, &sig);
    stopping = true;
    while (!done) {  // until listen returns (a stop before it listens would be lost)
      svr.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  struct Join {
    std::thread& t;
    std::atomic<bool>& done;
    sigset_t set;
    ~Join() {
      done = true;
      pthread_kill(t.native_handle(), SIGTERM);  // ends its sigwait when no signal came
      t.join();
      timespec zero{};
      while (sigtimedwait(&set, nullptr, &zero) > 0) {
      }  // a signal that came after the first, left pending
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    }
  } joinStopper{stopper, done, stop};

  // A private directory for the files the verbs write (heap maps, DOT): the program's memory.
  std::string pattern = (fs::temp_directory_path() / "heapman-serve-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot make a directory under " +
                             fs::temp_directory_path().string() + ": " + std::strerror(errno));
  fs::path scratch = pattern;
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } removeScratch{scratch};

  bool follow = vm.count("follow") > 0;
  serve::Api api(log, symbols, scratch, std::chrono::seconds(limit), follow);
  // The index is built once, on this thread, before any worker opens the log (following, once
  // the URL is out: the log may not exist yet).
  if (!follow) api.warmUp(&stopping);
  Workers workers(threads);
  svr.new_task_queue = [] { return new httplib::ThreadPool(kConnectionThreads); };
  // cpp-httplib 0.11 sets SO_REUSEPORT on Linux: a second server then binds a port another one
  // listens on, and the kernel shares new connections between the two, each serving its own
  // log. SO_REUSEADDR only: a port in use is refused, one just freed (TIME_WAIT) is not.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  svr.set_payload_max_length(64 * 1024);
  svr.set_read_timeout(10, 0);
  svr.set_keep_alive_max_count(1000);  // a page asks many questions on one connection
  // An idle connection keeps its thread this long, and SIGTERM waits for it (cpp-httplib 0.11
  // looks at the server's socket only between requests): 2 s, not 30; a new connection on
  // loopback costs far less than a Ctrl-C that hangs.
  svr.set_keep_alive_timeout(2);
  svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    // cpp-httplib 0.11 compresses a text or JSON answer with brotli at quality 11 whenever the
    // client accepts it, as every browser does: 11.2 s for guile's 2 MB of folded stacks (gzip:
    // 0.21 s), 0.68 s for a blame gzip sends in 0.04 s. So gzip or nothing. The request is
    // cpp-httplib's own (non-const) object, which it reads again to pick the encoding.
    auto& headers = const_cast<httplib::Request&>(req).headers;
    for (auto [it, end] = headers.equal_range("Accept-Encoding"); it != end; ++it)
      it->second = it->second.find("gzip") != std::string::npos ? "gzip" : "identity";
    if (req.target.size() > kMaxUriBytes) {
      refuse(res, 414, "request line too long");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // The page's script and style are the binary's own constant bytes, no data of the log: the
    // page (whose URL carries the token) loads them without it.
    if (req.path == "/page.js" || req.path == "/page.css")
      return httplib::Server::HandlerResponse::Unhandled;
    std::string given = req.has_param("token") ? req.get_param_value("token")
                                               : req.get_header_value("X-Heapman-Token");
    if (sameToken(given, token)) return httplib::Server::HandlerResponse::Unhandled;
    refuse(res, 401,
           given.empty() ? "this server needs its token: open the URL heapman serve printed"
                         : "wrong token");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(serve::pageHtml(), "text/html; charset=utf-8");
  });
  svr.Get("/page.js", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(serve::pageScript(), "text/javascript; charset=utf-8");
  });
  svr.Get("/page.css", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(serve::pageStyle(), "text/css; charset=utf-8");
  });
  svr.Get("/api/status", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(api.status(), "application/json");
  });
  svr.Post("/api/cancel", [&](const httplib::Request& req, httplib::Response& res) {
    std::string r = req.has_param("request") ? req.get_param_value("request") : "";
    res.set_content(api.cancel(r) ? "{\"cancelled\":true}\n" : "{\"cancelled\":false}\n",
                    "application/json");
  });
  svr.Get(R"(/api/([a-z.]+))", [&](const httplib::Request& req, httplib::Response& res) {
    serve::Params params(req.params.begin(), req.params.end());
    std::string request = req.has_param("request") ? req.get_param_value("request") : "";
    std::string route = req.matches[1];
    send(res, workers.run([&] { return api.answer(route, params, request); }));
  });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an answer of ours (400, 404 with its message)
    refuse(res, res.status,
           res.status == 404 ? "no such page: " + req.path.substr(0, 200) + " (the page is /, the "
                                                                           "answers /api/...)"
                             : "bad request");
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          what = std::string("internal error: ") + x.what();
        } catch (...) {
        }
        refuse(res, 500, what);
      });

  int bound = port == 0 ? svr.bind_to_any_port(listen)
                        : (svr.bind_to_port(listen, static_cast<int>(port)) ? static_cast<int>(port)
                                                                            : -1);
  if (bound < 0)
    throw std::runtime_error("cannot listen on " + listen + ":" + std::to_string(port) +
                             " (in use? give another --port, or 0 for any free one)");

  std::string host = listen.find(':') != std::string::npos ? "[" + listen + "]" : listen;
  std::printf("heapman serve: %s on http://%s:%d/%s\n", log.c_str(), host.c_str(), bound,
              token.empty() ? "" : ("?token=" + token).c_str());
  std::printf("  answers: http://%s:%d/api/blame?at=gc:1 (each names its heapman command in its "
              "X-Heapman-Command header); Ctrl-C ends\n",
              host.c_str(), bound);
  std::fflush(stdout);
  if (follow) {  // the URL is out already; requests wait in the socket's queue meanwhile
    std::fprintf(stderr, "heapman serve: waiting for %s to hold a whole chunk...\n", log.c_str());
    api.warmUp(&stopping);
  }
  std::thread follower;
  if (follow) follower = std::thread([&] { api.follow(stopping); });
  struct JoinFollower {
    std::thread& t;
    std::atomic<bool>& stopping;
    ~JoinFollower() {
      if (!t.joinable()) return;
      stopping = true;
      t.join();
    }
  } joinFollower{follower, stopping};
  bool ok = stopping || svr.listen_after_bind();
  return ok ? kExitOk : kExitBadLog;
}

}  // namespace

extern const Verb kServeVerb{
    .name = "serve",
    .synopsis =
        "[--port N] [--listen HOST] [--token TOKEN] [--threads N] [--time-limit SECONDS] [--follow]",
    .summary = "the log in a browser: a page and a JSON API answering at any point",
    .options = options,
    .runFile = runServe,
    .inShell = false,
    .serves = true};

}  // namespace heapman::cli
