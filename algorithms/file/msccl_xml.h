// MSCCL's algorithm files (the XML that msccl-tools' MSCCLang compiler writes and MSCCL's
// NCCL fork loads) read as schedule files (algorithms/file/schedule_file.h), so that
// existing MSCCLang programs run on Braid, host memory included. docs/algorithms.md
// ("MSCCL XML") says what maps to what; in short:
//
//   <algo ngpus=N coll=... nchunksperloop=K inplace= outofplace= minBytes= maxBytes=>:
//     one program for N ranks; every block of the collective's buffers holds
//     K / (blocks of its larger buffer) chunks; sizes [minBytes, maxBytes).
//   <gpu id=r>: rank r; i/o/s chunk k: chunk k of the input, output, scratch (in place,
//     input and output name the one buffer: both map onto Braid's output).
//   <tb send=p recv=q chan=c>: a lane whose steps run in order; lanes run concurrently.
//   <step type=...>: s, r, rcs, rrc, rrs, rrcs, cpy, re as Braid's send, recv,
//     recvCopySend, recvReduce, recvReduceSend, recvReduceCopySend, copy, reduceLocal;
//     nop carries a dependency only; depid/deps: the step waits for step `deps` of lane
//     `depid` on the same rank.
//
// The lanes become one step list per rank: a step runs in the first round after the
// steps it waits for (its lane's previous step, its dependency, the matching send) ran,
// and a rank's steps of one round form a batch (they progress concurrently). Messages
// between two ranks keep one order, where MSCCL keeps one per channel: a program whose
// receives would need them reordered is refused, naming the step. A step moves data
// between chunks of one place within their blocks (Braid's chunks differ in size by
// place); scratch, which has no blocks in MSCCL, is laid out so that each chunk sits at
// the place of its data. Refused too, naming the
// gpu, thread block and step: step types with no meaning in Braid (MSCCL++'s put, get,
// signal, wait, ...), a send or receive in a lane with no such peer, chunks outside the
// buffers, dependencies on missing steps. An out-of-place program that writes its input
// works on a copy of it in scratch, made by a first step: Braid keeps a call's input
// read-only.
// Pure; thread-safe.
#pragma once

#include <string>

#include "algorithms/file/schedule_file.h"
#include "core/status.h"

namespace braid::algo {

// Whether `text` is XML rather than JSON: its first non-blank character is '<'.
bool looksLikeXml(const std::string& text);

// The MSCCL algorithm in `text` as a schedule file; errors name the line, the gpu, the
// thread block and the step.
Expected<AlgoFile> parseMscclXml(const std::string& text);

}  // namespace braid::algo
