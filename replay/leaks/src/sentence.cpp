// A suspect in one sentence: who holds what, how fast it gains, what each entry keeps alive and
// who added it; untyped objects (native blocks on bdwgc) named by the function that made them.
#include <cmath>
#include <cstdio>

#include "heapman/graph/export.h"
#include "holders.h"

namespace heapman::leaks {

namespace {

std::string sizeText(uint64_t b) {
  char buf[32];
  if (b >= 10 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / 1048576.0);
  else if (b >= 10 * 1024)
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

std::string countText(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 0.05)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string suspectSentence(const Suspect& sp, const std::string& per1) {
  using graph::hexAddress;
  // Untyped objects (native blocks on bdwgc, "(gc)") are named by the function that made them.
  auto untyped = [](const std::string& type) { return type.empty() || type[0] == '('; };
  std::string container;
  if (untyped(sp.containerType))
    container = (sp.chain ? "a linked list of blocks" : "a block") +
                (sp.containerSite.empty() ? std::string() : " allocated by " + sp.containerSite);
  else
    container = (sp.chain ? "a linked list of " : "") + sp.containerType +
                (sp.containerSite.empty() ? std::string() : " (allocated by " + sp.containerSite + ")");
  std::string text;
  if (sp.holderAddress == sp.containerAddress && sp.holderType.empty()) {
    text = sp.holder;  // a root range or the stacks: its words are the entries
  } else if (sp.holderKind != "object") {
    text = sp.holder + " holds ";
    if (sp.holderAddress != sp.containerAddress && !sp.holderType.empty())
      text += (untyped(sp.holderType) ? "a block" : sp.holderType) + " -> ";
    text += container;
  } else if (sp.holderAddress == sp.containerAddress) {
    text = container + " at " + hexAddress(sp.containerAddress);
  } else {
    text = sp.holder + " holds " + container;
  }
  double e = sp.entriesPerStep;
  text += (text.find(" holds ") != std::string::npos ? ", which gains " : " gains ") + countText(e) + (std::fabs(e - 1) < 0.05 ? " entry" : " entries") +
          " per " + per1 + " (" + sizeText(static_cast<uint64_t>(sp.bytesPerStep)) + ")";
  if (!sp.entryType.empty()) {
    // "each entry (System.Action) keeps a Game.Level and 50 Game.Enemy (12 KiB in all) alive"
    text += "; each " + std::string(sp.chain ? "link" : "entry");
    if (!untyped(sp.entryType)) text += " (" + sp.entryType + ")";
    text += " keeps ";
    std::string what, more;
    if (!sp.keptMain.empty()) {
      size_t from = sp.keptMain.find(" from ");
      what = untyped(sp.keptMain)
                 ? "a block" + (from == std::string::npos
                                    ? std::string()
                                    : " allocated by " + sp.keptMain.substr(from + 6))
                 : "a " + sp.keptMain;
    }
    if (!sp.keptType.empty() && sp.keptCount > 0)
      more = std::to_string(sp.keptCount) + " " +
             (untyped(sp.keptType) ? (sp.keptCount == 1 ? "block" : "blocks") : sp.keptType);
    if (!what.empty() && !more.empty())
      text += what + " and " + more + " (" + sizeText(sp.entryKeeps) + " in all)";
    else if (!what.empty() || !more.empty())
      text += what + more + " (" + sizeText(sp.entryKeeps) + ")";
    else
      text += sizeText(sp.entryKeeps);
    text += " alive";
    if (!sp.entrySite.empty()) text += "; entries added by " + sp.entrySite;
  }
  if (!sp.stacksToo.empty()) {
    std::string also;
    for (size_t i = 0; i < sp.stacksToo.size(); ++i)
      also += (i == 0 ? "" : i + 1 == sp.stacksToo.size() ? " and " : ", ") + sp.stacksToo[i];
    text += "; " + also + " also point" + (sp.stacksToo.size() == 1 ? "s" : "") + " to it";
  }
  return text;
}

}  // namespace heapman::leaks
