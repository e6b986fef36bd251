// heapman blame LOG [--at POINT] [--stacks]: live bytes per blame function (the first stack frame,
// from the leaf, that no leaf-exclusion regex matches), and with --stacks each row's top stack by
// bytes, the frames blame skipped marked "excluded".
#include "session.h"

namespace heapman::cli {

namespace {

// Callers shown under the charged frame in the text table (CSV and JSON have every frame).
constexpr size_t kTextCallers = 3;

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"), "point (default: end)")(
      "stacks",
      "after each row its top stack by live bytes, the frames skipped by the exclusions marked "
      "[excluded] (CSV: the stacks table, one frame a line; JSON: a \"stacks\" array)");
  addSortOption(o);
  addTopOption(o);
  addFrameOptions(o);
  addOutputOptions(o, {"functions", "stacks"});
}

std::string topTypes(const replay::BlameRow& row) {
  std::string s;
  for (const auto& t : row.types)
    s += (s.empty() ? "" : ", ") + t.type + " " + std::to_string(t.bytes);
  return s;
}

// Text: the frames as rows under their row, indented, up to kTextCallers callers.
void addTextStack(Table& t, const replay::BlameRow& row) {
  size_t callers = 0, shown = 0;
  for (const replay::BlameFrame& f : row.stack) {
    if (f.role == replay::FrameRole::kCaller && ++callers > kTextCallers) break;
    std::string mark = f.role == replay::FrameRole::kCaller
                           ? ""
                           : std::string("[") + replay::frameRoleName(f.role) + "] ";
    t.add({"    " + mark + f.frame.function, f.frame.module, f.frame.location(), "", "", "", ""});
    ++shown;
  }
  if (shown < row.stack.size())
    t.add({"    ... " + num(row.stack.size() - shown) + " more frames", "", "", "", "", "", ""});
}

int run(Session& s, const VerbOptions& vm) {
  replay::Exclusions ex = exclusionsOf(vm);
  uint64_t at = pointOf(s, vm, "at", "end");
  bool stacks = vm.count("stacks") > 0;
  s.replay->seek(at);
  replay::Attribution a(s.replay->tables(), *s.namer, ex);
  replay::BlameResult b = replay::blame(*s.replay, a, sortOf(vm), topOf(vm), stacks);
  Report r;
  r.query = "blame";
  r.meta = {{"log", s.path},
            {"point", b.point},
            {"live", num(b.totalBytes) + " bytes in " + num(b.totalObjects) + " objects"}};
  r.warnings = b.warnings;
  OutputOptions out = outputOptions(vm);
  bool machine = !out.csv.empty() || !out.json.empty();
  Table t{"functions",
          {{"function"}, {"module"}, {"location"}, {"live bytes", true}, {"live objects", true},
           {"share", true}, {"top types"}},
          {}};
  Table st{"stacks",
           {{"row", true}, {"function"}, {"module"}, {"stack bytes", true},
            {"stack objects", true}, {"frame", true}, {"role"}, {"frame function"},
            {"frame module"}, {"frame location"}},
           {}};
  size_t rank = 0;
  for (const auto& row : b.rows) {
    ++rank;
    t.add({row.site.function, row.site.module, row.site.location, num(row.bytes),
           num(row.objects), percent(row.share), topTypes(row)});
    if (!stacks) continue;
    if (!machine) {
      addTextStack(t, row);
      continue;
    }
    for (size_t i = 0; i < row.stack.size(); ++i) {
      const replay::BlameFrame& f = row.stack[i];
      st.add({std::to_string(rank), row.site.function, row.site.module, num(row.stackBytes),
              num(row.stackObjects), std::to_string(i), replay::frameRoleName(f.role),
              f.frame.function, f.frame.module, f.frame.location()});
    }
  }
  r.tables.push_back(std::move(t));
  if (stacks && machine) {
    r.tables.push_back(std::move(st));
    if (out.csvTable.empty()) out.csvTable = "stacks";
  }
  emit(r, out);
  return kExitOk;
}

}  // namespace

extern const Verb kBlameVerb{
    .name = "blame",
    .synopsis = "[--at POINT] [--sort bytes|objects|name] [--top N] [--stacks]",
    .summary = "live bytes and objects per blame function at a point",
    .options = options,
    .run = run,
    .needs = {{"table", "csv"}},
    .prefixOnly = true};

}  // namespace heapman::cli
