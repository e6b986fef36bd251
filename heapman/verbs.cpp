#include "verbs.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "json.h"
#include "session.h"

namespace heapman::cli {

extern const Verb kInfoVerb, kVerifyVerb, kStripVerb, kShellVerb;
extern const Verb kBlameVerb, kDiffVerb, kChurnVerb, kGcsVerb, kEventsVerb, kAllocsVerb, kTypesVerb,
    kCompareVerb, kStacksVerb;
extern const Verb kObjectsVerb, kObjectVerb, kRefsVerb, kRetainedVerb, kPathsVerb,
    kGraphVerb;                          // heap graph
extern const Verb kLeaksVerb;            // leak suspects
extern const Verb kMapVerb, kVideoVerb;  // heap-map pictures and videos
extern const Verb kReportVerb;           // the HTML report
extern const Verb kServeVerb;            // the log in a browser
extern const Verb kIngestVerb, kTrendVerb, kCheckVerb;  // a store of many runs, budgets

const std::vector<const Verb*>& verbs() {
  static const std::vector<const Verb*> v{
      &kInfoVerb,    &kVerifyVerb,  &kStripVerb,   &kShellVerb,  &kBlameVerb, &kDiffVerb,
      &kChurnVerb,   &kGcsVerb,     &kEventsVerb,  &kAllocsVerb, &kTypesVerb, &kCompareVerb,
      &kStacksVerb,  &kObjectsVerb, &kObjectVerb,  &kRefsVerb,   &kRetainedVerb,
      &kPathsVerb,   &kGraphVerb,   &kLeaksVerb,   &kMapVerb,    &kVideoVerb, &kReportVerb,
      &kServeVerb,   &kIngestVerb, &kTrendVerb, &kCheckVerb};
  return v;
}

const Verb* findVerb(const std::string& name) {
  for (const Verb* v : verbs())
    if (name == v->name) return v;
  return nullptr;
}

// ---- the options several verbs share (README.md's table says what each word means) ------------

void addSortOption(po::options_description& o) {
  o.add_options()("sort", po::value<std::string>()->value_name("bytes|objects|name"),
                  "order of the rows (default: bytes)");
}

void addTopOption(po::options_description& o, size_t dflt, const char* rows) {
  std::string help = std::string("show the first N ") + rows + " only (0: all)";
  auto* value = po::value<Count>()->value_name("N");
  if (dflt) value->default_value(Count{dflt}, std::to_string(dflt));
  o.add_options()("top", value, help.c_str());
}

void addSymbolOptions(po::options_description& o) {
  o.add_options()("no-symbols", "name native frames module+offset (no DWARF lookups)")(
      "debug-dir", po::value<std::vector<std::string>>()->value_name("DIR"),
      "look for separate debug files in DIR first (DIR/.build-id/xx/rest.debug; repeatable)")(
      "path-map", po::value<std::vector<std::string>>()->value_name("FROM=TO"),
      "look for a module recorded under FROM under TO instead (a log from another machine; "
      "repeatable)");
}

void addFrameOptions(po::options_description& o) {
  o.add_options()("exclude", po::value<std::string>()->value_name("FILE"),
                  "leaf-exclusion regexes, one a line (replaces the default list)")(
      "exclude-add", po::value<std::vector<std::string>>()->value_name("REGEX"),
      "one more leaf-exclusion regex (repeatable)");
  addSymbolOptions(o);
}

namespace {

// Boost's style without allow_guessing: with it an abbreviation let a verb take another verb's
// word for one of its own (`leaks --at` was read as --at-each).
constexpr int kStyle =
    po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

// Options of the log rather than of a command: the shell opened its log with them.
bool logOption(const std::string& name) {
  return name == "no-symbols" || name == "debug-dir" || name == "path-map";
}

// A verb's options as the parser, --help and --list-options see them.
struct Grammar {
  po::options_description declared;  // as the verb declares them (positional arguments too)
  po::options_description accepted;  // what the parser takes: help, the log, the declared ones
  po::options_description visible;   // what --help lists: the declared options but positionals
  po::positional_options_description pos;
  std::set<std::string> positional;
};

std::unique_ptr<Grammar> grammarOf(const Verb& v, bool inShell) {
  auto g = std::make_unique<Grammar>();
  g->visible.add_options()("help,h", "show this help");
  g->accepted.add_options()("help,h", "show this help");
  if (!inShell) {
    g->accepted.add_options()("log", po::value<std::string>(), "the log");
    g->pos.add("log", 1);
  }
  v.options(g->declared, g->pos);
  // An unlimited last one (ingest's LOG...) counts as 2^32 - 1 positions of one name: stop at
  // its first repeat.
  for (unsigned i = 0, n = g->pos.max_total_count(); i < n; ++i)
    if (!g->positional.insert(g->pos.name_for_position(i)).second) break;
  for (const auto& d : g->declared.options()) {
    if (inShell && logOption(d->long_name())) continue;
    g->accepted.add(d);
    if (!g->positional.count(d->long_name())) g->visible.add(d);
  }
  return g;
}

std::string usageLine(const Verb& v, bool inShell) {
  std::string u =
      inShell ? v.name : std::string("heapman ") + v.name + (v.optionalLog ? "" : " LOG");
  if (*v.synopsis) u += std::string(" ") + v.synopsis;
  return "usage: " + u;
}

std::string helpPointer(const Verb& v, bool inShell) {
  return inShell ? std::string("see '") + v.name + " --help'"
                 : std::string("see heapman ") + v.name + " --help";
}

// "--top" for "top", "-o" for "o"; Boost's names may come with their dashes.
std::string dashed(std::string name) {
  while (!name.empty() && name[0] == '-') name.erase(0, 1);
  return (name.size() == 1 ? "-" : "--") + name;
}

// Whether the option token `token` ("--top", "-o") takes the next argument as its value.
bool takesValue(const po::options_description& opts, const std::string& token) {
  if (token.find('=') != std::string::npos) return false;
  bool isShort = token.size() == 2 && token[0] == '-' && token[1] != '-';
  const po::option_description* d =
      opts.find_nothrow(isShort ? token : token.substr(2), false, false, false);
  return d && d->semantic()->max_tokens() > 0;
}

// Positional arguments in args if the option at `at` takes the next one as its value.
size_t positionals(const Args& args, const po::options_description& opts, size_t at) {
  size_t n = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return n + args.size() - i - 1;
    if (a.size() > 1 && a[0] == '-') {
      if (i == at || takesValue(opts, a)) ++i;
    } else {
      ++n;
    }
  }
  return n;
}

// "heapman diff: `--by` is now `--table`; ...": one line on stderr (no comma, so that a CSV read
// with stderr after it keeps its shape).
void sayRenamed(const Verb& v, const std::string& old, const std::string& now) {
  std::fprintf(stderr, "heapman %s: %s is now `%s`; the old spelling goes in the next release\n",
               v.name, old.c_str(), now.c_str());
}

// Rewrites the old spellings of the verb's renamed options, saying so once each.
void renameOld(const Verb& v, const Grammar& g, bool needLog, Args& args) {
  for (const Renamed& r : v.renamed) {
    std::string old = std::string("--") + r.old, now = std::string("--") + r.now;
    bool said = false;
    for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
      std::string& a = args[i];
      if (r.bare) {
        // `--now` with no value after it: the end, another option, or the log itself.
        if (a != now) continue;
        bool bare = i + 1 == args.size() || (args[i + 1].size() > 1 && args[i + 1][0] == '-') ||
                    (needLog && positionals(args, g.accepted, i) == 0);
        if (!bare) continue;
        args.insert(args.begin() + static_cast<long>(i) + 1, r.bare);
        if (!said) sayRenamed(v, "`" + now + "` without a value", now + " " + r.bare);
        said = true;
      } else if (a == old || a.rfind(old + "=", 0) == 0) {
        a = now + a.substr(old.size());
        if (!said) sayRenamed(v, "`" + old + "`", now);
        said = true;
      }
    }
  }
}

