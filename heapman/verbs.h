// The verbs of heapman: one table (verbs()) and one parser for `heapman VERB LOG [options]` and
// for the same commands typed in the shell (`heapman LOG`).
//
// The grammar: an option word means one thing in every verb that takes it (README.md's table of
// options lists them), and a verb refuses any option it does not use (exit 2: "--top is not an
// option of graph"). An option that has an effect only beside another says so in the verb's
// `needs` and is refused without it. A renamed option keeps its old spelling for one release
// (`renamed`: it works, with a line on stderr). `heapman --list-options` prints the table as JSON
// for the test that runs every verb with every option.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace heapman::cli {

struct Session;

// An old spelling that still works for one release: `--old` is read as `--now`, with one line on
// stderr. With `bare` set the old spelling is `--now` without a value (info's `--json`, once a
// flag), read as `--now BARE`.
struct Renamed {
  const char* old;
  const char* now;
  const char* bare = nullptr;
};

// What a run needs. `option` empty: every run needs `with` (the verb checks it, with its own
// message; the table says it for --list-options). Otherwise `option` has an effect only with
// `with` and is refused without it. `with`: an option name, or NAME=VALUE for a value of it;
// alternatives separated by '|' ("dot|gexf", "by=object|by=function").
struct Needs {
  const char* option;
  const char* with;
};

struct Verb {
  const char* name;
  const char* synopsis;  // after "heapman NAME LOG" (one-shot) or "NAME" (shell)
  const char* summary;
  // Declares the verb's options, and its positional arguments after LOG (shown in the synopsis,
  // not among the options).
  void (*options)(po::options_description&, po::positional_options_description&);
  // Exactly one of these runs it: `run` on the replayed log (the one-shot command opens it, the
  // shell has it open); `runFile` on the log's path (info and verify read the file itself; the
  // shell verb, whose LOG is optional, gets "" without one).
  int (*run)(Session&, const VerbOptions&) = nullptr;
  int (*runFile)(const std::string& log, const VerbOptions&) = nullptr;
  std::vector<Needs> needs = {};
  std::vector<Renamed> renamed = {};
  bool inShell = true;       // false: a command-line verb only (shell)
  bool optionalLog = false;  // the shell verb
  bool serves = false;       // runs until stopped (SIGINT, SIGTERM) once it printed its first line
  // Answers from the log up to its points: the one-shot command indexes a fresh log only as far
  // as they are (replay::ReplayOptions::lazy), so an early point costs little the first time.
  bool prefixOnly = false;
};

// Every verb, in the order `heapman --help` lists them.
const std::vector<const Verb*>& verbs();
const Verb* findVerb(const std::string& name);

// Whether `--option` has an effect in a command line of `v` written as `args` (options spelled
// `--name value`): false when the verb's needs say it has one only beside another option that
// args lack (types' --no-symbols without --since), which the parser would refuse.
bool takesEffect(const Verb& v, const std::string& option, const Args& args);

// heapman VERB LOG [options]: parses, opens the log, runs. Returns the exit code.
int runOneShot(const Verb& v, const Args& args);
// VERB [options] inside the shell, on its open session.
int runInSession(const Verb& v, Session& s, const Args& args);

// One option a verb declares, as --list-options and heapman serve see it.
struct DeclaredOption {
  std::string name;        // long name, without dashes
  std::string shortName;   // "-o", or ""
  std::string value;       // value name ("POINT", "FILE|-"); "" for a flag
  bool positional = false;
  bool logOption = false;  // an option of the log (--no-symbols), not of one command
};
std::vector<DeclaredOption> declaredOptions(const Verb& v);

// `heapman --list-options`: the verbs, their options (value names, short forms, positional
// arguments), needs and renamed spellings, as JSON.
std::string listOptionsJson();

// Options declared by several verbs, with one meaning each (README.md's table).
void addSortOption(po::options_description& o);  // --sort bytes|objects|name
// --top N; dflt: rows shown when it is not given (0: all).
void addTopOption(po::options_description& o, size_t dflt = 0, const char* rows = "rows");
// --exclude, --exclude-add and --no-symbols: how stack frames are named and charged.
void addFrameOptions(po::options_description& o);
// --no-symbols, --debug-dir, --path-map: how native frames are named (symbolSettingsOf reads them).
void addSymbolOptions(po::options_description& o);

}  // namespace heapman::cli
