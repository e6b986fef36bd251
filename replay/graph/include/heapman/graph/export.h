// Writing a piece of the heap graph for other tools: Graphviz DOT (`dot -Tsvg`) and GEXF 1.3
// (Gephi; valid against the official 1.3 XSD). The verbs choose what goes in (a root path, a
// retainer subgraph, a collapsed whole graph) and cut it to a size the tools can draw; this
// layer only writes what it is given, escaped, with a note of what was cut.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace heapman::graph {

struct ExportNode {
  std::string label;     // first line shown (type name, root name)
  std::string type;      // class / type / heap kind
  std::string site;      // the allocating function (blame's rule), empty for roots
  std::string rootKind;  // empty for objects; for roots log::rootSourceName's (static_data,
                         // thread_stack, registered, mono_handle...), "uncollectable", "roots"
  uint64_t address = 0;  // 0 for collapsed nodes
  uint64_t size = 0;     // bytes of the object (summed when collapsed)
  uint64_t retained = 0; // bytes only this node keeps alive
  uint32_t count = 1;    // objects merged into this node (collapse by type or site)
};

struct ExportEdge {
  uint32_t from = 0;
  uint32_t to = 0;
  int64_t offset = -1;  // the field's byte offset in `from`; -1 when merged or unknown
  uint32_t count = 1;   // pointers merged into this edge
};

struct ExportGraph {
  std::string title;
  std::vector<ExportNode> nodes;
  std::vector<ExportEdge> edges;
  std::string note;  // what was left out, shown in the picture and in the GEXF description
};

// "0x7f01c0a01230": how addresses are written in tables and pictures.
std::string hexAddress(uint64_t address);

// A colour that stays with a type name from picture to picture (and in the heap map): a hue
// from the name's hash at fixed saturation and lightness. 0xRRGGBB.
uint32_t typeColor(std::string_view type);

// Both throw std::runtime_error when an edge names a node that does not exist.
void writeDot(std::ostream& out, const ExportGraph& g);
// `date` is YYYY-MM-DD (the GEXF meta's lastmodifieddate).
void writeGexf(std::ostream& out, const ExportGraph& g, std::string_view date);

}  // namespace heapman::graph
