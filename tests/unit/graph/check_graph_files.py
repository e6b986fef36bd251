#!/usr/bin/env python3
"""Reads a DOT and a GEXF file written by HeapMan with networkx and prints their node and edge
counts: `dot NODES EDGES` and `gexf NODES EDGES`.

Debian 12's networkx (2.8) reads GEXF 1.1draft/1.2draft only; 1.3 has the same structure for
what HeapMan writes (static graph, attributes, color, size), so the 1.3 namespace is mapped to
1.2draft's before parsing. The 1.3 file itself is validated against the 1.3 XSD by xmllint.
"""
import io
import sys

import networkx as nx

dot_path, gexf_path = sys.argv[1], sys.argv[2]

g = nx.nx_pydot.read_dot(dot_path)
# pydot 1.4 (Debian 12) turns the newline after a statement list into an isolated node named
# "\\n"; it is not in the file, so it is not counted.
if g.has_node("\\n") and g.degree("\\n") == 0:
    g.remove_node("\\n")
print("dot", g.number_of_nodes(), g.number_of_edges())

with open(gexf_path, encoding="utf-8") as f:
    text = f.read()
text = text.replace('xmlns="http://gexf.net/1.3"', 'xmlns="http://www.gexf.net/1.2draft"')
text = text.replace('version="1.3"', 'version="1.2"')
h = nx.read_gexf(io.BytesIO(text.encode("utf-8")))
print("gexf", h.number_of_nodes(), h.number_of_edges())
# Attributes survive the trip: every node has its type, every edge its offset.
assert all("type" in d for _, d in h.nodes(data=True)), "a node without its type"
assert all("offset" in d for _, _, d in h.edges(data=True)), "an edge without its offset"
