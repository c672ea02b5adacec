#!/usr/bin/env python3
"""Writes a cluster topology XML by replicating one node of a Braid topology file.

The single node of the source (tests/data/topo/dgx_h100.xml by default) is copied
N times; copy i gets id and name "<prefix>-<i>", so the nodes are distinct hosts
(topology.h groups nodes by id). Everything inside the node is kept verbatim.

  scripts/make_cluster_topology.py --nodes 128 \
      > tests/data/topo/dgx_h100_128nodes.xml
"""
import argparse
import os
import re
import sys

NODE_RE = re.compile(r'^([ \t]*<node\b[^>]*>.*?</node>[ \t]*\n)', re.S | re.M)
ID_RE = re.compile(r'\bid="([^"]*)"')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--source', default=os.path.join(root, 'tests/data/topo/dgx_h100.xml'))
    ap.add_argument('--nodes', type=int, default=128)
    args = ap.parse_args()
    if args.nodes < 1:
        sys.exit('make_cluster_topology: --nodes must be at least 1')
    text = open(args.source, encoding='utf-8').read()
    nodes = NODE_RE.findall(text)
    if len(nodes) != 1:
        sys.exit(f'make_cluster_topology: {args.source} has {len(nodes)} <node>s; need one')
    node = nodes[0]
    host = ID_RE.search(node).group(1)
    prefix = re.sub(r'-\d+$', '', host)
    open_tag, rest = node.split('\n', 1)
    copies = []
    for i in range(args.nodes):
        tag = open_tag.replace(f'"{host}"', f'"{prefix}-{i}"')
        copies.append(tag + '\n' + rest)
    head, tail = text.split(node)
    banner = (f'<!-- {args.nodes} nodes, each a copy of the node of {os.path.basename(args.source)}, written by\n'
              f'     scripts/make_cluster_topology.py --nodes {args.nodes}; do not edit. -->\n')
    head = head.replace('<braid-topology', banner + '<braid-topology', 1)
    sys.stdout.write(head + ''.join(copies) + tail)


if __name__ == '__main__':
    main()