// A need's alternatives ("dot|gexf", "color=function"): option name and the value it must have
// ("" for any).
struct Alternative {
  std::string option, value;
};
std::vector<Alternative> alternatives(const std::string& with) {
  std::vector<Alternative> out;
  for (size_t start = 0;;) {
    size_t bar = with.find('|', start);
    std::string alt = with.substr(start, bar == std::string::npos ? bar : bar - start);
    size_t eq = alt.find('=');
    out.push_back({alt.substr(0, eq), eq == std::string::npos ? "" : alt.substr(eq + 1)});
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

// "--since", "--dot or --gexf", "--color function".
std::string describeNeed(const std::string& with) {
  std::string out;
  for (const Alternative& a : alternatives(with))
    out += (out.empty() ? "" : " or ") + std::string("--") + a.option +
           (a.value.empty() ? "" : " " + a.value);
  return out;
}

bool needMet(const VerbOptions& vm, const std::string& with) {
  for (const Alternative& a : alternatives(with)) {
    auto it = vm.find(a.option);
    if (it == vm.end()) continue;
    if (a.value.empty()) return true;
    const auto* value = boost::any_cast<std::string>(&it->second.value());
    if (value && *value == a.value) return true;
  }
  return false;
}

// Parses a verb's arguments into vm. False after printing --help. Throws UsageError.
bool parse(const Verb& v, Args args, bool inShell, VerbOptions& vm) {
  auto g = grammarOf(v, inShell);
  bool needLog = !inShell && !v.optionalLog;
  renameOld(v, *g, needLog, args);
  try {
    po::store(
        po::command_line_parser(args).options(g->accepted).positional(g->pos).style(kStyle).run(),
        vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    std::string opt = dashed(e.get_option_name());
    if (inShell && g->declared.find_nothrow(opt.substr(2), false, false, false))
      throw UsageError(opt +
                       " is an option of the log the shell has open: give it to the shell "
                       "(heapman LOG " +
                       opt + ")");
    throw UsageError(opt + " is not an option of " + v.name + "; " + helpPointer(v, inShell));
  } catch (const std::exception& e) {
    throw UsageError(e.what() + std::string("\n") + usageLine(v, inShell));
  }
  if (vm.given("help")) {
    std::printf("%s\n%s\n\n", usageLine(v, inShell).c_str(), v.summary);
    g->visible.print(std::cout);
    if (!v.renamed.empty()) std::printf("\nold spellings, read until the next release:\n");
    for (const Renamed& r : v.renamed)
      if (r.bare)
        std::printf("  --%s without a value: --%s %s\n", r.now, r.now, r.bare);
      else
        std::printf("  --%s: --%s\n", r.old, r.now);
    return false;
  }
  for (const Needs& n : v.needs)
    if (*n.option && vm.given(n.option) && !needMet(vm, n.with))
      throw UsageError(dashed(n.option) + " has an effect only with " + describeNeed(n.with) +
                       "; " + helpPointer(v, inShell));
  if (needLog && !vm.given("log")) throw UsageError("no log given\n" + usageLine(v, inShell));
  return true;
}

// With HEAPMAN_CHECK_OPTIONS set: names each option given that the verb never read.
void audit(const Verb& v, const VerbOptions& vm) {
  if (!std::getenv("HEAPMAN_CHECK_OPTIONS")) return;
  for (const std::string& name : vm.unread())
    std::fprintf(stderr, "heapman %s: %s was given but %s never read it\n", v.name,
                 dashed(name).c_str(), v.name);
}

int guarded(const char* verb, const std::function<int()>& f) {
  try {
    return f();
  } catch (...) {
    return reportError(verb);
  }
}

}  // namespace

bool takesEffect(const Verb& v, const std::string& option, const Args& args) {
  for (const Needs& n : v.needs) {
    if (option != n.option) continue;
    for (const Alternative& a : alternatives(n.with))
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i] == "--" + a.option &&
            (a.value.empty() || (i + 1 < args.size() && args[i + 1] == a.value)))
          return true;
    return false;
  }
  return true;
}

