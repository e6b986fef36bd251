// The exporters: byte-exact DOT for a small graph, and files with hostile names that the real
// tools open: `dot -Tsvg` renders the DOT, xmllint validates the GEXF against the official 1.3
// XSD, networkx reads both with the same node and edge counts.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "heapman/graph/export.h"

using heapman::graph::ExportEdge;
using heapman::graph::ExportGraph;
using heapman::graph::ExportNode;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/heapman-graph-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { if (std::system(("rm -rf '" + path + "'").c_str()) != 0) {} }
};

// Runs a shell command; returns its exit status and its standard output.
std::pair<int, std::string> run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

void requireTool(const char* path, const char* package) {
  INFO("not found at configure time: install " << package << " (cmake/deps.sh test)");
  REQUIRE(std::string(path) != "");
}

// A root, a chain with a cycle, a merged node and names that need escaping in both formats:
// quotes, backslashes, markup, a newline, a tab, a control byte, UTF-8 and a byte that is not.
ExportGraph hostileGraph() {
  ExportGraph g;
  g.title = "paths to 0x1000 at gc:3 \"quoted\"";
  g.note = "cut: 12 nodes <not shown> & 3 edges";
  g.nodes.push_back({"roots", "", "", "roots", 0, 0, 4096, 1});
  g.nodes.push_back({"static Game.Program::handlers", "", "", "static", 0x601000, 8, 4000, 1});
  g.nodes.push_back({"thread 2 \"render\"", "", "", "stack", 0x7ffd0000, 0, 0, 1});
  g.nodes.push_back({"Dictionary<string, List<int>>", "Dictionary<string, List<int>>",
                     "Game.Level:.ctor (Level.cs:12)", "", 0x1000, 48, 3900, 1});
  g.nodes.push_back({"a \\ back\\slash \"q\"\nline2\tTab", "C:\\path\\type", "f\x01g", "", 0x2000,
                     32, 32, 1});
  g.nodes.push_back({"Gr\xc3\xb6\xc3\x9f" "e \xff bad", "Gr\xc3\xb6\xc3\x9f" "e", "", "", 0, 4096,
                     4096, 128});
  g.edges.push_back({0, 1, -1, 1});
  g.edges.push_back({0, 2, -1, 1});
  g.edges.push_back({1, 3, 0, 1});
  g.edges.push_back({2, 3, 0x28, 1});
  g.edges.push_back({3, 4, 0x18, 1});
  g.edges.push_back({4, 3, 8, 1});  // a cycle
  g.edges.push_back({3, 5, -1, 128});
  return g;
}

}  // namespace

TEST_CASE("writeDot writes a small graph byte for byte", "[graph][export]") {
  ExportGraph g;
  g.title = "t";
  g.nodes.push_back({"roots", "", "", "roots", 0, 0, 64, 1});
  g.nodes.push_back({"Node", "Node", "make_node", "", 0x10, 64, 64, 1});
  g.edges.push_back({0, 1, 16, 1});
  std::ostringstream out;
  heapman::graph::writeDot(out, g);
  char color[8];
  std::snprintf(color, sizeof color, "#%06x", heapman::graph::typeColor("Node"));
  CHECK(out.str() ==
        "digraph heap {\n"
        "  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=\"t\"];\n"
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
        "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n"
        "  n0 [label=\"roots\\nretains 64 B\", fillcolor=\"#bbbbbb\", shape=house];\n"
        "  n1 [label=\"Node\\n0x10, 64 B\\nretains 64 B\\nmake_node\", fillcolor=\"" +
            std::string(color) + "\"];\n"
        "  n0 -> n1 [label=\"+0x10\"];\n"
        "}\n");
}

TEST_CASE("type colours stay with their type and tell types apart", "[graph][export]") {
  using heapman::graph::typeColor;
  CHECK(typeColor("Game.Level") == typeColor(std::string("Game.") + "Level"));
  CHECK(typeColor("Game.Level") != typeColor("Game.Enemy"));
  // Light enough for black text: every channel of the HSL(h, 0.55, 0.72) colour is >= 0x6b.
  for (const char* t : {"a", "b", "Game.Level", "Game.Enemy", "System.String", "int[]"}) {
    uint32_t c = typeColor(t);
    CHECK((c >> 16 & 0xff) >= 0x6b);
    CHECK((c >> 8 & 0xff) >= 0x6b);
    CHECK((c & 0xff) >= 0x6b);
  }
}

TEST_CASE("an edge to a node that does not exist is refused", "[graph][export]") {
  ExportGraph g;
  g.nodes.push_back({"a", "", "", "", 0, 0, 0, 1});
  g.edges.push_back({0, 1, -1, 1});
  std::ostringstream out;
  CHECK_THROWS_AS(heapman::graph::writeDot(out, g), std::runtime_error);
  CHECK_THROWS_AS(heapman::graph::writeGexf(out, g, "2026-11-25"), std::runtime_error);
}

TEST_CASE("graphviz, xmllint and networkx open what the exporters write", "[graph][export]") {
  requireTool(HEAPMAN_DOT, "graphviz");
  requireTool(HEAPMAN_XMLLINT, "libxml2-utils");
  requireTool(HEAPMAN_NX_PYTHON, "python3-networkx and python3-pydot");
  TempDir dir;
  ExportGraph g = hostileGraph();
  std::string dot = dir.path + "/g.dot", gexf = dir.path + "/g.gexf", svg = dir.path + "/g.svg";
  {
    std::ofstream f(dot);
    heapman::graph::writeDot(f, g);
  }
  {
    std::ofstream f(gexf);
    heapman::graph::writeGexf(f, g, "2026-11-25");
  }

  auto [dotRc, dotOut] = run(std::string(HEAPMAN_DOT) + " -Tsvg '" + dot + "' -o '" + svg + "'");
  INFO(dotOut);
  CHECK(dotRc == 0);
  std::ifstream svgIn(svg);
  std::string svgText((std::istreambuf_iterator<char>(svgIn)), std::istreambuf_iterator<char>());
  CHECK(svgText.find("<svg") != std::string::npos);
  CHECK(svgText.find("Dictionary&lt;string, List&lt;int&gt;&gt;") != std::string::npos);

  auto [xmlRc, xmlOut] =
      run(std::string(HEAPMAN_XMLLINT) + " --noout --schema '" GEXF_XSD "' '" + gexf + "'");
  INFO(xmlOut);
  CHECK(xmlRc == 0);
  CHECK(xmlOut.find("validates") != std::string::npos);

  auto [pyRc, pyOut] = run(std::string(HEAPMAN_NX_PYTHON) + " '" GRAPH_CHECK_PY "' '" + dot +
                           "' '" + gexf + "'");
  INFO(pyOut);
  CHECK(pyRc == 0);
  CHECK(pyOut == "dot 6 7\ngexf 6 7\n");
}
