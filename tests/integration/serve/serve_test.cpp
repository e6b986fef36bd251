// `heapman serve` on a real recorded run of samples/gc_game (bdwgc: levels, frames, GCs, RAM dumps
// at each level end). Each answer names the heapman command that gives it (X-Heapman-Command);
// the tests run that command and require the same bytes: blame at five arbitrary moments (not
// GC points), growth over a range, paths of an object, the heap-map PNG, from many clients at
// once. Bad parameters get a 4xx with a message; beyond loopback a request without the token is
// refused; a port another server holds is refused. The page, loaded in Debian's headless
// Chromium, shows the blame `heapman blame` gives. Following: a log being written, a finished
// one recorded again, and `heaprec run --serve` (the program's output and status its own).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/shell.h"

namespace {

namespace fs = std::filesystem;

std::string q(const std::string& s) { return "'" + s + "'"; }

struct Recorded {
  std::string dir, log;
  ~Recorded() { hmtest::removeTempDir(dir); }
};

const Recorded& recorded() {
  static Recorded r;
  if (!r.dir.empty()) return r;
  r.dir = hmtest::makeTempDir("serve");
  r.log = r.dir + "/game.hml";
  hmtest::ShellResult s =
      hmtest::runShell(q(SERVE_HEAPREC) + " run --ram-dumps event:level_end -o " + q(r.log) +
                       " -- " + q(SERVE_GC_GAME) + " 3 200 >/dev/null");
  INFO(s.err);
  REQUIRE(s.status == 0);
  return r;
}

// A running `heapman serve`, stopped (SIGTERM) and reaped at the end of the scope.
class Server {
 public:
  explicit Server(const std::string& args) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      std::string cmd = "exec " + q(SERVE_HEAPMAN) + " serve " + args;
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    // The first line: "heapman serve: LOG on http://HOST:PORT/[?token=T]".
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    out_ = out[0];
    std::smatch m;
    INFO(line);
    REQUIRE(std::regex_search(line, m, std::regex(R"(http://[^:]+:(\d+)/(\?token=(\w+))?)")));
    port = std::stoi(m[1]);
    token = m[3];
  }
  ~Server() { stop(); }
  // SIGTERM; the exit status.
  int stop() {
    if (pid_ <= 0) return status_;
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    ::close(out_);
    pid_ = 0;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  int port = 0;
  std::string token;

 private:
  pid_t pid_ = 0;
  int out_ = -1;
  int status_ = -1;
};

std::string urlOf(const std::string& path, const std::vector<std::pair<std::string, std::string>>& p) {
  std::string u = path;
  for (size_t i = 0; i < p.size(); ++i)
    u += (i ? "&" : "?") + p[i].first + "=" + httplib::detail::encode_query_param(p[i].second);
  return u;
}

struct Got {
  int status = 0;
  std::string body, command;
};

Got get(const Server& s, const std::string& url) {
  httplib::Client c = s.client();
  auto res = c.Get(url.c_str());
  REQUIRE(res);
  return {res->status, res->body, res->get_header_value("X-Heapman-Command")};
}

// Runs the command an answer names in `dir` (files it writes land there); its stdout.
std::string runCommand(const std::string& command, const std::string& dir) {
  REQUIRE(command.rfind("heapman ", 0) == 0);
  hmtest::ShellResult r =
      hmtest::runShell("cd " + q(dir) + " && " + q(SERVE_HEAPMAN) + command.substr(7));
  INFO(command << "\n" << r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

std::string readFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t lastSeq(const Server& s) {
  Got info = get(s, "/api/info");
  REQUIRE(info.status == 200);
  std::smatch m;
  REQUIRE(std::regex_search(info.body, m, std::regex(R"("last_seq":(\d+))")));
  return std::stoull(m[1]);
}

}  // namespace

TEST_CASE("every answer equals the heapman command it names", "[serve]") {
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --no-symbols");
  uint64_t last = lastSeq(s);
  REQUIRE(last > 1000);
  // The server seeks from an index of its own, with denser checkpoints than LOG.hmx's; the
  // answers are the commands' all the same.
  CHECK(std::filesystem::is_regular_file(r.log + ".serve.hmx"));

  SECTION("blame at five moments between GCs, with stacks") {
    for (double f : {0.11, 0.27, 0.5, 0.73, 0.96}) {
      std::string at = "seq:" + std::to_string(static_cast<uint64_t>(f * static_cast<double>(last)));
      Got g = get(s, urlOf("/api/blame", {{"at", at}, {"top", "50"}, {"stacks", ""}}));
      INFO(at << " " << g.body);
      REQUIRE(g.status == 200);
      CHECK(g.command ==
            "heapman blame " + r.log + " --no-symbols --at " + at + " --stacks --top 50 --json -");
      CHECK(g.body == runCommand(g.command, r.dir));
      // The answer is at the moment asked: named by its seq, or by what happens just before it
      // (a frame mark, an event, a GC's end), a name that gives the same answer.
      std::smatch point;
      REQUIRE(std::regex_search(g.body, point, std::regex(R"re("point":"([^"]*)")re")));
      if (point[1] != at) {
        CHECK(std::regex_match(point[1].str(), std::regex(R"(frame:\d+|gc:\d+|[A-Za-z_]\w*#\d+)")));
        Got named = get(s, urlOf("/api/blame", {{"at", point[1]}, {"top", "50"}, {"stacks", ""}}));
        REQUIRE(named.status == 200);
        CHECK(named.body == g.body);
      }
    }
  }
  SECTION("growth over a range, and types, churn, gcs, events") {
    std::string from = "seq:" + std::to_string(last / 5), to = "seq:" + std::to_string(last - 7);
    for (const std::string& url :
         {urlOf("/api/diff", {{"from", from}, {"to", to}}), urlOf("/api/types", {{"at", to}}),
          urlOf("/api/churn", {{"from", from}, {"to", to}, {"top", "5"}}),
          std::string("/api/gcs"), std::string("/api/events")}) {
      Got g = get(s, url);
      INFO(url << " " << g.body);
      REQUIRE(g.status == 200);
      CHECK(g.body == runCommand(g.command, r.dir));
    }
  }
  SECTION("paths of an object at a dumped GC, as JSON and DOT") {
    Got objects = get(s, urlOf("/api/objects", {{"at", "level_end#2"}, {"top", "1"}}));
    REQUIRE(objects.status == 200);
    std::smatch m;
    REQUIRE(std::regex_search(objects.body, m, std::regex(R"re("address":"(0x[0-9a-f]+)")re")));
    std::string address = m[1];
    Got paths = get(s, urlOf("/api/paths", {{"at", "level_end#2"}, {"address", address}}));
    INFO(paths.body);
    REQUIRE(paths.status == 200);
    CHECK(paths.body == runCommand(paths.command, r.dir));
    Got dot = get(s, urlOf("/api/paths.dot", {{"at", "level_end#2"}, {"address", address}}));
    REQUIRE(dot.status == 200);
    CHECK(dot.command.find("--dot answer.dot") != std::string::npos);
    runCommand(dot.command, r.dir);
    CHECK(dot.body.rfind("digraph", 0) == 0);
    CHECK(dot.body == readFile(r.dir + "/answer.dot"));
  }
  SECTION("the heap map's PNG") {
    std::string at = "seq:" + std::to_string(last / 2 + 3);
    Got g = get(s, urlOf("/api/map", {{"at", at}, {"color", "type"}}));
    REQUIRE(g.status == 200);
    CHECK(g.body.substr(1, 3) == "PNG");
    runCommand(g.command, r.dir);
    CHECK(g.body == readFile(r.dir + "/answer.png"));
  }
  CHECK(s.stop() == 0);
}

TEST_CASE("many clients at once get the answers one client gets", "[serve]") {
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --threads 4 --no-symbols");
  uint64_t last = lastSeq(s);
  std::vector<std::string> urls, expected;
  std::mt19937 rng(7);
  for (int i = 0; i < 10; ++i) {
    std::string at = "seq:" + std::to_string(rng() % last);
    urls.push_back(i % 3 == 2 ? urlOf("/api/types", {{"at", at}, {"top", "20"}})
                              : urlOf("/api/blame", {{"at", at}, {"top", "20"}}));
    Got g = get(s, urls.back());
    REQUIRE(g.status == 200);
    expected.push_back(runCommand(g.command, r.dir));
  }
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      httplib::Client cl("127.0.0.1", s.port);
      cl.set_read_timeout(120, 0);
      for (int k = 0; k < 10; ++k) {
        size_t i = static_cast<size_t>(c * 7 + k * 3) % urls.size();
        auto res = cl.Get(urls[i].c_str());
        if (!res || res->status != 200)
          ++failed;
        else if (res->body != expected[i])
          ++wrong;
      }
    });
  for (auto& t : clients) t.join();
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

TEST_CASE("idle keep-alive connections hold no worker, nor the server's end", "[serve]") {
  // A browser keeps several connections open between its questions. They must not take the
  // query workers (2 here) from other clients, and SIGTERM must not wait 30 s for them.
  const Recorded& r = recorded();
  auto s = std::make_unique<Server>(q(r.log) + " --port 0 --threads 2 --no-symbols");
  std::vector<int> idle;
  for (int i = 0; i < 6; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(s->port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    std::string req = "GET /api/gcs HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
    char buf[4096];
    REQUIRE(::read(fd, buf, sizeof buf) > 0);  // answered; the connection stays open, idle
    idle.push_back(fd);
  }
  auto t0 = std::chrono::steady_clock::now();
  httplib::Client c("127.0.0.1", s->port);
  c.set_read_timeout(10, 0);
  auto res = c.Get("/api/blame?at=gc:3&top=5");
  REQUIRE(res);
  CHECK(res->status == 200);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited < 2.0);
  t0 = std::chrono::steady_clock::now();
  CHECK(s->stop() == 0);
  double ending = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ending < 4.0);
  for (int fd : idle) ::close(fd);
}

TEST_CASE("a browser's answers are gzip, not brotli", "[serve]") {
  // Browsers accept br; cpp-httplib's brotli (quality 11) took 0.7 s for a blame gzip sends in
  // 0.04 s, 11 s for a large /api/stacks.
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --no-symbols");
  httplib::Client c = s.client();
  auto res = c.Get("/api/stacks?at=level_end%232", {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
  REQUIRE(res);
  REQUIRE(res->status == 200);
  CHECK(res->get_header_value("Content-Encoding") == "gzip");
  CHECK(res->body == runCommand(res->get_header_value("X-Heapman-Command"), r.dir));
  auto plain = c.Get("/api/stacks?at=level_end%232", {{"Accept-Encoding", "br"}});
  REQUIRE(plain);
  CHECK(plain->get_header_value("Content-Encoding").empty());
  CHECK(plain->body == res->body);
}

TEST_CASE("bad parameters get a 4xx with a message", "[serve]") {
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --no-symbols");
  struct Case {
    std::string url;
    int status;
    std::string says;
  };
  std::vector<Case> cases = {
      {"/api/blame?at=gc:99999", 404, "this log: seq:"},
      {"/api/blame?at=nonsense:3", 400, "point"},
      {"/api/blame?top=100000", 400, "top: give a count from 1 to 1000"},
      {"/api/blame?top=-1", 400, "top"},
      {"/api/blame?csv=-", 400, "names a file"},
      {"/api/blame?exclude=/etc/passwd", 400, "names a file"},
      {"/api/blame?no-symbols=", 400, "option of the log"},
      {"/api/blame?frobnicate=1", 400, "not a parameter of /api/blame"},
      {"/api/blame?stacks=yes", 400, "is a flag"},
      {"/api/blame?exclude-add=(unclosed", 400, "unclosed"},
      {"/api/blame?exclude-add=(a)\\1", 400, "backreference"},
      {"/api/paths?at=level_end#1", 400, ""},
      {"/api/nosuch", 404, "no such answer"},
      {"/etc/passwd", 404, "no such page"},
      {"/api/blame?at=" + std::string(9000, 'x'), 414, ""},
  };
  for (const Case& c : cases) {
    httplib::Client cl = s.client();
    auto res = cl.Get(c.url.c_str());
    INFO(c.url.substr(0, 80));
    REQUIRE(res);
    INFO(res->body);
    CHECK(res->status == c.status);
    CHECK(res->body.find("\"error\":\"") != std::string::npos);
    CHECK(res->body.find(c.says) != std::string::npos);
  }
  // Still serving after all of them.
  CHECK(get(s, "/api/gcs").status == 200);
  CHECK(s.stop() == 0);
}

TEST_CASE("beyond loopback every request needs the token", "[serve]") {
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --listen 0.0.0.0 --no-symbols");
  REQUIRE(s.token.size() == 32);  // none given: a random one, printed
  Got none = get(s, "/api/gcs");
  CHECK(none.status == 401);
  CHECK(none.body.find("needs its token") != std::string::npos);
  CHECK(get(s, "/api/gcs?token=" + std::string(32, '0')).status == 401);
  CHECK(get(s, "/?token=wrong").status == 401);
  CHECK(get(s, "/").status == 401);
  // The page's script and style (constant bytes of the binary) load without it: the page's URL
  // carries the token, its <script src> and <link href> do not.
  CHECK(get(s, "/page.js").status == 200);
  CHECK(get(s, "/page.css").status == 200);
  Got ok = get(s, "/api/gcs?token=" + s.token);
  CHECK(ok.status == 200);
  httplib::Client c = s.client();
  auto res = c.Get("/api/gcs", {{"X-Heapman-Token", s.token}});
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body == ok.body);
}

TEST_CASE("the page in a headless browser shows the blame heapman gives", "[serve][browser]") {
  if (std::string(SERVE_CHROMIUM).empty()) {
    std::printf("SKIP: chromium not found (cmake/deps.sh test installs it)\n");
    std::exit(4);
  }
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --no-symbols");
  Got page = get(s, "/");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("page.js") != std::string::npos);
  std::string profile = r.dir + "/chromium-profile";
  std::string cmd = q(SERVE_CHROMIUM) +
                    " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
                    q(profile) + " --virtual-time-budget=20000 --dump-dom http://127.0.0.1:" +
                    std::to_string(s.port) + "/ 2>/dev/null";
  hmtest::ShellResult dom = hmtest::runShell(cmd);
  REQUIRE(dom.status == 0);
  INFO(dom.out.substr(0, 2000));
  CHECK(dom.out.find("data-js-errors=\"0\"") != std::string::npos);
  CHECK(dom.out.find("data-state=\"ready\"") != std::string::npos);
  // The page opens at the end of the log: its blame rows are `heapman blame --at end`'s.
  std::smatch m;
  REQUIRE(std::regex_search(dom.out, m, std::regex(R"re(data-point="(seq:\d+)")re")));
  Got blame = get(s, urlOf("/api/blame", {{"at", m[1]}, {"top", "50"}, {"stacks", ""}}));
  REQUIRE(blame.status == 200);
  std::string expected = runCommand(blame.command, r.dir);
  std::regex fn(R"re("function":"([^"]*)","module")re");
  std::vector<std::string> functions;
  size_t stacksAt = expected.find("\"stacks\":");
  for (auto it = std::sregex_iterator(expected.begin(), expected.begin() + static_cast<long>(stacksAt), fn);
       it != std::sregex_iterator(); ++it)
    functions.push_back((*it)[1]);
  REQUIRE(!functions.empty());
  size_t table = dom.out.find("id=\"blame\"");
  REQUIRE(table != std::string::npos);
  size_t at = table;
  for (const std::string& f : functions) {
    size_t cell = dom.out.find("<td class=\"\">" + f + "</td>", at);
    INFO(f);
    REQUIRE(cell != std::string::npos);
    at = cell;
  }
}

TEST_CASE("random parameters never crash the server: every bad one is a 4xx with a message",
          "[serve]") {
  const Recorded& r = recorded();
  Server s(q(r.log) + " --port 0 --no-symbols --token fuzz");
  std::mt19937 rng(20261127);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> routes = {"blame", "diff",  "churn",   "types",     "allocs",
                                           "gcs",   "events", "objects", "object",   "refs",
                                           "paths", "retained", "leaks", "map",      "stacks",
                                           "paths.dot", "graph.gexf", "info", "nosuch"};
  const std::vector<std::string> names = {"at", "from", "to", "since", "top", "sort", "type",
                                          "function", "exclude-add", "address", "by", "depth",
                                          "color", "size", "layout", "stacks", "born", "csv",
                                          "output", "max-nodes", "at-each", "gcs", "x"};
  auto value = [&]() -> std::string {
    switch (rng() % 12) {
      case 0: return "gc:" + std::to_string(rng() % 20);
      case 1: return "seq:" + std::to_string(rng());
      case 2: return std::to_string(rng());
      case 3: return "";
      case 4: return pick({"(", "[a-", "(a)\\1", ".*.*.*.*x", "(?=x)", "\\", "a{100000}"});
      case 5: return std::string(rng() % 5000, 'a');
      case 6: return "level_end#" + std::to_string(rng() % 5);
      case 7: return "0x" + std::to_string(rng());
      case 8: return pick({"bytes", "objects", "name", "type", "function", "hilbert", "64x64"});
      case 9: return "-1";
      case 10: return "%00\xff\xfe";
      default: return pick({"end", "start", "frame:3", "seq:100"});
    }
  };
  int counts[6] = {};
  for (int i = 0; i < 300; ++i) {
    std::vector<std::pair<std::string, std::string>> params;
    for (unsigned k = rng() % 4; k > 0; --k) params.emplace_back(pick(names), value());
    if (rng() % 10 != 0) params.emplace_back("token", rng() % 20 == 0 ? "wrong" : "fuzz");
    std::string url = urlOf("/api/" + pick(routes), params);
    httplib::Client c = s.client();
    auto res = c.Get(url.c_str());
    INFO(url.substr(0, 300));
    REQUIRE(res);  // the server is alive and answered
    INFO(res->body.substr(0, 300));
    CHECK(res->status != 500);
    if (res->status != 200) {
      CHECK(res->status >= 400);
      CHECK(res->status < 600);
      CHECK(res->body.find("\"error\":\"") != std::string::npos);
    }
    ++counts[res->status / 100];
  }
  std::printf("fuzz: %d answers, %d refused (4xx), %d 503\n", counts[2], counts[4], counts[5]);
  CHECK(counts[2] > 0);
  CHECK(counts[4] > 0);
  CHECK(get(s, "/api/gcs?token=fuzz").status == 200);
  CHECK(s.stop() == 0);
}

TEST_CASE("a port another server listens on is refused", "[serve]") {
  // cpp-httplib sets SO_REUSEPORT: a second server bound the port and the kernel shared new
  // connections between the two (each serving its own log); the second now ends, saying why.
  Server taken(q(recorded().log) + " --port 0");
  hmtest::ShellResult second =
      hmtest::runShell("timeout 10 " + q(SERVE_HEAPMAN) + " serve " + q(recorded().log) +
                       " --port " + std::to_string(taken.port) + " </dev/null");
  CHECK(second.status == 1);
  CHECK(second.err.find("in use?") != std::string::npos);
}

TEST_CASE("following a log being written shows its collections as they happen",
          "[serve][live]") {
  if (std::string(SERVE_GUILE).empty()) {
    std::printf("SKIP: guile not found (cmake/deps.sh test installs guile-3.0)\n");
    std::exit(4);
  }
  std::string dir = hmtest::makeTempDir("serve-live");
  std::string log = dir + "/live.hml";
  // guile collecting 40 times, 100 ms apart, recorded in the background.
  std::string script = "(let loop ((i 0) (keep '())) (when (< i 40) (gc) (usleep 100000) "
                       "(loop (+ i 1) (cons (make-vector 1000 i) keep))))";
  pid_t rec = ::fork();
  REQUIRE(rec >= 0);
  if (rec == 0) {
    ::setenv("GUILE_AUTO_COMPILE", "0", 1);
    ::execl(SERVE_HEAPREC, SERVE_HEAPREC, "run", "-o", log.c_str(), "--", SERVE_GUILE,
            "--no-auto-compile", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  {
    Server s(q(log) + " --port 0 --follow --no-symbols");
    // Poll the GC table while the program runs: the number of GCs must rise, step by step.
    std::vector<size_t> seen;
    bool running = true;
    for (int i = 0; i < 200 && running; ++i) {
      int st = 0;
      running = ::waitpid(rec, &st, WNOHANG) == 0;
      Got g = get(s, "/api/gcs");
      REQUIRE(g.status == 200);
      std::smatch m;
      REQUIRE(std::regex_search(g.body, m, std::regex(R"re("count":"(\d+)")re")));
      size_t n = std::stoul(m[1]);
      if (running && (seen.empty() || n != seen.back())) seen.push_back(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    if (running) ::waitpid(rec, nullptr, 0);
    INFO("GC counts seen while guile ran:" << [&] {
      std::string t;
      for (size_t n : seen) t += " " + std::to_string(n);
      return t;
    }());
    CHECK(seen.size() >= 3);
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    // Once the log is complete the server's answers are the CLI's on the finished log.
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    Got status = get(s, "/api/status");
    CHECK(status.body.find("\"complete\":true") != std::string::npos);
    Got gcs = get(s, "/api/gcs");
    REQUIRE(gcs.status == 200);
    CHECK(gcs.body == runCommand(gcs.command, dir));
    CHECK(s.stop() == 0);
  }
  hmtest::removeTempDir(dir);
}

TEST_CASE("following a finished log that is recorded again shows the new recording",
          "[serve][live]") {
  std::string dir = hmtest::makeTempDir("serve-again");
  std::string log = dir + "/again.hml";
  auto record = [&](const char* levels) {
    hmtest::ShellResult r = hmtest::runShell(q(SERVE_HEAPREC) + " run -o " + q(log) + " -- " +
                                             q(SERVE_GC_GAME) + " " + levels + " 50 >/dev/null");
    INFO(r.err);
    REQUIRE(r.status == 0);
  };
  record("1");
  {
    // One worker: the session it opened on the first log is the one that must move on.
    Server s(q(log) + " --port 0 --follow --no-symbols --threads 1");
    Got before = get(s, "/api/gcs");
    REQUIRE(before.status == 200);
    CHECK(before.body == runCommand(before.command, dir));
    record("2");  // the recorder truncates the log and writes it anew
    Got after;
    for (int i = 0; i < 40; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      after = get(s, "/api/gcs");
      if (after.body != before.body) break;
    }
    REQUIRE(after.status == 200);
    CHECK(after.body == runCommand(after.command, dir));
    CHECK(get(s, "/api/status").body.find("\"complete\":true") != std::string::npos);
    CHECK(s.stop() == 0);
  }
  hmtest::removeTempDir(dir);
}

namespace {

// `heaprec run ARGS` in the background, its stdout and stderr in files of `dir`.
struct Heaprec {
  pid_t pid = -1;
  std::string out, err;
  Heaprec(const std::string& dir, const std::vector<std::string>& args) {
    out = dir + "/heaprec.out";
    err = dir + "/heaprec.err";
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::freopen(out.c_str(), "w", stdout);
      ::freopen(err.c_str(), "w", stderr);
      std::vector<char*> argv{const_cast<char*>(SERVE_HEAPREC), const_cast<char*>("run")};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(SERVE_HEAPREC, argv.data());
      ::_exit(127);
    }
  }
  // Waits (up to 30 s) until its stderr holds `text`; that stderr.
  std::string waitFor(const std::string& text) const {
    std::string e;
    for (int i = 0; i < 300 && e.find(text) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      e = readFile(err);
    }
    INFO(e);
    REQUIRE(e.find(text) != std::string::npos);
    return e;
  }
  // Sends `sig` (0: none) and waits up to 30 s: the exit status (128 + N when killed by signal
  // N), -1 when it has not ended.
  int end(int sig) {
    if (sig) ::kill(pid, sig);
    int st = 0;
    for (int i = 0; i < 300; ++i) {
      if (::waitpid(pid, &st, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  ~Heaprec() {
    if (pid > 0) end(SIGKILL);
  }
};

int portOf(const std::string& url) {
  std::smatch m;
  REQUIRE(std::regex_search(url, m, std::regex(R"(http://127\.0\.0\.1:(\d+)/)")));
  return std::stoi(m[1]);
}

}  // namespace

TEST_CASE("heaprec run --serve serves the log, leaves the program's output and status alone",
          "[serve][heaprec]") {
  std::string dir = hmtest::makeTempDir("serve-heaprec");
  std::string log = dir + "/run.hml";
  // An earlier run's finished log under the same name (large enough that the server is still
  // reading it when the program starts): the server must neither read it while the recorder
  // truncates it (SIGBUS on its mapped pages) nor stay on it.
  hmtest::ShellResult first = hmtest::runShell(q(SERVE_HEAPREC) + " run -o " + q(log) + " -- " +
                                               q(SERVE_GC_GAME) + " 10 2000 >/dev/null");
  REQUIRE(first.status == 0);
  {
    Heaprec h(dir, {"--serve", "0", "-o", log, "--", "/bin/sh", "-c",
                    "echo out; echo err >&2; exit 3"});
    std::string err = h.waitFor("still serving");
    std::smatch m;
    REQUIRE(std::regex_search(err, m, std::regex("heaprec: serving " + log + R"( on (\S+) while)")));
    int port = portOf(m[1]);
    // The program's stderr is its own, before heaprec's lines (the URL came before it ran).
    CHECK(err.rfind("heaprec: serving ", 0) == 0);
    CHECK(err.find("\nerr\n") != std::string::npos);
    for (size_t at = 0; at < err.size();) {
      size_t eol = err.find('\n', at);
      std::string line = err.substr(at, eol - at);
      CHECK((line == "err" || line.rfind("heaprec: ", 0) == 0));
      at = eol == std::string::npos ? err.size() : eol + 1;
    }
    // The server answers on this run's finished log, not on the earlier one it may have seen
    // first.
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    std::string status;
    for (int i = 0; i < 40; ++i) {
      auto res = c.Get("/api/status");
      REQUIRE(res);
      status = res->body;
      if (status.find("\"complete\":true") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    INFO(status);
    CHECK(status.find("\"complete\":true") != std::string::npos);
    auto info = c.Get("/api/info");
    REQUIRE(info);
    REQUIRE(info->status == 200);
    CHECK(info->body == runCommand(info->get_header_value("X-Heapman-Command"), dir));
    // Ctrl-C: heaprec ends as the program did (exit 3), the server with it.
    CHECK(h.end(SIGINT) == 3);
    CHECK(readFile(h.out) == "out\n");
    CHECK(!c.Get("/api/status"));
  }
  {
    // A port already taken: heaprec runs nothing (status 2) and says why.
    Server taken(q(log) + " --port 0");
    Heaprec h(dir, {"--serve", std::to_string(taken.port), "-o", dir + "/other.hml", "--",
                    "/bin/sh", "-c", "touch " + q(dir + "/ran")});
    CHECK(h.end(0) == 2);
    CHECK(!fs::exists(dir + "/ran"));
    CHECK(readFile(h.err).find("in use?") != std::string::npos);
  }
  hmtest::removeTempDir(dir);
}