// Runs a verb on a session whose log may be indexed only as far as its points (the verb's
// prefixOnly). Where the open read the whole log's code records first (the footer marks their
// chunks: Replay::codeAhead()), frames are named from them and the answer is the whole log's.
// Otherwise it is held back until it is known to be: where it named a native frame outside
// every module loaded so far (a module's load can come after allocations its code made), the
// whole log is read and the verb runs again. Records that break the log's rules in a chunk
// whose checksum holds (as only a faulty writer makes them) are met only when the pass reaches
// them: the log is then opened again with the whole pass, which ends it before that chunk and
// says so, as an open without the lazy index does, and the verb runs again.
int runOnPrefix(const Verb& v, std::unique_ptr<Session>& s, const VerbOptions& vm) {
  if (s->replay->indexed()) return v.run(*s, vm);
  const replay::LogCode* code = s->replay->codeAhead();
  if (code) s->namer = std::make_unique<replay::FrameNamer>(s->replay->tables(), s->symbols, code);
  Console held;
  int rc;
  try {
    ConsoleScope scope(held);
    rc = v.run(*s, vm);
  } catch (const log::FormatError&) {
    if (s->replay->damage()) throw;
    s = Session::open(s->path, s->symbols, nullptr, true, false);
    s->progress->restart(v.name);
    return v.run(*s, vm);
  } catch (...) {
    std::fputs(held.err.c_str(), stderr);
    throw;
  }
  if (!code && !s->replay->indexed() && s->namer->namedOutsideModules()) {
    s->replay->completeIndex();  // the pass goes on from where it stopped: nothing read twice
    s->namer = std::make_unique<replay::FrameNamer>(s->replay->tables(), s->symbols);
    return v.run(*s, vm);
  }
  if (!held.out.empty()) writeOutput("-", held.out);
  std::fputs(held.err.c_str(), stderr);
  return rc;
}

