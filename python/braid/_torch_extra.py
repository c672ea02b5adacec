"""The "braid" torch backend's calls beyond one tensor per call (see braid.torch).

Coalesced all-reduce and all-gather (several tensors in one Braid call), coalesced
all-gather and reduce-scatter into tensors (one Work over a Braid call each), sparse
all-reduce (gloo's way: every rank's coalesced indices and values gathered,
then summed where indices meet), and the monitored barrier (gloo's, over the
group's store, so that it reports the ranks that did not come even when the
communicator is stuck).
"""

import time

import torch

from . import _buffers
from . import _lib
from ._torch_common import RED, as_real, op_code, op_type, ptr, stream_of
from ._torch_work import seconds


def _bytes_of(t):
    """A contiguous tensor's memory as a 1-D uint8 tensor (same memory)."""
    return as_real(t).reshape(-1).view(torch.uint8)


def _fill_from_bytes(t, chunk):
    """Copies the bytes `chunk` (1-D uint8) into tensor t, element by element."""
    real = as_real(t)
    real.copy_(chunk.clone().view(real.dtype).view(real.shape))


class Extras:
    """ProcessGroupBraid's coalesced, sparse and monitored calls (a mixin: needs _run,
    _store, size(), rank())."""

    def _steps(self, what, steps, outputs, keep, after=None, stream=None):
        """One Work running several Braid calls in turn: steps are call(c, s) -> result."""
        def call(c, s):
            for step in steps:
                result = step(c, s)
                if result:
                    return result
            return 0

        return self._run(what, call, outputs, keep, after, stream=stream)

    # ---- coalesced -----------------------------------------------------------------------

    def allreduce_coalesced(self, tensors, opts=None):
        """All-reduces every tensor of the list with one op: one Braid call per dtype,
        over the tensors of that dtype packed together."""
        if not tensors:
            raise ValueError("braid: all_reduce_coalesced needs at least one tensor")
        codes = [op_code(opts, t) for t in tensors]
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(as_real(t).dtype, []).append(t)
        flats, steps = [], []
        for dtype, group in by_dtype.items():
            flat = torch.cat([as_real(t).reshape(-1) for t in group])
            p, n, dt = ptr(flat, "all_reduce_coalesced tensors")
            steps.append(lambda c, s, p=p, n=n, dt=dt:
                         _lib.lib.braidAllReduce(p, p, n, dt, codes[0], c, s))
            flats.append((flat, group))

        def unpack():
            for flat, group in flats:
                for t, piece in zip(group, flat.split([as_real(t).numel() for t in group])):
                    as_real(t).copy_(piece.view(as_real(t).shape))

        return self._steps("all_reduce_coalesced", steps, tensors, flats, unpack,
                           stream=stream_of("all_reduce_coalesced", *tensors))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """output_lists[r][i] gets rank r's input_list[i]: one all-gather of the inputs'
        bytes packed together."""
        if len(output_lists) != self.size():
            raise ValueError(f"braid: all_gather_coalesced needs {self.size()} output lists, "
                             f"got {len(output_lists)}")
        for r, outs in enumerate(output_lists):
            if [(o.dtype, o.numel()) for o in outs] != [(i.dtype, i.numel()) for i in input_list]:
                raise ValueError(f"braid: all_gather_coalesced: output list {r} does not match "
                                 "the input list in dtypes and sizes")
        sizes = [_bytes_of(t.contiguous()).numel() for t in input_list]
        send = (torch.cat([_bytes_of(t.contiguous()) for t in input_list]) if input_list
                else torch.empty(0, dtype=torch.uint8))
        recv = torch.empty(send.numel() * self.size(), dtype=torch.uint8, device=send.device)
        pi, ni, po = send.data_ptr(), send.numel(), recv.data_ptr()

        def unpack():
            for outs, row in zip(output_lists, recv.view(self.size(), -1)):
                for o, chunk in zip(outs, row.split(sizes)):
                    _fill_from_bytes(o, chunk)

        return self._steps(
            "all_gather_coalesced",
            [lambda c, s: _lib.lib.braidAllGather(pi, po, ni, _buffers.UINT8, c, s)],
            output_lists, (send, recv), unpack, stream=stream_of("all_gather", send, recv))

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        """outputs[i] (size() times inputs[i]'s elements) gets every rank's inputs[i]: one
        Braid all-gather a pair, run in turn as one Work."""
        steps = []
        for o, i in self._pairs(outputs, inputs, "all_gather_into_tensor_coalesced"):
            po, no, dt = ptr(o, "all_gather output")
            pi, ni, _ = ptr(i, "all_gather input")
            self._check_sizes(o, i, no, ni * self.size(), "all_gather_into_tensor_coalesced")
            steps.append(lambda c, s, pi=pi, po=po, ni=ni, dt=dt:
                         _lib.lib.braidAllGather(pi, po, ni, dt, c, s))
        return self._steps("all_gather_into_tensor_coalesced", steps, outputs,
                           (outputs, inputs), stream=stream_of("all_gather", *outputs, *inputs))

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        """outputs[i] gets its rank's share of inputs[i] reduced over the ranks: one Braid
        reduce-scatter a pair, run in turn as one Work."""
        steps = []
        for o, i in self._pairs(outputs, inputs, "reduce_scatter_tensor_coalesced"):
            po, no, dt = ptr(o, "reduce_scatter output")
            pi, ni, _ = ptr(i, "reduce_scatter input")
            self._check_sizes(o, i, ni, no * self.size(), "reduce_scatter_tensor_coalesced")
            op = self._op(opts, i)
            steps.append(lambda c, s, pi=pi, po=po, no=no, dt=dt, op=op:
                         _lib.lib.braidReduceScatter(pi, po, no, dt, op, c, s))
        return self._steps("reduce_scatter_tensor_coalesced", steps, outputs,
                           (outputs, inputs),
                           stream=stream_of("reduce_scatter", *outputs, *inputs))

    # torch 2.x's newer names for the two (its Python ProcessGroup and Backend call these).
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    @staticmethod
    def _pairs(outputs, inputs, what):
        if len(outputs) != len(inputs):
            raise ValueError(f"braid: {what}: {len(outputs)} outputs for {len(inputs)} inputs")
        return zip(outputs, inputs)

    # ---- sparse ----------------------------------------------------------------------------

    def _sparse_allreduce(self, t, opts):
        """Sums sparse COO tensors as gloo does: each rank's coalesced indices and values are
        gathered, and the sum of them all, coalesced, replaces t's contents."""
        if op_type(opts) != RED.SUM:
            raise ValueError(f"braid: sparse all_reduce sums only (as gloo), not {op_type(opts)}")
        mine = t.coalesce().cpu()
        idx, vals = mine._indices().contiguous(), mine._values().contiguous()
        box = {}

        def gather(c, s, local, rows):
            """All ranks' `local` (first dim padded to rows) as (size, rows, ...)."""
            padded = torch.zeros((rows,) + tuple(local.shape[1:]), dtype=local.dtype)
            padded[:local.shape[0]] = local
            out = torch.empty((self.size(),) + tuple(padded.shape), dtype=local.dtype)
            p, n, dt = ptr(padded, "sparse all_reduce")
            return out, _lib.lib.braidAllGather(p, ptr(out, "sparse all_reduce")[0], n, dt, c, s)

        def call(c, s):
            count = torch.tensor([idx.shape[1]], dtype=torch.int64)
            counts, result = gather(c, s, count, 1)
            if result:
                return result
            rows = int(counts.max())
            all_idx, result = gather(c, s, idx.t().contiguous(), rows)
            if result:
                return result
            all_vals, result = gather(c, s, vals, rows)
            if result:
                return result
            n = [int(k) for k in counts.view(-1)]
            summed = torch.sparse_coo_tensor(
                torch.cat([all_idx[r, :n[r]] for r in range(self.size())]).t(),
                torch.cat([all_vals[r, :n[r]] for r in range(self.size())]), t.shape)
            box["sum"] = summed.coalesce()
            return 0

        def copy_back():
            t.copy_(box["sum"].to(t.device))

        return self._steps("sparse all_reduce", [call], [t], (t, idx, vals), copy_back)

    # ---- monitored barrier ---------------------------------------------------------------

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """gloo's monitored barrier: rank 0 waits up to timeout for every rank, names the
        first that did not come (every one, with wait_all_ranks) and releases the others,
        who fail if rank 0 does not release them in time. Over the group's store: it works
        when the communicator is stuck. torch 1.13's dist.monitored_barrier refuses every
        backend but gloo by name; call group.monitored_barrier(timeout) instead."""
        limit = seconds(timeout)
        if limit is None:
            limit = self._timeout_s if self._timeout_s is not None else 1800.0
        ms = int(limit * 1000)
        self._barrier_seq = getattr(self, "_barrier_seq", 0) + 1
        key = f"braid_monitored/{self._barrier_seq}/"
        deadline = time.monotonic() + limit
        if self.rank() != 0:
            self._store.add(key + str(self.rank()), 1)
            if not self._wait_keys([key + "go"], deadline):
                raise RuntimeError(
                    f"Rank {self.rank()} successfully reached monitoredBarrier, but received "
                    f"errors while waiting for send/recv from rank 0: no release within {ms} ms")
            return
        if limit <= 0:
            raise RuntimeError(f"Rank 0 timed out in monitoredBarrier after {ms} ms")
        missing = []
        for r in range(1, self.size()):
            if not self._wait_keys([key + str(r)], deadline):
                missing.append(r)
                if not wait_all_ranks:
                    break
        if missing:
            ranks = ", ".join(map(str, missing))
            raise RuntimeError(f"{'Ranks' if len(missing) > 1 else 'Rank'} {ranks} failed to "
                               f"pass monitoredBarrier in {ms} ms")
        self._store.add(key + "go", 1)

    def _wait_keys(self, keys, deadline):
        """True once every counter `keys` names is above 0; False if the deadline passes
        first (counters: torch 1.13's Python stores have add, not check)."""
        pause = 0.0005
        while not all(self._store.add(k, 0) > 0 for k in keys):
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True
