// Schedule files: users' own algorithms as data (docs/algorithms.md). A file states, for
// one collective, the steps every rank performs, per rank count it supports, over chunks
// of the buffers rather than elements, so that one file serves every count:
//
//   every buffer is a row of blocks of `count` elements (all-reduce's input and output: 1
//   block; all-gather's output, reduce-scatter's input, all-to-all's: nranks blocks); a
//   program cuts each block into `chunksPerBlock` chunks, chunk j of a block of c elements
//   starting at element floor(j * c / chunksPerBlock). Chunk k of a buffer is chunk
//   k % chunksPerBlock of block k / chunksPerBlock, and a step names a run of chunks
//   (srcChunk, dstChunk, chunks). Scratch is `scratchChunks` chunks laid out alike.
//
// Where a step would move more than CollArgs::maxStepElems, the whole program runs in
// passes, each over an equal share of every block (pass p of P over elements
// [p*c/P, (p+1)*c/P) of each block, cut into chunks as above), so every step fits a FIFO
// as the built-ins' do; a step's run of chunks that crosses a block boundary then moves
// as one step per block. A window program runs in passes where a pass's share of its
// blocks would not fit a window area (CollArgs::windowElems): the window areas then hold
// a pass's share of block b at b * share, and each pass's rounds follow the last's. In
// place, a copy of input elements onto the same memory of the output is left out.
//
// The header says what the program is for: the collective, the rank counts (a list,
// "lo..hi", or "pow2:lo..hi"; every one needs a program), the sizes (count x element
// size, bounds inclusive or exclusive as stated), in place and/or out of place, the
// element types and ops ("any" or a list), and the root of rooted collectives.
//
// Reading checks the file's form (names, peers, chunk runs inside the buffers); whether
// the program is right is the simulator's to prove (runtime/user_algorithms.h). Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"

namespace braid::algo {

constexpr int kScheduleFileVersion = 1;

// Bytes of a call (count x element size) a file serves.
struct SizeRange {
  uint64_t min = 0;
  bool minInclusive = true;
  uint64_t max = UINT64_MAX;
  bool maxInclusive = true;
  bool contains(uint64_t bytes) const {
    return (minInclusive ? bytes >= min : bytes > min) &&
           (maxInclusive ? bytes <= max : bytes < max);
  }
  bool empty() const;
  std::string describe() const;  // "[0, 65536)" with the bounds as stated
};

// One rank count's program: per rank, steps whose offsets and counts are chunks.
struct FileProgram {
  int nranks = 0;
  uint64_t chunksPerBlock = 1;
  uint64_t scratchChunks = 0;
  bool windowed = false;
  std::vector<bool> lendsInput;  // per rank (window programs); empty: none lends
  std::vector<bool> lendsOutput;
  // ranks[r]: rank r's steps; srcOffset, dstOffset, bufOffset: first chunk; count: chunks.
  std::vector<std::vector<Step>> ranks;
};

struct AlgoFile {
  int version = kScheduleFileVersion;
  std::string name;
  Collective collective = Collective::kAllReduce;
  std::string ranksSpec;    // as written ("2..8", "pow2:2..16", "[2, 4]")
  std::vector<int> nranks;  // the rank counts it claims, ascending
  SizeRange sizes;
  bool inPlace = true;
  bool outOfPlace = true;
  std::vector<std::string> dtypes;  // empty: any
  std::vector<std::string> ops;     // empty: any
  int root = 0;
  std::vector<FileProgram> programs;

  const FileProgram* programFor(int nranks) const;
  bool claims(int nranks) const;
  bool allowsDtype(const std::string& name) const;
  bool allowsOp(const std::string& name) const;
};

// Blocks of `count` elements in a rank's input (or output) buffer for `c` on `nranks`
// ranks, as that rank sees it (a non-root's broadcast input and reduce output: 0).
uint64_t blocksOf(Collective c, bool input, int nranks, int rank, int root);
// Whether `c`'s schedules take a root.
bool isRooted(Collective c);

// The file's form; errors name the rank, the step and what is wrong. Text that starts with
// '<' is read as MSCCL's XML (algorithms/file/msccl_xml.h).
Expected<AlgoFile> parseAlgoFile(const std::string& text);
// The file as JSON: a header, then one step per line.
std::string writeAlgoFile(const AlgoFile& file);

// Rank args.rank's schedule for a call (args.nranks must have `program`): chunks made
// elements, in passes where a step would exceed args.maxStepElems. Fails where a step's
// source and destination runs hold different element counts at this count. `origin`, when
// given, receives the program's step index of every schedule step.
Expected<Schedule> instantiate(const AlgoFile& file, const FileProgram& program,
                               const CollArgs& args, std::vector<size_t>* origin = nullptr);

// Every rank's schedule of one call (a built-in's) as a file for that one call: one chunk
// per element, sizes exactly args.count x args.elemSize, args.inPlace's mode, any type
// and op. instantiate() at the same args gives back the same steps.
AlgoFile fileFromSchedules(const std::vector<Schedule>& ranks, const CollArgs& args,
                           const std::string& name);

}  // namespace braid::algo
