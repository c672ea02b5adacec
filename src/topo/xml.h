// Topology as XML, and the BRAID_TOPO_FILE / BRAID_TOPO_DUMP_FILE switches.
//
// The format is Braid's own, small enough to read by eye:
//   <braid-topology version="1">
//     <node id="host/boot-id" name="host" pus="2" fallback="">
//       <package id="0" cores="2" l1d="32768" l2="1048576" l3="33554432"/>
//       <numa id="0" package="0" memory="8953122816"/>
//       <gpu name=".." busid="0000:1b:00.0" gen="5" width="16" pcie-gbps="63"
//            nvlink-gbps="450" switch="0" numa="0"/>
//       <nic name="mlx5_0" kind="infiniband" gbps="400" busid=".." switch="0" numa="0"/>
//       <nvlink gpu="0000:1b:00.0" peer="nvswitch" links="18" gbps="450"/>
//     </node>
//     <rank id="0" node="0" gpu="0000:1b:00.0" numa="0"/>
//   </braid-topology>
// <nvlink> names GPUs by busid (a <gpu> above it) and its peer by busid or
// "nvswitch"; <rank>s (a live communicator's dump: where each rank ran) follow
// the nodes, in rank order, a GPU by its busid.
// Units are those of topology.h. Attributes other than a node's id may be left
// out (they take topology.h's defaults); unknown elements or attributes are
// errors, so a typo is not silently ignored. Thread-safe (no shared state).
#pragma once

#include <string>

#include "core/status.h"
#include "topo/topology.h"

namespace braid::topo {

// The XML text of `topo`; parseXml(toXml(t)) == t, and toXml is deterministic.
std::string toXml(const Topology& topo);

// Parses XML text; errors name `source`, the line and the element or attribute.
Expected<Topology> parseXml(const std::string& text, const std::string& source);

Expected<Topology> loadXmlFile(const std::string& path);
Status writeXmlFile(const Topology& topo, const std::string& path);

// The topology Braid uses: BRAID_TOPO_FILE's when set, else discoverLocal();
// then written to BRAID_TOPO_DUMP_FILE when that is set.
Expected<Topology> loadOrDiscover();

}  // namespace braid::topo
