// heaprec: record a program's heap activity into a HeapMan log.
//
//   heaprec run [-o FILE] [--depth N] [--follow-exec] [--serve [PORT]] -- PROGRAM [ARGS...]
//   heaprec --version
//
// Runs PROGRAM with the recorder module preloaded, waits for it (passing on the signals heaprec
// itself gets), and ends as it did: with its exit code, or killed by the signal that killed it
// (without a core of its own); 2 without running anything when PROGRAM cannot be recorded or
// the log cannot be written. A run that writes no log says so and leaves an earlier FILE as it
// was.
// PROGRAM's output is its own: when it has exited, heaprec prints the recorder's messages, a line
// per log of the program's other processes and a last line saying where the log went.
// With --serve, heapman serve --follow shows the log in a browser while it is written (serve.h):
// heaprec prints its URL before the program starts and, once the program has ended, goes on
// serving the finished log until Ctrl-C (SIGINT, SIGTERM or SIGHUP), as a profiler's window stays
// open after the game quits; then it ends as the program did.
#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>
#include <algorithm>
#include <fstream>

#include "../common/contract.h"
#include "child.h"
#include "preflight.h"
#include "serve.h"
#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"

namespace po = boost::program_options;
namespace env = heapman::rec::env;

namespace {

using namespace heaprec;

constexpr int kUsage = 2;
constexpr int kCannotRun = 127;
constexpr unsigned kServePort = 8080;

const char* kSynopsis =
    "usage: heaprec run [-o FILE] [--depth N] [--unwind fp|auto|dwarf] [--time-resolution NS]\n"
    "                   [--alloc-time-every N]\n"
    "                   [--follow-exec] [--ram-dumps off|every|every:N|event:NAME]\n"
    "                   [--mono-stacks on|off] [--mono-malloc] [--serve [PORT]]\n"
    "                   -- PROGRAM [ARGS...]\n";

// After the program died of `sig`: heaprec dies of it too, so that whoever waits for heaprec
// sees the program's wait status (a shell prints "Segmentation fault", Python's subprocess
// gets -11). As coreutils' timeout does, heaprec itself never dumps core (it is made
// non-dumpable first): a core of heaprec would be no use and could overwrite the program's.
[[noreturn]] void dieOf(int sig) {
  std::fflush(nullptr);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
  // Signals whose default action does not end a process (SIGCHLD, SIGCONT, ...) cannot end
  // the program either; anything else lands here only if the signal was somehow ignored.
  _exit(128 + sig);
}

// heaprec run's options: the one table the parser, --help and main's split of the command line
// (which words are option values) read.
po::options_description runOptions() {
  po::options_description desc("heaprec run options");
  desc.add_options()("help,h", "show this help")(
      "output,o", po::value<std::string>(),
      "log file (default: heaprec.PROGRAM.PID.hml in the current directory)")(
      "depth", po::value<unsigned>()->default_value(32),
      ("stack frames recorded per event (1-" + std::to_string(env::kMaxDepth) + ")").c_str())(
      "unwind", po::value<std::string>()->default_value("auto"),
      "stacks: fp (frame pointers only), auto (fp, libunwind where the chain breaks), dwarf "
      "(libunwind always: exact without frame pointers, slower)")(
      "time-resolution", po::value<unsigned>()->default_value(10000),
      "event time resolution in ns (coarser: smaller logs)")(
      "alloc-time-every", po::value<unsigned>()->default_value(16),
      "an allocation reads the clock at least every Nth of its thread (and after its thread "
      "paused); the others take the last reading: 1 reads it for every allocation, slower")(
      "follow-exec", "record programs PROGRAM executes too (default: only PROGRAM and its forks)")(
      "ram-dumps", po::value<std::string>()->default_value("off"),
      "bdwgc programs: copy the live heap, roots and stacks at collections: off, every, "
      "every:N (every Nth collection), event:NAME (the first collection after each custom "
      "event NAME)")(
      "mono-stacks", po::value<std::string>()->default_value("on"),
      "Mono programs: managed stacks of allocations (on: call instrumentation keeps a shadow "
      "stack; off: faster, allocations carry no stack)")(
      "mono-malloc", "Mono programs: record the runtime's own malloc/free too (default: only "
      "the managed heap)")(
      "serve", po::value<unsigned>()->implicit_value(kServePort)->value_name("PORT"),
      "show the log in a browser while it is written (heapman serve --follow on port PORT, "
      "default 8080, 0: any free one; the URL is printed), and the finished log after the "
      "program ends, until Ctrl-C; an earlier log of the same name is removed first");
  return desc;
}

// Whether the option word `arg` takes the next word as its value (`--depth 8`, `-o FILE`; not
// `--depth=8`, `-oFILE`, a flag or an option whose value may be left out: `--serve`).
bool takesValue(const po::options_description& desc, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;
  std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2) : arg.size() == 2 ? arg : "";
  if (name.empty()) return false;
  const po::option_description* d = desc.find_nothrow(name, false);
  return d && d->semantic()->min_tokens() > 0;
}

