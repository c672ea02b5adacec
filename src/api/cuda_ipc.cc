#include "api/cuda_ipc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/handle.h"
#include "core/env.h"
#include "core/logging.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/reduce.h"

namespace braid {
namespace {

using algo::Collective;

// What each rank tells the others at set-up (all-gathered as bytes).
struct SetupRecord {
  int32_t ok;      // 1: this rank's window exists
  int32_t device;  // the CUDA device it lives on (this process's numbering)
  cuda::DeviceUuid uuid;
  cuda::IpcHandle handle;
};

// Elements [lo, hi) of `count` that rank q of n handles in a two-shot round.
size_t sliceStart(size_t count, int q, int n) {
  return count * static_cast<size_t>(q) / static_cast<size_t>(n);
}

bool isDevice(const void* p) { return cuda::memoryKind(p) == cuda::MemoryKind::kDevice; }

}  // namespace

bool DeviceWindows::supports(const OpRequest& op, int nranks) {
  if (op.kind != OpRequest::Kind::kCollective) return false;
  if (nranks < 2 || nranks > cuda::kMaxReduceInputs) return false;
  switch (op.collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
      return static_cast<int>(op.op) >= 0 && op.op < braidNumOps;
    case Collective::kAllGather:
    case Collective::kBroadcast:
    case Collective::kAllToAll:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<DeviceWindows> DeviceWindows::create(braidComm* comm) {
  const Comm& c = *comm->comm;
  auto refuse = [](const std::string& why) {
    BRAID_INFO("device windows (CUDA IPC) off: %s; device buffers are staged through host memory",
               why.c_str());
    return std::unique_ptr<DeviceWindows>();
  };
  if (envInt("BRAID_CUDA_IPC", 1) == 0) return refuse("BRAID_CUDA_IPC=0");
  if (c.nodes() != 1) return refuse("the ranks span " + std::to_string(c.nodes()) + " nodes");
  if (c.nranks() > cuda::kMaxReduceInputs) {
    return refuse(std::to_string(c.nranks()) + " ranks (at most " +
                  std::to_string(cuda::kMaxReduceInputs) + ")");
  }
  const int64_t bytes = envInt("BRAID_CUDA_WINDOW_BYTES", 64 << 20);
  if (bytes < 4096) return refuse("BRAID_CUDA_WINDOW_BYTES is below 4096");

  std::unique_ptr<DeviceWindows> w(new DeviceWindows());
  w->rank_ = c.rank();
  w->nranks_ = c.nranks();
  w->bytes_ = static_cast<size_t>(bytes) / 256 * 256;
  w->twoShotBytes_ = static_cast<size_t>(envInt("BRAID_CUDA_TWO_SHOT_BYTES", 1 << 20));
  w->twoShotForced_ = std::getenv("BRAID_CUDA_TWO_SHOT_BYTES") != nullptr;
  w->windows_.assign(static_cast<size_t>(w->nranks_), nullptr);

  // This rank's window and its handle; a failure is told to the others, not returned.
  SetupRecord mine{};
  std::string why;
  Expected<int> device = cuda::currentDevice();
  Expected<cuda::DeviceUuid> uuid = device.isOk() ? cuda::deviceUuid(device.value())
                                                  : Expected<cuda::DeviceUuid>(device.status());
  Expected<void*> mem = uuid.isOk() ? cuda::deviceAlloc(w->bytes_) : uuid.status();
  if (mem.isOk()) {
    w->own_ = mem.value();
    Expected<cuda::IpcHandle> h = cuda::ipcHandle(w->own_);
    if (h.isOk()) {
      mine.ok = 1;
      mine.device = device.value();
      mine.uuid = uuid.value();
      mine.handle = h.value();
    } else {
      why = h.status().message();
    }
  } else {
    why = mem.status().message();
  }
  std::vector<SetupRecord> all(static_cast<size_t>(w->nranks_));
  OpRequest gather;
  gather.collective = Collective::kAllGather;
  gather.send = &mine;
  gather.recv = all.data();
  gather.count = sizeof(SetupRecord);
  gather.datatype = braidUint8;
  Status st = runOpsLocked(comm, &gather, 1);
  if (!st.isOk()) return refuse("exchanging window handles failed: " + st.message());

  // Map every peer's window (CUDA refuses where the devices have no peer access).
  w->oneDevice_ = true;
  for (int q = 0; q < w->nranks_ && why.empty(); ++q) {
    const SetupRecord& r = all[static_cast<size_t>(q)];
    if (r.ok == 1 && std::memcmp(r.uuid.bytes, mine.uuid.bytes, sizeof(mine.uuid.bytes)) != 0) {
      w->oneDevice_ = false;
    }
    if (q == w->rank_) {
      w->windows_[static_cast<size_t>(q)] = static_cast<char*>(w->own_);
    } else if (r.ok != 1) {
      why = "rank " + std::to_string(q) + " has no window";
    } else {
      Expected<void*> p = cuda::ipcOpen(r.handle);
      if (p.isOk()) {
        w->windows_[static_cast<size_t>(q)] = static_cast<char*>(p.value());
      } else {
        why = "mapping rank " + std::to_string(q) + "'s window: " + p.status().message();
      }
    }
  }
  // Every rank uses the windows, or none does.
  uint8_t ok = why.empty() ? 1 : 0;
  OpRequest agree;
  agree.send = &ok;
  agree.recv = &ok;
  agree.count = 1;
  agree.datatype = braidUint8;
  agree.op = braidMin;
  st = runOpsLocked(comm, &agree, 1);
  if (!st.isOk() || ok == 0) {
    return refuse(!why.empty() ? why : !st.isOk() ? st.message() : "a peer could not map them");
  }
  BRAID_INFO("device windows (CUDA IPC): %zu bytes per rank on device %d, %d ranks%s",
             w->bytes_, mine.device, w->nranks_, w->oneDevice_ ? ", all on this one GPU" : "");
  return w;
}

DeviceWindows::~DeviceWindows() {
  for (int q = 0; q < nranks_; ++q) {
    char* p = windows_.empty() ? nullptr : windows_[static_cast<size_t>(q)];
    if (p != nullptr && q != rank_) (void)cuda::ipcClose(p);
  }
  if (own_ != nullptr) (void)cuda::deviceFree(own_);
}

// Waits for the stream, then meets every rank. With `agree`, the ranks also learn the
// smallest of their *agree values (1: ready to go direct; 0: stage this call).
Status DeviceWindows::barrier(braidComm* comm, void* stream, uint8_t* agree) {
  BRAID_TRY(cuda::streamSynchronize(stream));
  uint8_t one = 1;
  uint8_t* value = agree != nullptr ? agree : &one;
  OpRequest b;
  b.send = value;
  b.recv = value;
  b.count = 1;
  b.datatype = braidUint8;
  b.op = braidMin;
  return runOpsLocked(comm, &b, 1);
}

// A round's first barrier. In the first round it also agrees that every rank's receive
// buffer is device memory (kernels write it); where one is not, *staged is set on every
// rank and no one goes on.
Status DeviceWindows::meet(braidComm* comm, void* stream, bool firstRound, const void* recv,
                           bool* staged) {
  if (!firstRound) return barrier(comm, stream);
  uint8_t agree = isDevice(recv) ? 1 : 0;
  BRAID_TRY(barrier(comm, stream, &agree));
  if (agree != 0) return Status::ok();
  *staged = true;
  return barrier(comm, stream);  // no one refills a window a peer may still be reading
}

Status DeviceWindows::run(braidComm* comm, const OpRequest& op, void* stream, bool* staged) {
  *staged = false;
  if (op.count == 0) return Status::ok();
  switch (op.collective) {
    case Collective::kAllReduce: return allReduce(comm, op, stream, staged);
    case Collective::kReduceScatter: return reduceScatter(comm, op, stream, staged);
    case Collective::kAllGather: return allGather(comm, op, stream, staged);
    case Collective::kBroadcast: return broadcast(comm, op, stream, staged);
    case Collective::kAllToAll: return allToAll(comm, op, stream, staged);
    default: *staged = true; return Status::ok();
  }
}

Status DeviceWindows::allReduce(braidComm* comm, const OpRequest& op, void* stream,
                                bool* staged) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = bytes_ / es;
  // Ranks sharing one GPU take turns on it (each process is its own context), so every
  // round trip costs a context switch there: one-shot, with its one barrier less, wins
  // (measured on an H100: docs/architecture.md). Across GPUs two-shot spreads the reads.
  const bool twoShot = nranks_ >= 3 && op.count * es >= twoShotBytes_ &&
                       (!oneDevice_ || twoShotForced_);
  const int divisor = nranks_;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    BRAID_TRY(cuda::copyAsync(own_, send + off * es, n * es, stream));
    BRAID_TRY(meet(comm, stream, off == 0, recv, staged));
    if (*staged) return Status::ok();
    if (!twoShot) {
      for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = win(q);
      BRAID_TRY(cuda::launchReduce(recv + off * es, srcs.data(), nranks_, n, op.datatype, op.op,
                                   divisor, stream));
    } else {
      const size_t lo = sliceStart(n, rank_, nranks_), hi = sliceStart(n, rank_ + 1, nranks_);
      for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = win(q) + lo * es;
      if (hi > lo) {
        BRAID_TRY(cuda::launchReduce(win(rank_) + lo * es, srcs.data(), nranks_, hi - lo,
                                     op.datatype, op.op, divisor, stream));
      }
      BRAID_TRY(barrier(comm, stream));
      for (int q = 0; q < nranks_; ++q) {
        const size_t qlo = sliceStart(n, q, nranks_), qhi = sliceStart(n, q + 1, nranks_);
        BRAID_TRY(cuda::copyAsync(recv + (off + qlo) * es, win(q) + qlo * es, (qhi - qlo) * es,
                                  stream));
      }
    }
    BRAID_TRY(barrier(comm, stream));
  }
  return Status::ok();
}

// Elements [off, off + n) of each of the nranks blocks of op's input into this rank's
// window, block q at q * chunk elements (reduce-scatter and all-to-all).
Status DeviceWindows::copyBlocksIn(const OpRequest& op, size_t off, size_t n, size_t chunk,
                                   void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const char* send = static_cast<const char*>(op.send);
  for (int q = 0; q < nranks_; ++q) {
    BRAID_TRY(cuda::copyAsync(win(rank_) + static_cast<size_t>(q) * chunk * es,
                              send + (static_cast<size_t>(q) * op.count + off) * es, n * es,
                              stream));
  }
  return Status::ok();
}

Status DeviceWindows::reduceScatter(braidComm* comm, const OpRequest& op, void* stream,
                                    bool* staged) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = bytes_ / (es * static_cast<size_t>(nranks_));  // per block, per round
  if (chunk == 0) {
    *staged = true;
    return Status::ok();
  }
  char* recv = static_cast<char*>(op.recv);
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    BRAID_TRY(copyBlocksIn(op, off, n, chunk, stream));
    BRAID_TRY(meet(comm, stream, off == 0, recv, staged));
    if (*staged) return Status::ok();
    for (int q = 0; q < nranks_; ++q) {
      srcs[static_cast<size_t>(q)] = win(q) + static_cast<size_t>(rank_) * chunk * es;
    }
    BRAID_TRY(cuda::launchReduce(recv + off * es, srcs.data(), nranks_, n, op.datatype, op.op,
                                 nranks_, stream));
    BRAID_TRY(barrier(comm, stream));
  }
  return Status::ok();
}

