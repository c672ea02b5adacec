"""Users' collective algorithms as schedule files (docs/algorithms.md).

A program says, for one rank count, what every rank does, step by step, on chunks
of its buffers; an Algorithm gathers the programs of every rank count it claims
and what it serves (collective, sizes, in place or not, types and ops), and
writes the JSON file that ``BRAID_ALGO_FILES``, ``braidCommRegisterAlgorithm``
and ``braid-algo check`` read. Braid proves the file with its simulator before
any call runs it, so a program here needs no checks of its own.

    from braid.algorithms import Algorithm, Program

    algo = Algorithm("myring", "allreduce", ranks="2..8")
    for n in range(2, 9):
        p = Program(n, chunks_per_block=n)
        for r in p.ranks():
            p.copy(r, "input", 0, "output", 0, chunks=n)
            ...
        algo.add(p)
    algo.write("myring.json")

Chunks: every buffer is a row of blocks of ``count`` elements (all-reduce: one
block; all-gather's output, reduce-scatter's input, all-to-all's buffers:
nranks blocks), each cut into ``chunks_per_block`` chunks; chunk k is chunk
k % chunks_per_block of block k // chunks_per_block. A step moves a run of
``chunks`` chunks starting at the one it names.

Window programs (``Program(n, windowed=True)``) run over memory the ranks of one
node share (the host's shared windows): rounds in which a rank puts data into its
own window areas ("windowIn", "windowOut", laid out in chunks as the buffers are),
raises its flags ("ready", "done", "finished") and, after waiting for a peer's
flag, reads the peer's area (``copy_peer``) or reduces every rank's
(``reduce_peers``). algorithms/schedule.h ("Window schedules") says what each
step means; the simulator proves a window program as it does a FIFO one, races
between a put and a peer's read included.

avg: a reduction's division by nranks happens at the steps marked ``final=True``,
once per element (the proof runs avg where the Algorithm's ``ops`` lists it).

This module is plain Python: it needs neither the library nor NumPy.
"""

import json

__all__ = ["Algorithm", "Program", "FORMAT_VERSION"]

FORMAT_VERSION = 1

_BUFFERS = ("input", "output", "scratch", "windowIn", "windowOut")
_AREAS = ("windowIn", "windowOut")
_FLAGS = ("ready", "done", "finished")


def _run(buf, chunk, chunks):
    if buf not in _BUFFERS:
        raise ValueError(f"buffer {buf!r} is not one of {_BUFFERS}")
    if chunk < 0 or chunks < 0:
        raise ValueError("chunk indexes and counts are never negative")


_WINDOW_OPS = ("beginRound", "put", "signal", "wait", "reducePeers", "copyPeer")


def _area(area, chunk, chunks):
    if area not in _AREAS:
        raise ValueError(f"window area {area!r} is not one of {_AREAS}")
    _run(area, chunk, chunks)


def _flag(flag):
    if flag not in _FLAGS:
        raise ValueError(f"flag {flag!r} is not one of {_FLAGS}")


def _final(step, final):
    if final:
        step["final"] = True
    return step


