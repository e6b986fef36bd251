// DOT and GEXF 1.3 writers (see export.h).
//
// GEXF note: the official 1.3 XSD declares color/size/position in the GEXF namespace itself (its
// viz.xsd has no target namespace), so a document with `viz:color` in the
// http://gexf.net/1.3/viz namespace, as Gephi writes it, fails `xmllint --schema gexf.xsd`.
// We write <color>/<size> unprefixed, which the schema accepts and Gephi's importer reads (it
// matches elements by local name).
#include "heapman/graph/export.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>

#include <xxhash.h>

namespace heapman::graph {
namespace {

// Valid UTF-8 passes through; other bytes become '?', so that any symbol or class name the log
// holds makes a well-formed file for both tools.
std::string sanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && n == 1 && c < 0x20 && c != '\t' && c != '\n') ok = false;  // XML 1.0 forbids them
    if (ok && c == 0x7f) ok = false;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

std::string dotQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : sanitizeUtf8(s)) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') c = ' ';
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string xmlEscape(std::string_view s) {
  std::string out;
  for (char c : sanitizeUtf8(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}


std::string bytesText(uint64_t b) {
  char buf[32];
  if (b < 1024)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  else if (b < (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (b < (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

std::string offsetText(int64_t off) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "+0x%" PRIx64, static_cast<uint64_t>(off));
  return buf;
}

// Roots: one fixed colour per kind, so a picture reads at a glance.
// Kinds are log::rootSourceName's (static_data, mono_static, thread_stack, registered,
// mono_handle...) and "uncollectable", "finalizer", "roots".
uint32_t rootColor(std::string_view kind) {
  auto has = [&](std::string_view part) { return kind.find(part) != std::string_view::npos; };
  if (has("stack")) return 0x90be6d;
  if (has("static") || has("domain")) return 0xf4a261;
  if (has("registered")) return 0xe9c46a;
  if (has("handle")) return 0x4cc9f0;
  if (has("final") || has("uncollectable")) return 0xb5838d;
  return 0xbbbbbb;  // the super-root and kinds added later
}

uint32_t nodeColor(const ExportNode& n) {
  return n.rootKind.empty() ? typeColor(n.type) : rootColor(n.rootKind);
}

std::string dotColor(uint32_t rgb) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%06x", rgb & 0xffffff);
  return buf;
}

void checkEdges(const ExportGraph& g) {
  for (const ExportEdge& e : g.edges)
    if (e.from >= g.nodes.size() || e.to >= g.nodes.size())
      throw std::runtime_error("graph export: an edge names node " +
                               std::to_string(std::max(e.from, e.to)) + " of " +
                               std::to_string(g.nodes.size()));
}

}  // namespace

std::string hexAddress(uint64_t a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, a);
  return buf;
}

uint32_t typeColor(std::string_view type) {
  // HSL with hue from the hash, saturation 0.55, lightness 0.72: light enough for black text.
  uint64_t h = XXH3_64bits(type.data(), type.size());
  double hue = static_cast<double>(h % 360);
  double s = 0.55, l = 0.72;
  double c = (1 - std::fabs(2 * l - 1)) * s;
  double x = c * (1 - std::fabs(std::fmod(hue / 60.0, 2) - 1));
  double m = l - c / 2;
  double r = 0, g = 0, b = 0;
  int sector = static_cast<int>(hue / 60);
  switch (sector) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  auto channel = [m](double v) { return static_cast<uint32_t>(std::lround((v + m) * 255)); };
  return channel(r) << 16 | channel(g) << 8 | channel(b);
}

void writeDot(std::ostream& out, const ExportGraph& g) {
  checkEdges(g);
  std::string caption = g.title;
  if (!g.note.empty()) caption += "\n" + g.note;
  out << "digraph heap {\n"
      << "  graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, label="
      << dotQuote(caption) << "];\n"
      << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ExportNode& n = g.nodes[i];
    std::string label = n.label;
    if (n.rootKind.empty()) {
      if (n.count > 1 || n.address == 0)
        label += "\n" + std::to_string(n.count) + (n.count == 1 ? " object, " : " objects, ") +
                 bytesText(n.size);
      else
        label += "\n" + hexAddress(n.address) + ", " + bytesText(n.size);
      if (n.retained) label += "\nretains " + bytesText(n.retained);
      if (!n.site.empty()) label += "\n" + n.site;
    } else if (n.retained) {
      label += "\nretains " + bytesText(n.retained);
    }
    out << "  n" << i << " [label=" << dotQuote(label)
        << ", fillcolor=\"" << dotColor(nodeColor(n)) << "\"";
    if (!n.rootKind.empty()) out << ", shape=house";
    out << "];\n";
  }
  for (const ExportEdge& e : g.edges) {
    out << "  n" << e.from << " -> n" << e.to;
    std::string label;
    if (e.offset >= 0) label = offsetText(e.offset);
    if (e.count > 1) label += (label.empty() ? "x" : " x") + std::to_string(e.count);
    if (!label.empty()) out << " [label=" << dotQuote(label) << "]";
    out << ";\n";
  }
  out << "}\n";
}

void writeGexf(std::ostream& out, const ExportGraph& g, std::string_view date) {
  checkEdges(g);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<gexf xmlns=\"http://gexf.net/1.3\" version=\"1.3\">\n"
      << "  <meta lastmodifieddate=\"" << xmlEscape(date) << "\">\n"
      << "    <creator>HeapMan</creator>\n"
      << "    <description>" << xmlEscape(g.note.empty() ? g.title : g.title + ". " + g.note)
      << "</description>\n"
      << "  </meta>\n"
      << "  <graph defaultedgetype=\"directed\" mode=\"static\">\n"
      << "    <attributes class=\"node\" mode=\"static\">\n"
      << "      <attribute id=\"type\" title=\"type\" type=\"string\"/>\n"
      << "      <attribute id=\"address\" title=\"address\" type=\"string\"/>\n"
      << "      <attribute id=\"size\" title=\"size\" type=\"long\"/>\n"
      << "      <attribute id=\"retained\" title=\"retained\" type=\"long\"/>\n"
      << "      <attribute id=\"site\" title=\"site\" type=\"string\"/>\n"
      << "      <attribute id=\"root_kind\" title=\"root_kind\" type=\"string\"/>\n"
      << "      <attribute id=\"count\" title=\"count\" type=\"long\"/>\n"
      << "    </attributes>\n"
      << "    <attributes class=\"edge\" mode=\"static\">\n"
      << "      <attribute id=\"offset\" title=\"offset\" type=\"long\"/>\n"
      << "      <attribute id=\"count\" title=\"count\" type=\"long\"/>\n"
      << "    </attributes>\n"
      << "    <nodes count=\"" << g.nodes.size() << "\">\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ExportNode& n = g.nodes[i];
    uint32_t rgb = nodeColor(n);
    // Node size in Gephi: grows with the log of what the node retains (at least its own size).
    double weight = static_cast<double>(std::max(n.retained, n.size));
    double size = 4.0 + 2.0 * std::log2(1.0 + weight / 64.0);
    out << "      <node id=\"" << i << "\" label=\"" << xmlEscape(n.label) << "\">\n"
        << "        <attvalues>\n"
        << "          <attvalue for=\"type\" value=\"" << xmlEscape(n.type) << "\"/>\n"
        << "          <attvalue for=\"address\" value=\""
        << (n.address ? hexAddress(n.address) : std::string()) << "\"/>\n"
        << "          <attvalue for=\"size\" value=\"" << n.size << "\"/>\n"
        << "          <attvalue for=\"retained\" value=\"" << n.retained << "\"/>\n"
        << "          <attvalue for=\"site\" value=\"" << xmlEscape(n.site) << "\"/>\n"
        << "          <attvalue for=\"root_kind\" value=\"" << xmlEscape(n.rootKind) << "\"/>\n"
        << "          <attvalue for=\"count\" value=\"" << n.count << "\"/>\n"
        << "        </attvalues>\n"
        << "        <color r=\"" << (rgb >> 16 & 0xff) << "\" g=\"" << (rgb >> 8 & 0xff)
        << "\" b=\"" << (rgb & 0xff) << "\"/>\n";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", size);
    out << "        <size value=\"" << buf << "\"/>\n"
        << "      </node>\n";
  }
  out << "    </nodes>\n"
      << "    <edges count=\"" << g.edges.size() << "\">\n";
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const ExportEdge& e = g.edges[i];
    out << "      <edge id=\"" << i << "\" source=\"" << e.from << "\" target=\"" << e.to
        << "\" weight=\"" << e.count << "\">\n"
        << "        <attvalues>\n"
        << "          <attvalue for=\"offset\" value=\"" << e.offset << "\"/>\n"
        << "          <attvalue for=\"count\" value=\"" << e.count << "\"/>\n"
        << "        </attvalues>\n"
        << "      </edge>\n";
  }
  out << "    </edges>\n"
      << "  </graph>\n"
      << "</gexf>\n";
}

}  // namespace heapman::graph
