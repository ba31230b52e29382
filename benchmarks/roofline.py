"""How close extraction comes to the machine's arithmetic limit.

FLOPs of an encoder forward pass, counted from the model's config. A block of width d,
feed-forward width f and h heads does, per token of a sequence of length T,

    projections   2 · (4 d² + 2 d f)      Q, K, V and output (4 d²), feed-forward up and down (2 d f):
                                          2 FLOPs per multiply-add, i.e. 2 × the block's weights
    attention     2 · 2 · T · d           scores Q Kᵀ (T · d/h per head, h heads) and the mix A V

so a batch of B texts padded to T tokens executes B · T · L · (8 d² + 4 d f + 4 T d) FLOPs over
L blocks. Biases, LayerNorms, GELU and softmax (O(d) or O(T) per token) and the embedding
lookup are not counted: they cost time but no multiply-adds of the GEMM kind. Padded positions
are counted, since the machine computes them (the passes of ``activations.batches`` keep them few;
:func:`extraction_flops` also returns the real tokens' share).

The *peak* is the best float32 FLOP/s of ``torch.mm`` (into a preallocated output, so that no
allocation is timed) at the model's own GEMM shapes — R × d × d, R × d × f and R × f × d — on
this machine, warm, in the same run. The *roofline ratio* is achieved ÷ peak: 1 would mean that
extraction did nothing but its GEMMs, each at the machine's best speed.

Where the rest goes: :func:`time_split` profiles three passes (``torch.profiler``) and splits the quickest one's
wall time into the matrix products (``aten::addmm``, ``mm``, ``bmm``, ``baddbmm``: self time)
and everything else (bias copies, GELU, softmax, LayerNorm, reshapes, Python). Then
ratio ≈ GEMM share × (FLOP/s inside the GEMMs ÷ peak).
"""

from __future__ import annotations

import time


def block_flops_per_token(config, length: int) -> float:
    """FLOPs per token per block at sequence length ``length`` (see the module docstring)."""
    d = config.hidden_size
    f = getattr(config, "intermediate_size", 4 * d)
    return 8 * d * d + 4 * d * f + 4 * length * d


def batch_flops(config, batch: int, length: int) -> float:
    """FLOPs of one forward pass over ``batch`` texts padded to ``length`` tokens."""
    return batch * length * config.num_hidden_layers * block_flops_per_token(config, length)


def extraction_flops(lengths: list[int], config, passes: list) -> tuple[float, float]:
    """FLOPs of ``activations.extract`` over texts of ``lengths`` tokens in ``passes`` (index
    arrays, ``activations.batches``; each pass padded to its longest text), and the share of the
    padded positions that are real tokens."""
    longest = [max(lengths[i] for i in chunk) for chunk in passes]
    flops = sum(batch_flops(config, len(chunk), t) for chunk, t in zip(passes, longest))
    return flops, sum(lengths) / sum(len(chunk) * t for chunk, t in zip(passes, longest))


def matmul_peak(config, rows: int = 4096, repeats: int = 5) -> dict:
    """The best float32 FLOP/s of ``torch.mm`` over the model's GEMM shapes (``rows`` tokens),
    warm, each shape the fastest of ``repeats`` runs; in GFLOP/s."""
    import torch

    d = config.hidden_size
    f = getattr(config, "intermediate_size", 4 * d)
    best = {}
    for k, n in ((d, d), (d, f), (f, d)):
        a, b, out = torch.randn(rows, k), torch.randn(k, n), torch.empty(rows, n)
        torch.mm(a, b, out=out)  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b, out=out)
            times.append(time.perf_counter() - start)
        best[f"{rows}x{k}x{n}"] = 2 * rows * k * n / min(times) / 1e9
    return {"shapes": {s: round(v, 1) for s, v in best.items()}, "peak_gflops": round(max(best.values()), 1)}


GEMM_OPS = ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm")


def time_split(run, flops: float, peak_gflops: float, runs: int = 3) -> dict:
    """The quickest of ``runs`` profiled calls of ``run`` (which does ``flops`` FLOPs): the share
    of its wall time in matrix products (self CPU time of GEMM_OPS), their FLOP/s ÷
    ``peak_gflops``, and the five other ops with the most self time (share of the wall time
    each). One call alone is sometimes slowed from outside the pass (its matrix products then
    took a fifth less of the time, 2026-11-29), as the timed runs are."""
    from torch.profiler import ProfilerActivity, profile

    timed = []
    for _ in range(runs):
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            run()
        timed.append(((time.perf_counter() - start) * 1e6, prof))
    wall_us, prof = min(timed, key=lambda pair: pair[0])
    self_us = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    gemm_us = sum(self_us.get(op, 0.0) for op in GEMM_OPS)
    others = sorted(((k, v) for k, v in self_us.items() if k not in GEMM_OPS and k.startswith("aten::")),
                    key=lambda kv: -kv[1])[:5]
    return {"gemm_share": round(gemm_us / wall_us, 3),
            "gemm_efficiency": round(flops / (gemm_us / 1e6) / 1e9 / peak_gflops, 3) if gemm_us else None,
            "others": {k: round(v / wall_us, 3) for k, v in others}}
