// The interactive shell: `heapman LOG` or `heapman shell [LOG]`. The verbs of verbs() without the
// LOG argument (the same table and parser as the command line), plus help, open LOG, history,
// quit. The log, its index and the symbols resolved so far stay loaded between commands. History
// in memory and in ~/.heapman_history; a small line editor (arrows, Home/End,
// Ctrl-A/E/K/U/W/C/D) when stdin is a terminal, plain line reading otherwise (so commands can be
// piped in). Errors print and the shell goes on. Ctrl-C during a
// command ends that command ("interrupted"); at the prompt, on an empty line, it ends the shell.
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "session.h"

namespace heapman::cli {

namespace {

constexpr size_t kHistoryMax = 1000;

// Ctrl-C while a command runs ends that command, not the shell: SIGINT sets this flag, which the
// replay polls between blocks of records (ReplayOptions::cancel). At the prompt SIGINT keeps its
// default action (a terminal's Ctrl-C arrives there as a key: see LineEditor).
std::atomic<bool> gInterrupt{false};

extern "C" void onSigint(int) { gInterrupt.store(true, std::memory_order_relaxed); }

// SIGINT handled for the lifetime of the object (one command).
class InterruptScope {
 public:
  InterruptScope() {
    gInterrupt.store(false, std::memory_order_relaxed);
    struct sigaction sa {};
    sa.sa_handler = onSigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR
    ::sigaction(SIGINT, &sa, &old_);
  }
  ~InterruptScope() { ::sigaction(SIGINT, &old_, nullptr); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_ {};
};

std::string historyPath() {
  const char* h = std::getenv("HOME");
  return h && *h ? std::string(h) + "/.heapman_history" : "";
}

// Splits a command line into words: blanks separate; '...' and "..." group; \ escapes.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        cur += line[++i];
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      cur += line[++i];
      in = true;
    } else if (c == ' ' || c == '\t') {
      if (in) out.push_back(cur), cur.clear(), in = false;
    } else {
      cur += c;
      in = true;
    }
  }
  if (quote) throw UsageError(std::string("unterminated ") + quote + " quote");
  if (in) out.push_back(cur);
  return out;
}

// Raw-mode line editing on a terminal.
class LineEditor {
 public:
  explicit LineEditor(std::vector<std::string>& history) : history_(history) {}

  // False at end of input (Ctrl-D on an empty line).
  bool read(const std::string& prompt, std::string& line) {
    termios old;
    if (::tcgetattr(STDIN_FILENO, &old) != 0) return plain(line);
    termios raw = old;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);  // not FLUSH: keep typed-ahead input
    bool ok = edit(prompt, line);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    return ok;
  }

 private:
  static bool plain(std::string& line) { return static_cast<bool>(std::getline(std::cin, line)); }

  int key() {
    unsigned char c;
    ssize_t n = ::read(STDIN_FILENO, &c, 1);
    return n == 1 ? c : -1;
  }

  void redraw(const std::string& prompt, const std::string& buf, size_t pos) {
    std::string out = "\r" + prompt + buf + "\x1b[K";
    if (pos < buf.size()) out += "\x1b[" + std::to_string(buf.size() - pos) + "D";
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
  }

  bool edit(const std::string& prompt, std::string& line) {
    std::string buf;
    size_t pos = 0;
    size_t h = history_.size();  // browsing position; == size: the line being edited
    std::string draft;
    redraw(prompt, buf, pos);
    for (;;) {
      int c = key();
      if (c < 0) return false;
      if (c == '\r' || c == '\n') {
        line = buf;
        return true;
      }
      if (c == 4) {  // Ctrl-D
        if (buf.empty()) return false;
        if (pos < buf.size()) buf.erase(pos, 1);
      } else if (c == 3) {  // Ctrl-C: drop the line; on an empty line, leave
        std::fputs("^C\n", stdout);
        if (buf.empty()) return false;
        buf.clear();
        pos = 0;
        h = history_.size();
      } else if (c == 127 || c == 8) {
        if (pos > 0) buf.erase(--pos, 1);
      } else if (c == 1) {
        pos = 0;
      } else if (c == 5) {
        pos = buf.size();
      } else if (c == 11) {
        buf.erase(pos);
      } else if (c == 21) {
        buf.erase(0, pos);
        pos = 0;
      } else if (c == 23) {  // Ctrl-W: the word before the cursor
        size_t b = pos;
        while (b > 0 && buf[b - 1] == ' ') --b;
        while (b > 0 && buf[b - 1] != ' ') --b;
        buf.erase(b, pos - b);
        pos = b;
      } else if (c == 12) {
        std::fputs("\x1b[H\x1b[2J", stdout);
      } else if (c == 27) {
        int a = key(), b = key();
        if (a != '[' && a != 'O') continue;
        if (b == 'A' || b == 'B') {  // history up / down
          if (h == history_.size()) draft = buf;
          if (b == 'A' && h > 0) --h;
          if (b == 'B' && h < history_.size()) ++h;
          buf = h == history_.size() ? draft : history_[h];
          pos = buf.size();
        } else if (b == 'C') {
          if (pos < buf.size()) ++pos;
        } else if (b == 'D') {
          if (pos > 0) --pos;
        } else if (b == 'H') {
          pos = 0;
        } else if (b == 'F') {
          pos = buf.size();
        } else if (b >= '0' && b <= '9') {
          int t = key();  // ESC [ n ~
          if (t == '~' && b == '3' && pos < buf.size()) buf.erase(pos, 1);
          if (t == '~' && (b == '1' || b == '7')) pos = 0;
          if (t == '~' && (b == '4' || b == '8')) pos = buf.size();
        }
      } else if (c >= 32) {
        buf.insert(pos++, 1, static_cast<char>(c));
      }
      redraw(prompt, buf, pos);
    }
  }

  std::vector<std::string>& history_;
};