class Program:
    """What every rank of ``nranks`` does, as lists of steps (one list per rank)."""

    def __init__(self, nranks, chunks_per_block=1, scratch_chunks=0, windowed=False,
                 lends_input=False, lends_output=False):
        """windowed: a window program (see above); lends_input / lends_output: whether
        every rank may leave that buffer where it lies for peers to read (its puts from
        it are then skipped, and peers read it at a step's ``buf_chunk``)."""
        if nranks < 1 or chunks_per_block < 1 or scratch_chunks < 0:
            raise ValueError("nranks and chunks_per_block must be >= 1, scratch_chunks >= 0")
        self.nranks = nranks
        self.chunks_per_block = chunks_per_block
        self.scratch_chunks = scratch_chunks
        self.windowed = windowed
        self.lends_input = lends_input
        self.lends_output = lends_output
        self.steps = [[] for _ in range(nranks)]
        self._batch = None

    def ranks(self):
        return range(self.nranks)

    def _add(self, rank, step):
        if not 0 <= rank < self.nranks:
            raise ValueError(f"rank {rank} is not one of {self.nranks}")
        window = step["op"] in _WINDOW_OPS
        if window != self.windowed and step["op"] not in ("copy", "reduceLocal"):
            where = "a window program" if self.windowed else "a FIFO program"
            raise ValueError(f"rank {rank}: {step['op']} has no place in {where}")
        for key in ("sendPeer", "recvPeer"):
            peer = step.get(key)
            if peer is None or (window and (peer == -1 or peer == rank)):
                continue
            if not (0 <= peer < self.nranks and peer != rank):
                raise ValueError(f"rank {rank}: {key} {peer} is not another rank")
        self.steps[rank].append(step)
        if self._batch is not None:
            self._batch.setdefault(rank, []).append(step)
        return step

    # ---- steps (src: a run read; dst: a run written; peers by rank)
    def send(self, rank, to, buf, chunk, chunks=1):
        _run(buf, chunk, chunks)
        return self._add(rank, {"op": "send", "src": buf, "srcChunk": chunk, "chunks": chunks,
                                "sendPeer": to})

    def recv(self, rank, frm, buf, chunk, chunks=1):
        _run(buf, chunk, chunks)
        return self._add(rank, {"op": "recv", "dst": buf, "dstChunk": chunk, "chunks": chunks,
                                "recvPeer": frm})

    def recv_reduce(self, rank, frm, buf, chunk, chunks=1, src=None, src_chunk=None,
                    final=False):
        """dst = src op (what arrives from frm); src defaults to dst itself. final: the
        result is complete here (avg divides)."""
        _run(buf, chunk, chunks)
        return self._add(rank, _final({"op": "recvReduce", "src": src or buf,
                                       "srcChunk": chunk if src_chunk is None else src_chunk,
                                       "dst": buf, "dstChunk": chunk, "chunks": chunks,
                                       "recvPeer": frm}, final))

    def recv_reduce_send(self, rank, frm, to, buf, chunk, chunks=1):
        """Sends (buf's run op what arrives from frm) on to ``to``, writing nothing."""
        _run(buf, chunk, chunks)
        return self._add(rank, {"op": "recvReduceSend", "src": buf, "srcChunk": chunk,
                                "chunks": chunks, "recvPeer": frm, "sendPeer": to})

    def recv_copy_send(self, rank, frm, to, buf, chunk, chunks=1):
        """buf's run = what arrives from frm, sent on to ``to``."""
        _run(buf, chunk, chunks)
        return self._add(rank, {"op": "recvCopySend", "dst": buf, "dstChunk": chunk,
                                "chunks": chunks, "recvPeer": frm, "sendPeer": to})

    def copy(self, rank, src, src_chunk, dst, dst_chunk, chunks=1):
        _run(src, src_chunk, chunks)
        _run(dst, dst_chunk, chunks)
        return self._add(rank, {"op": "copy", "src": src, "srcChunk": src_chunk, "dst": dst,
                                "dstChunk": dst_chunk, "chunks": chunks})

    def reduce_local(self, rank, src, src_chunk, dst, dst_chunk, chunks=1, final=False):
        """dst = dst op src, on this rank (final: complete here, avg divides)."""
        _run(src, src_chunk, chunks)
        _run(dst, dst_chunk, chunks)
        return self._add(rank, _final({"op": "reduceLocal", "src": src, "srcChunk": src_chunk,
                                       "dst": dst, "dstChunk": dst_chunk, "chunks": chunks},
                                      final))

    # ---- window steps (window programs only)
    def begin_round(self, rank, writes=True):
        """The next round; writes: this rank puts into its window in it."""
        return self._add(rank, {"op": "beginRound", "writes": bool(writes)})

    def put(self, rank, src, src_chunk, area, area_chunk, chunks=1):
        """This rank's window area's run = src's run."""
        _run(src, src_chunk, chunks)
        _area(area, area_chunk, chunks)
        return self._add(rank, {"op": "put", "src": src, "srcChunk": src_chunk, "dst": area,
                                "dstChunk": area_chunk, "chunks": chunks})

    def signal(self, rank, flag="ready"):
        """This rank's flag = the round."""
        _flag(flag)
        return self._add(rank, {"op": "signal", "flag": flag})

    def wait(self, rank, peer, flag="ready"):
        """Until peer's flag reaches the round (peer None: every peer's)."""
        _flag(flag)
        return self._add(rank, {"op": "wait", "flag": flag,
                                "recvPeer": -1 if peer is None else peer})

    def copy_peer(self, rank, peer, area, area_chunk, dst, dst_chunk, chunks=1, buf_chunk=None):
        """dst's run = peer's area run (its lent buffer's run at buf_chunk where it lent
        it; buf_chunk defaults to dst_chunk)."""
        _area(area, area_chunk, chunks)
        _run(dst, dst_chunk, chunks)
        return self._add(rank, {"op": "copyPeer", "src": area, "srcChunk": area_chunk,
                                "dst": dst, "dstChunk": dst_chunk, "chunks": chunks,
                                "recvPeer": peer,
                                "bufChunk": dst_chunk if buf_chunk is None else buf_chunk})

    def reduce_peers(self, rank, area, area_chunk, dst, dst_chunk, chunks=1, buf_chunk=None,
                     own_from_buffer=False, final=True):
        """dst's run = op over every rank, in rank order, of its area run (a lender's
        buffer at buf_chunk; own_from_buffer: this rank's own term from its buffer)."""
        _area(area, area_chunk, chunks)
        _run(dst, dst_chunk, chunks)
        return self._add(rank, _final({"op": "reducePeers", "src": area, "srcChunk": area_chunk,
                                       "dst": dst, "dstChunk": dst_chunk, "chunks": chunks,
                                       "bufChunk": dst_chunk if buf_chunk is None else buf_chunk,
                                       "ownFromBuffer": bool(own_from_buffer)}, final))

    def batch(self):
        """Steps added inside ``with program.batch():`` progress together, per rank (a rank
        sends to one peer while it receives from another)."""
        program = self

        class _Batch:
            def __enter__(self):
                if program._batch is not None:
                    raise RuntimeError("batches do not nest")
                program._batch = {}

            def __exit__(self, *exc):
                for steps in program._batch.values():
                    for s in steps[:-1]:
                        s["batchWithNext"] = True
                program._batch = None
                return False

        return _Batch()

    def to_dict(self):
        d = {"nranks": self.nranks, "chunksPerBlock": self.chunks_per_block,
             "scratchChunks": self.scratch_chunks}
        if self.windowed:
            d["windowed"] = True
            d["lendsInput"] = [bool(self.lends_input)] * self.nranks
            d["lendsOutput"] = [bool(self.lends_output)] * self.nranks
        d["ranks"] = self.steps
        return d


