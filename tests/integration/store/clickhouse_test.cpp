// The ClickHouse store against a real clickhouse-server (Debian's 18.16), started for each test
// on free loopback ports with a configuration and data directory of its own, and stopped after.
// SKIP (exit 4) when the build found no clickhouse-server.
#include <catch2/catch.hpp>

#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "heapman/store/store.h"
#include "heapman/store/trend.h"
#include "summaries.h"
#include "writers.h"
#include "support/shell.h"

using namespace heapman::store;
using storetest::makeSummary;
using storetest::rowsOf;

namespace {

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class Server {
 public:
  // users: more users of users.xml (<name><password>...</password>...</name>).
  explicit Server(const std::string& users = "") {
    if (std::string(STORE_CLICKHOUSE_SERVER).empty()) {
      std::printf("SKIP: clickhouse-server not found (cmake/deps.sh test installs it)\n");
      std::exit(4);
    }
    dir_ = hmtest::makeTempDir("clickhouse");
    port = freePort();
    int tcp = freePort();
    std::ofstream(dir_ + "/config.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n"
        << "  <logger><level>warning</level><log>" << dir_ << "/server.log</log><errorlog>"
        << dir_ << "/server.err.log</errorlog><console>0</console></logger>\n"
        << "  <http_port>" << port << "</http_port>\n  <tcp_port>" << tcp << "</tcp_port>\n"
        << "  <listen_host>127.0.0.1</listen_host>\n"
        << "  <path>" << dir_ << "/data/</path>\n  <tmp_path>" << dir_ << "/tmp/</tmp_path>\n"
        << "  <user_files_path>" << dir_ << "/user_files/</user_files_path>\n"
        << "  <format_schema_path>" << dir_ << "/format_schemas/</format_schema_path>\n"
        << "  <users_config>users.xml</users_config>\n"
        << "  <default_profile>default</default_profile>\n"
        << "  <default_database>default</default_database>\n"
        << "  <mark_cache_size>5368709</mark_cache_size>\n</yandex>\n";
    std::ofstream(dir_ + "/users.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n  <profiles><default></default></profiles>\n"
        << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
        << "<profile>default</profile><quota>default</quota></default>" << users << "</users>\n"
        << "  <quotas><default></default></quotas>\n</yandex>\n";
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      std::string arg = "--config-file=" + dir_ + "/config.xml";
      std::freopen((dir_ + "/stdout.log").c_str(), "w", stdout);
      std::freopen((dir_ + "/stderr.log").c_str(), "w", stderr);
      execl(STORE_CLICKHOUSE_SERVER, STORE_CLICKHOUSE_SERVER, arg.c_str(), nullptr);
      _exit(127);
    }
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1);
    for (int i = 0; i < 300; ++i) {
      auto r = c.Get("/ping");
      if (r && r->status == 200) return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL("clickhouse-server exited at start; see " << dir_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("clickhouse-server did not answer /ping within 30 s; see " << dir_);
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    hmtest::removeTempDir(dir_);
  }
  std::string url(const std::string& db = "runs") const {
    return "clickhouse://127.0.0.1:" + std::to_string(port) + "/" + db;
  }
  // A statement sent straight to the server, as an ingest that died would have left it.
  void post(const std::string& sql, const std::string& body = "") const {
    httplib::Client c("127.0.0.1", port);
    std::string path = "/";
    if (!body.empty()) {
      path += "?query=";
      for (unsigned char ch : sql) {
        char b[4];
        std::snprintf(b, sizeof b, "%%%02X", ch);
        path += std::isalnum(ch) ? std::string(1, static_cast<char>(ch)) : std::string(b);
      }
    }
    auto r = c.Post(path.c_str(), body.empty() ? sql : body, "text/plain");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
  }
  int port = 0;

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("clickhouse: a run is written once and read back equal") {
  Server server;
  auto st = Store::open(server.url());
  RunSummary s = makeSummary(17, true);
  s.leaks[0].sentence = "a sentence with\ta tab, a 'quote', a back\\slash and a\nnewline";
  REQUIRE(st->put(s));
  REQUIRE_FALSE(st->put(s));
  CHECK(st->has(s.run.logId));
  CHECK(st->rowCounts() == rowsOf(s));
  std::optional<RunSummary> back = st->load({"build", "17"});
  REQUIRE(back);
  CHECK(*back == s);
  CHECK_FALSE(st->load({"build", "16"}));
  // Opened again (the schema is there): the same rows.
  CHECK(Store::open(server.url())->rowCounts() == rowsOf(s));
}

TEST_CASE("clickhouse: 8 writers at once lose nothing") {
  Server server;
  Store::open(server.url());  // the schema, before the writers race to make it
  storetest::writeAtOnce(server.url(), 8, 25);
}

TEST_CASE("clickhouse: an ingest that died half-way is not seen, a log stored twice counts once") {
  Server server;
  auto st = Store::open(server.url());
  RunSummary a = makeSummary(1, false), b = makeSummary(2, false);
  REQUIRE(st->put(a));
  // b's runs and points blocks, as an ingest that died before its other tables and its marker.
  server.post("INSERT INTO runs.runs (log_id, ingest_id, n, start_wall_ns, peak_bytes) FORMAT "
              "TabSeparated",
              b.run.logId + "\tdead\t0\t5\t999\n");
  server.post("INSERT INTO runs.points (log_id, ingest_id, n, point, heap, live_bytes) FORMAT "
              "TabSeparated",
              b.run.logId + "\tdead\t0\tlevel_end#1\tgc\t777\n");
  CHECK(st->rowCounts() == rowsOf(a));
  CHECK(st->runs().size() == 1);
  CHECK_FALSE(st->has(b.run.logId));
  // Written again in full, it is there once.
  REQUIRE(st->put(b));
  std::map<std::string, uint64_t> want = rowsOf(a);
  for (auto [t, rows] : rowsOf(b)) want[t] += rows;
  CHECK(st->rowCounts() == want);
  // Two jobs that both wrote a completed a (a race past has()): counted once.
  server.post("INSERT INTO runs.runs (log_id, ingest_id, n, start_wall_ns, peak_bytes) FORMAT "
              "TabSeparated",
              a.run.logId + "\tffffffff\t0\t5\t999\n");
  server.post("INSERT INTO runs.completed FORMAT TabSeparated", a.run.logId + "\tffffffff\t9\n");
  CHECK(st->rowCounts() == want);
  FigureQuery q;
  std::vector<FigureValue> f = st->figure(q);
  REQUIRE(f.size() == 2);
  CHECK(f[0].value == a.run.peakBytes);
}

TEST_CASE("clickhouse: an ingest killed in the middle leaves whole runs only") {
  Server server;
  uint64_t runs = storetest::killWhileWriting(server.url(), 1500);
  CHECK(Store::open(server.url())->runs().size() == runs);
}

TEST_CASE("clickhouse: trend names the build a leak started at") {
  Server server;
  auto st = Store::open(server.url());
  for (int b = 30; b >= 1; --b) REQUIRE(st->put(makeSummary(b, b >= 17)));
  FigureQuery q;
  q.point = "level_end#3";
  q.siteRegex = "^recordInput";
  TrendResult t = trend(*st, "build", q);
  REQUIRE(t.rows.size() == 30);
  for (size_t i = 0; i < 30; ++i) CHECK(t.rows[i].value == (i + 1 >= 17 ? 15360u : 0u));
  REQUIRE(t.step.found);
  CHECK(t.rows[t.step.at].tag == "17");
  q.siteRegex.clear();
  q.heap = "native";
  t = trend(*st, "build", q);
  REQUIRE(t.rows.size() == 30);
  CHECK(t.rows[5].value == 704);
}

TEST_CASE("clickhouse: trend's figures of whole runs (GC count, pause p99, leak counts)") {
  Server server;
  auto st = Store::open(server.url());
  storetest::checkRunFigures(*st);
}

TEST_CASE("clickhouse: a user with a password, and a wrong one is a clear error that never prints it") {
  // The password holds ':', '@' and '/': %XX in the URL.
  Server server("<ci><password>pa:ss@w/rd</password><networks><ip>127.0.0.1</ip></networks>"
                "<profile>default</profile><quota>default</quota></ci>");
  std::string host = "127.0.0.1:" + std::to_string(server.port);
  auto st = Store::open("clickhouse://ci:pa%3Ass%40w%2Frd@" + host + "/runs");
  REQUIRE(st->put(makeSummary(1, false)));
  CHECK(st->runs().size() == 1);
  CHECK(st->describe() == "clickhouse://ci:***@" + host + "/runs");
  auto refused = [](const std::string& url) {
    try {
      Store::open(url)->runs();
    } catch (const StoreError& e) {
      return std::string(e.what());
    }
    return std::string("(opened)");
  };
  for (const char* user : {"ci", "nobody"}) {
    INFO(user);
    std::string msg = refused("clickhouse://" + std::string(user) + ":wrong-secret@" + host + "/runs");
    CHECK(msg.rfind("ClickHouse at " + host + " refused the user " + user +
                        ": a wrong password or an unknown user (HTTP ",
                    0) == 0);
    CHECK(msg.find("nothing was written") != std::string::npos);
    CHECK(msg.find("wrong-secret") == std::string::npos);
  }
  // Without a password in the URL: the environment's.
  CHECK(refused("clickhouse://ci@" + host + "/runs").find("refused the user ci") !=
        std::string::npos);
  setenv("HEAPMAN_CLICKHOUSE_PASSWORD", "pa:ss@w/rd", 1);
  CHECK(Store::open("clickhouse://ci@" + host + "/runs")->runs().size() == 1);
  unsetenv("HEAPMAN_CLICKHOUSE_PASSWORD");
  // Masked in every message about the URL.
  CHECK(refused("clickhouse://ci:top%secret@" + host + "/runs") ==
        "bad ClickHouse store 'clickhouse://ci:***@" + host +
            "/runs': a '%' in the user or password is %XX (%40 for '@', %3A for ':')");
  CHECK(refused("clickhouse://ci:secret@" + host + "/runs.x") ==
        "bad ClickHouse store 'clickhouse://ci:***@" + host +
            "/runs.x': give clickhouse://HOST:PORT/DB (DB: letters, digits and '_')");
  try {
    Store::open("mysql://ci:secret@" + host + "/runs");
    FAIL("opened");
  } catch (const StoreError& e) {
    CHECK(std::string(e.what()) == "unknown store 'mysql://ci:***@" + host +
                                       "/runs': give a SQLite file (runs.sqlite) or "
                                       "clickhouse://HOST:PORT/DB");
  }
  CHECK(maskedUrl("clickhouse://ci@h:1/db") == "clickhouse://ci@h:1/db");
  CHECK(maskedUrl("clickhouse://h:1/db") == "clickhouse://h:1/db");
  CHECK(maskedUrl("clickhouse://ci:p@ss@h:1/db") == "clickhouse://ci:***@h:1/db");
  CHECK(maskedUrl("runs@home.sqlite") == "runs@home.sqlite");
}

TEST_CASE("clickhouse: a log cut short is a partial run, replaced by its complete log") {
  Server server;
  auto st = Store::open(server.url());
  storetest::checkPartialRuns(*st);
}

TEST_CASE("clickhouse: a server that is down is a clear error") {
  int port = freePort();  // nothing listens there
  std::string url = "clickhouse://127.0.0.1:" + std::to_string(port) + "/runs";
  REQUIRE_THROWS_WITH(Store::open(url),
                      "cannot reach ClickHouse at 127.0.0.1:" + std::to_string(port) +
                          " (connection refused or timed out): start the server or give another "
                          "--store; nothing was written");
  REQUIRE_THROWS_WITH(Store::open("clickhouse://127.0.0.1:80x/runs"),
                      Catch::StartsWith("bad ClickHouse store"));
}