void help(const std::string& topic) {
  if (!topic.empty()) {
    if (const Verb* v = findVerb(topic); v && v->inShell) {
      std::printf("%s %s\n  %s\n(type '%s --help' for every option)\n", v->name, v->synopsis,
                  v->summary, v->name);
      return;
    }
    std::printf("no command '%s'\n", topic.c_str());
  }
  std::printf(
      "commands (the open log is implied):\n");
  for (const Verb* v : verbs())
    if (v->inShell) std::printf("  %-8s %s\n", v->name, v->summary);
  std::printf(
      "  %-8s %s\n  %-8s %s\n  %-8s %s\n  %-8s %s\n"
      "points: start, end, gc:N, NAME#K (K-th custom event NAME), NAME, frame:F, seq:S\n"
      "output: --csv FILE|-, --json FILE|-, --sort bytes|objects|name, --top N\n",
      "open", "open LOG: replace the open log", "help", "help [COMMAND]", "history",
      "the commands typed so far", "quit", "leave (also: exit, Ctrl-D)");
}

void options(po::options_description& o, po::positional_options_description&) {
  addSymbolOptions(o);  // the log's: they hold for every command
}

int runShell(const std::string& first, const VerbOptions& vm) {
  std::unique_ptr<Session> session;
  const replay::SymbolSettings symbols = symbolSettingsOf(vm);
  auto openLog = [&](const std::string& path) {
    InterruptScope interruptible;
    try {
      auto s = Session::open(path, symbols, &gInterrupt);
      const replay::LogTables& t = s->replay->tables();
      std::printf("%s: %llu events, %zu GCs, %zu custom events, %zu frames%s\n", path.c_str(),
                  static_cast<unsigned long long>(t.eventCount), t.gcs.size(), t.events.size(),
                  t.frames.size(), s->replay->index().built ? " (index built)" : "");
      for (const std::string& w : replay::warnings(*s->replay))
        std::printf("warning: %s\n", w.c_str());
      session = std::move(s);
      return true;
    } catch (...) {
      reportError("");
      return false;
    }
  };
  if (!first.empty()) openLog(first);

  std::vector<std::string> history;
  std::string hp = historyPath();
  if (!hp.empty()) {
    std::ifstream in(hp);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) history.push_back(l);
    if (history.size() > kHistoryMax)
      history.erase(history.begin(), history.end() - static_cast<long>(kHistoryMax));
  }
  bool tty = ::isatty(STDIN_FILENO) == 1;
  LineEditor editor(history);
  int lastRc = kExitOk;
  for (;;) {
    std::string line;
    if (tty ? !editor.read("heapman> ", line) : !std::getline(std::cin, line)) break;
    std::vector<std::string> w;
    try {
      w = words(line);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "heapman: %s\n", e.what());
      continue;
    }
    if (w.empty() || w[0][0] == '#') continue;
    if (history.empty() || history.back() != line) {
      history.push_back(line);
      if (!hp.empty()) {
        std::ofstream out(hp, std::ios::app);
        out << line << "\n";
      }
    }
    std::string cmd = w[0];
    Args rest(w.begin() + 1, w.end());
    if (cmd == "quit" || cmd == "exit") break;
    if (cmd == "help" || cmd == "?") {
      help(rest.empty() ? "" : rest[0]);
      continue;
    }
    if (cmd == "history") {
      for (size_t i = 0; i < history.size(); ++i) std::printf("%5zu  %s\n", i + 1, history[i].c_str());
      continue;
    }
    if (cmd == "open") {
      if (rest.size() != 1) {
        std::fprintf(stderr, "usage: open LOG\n");
        lastRc = kExitUsage;
        continue;
      }
      lastRc = openLog(rest[0]) ? kExitOk : kExitBadLog;
      continue;
    }
    const Verb* v = findVerb(cmd);
    if (!v || !v->inShell) {
      std::fprintf(stderr, "heapman: unknown command '%s' (type 'help')\n", cmd.c_str());
      lastRc = kExitUsage;
      continue;
    }
    if (!session) {
      std::fprintf(stderr, "heapman: no log open (type 'open LOG')\n");
      lastRc = kExitUsage;
      continue;
    }
    {
      InterruptScope interruptible;
      try {
        lastRc = runInSession(*v, *session, rest);
      } catch (...) {
        lastRc = reportError(cmd.c_str());
      }
    }
    try {
      flushStdout();
    } catch (...) {
      lastRc = reportError(cmd.c_str());
    }
  }
  (void)lastRc;
  return kExitOk;
}

}  // namespace

extern const Verb kShellVerb{.name = "shell",
                             .synopsis = "[LOG] [--no-symbols]",
                             .summary = "interactive shell on a log (also: heapman LOG)",
                             .options = options,
                             .runFile = runShell,
                             .inShell = false,
                             .optionalLog = true};

}  // namespace heapman::cli