class Algorithm:
    """A schedule file: what the algorithm serves, and a program per rank count."""

    def __init__(self, name, collective, ranks, sizes=None, in_place=True, out_of_place=True,
                 dtypes="any", ops="any", root=0, comment=None):
        """ranks: a list of counts, "lo..hi" or "pow2:lo..hi". sizes: None (every size) or
        (min, max, min_inclusive, max_inclusive) in bytes of count x element size."""
        self.header = {"format": "braid-schedule", "version": FORMAT_VERSION, "name": name,
                       "collective": collective, "ranks": ranks}
        if comment:
            self.header["comment"] = comment
        if sizes is not None:
            lo, hi, lo_in, hi_in = sizes
            self.header["sizes"] = {"min": lo, "minInclusive": bool(lo_in), "max": hi,
                                    "maxInclusive": bool(hi_in)}
        self.header.update({"inPlace": in_place, "outOfPlace": out_of_place,
                            "dtypes": dtypes, "ops": ops})
        if collective in ("broadcast", "reduce", "gather", "scatter"):
            self.header["root"] = root
        self.programs = []

    def add(self, program):
        if any(p.nranks == program.nranks for p in self.programs):
            raise ValueError(f"a program for {program.nranks} ranks is there already")
        self.programs.append(program)
        return program

    def to_json(self):
        # A header, then a step per line: diffs of two files read step by step.
        head = json.dumps(self.header)[:-1]
        parts = []
        for p in self.programs:
            d = p.to_dict()
            ranks = ",\n   ".join(
                "[" + ",\n    ".join(json.dumps(s) for s in steps) + "]" for steps in d["ranks"])
            meta = json.dumps({k: v for k, v in d.items() if k != "ranks"})[:-1]
            parts.append(f'  {meta}, "ranks": [\n   {ranks}]}}')
        return head + ', "programs": [\n' + ",\n".join(parts) + "\n]}\n"

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.to_json())
        return path