int runOneShot(const Verb& v, const Args& args) {
  return guarded(v.name, [&] {
    VerbOptions vm;
    if (!parse(v, args, false, vm)) return kExitOk;
    std::string log = vm.count("log") ? vm["log"].as<std::string>() : "";
    if (v.runFile) {
      int rc = v.runFile(log, vm);
      audit(v, vm);
      return rc;
    }
    std::unique_ptr<Session> s =
        Session::open(log, symbolSettingsOf(vm), nullptr, true, v.prefixOnly);
    s->progress->restart(v.name);
    int rc = runOnPrefix(v, s, vm);
    s->progress->finish();
    noteUnnamedModules(*s);
    audit(v, vm);
    if (s->replay->damage() && rc == kExitOk) {
      // The answer is printed, but it covers only part of the log: scripts must notice.
      std::fprintf(stderr,
                   "heapman %s: %s is damaged (%s): the answer covers only the intact part before "
                   "it; run `heapman verify %s` for details\n",
                   v.name, s->path.c_str(), s->replay->damage()->what(), s->path.c_str());
      rc = kExitBadLog;
    }
    return rc;
  });
}

int runInSession(const Verb& v, Session& s, const Args& args) {
  return guarded(v.name, [&] {
    VerbOptions vm;
    if (!parse(v, args, true, vm)) return kExitOk;
    if (v.runFile) {
      int rc = v.runFile(s.path, vm);
      audit(v, vm);
      return rc;
    }
    s.progress->restart(v.name);
    int rc;
    try {
      rc = v.run(s, vm);
    } catch (...) {
      s.progress->finish();  // erase a half-drawn bar before the error (or "interrupted")
      throw;
    }
    s.progress->finish();
    noteUnnamedModules(s);
    audit(v, vm);
    return rc;
  });
}

std::vector<DeclaredOption> declaredOptions(const Verb& v) {
  auto g = grammarOf(v, false);
  std::vector<DeclaredOption> out;
  for (const auto& d : g->declared.options()) {
    DeclaredOption o;
    o.name = d->long_name();
    if (d->semantic()->max_tokens() > 0) {
      o.value = d->semantic()->name();
      o.value = o.value.substr(0, o.value.find(" (="));
    }
    std::string shown = d->format_name();
    if (shown.size() > 1 && shown[1] != '-') o.shortName = shown.substr(0, 2);
    o.positional = g->positional.count(o.name) > 0;
    o.logOption = logOption(o.name);
    out.push_back(std::move(o));
  }
  return out;
}

std::string listOptionsJson() {
  std::string out = "{\"verbs\":[";
  bool firstVerb = true;
  for (const Verb* v : verbs()) {
    std::string opts = "[";
    for (const DeclaredOption& d : declaredOptions(*v))
      opts += (opts.size() > 1 ? "," : "") + JsonObject()
                                                 .str("name", d.name)
                                                 .str("short", d.shortName)
                                                 .str("value", d.value)
                                                 .boolean("positional", d.positional)
                                                 .boolean("log_option", d.logOption)
                                                 .str();
    std::string needs = "[";
    for (const Needs& n : v->needs)
      needs += (needs.size() > 1 ? "," : "") +
               JsonObject().str("option", n.option).str("with", n.with).str();
    std::string renamed = "[";
    for (const Renamed& r : v->renamed)
      renamed +=
          (renamed.size() > 1 ? "," : "") +
          JsonObject().str("old", r.old).str("now", r.now).str("bare", r.bare ? r.bare : "").str();
    out += (firstVerb ? "\n" : ",\n") + JsonObject()
                                            .str("name", v->name)
                                            .str("log", v->run           ? "replay"
                                                        : v->optionalLog ? "optional"
                                                                         : "file")
                                            .boolean("shell", v->inShell)
                                            .boolean("serves", v->serves)
                                            .raw("options", opts + "]")
                                            .raw("needs", needs + "]")
                                            .raw("renamed", renamed + "]")
                                            .str();
    firstVerb = false;
  }
  return out + "\n]}\n";
}

}  // namespace heapman::cli