Status DeviceWindows::allGather(braidComm* comm, const OpRequest& op, void* stream, bool*) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = bytes_ / es;
  const size_t block = op.count * es;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  const bool inPlace = send == recv + static_cast<size_t>(rank_) * block;
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    BRAID_TRY(cuda::copyAsync(own_, send + off * es, n * es, stream));
    BRAID_TRY(barrier(comm, stream));
    for (int q = 0; q < nranks_; ++q) {
      char* dst = recv + static_cast<size_t>(q) * block + off * es;
      if (q == rank_) {
        if (!inPlace) BRAID_TRY(cuda::copyAsync(dst, send + off * es, n * es, stream));
      } else {
        BRAID_TRY(cuda::copyAsync(dst, win(q), n * es, stream));
      }
    }
    BRAID_TRY(barrier(comm, stream));
  }
  return Status::ok();
}

Status DeviceWindows::broadcast(braidComm* comm, const OpRequest& op, void* stream, bool*) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = bytes_ / es;
  const bool root = rank_ == op.root;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    if (root) BRAID_TRY(cuda::copyAsync(own_, send + off * es, n * es, stream));
    BRAID_TRY(barrier(comm, stream));
    if (!root) {
      BRAID_TRY(cuda::copyAsync(recv + off * es, win(op.root), n * es, stream));
    } else if (send != recv) {
      BRAID_TRY(cuda::copyAsync(recv + off * es, send + off * es, n * es, stream));
    }
    BRAID_TRY(barrier(comm, stream));
  }
  return Status::ok();
}

Status DeviceWindows::allToAll(braidComm* comm, const OpRequest& op, void* stream,
                               bool* staged) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = bytes_ / (es * static_cast<size_t>(nranks_));
  if (chunk == 0) {
    *staged = true;
    return Status::ok();
  }
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    BRAID_TRY(copyBlocksIn(op, off, n, chunk, stream));
    BRAID_TRY(barrier(comm, stream));
    for (int q = 0; q < nranks_; ++q) {
      BRAID_TRY(cuda::copyAsync(recv + (static_cast<size_t>(q) * op.count + off) * es,
                                win(q) + static_cast<size_t>(rank_) * chunk * es, n * es, stream));
    }
    BRAID_TRY(barrier(comm, stream));
  }
  return Status::ok();
}

}  // namespace braid
