"""torch.distributed's "nccl" backend over Braid's libnccl.so.2 (issue 7).

Usage: python3 torch_nccl_dropin.py /path/to/libnccl.so.2 [nranks]

Starts `nranks` (default 2) processes on GPU 0 with Braid's library preloaded (torch
links its own NCCL; LD_PRELOAD makes the process resolve every nccl* symbol to Braid's)
and runs all_reduce, all_gather, reduce_scatter, broadcast, all_to_all_single and
send/recv on device tensors, and an all_reduce captured by torch.cuda.graph and replayed,
each checked exactly against what every rank can compute alone. Exits 0 when every rank passed; 77 (skipped) without a GPU or torch.
"""

import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loaded_nccl():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "libnccl" in line})


def worker():
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    failures = []

    def expect(name, got, want):
        if not torch.equal(got.cpu(), want.cpu()):
            failures.append(f"{name}: got {got.cpu().tolist()[:8]} want {want.cpu().tolist()[:8]}")

    n = 1 << 16  # elements per rank; integers in float32 keep the sums exact
    base = torch.arange(n, dtype=torch.float32, device=dev)

    x = base + rank
    dist.all_reduce(x)
    expect("all_reduce", x, base * world + sum(range(world)))

    x = base[:1000].clone() * (rank + 1)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    expect("all_reduce max", x, base[:1000] * world)

    out = torch.empty(world * n, dtype=torch.float32, device=dev)
    dist.all_gather_into_tensor(out, base + 1000 * rank)
    expect("all_gather", out, torch.cat([base + 1000 * r for r in range(world)]))

    outs = [torch.empty(n, dtype=torch.float32, device=dev) for _ in range(world)]
    dist.all_gather(outs, base + 1000 * rank)
    expect("all_gather list", torch.cat(outs), torch.cat([base + 1000 * r for r in range(world)]))

    full = torch.arange(world * n, dtype=torch.float32, device=dev) + rank
    got = torch.empty(n, dtype=torch.float32, device=dev)
    dist.reduce_scatter_tensor(got, full)
    whole = torch.arange(world * n, dtype=torch.float32, device=dev) * world + sum(range(world))
    expect("reduce_scatter", got, whole[rank * n:(rank + 1) * n])

    x = (base + 7) if rank == world - 1 else torch.zeros(n, device=dev)
    dist.broadcast(x, src=world - 1)
    expect("broadcast", x, base + 7)

    send = torch.arange(world * 4, dtype=torch.int64, device=dev) + 100 * rank
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    want = torch.cat([torch.arange(rank * 4, rank * 4 + 4, device=dev) + 100 * r
                      for r in range(world)])
    expect("all_to_all_single", recv, want)

    peer_to, peer_from = (rank + 1) % world, (rank - 1) % world
    msg = torch.full((n,), float(rank), device=dev)
    box = torch.empty(n, device=dev)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, msg, peer_to),
                                   dist.P2POp(dist.irecv, box, peer_from)])
    for r in reqs:
        r.wait()
    expect("send/recv", box, torch.full((n,), float(peer_from), device=dev))

    x = torch.ones(n, dtype=torch.bfloat16, device=dev)
    dist.all_reduce(x)
    expect("all_reduce bf16", x, torch.full((n,), float(world), dtype=torch.bfloat16))

    # A CUDA graph: torch.cuda.graph captures the all_reduce (the process group's stream
    # joins the capture), then each replay reduces what the static tensor holds then.
    try:
        static = base + rank
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            dist.all_reduce(static)
        for k in range(3):
            static.copy_(base * (k + 2) + rank)
            graph.replay()
            torch.cuda.synchronize()
            expect(f"all_reduce in a CUDA graph, replay {k}", static,
                   base * (k + 2) * world + sum(range(world)))
    except Exception as e:  # noqa: BLE001 - reported with the rest
        failures.append(f"CUDA graph: {type(e).__name__}: {e}")

    torch.cuda.synchronize()
    dist.barrier()
    libs = loaded_nccl()
    braid = [p for p in libs if os.path.realpath(p) == os.path.realpath(os.environ["BRAID_NCCL"])]
    if not braid:
        failures.append(f"Braid's library is not loaded (libnccl in this process: {libs})")
    print(f"rank {rank}: nccl version {torch.cuda.nccl.version()}, libraries {libs}, "
          f"{'FAILED: ' + '; '.join(failures) if failures else 'all correct'}", flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


def main():
    if os.environ.get("TORCH_NCCL_DROPIN_WORKER"):
        sys.exit(worker())
    lib = os.path.abspath(sys.argv[1])
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        sys.exit(77)
    env = dict(os.environ, TORCH_NCCL_DROPIN_WORKER="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), WORLD_SIZE=str(world), BRAID_NCCL=lib,
               LD_PRELOAD=lib)
    procs = [subprocess.Popen([sys.executable, __file__], env=dict(env, RANK=str(r)))
             for r in range(world)]
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=240))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append("timeout")
    print(f"exit codes {codes}")
    sys.exit(0 if all(c == 0 for c in codes) else 1)


if __name__ == "__main__":
    main()