// After the program: the server goes on with the finished log until heaprec gets SIGINT,
// SIGTERM or SIGHUP (Ctrl-C: the server, in a group of its own, does not get it), or it ends.
void serveFinished(Server& server, int sigFd, const std::string& output) {
  std::fputs(server.takeText().c_str(), stderr);
  if (!server.running()) {
    std::fprintf(stderr, "heaprec: the server has ended\n");
    return;
  }
  std::fprintf(stderr, "heaprec: still serving %s on %s: Ctrl-C ends\n", output.c_str(),
               server.url().c_str());
  for (bool done = false; !done && server.running();) {
    pollfd fds[2] = {{sigFd, POLLIN, 0}, {server.pipe(), POLLIN, 0}};
    if (poll(fds, 2, 1000) <= 0) continue;
    if (fds[1].revents & POLLIN) std::fputs(server.takeText().c_str(), stderr);
    signalfd_siginfo si;
    while (read(sigFd, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      done |= si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP;
  }
  server.stop();
  std::fputs(server.takeText().c_str(), stderr);
}

int run(const std::vector<std::string>& options, const std::vector<std::string>& program) {
  const po::options_description desc = runOptions();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(options).options(desc).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heaprec: %s\n%s", e.what(), kSynopsis);
    return kUsage;
  }
  if (vm.count("help")) {
    std::cout << kSynopsis << desc;
    return 0;
  }
  if (program.empty()) {
    std::fprintf(stderr, "heaprec: no program to run\n%s", kSynopsis);
    return kUsage;
  }
  unsigned depth = vm["depth"].as<unsigned>();
  if (depth < 1 || depth > env::kMaxDepth) {
    std::fprintf(stderr, "heaprec: --depth must be between 1 and %u\n", env::kMaxDepth);
    return kUsage;
  }
  std::string ramDumps = vm["ram-dumps"].as<std::string>();
  if (env::RamDumps parsed; !env::parseRamDumps(ramDumps.c_str(), parsed)) {
    std::fprintf(stderr,
                 "heaprec: --ram-dumps must be off, every, every:N (N >= 1) or event:NAME, not "
                 "'%s'\n",
                 ramDumps.c_str());
    return kUsage;
  }
  std::string monoStacks = vm["mono-stacks"].as<std::string>();
  if (monoStacks != "on" && monoStacks != "off") {
    std::fprintf(stderr, "heaprec: --mono-stacks must be on or off, not '%s'\n", monoStacks.c_str());
    return kUsage;
  }
  std::string unwind = vm["unwind"].as<std::string>();
  if (unwind != "fp" && unwind != "auto" && unwind != "dwarf") {
    std::fprintf(stderr, "heaprec: --unwind must be fp, auto or dwarf, not '%s'\n", unwind.c_str());
    return kUsage;
  }
  const bool serve = vm.count("serve") != 0;
  std::string heapman;
  if (serve) {
    if (vm["serve"].as<unsigned>() > 65535) {
      std::fprintf(stderr, "heaprec: --serve: give a port from 0 to 65535\n");
      return kUsage;
    }
    heapman = findHeapman();
    if (heapman.empty()) {
      std::fprintf(stderr, "heaprec: --serve: cannot find heapman next to heaprec (%s); "
                   "reinstall HeapMan\n", selfDir().c_str());
      return kCannotRun;
    }
  }
  std::string module = findModule();
  if (module.empty()) {
    std::fprintf(stderr,
                 "heaprec: cannot find %s next to heaprec or in %s/%s; reinstall HeapMan\n",
                 HEAPMAN_PRELOAD_NAME, selfDir().c_str(), HEAPMAN_PRELOAD_RELDIR);
    return kCannotRun;
  }

  // What is about to run, checked before it runs: nothing of a program that cannot be recorded
  // is lost by refusing it.
  bool followExec = vm.count("follow-exec") != 0, followWrapper = false;
  if (std::string path = resolveProgram(program[0]); !path.empty()) {
    char real[PATH_MAX];
    std::string target = realpath(path.c_str(), real) ? real : path;
    std::string base = target.substr(target.rfind('/') + 1);
    ProgramKind kind = inspectProgram(target);
    if (base == "mono-sgen") {
      std::fprintf(stderr,
                   "heaprec: %s is Mono with the SGen collector, which HeapMan does not record: "
                   "run the program on mono-boehm instead (heaprec run -- mono-boehm%s)\n",
                   program[0].c_str(),
                   program.size() > 1 ? (" " + program[1] + " ...").c_str() : " PROGRAM.exe");
      return kUsage;
    }
    if (kind.elf && !kind.dynamic) {
      std::fprintf(stderr,
                   "heaprec: %s is statically linked: there is nothing to preload the recorder "
                   "into. Record a dynamically linked build of it.\n",
                   program[0].c_str());
      return kUsage;
    }
    if (!kind.interpreter.empty()) {
      // A wrapper script (mcs, xbuild are shell scripts around mono): what matters is the
      // program it runs, so follow it.
      std::string hint;
      if (kind.text.find("/usr/bin/mono ") != std::string::npos ||
          kind.text.find("exec mono ") != std::string::npos) {
        size_t exe = kind.text.find(".exe");
        size_t from = exe == std::string::npos ? exe : kind.text.rfind(' ', exe);
        std::string assembly = from == std::string::npos ? "PROGRAM.exe"
                                                         : kind.text.substr(from + 1, exe + 4 - from - 1);
        hint = "; it runs mono (SGen), which HeapMan does not record: to record the C# program, "
               "run heaprec run -- mono-boehm " + assembly + " ARGS";
      }
      if (!followExec) {
        std::fprintf(stderr,
                     "heaprec: %s is a script (#!%s): recording it and the programs it becomes "
                     "by exec, each in a log of its own (LOG.PID.exec; --follow-exec records "
                     "everything it runs)%s\n",
                     program[0].c_str(), kind.interpreter.c_str(), hint.c_str());
        followWrapper = true;
      }
    }
  }
  std::string output = vm.count("output") ? absolute(vm["output"].as<std::string>()) : "";
  if (!output.empty()) {
    if (std::string why = cannotWrite(output); !why.empty()) {
      std::fputs(why.c_str(), stderr);
      return kUsage;
    }
  } else if (access(".", W_OK | X_OK) != 0) {
    std::fprintf(stderr,
                 "heaprec: cannot write the log in the current directory (%s): choose a place "
                 "with -o FILE\n",
                 std::strerror(errno));
    return kUsage;
  }

  const FileId before = identify(output);

  time_t started = time(nullptr);
  MessageFifo fifo;
  if (!fifo.open()) fifo.path.clear();  // the recorder then writes its messages on stderr

  // Signals heaprec forwards, and SIGCHLD, arrive through a signalfd; the child gets the
  // original mask and dispositions back before it runs the program.
  sigset_t watched, original;
  sigemptyset(&watched);
  for (int sig : kForwarded) sigaddset(&watched, sig);
  sigaddset(&watched, SIGCHLD);
  sigprocmask(SIG_BLOCK, &watched, &original);
  int sigFd = signalfd(-1, &watched, SFD_CLOEXEC | SFD_NONBLOCK);

  // The log's name needs the child's pid: the child waits on a pipe until the parent knows it.
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    std::perror("heaprec: pipe");
    return kCannotRun;
  }
  pid_t child = fork();
  if (child < 0) {
    std::perror("heaprec: fork");
    return kCannotRun;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &original, nullptr);
    close(gate[1]);
    char out[PATH_MAX + 1] = {};
    ssize_t n = read(gate[0], out, PATH_MAX);
    if (n <= 0) _exit(kCannotRun);
    std::string pre = module;
    if (const char* old = getenv("LD_PRELOAD"); old && *old) pre += std::string(":") + old;
    setenv("LD_PRELOAD", pre.c_str(), 1);
    setenv(env::kOutput, out, 1);
    setenv(env::kRootPid, std::to_string(getpid()).c_str(), 1);  // this process writes OUT
    if (!fifo.path.empty()) setenv(env::kMessages, fifo.path.c_str(), 1);
    setenv(env::kDepth, std::to_string(depth).c_str(), 1);
    setenv(env::kTimeResolutionNs,
           std::to_string(std::max(1u, vm["time-resolution"].as<unsigned>())).c_str(), 1);
    setenv(env::kAllocTimeEvery,
           std::to_string(std::clamp(vm["alloc-time-every"].as<unsigned>(), 1u,
                                     env::kMaxAllocTimeEvery)).c_str(),
           1);
    setenv(env::kUnwind, unwind.c_str(), 1);
    if (ramDumps != "off") setenv(env::kRamDumps, ramDumps.c_str(), 1);
    if (followExec || followWrapper) setenv(env::kFollowExec, followExec ? "1" : "wrapper", 1);
    // A Mono program loads the recorder as its profiler module too (the module removes this
    // again in a program that is not Mono).
    std::string mono = "--profile=heapman";
    if (const char* old = getenv("MONO_ENV_OPTIONS"); old && *old) mono += std::string(" ") + old;
    setenv("MONO_ENV_OPTIONS", mono.c_str(), 1);
    if (monoStacks == "off") setenv(env::kMonoNoStacks, "1", 1);
    if (vm.count("mono-malloc")) setenv(env::kMonoMalloc, "1", 1);
    std::vector<char*> argv;
    for (const std::string& a : program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "heaprec: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? kCannotRun : 126);
  }
  close(gate[0]);
  if (output.empty()) {
    std::string name = program[0].substr(program[0].rfind('/') + 1);
    output = absolute("heaprec." + name + "." + std::to_string(child) + ".hml");
  }
  // The server first, so that its URL comes before anything of the program; it waits for the
  // log to hold a chunk. A server that cannot listen (the port taken) runs nothing. An earlier
  // run's log of that name goes first: the server would read it while the recorder truncates
  // it, and a reader's mapped pages past the new end are SIGBUS.
  Server server;
  if (serve) {
    if (before.exists && before.regular) unlink(output.c_str());
    if (!server.start(heapman, output, vm["serve"].as<unsigned>())) {
      close(gate[1]);  // the child reads nothing and ends without running the program
      waitpid(child, nullptr, 0);
      std::fprintf(stderr, "heaprec: --serve: %s\nheaprec: nothing run\n", server.why().c_str());
      return kUsage;
    }
    std::fprintf(stderr, "heaprec: serving %s on %s while it is written\n", output.c_str(),
                 server.url().c_str());
  }
  (void)!write(gate[1], output.c_str(), output.size());
  close(gate[1]);

  int status = waitForProgram(child, sigFd, fifo, serve ? &server : nullptr);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  bool recorderSpoke = !fifo.text.empty();
  std::fputs(fifo.text.c_str(), stderr);

  std::string why, killed;
  if (WIFSIGNALED(status)) {
    killed = std::string("the program was killed by SIG") +
             (sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    why = ", truncated: " + std::string(recorderSpoke ? "the recorder could not finish it (see "
                                                        "above), and "
                                                      : "") +
          killed + "; readable up to where it ends";
  } else if (recorderSpoke)
    why = ", truncated: the recorder could not finish it (see above); readable up to where it ends";
  else
    why = ", truncated: the process ended without running its exit handlers; readable up to "
          "where it ends";
  std::vector<std::string> others = otherLogs(output, started);
  for (size_t i = 0; i < others.size() && i < 20; ++i) {
    std::string what;
    try {
      what = describeLog(others[i], ", truncated");
    } catch (const std::exception& e) {
      what = std::string("unreadable: ") + e.what();
    }
    std::fprintf(stderr, "heaprec: also wrote %s (%s)\n", others[i].c_str(), what.c_str());
  }
  if (others.size() > 20)
    std::fprintf(stderr, "heaprec: also wrote %zu more logs of other processes (%s.*)\n",
                 others.size() - 20, output.c_str());
  if (FileId after = identify(output); !after.exists || (after.regular && after == before)) {
    // The recorder never opened the log: the program did not start (exec failed), or it
    // cleared the preload, or it is not what heaprec recorded (statically linked).
    std::string what = code == kCannotRun || code == 126
                           ? "the program could not be started"
                           : "the recorder never started in the program (did it clear "
                             "LD_PRELOAD, or is it statically linked?)";
    if (after.exists)
      std::fprintf(stderr, "heaprec: no log written: %s; %s is an earlier run's log, left as it was\n",
                   what.c_str(), output.c_str());
    else
      std::fprintf(stderr, "heaprec: no log written: %s\n", what.c_str());
  } else {
    try {
      std::fprintf(stderr, "heaprec: wrote %s (%s)\n", output.c_str(),
                   describeLog(output, why, killed.empty() ? "" : "; " + killed + " after the "
                                                                    "log was finished").c_str());
    } catch (const std::exception& e) {
      // Not a regular file (e.g. /dev/full): the recorder already said what went wrong.
      struct stat st;
      if (stat(output.c_str(), &st) != 0 || S_ISREG(st.st_mode))
        std::fprintf(stderr, "heaprec: no readable log at %s (%s)\n", output.c_str(), e.what());
    }
  }
  if (serve) serveFinished(server, sigFd, output);
  if (WIFSIGNALED(status)) {
    if (WCOREDUMP(status)) std::fprintf(stderr, "heaprec: the program dumped core\n");
    dieOf(WTERMSIG(status));
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--version") {
    std::printf("heaprec %s\n", HEAPMAN_VERSION);
    return 0;
  }
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kSynopsis, args.empty() ? stderr : stdout);
    return args.empty() ? kUsage : 0;
  }
  if (args[0] != "run") {
    std::fprintf(stderr, "heaprec: unknown command '%s'\n%s", args[0].c_str(), kSynopsis);
    return kUsage;
  }
  // Options up to "--" (or up to the first word that is not an option) are heaprec's.
  const po::options_description table = runOptions();
  std::vector<std::string> options, program;
  size_t i = 1;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if (args[i].empty() || args[i][0] != '-') break;
    options.push_back(args[i]);
    if (takesValue(table, args[i]) && i + 1 < args.size()) options.push_back(args[++i]);
    // --serve PORT: the port is the next word when it is a number (a program is not).
    if (args[i] == "--serve" && i + 1 < args.size() && !args[i + 1].empty() &&
        args[i + 1].find_first_not_of("0123456789") == std::string::npos)
      options.back() = "--serve=" + args[++i];
  }
  program.assign(args.begin() + static_cast<long>(i), args.end());
  return run(options, program);
}
