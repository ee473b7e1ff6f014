"""Benchmark of posenc's torch RoPE, as ratios measured side by side in one run (``make bench``).

Compares ``posenc.apply_rope`` on a [4, 32, 2048, 128] float32 tensor with (a) the textbook ``rotate_half``
implementation (``x * cos + rotate_half(x) * sin``, as in GPT-NeoX and Hugging Face's Llama) and (b)
``x.clone()``, the memory-copy floor. Rounds alternate between the candidates so that a noisy neighbour
slows all of them alike; the median of each is reported with its ratio to the textbook form.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from posenc.rope import apply_rope, rope_angles


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def textbook_rope(x, cos, sin):
    """The widely copied form: cos/sin of shape (seq, d) with duplicated angles, one temporary per term."""
    return x * cos + rotate_half(x) * sin


def measure(candidates: dict, rounds: int) -> dict:
    times = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def rope_benchmark(shape=(4, 32, 2048, 128), rounds=15) -> dict:
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float32)
    seq, d = shape[-2], shape[-1]
    positions = np.arange(seq)
    angles = torch.as_tensor(rope_angles(positions, d))  # float64, as posenc computes them
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()
    # same maths: check before timing
    torch.testing.assert_close(apply_rope(x, positions, layout="half"), textbook_rope(x, cos, sin), atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        candidates = {
            "textbook rotate_half": lambda: textbook_rope(x, cos, sin),
            "posenc.apply_rope half": lambda: apply_rope(x, positions, layout="half"),
            "posenc.apply_rope interleaved": lambda: apply_rope(x, positions, layout="interleaved"),
            "x.clone() (copy floor)": lambda: x.clone(),
        }
        for fn in candidates.values():  # warm-up
            fn()
        return measure(candidates, rounds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; shape [4, 32, 2048, 128] float32; "
          f"median of {args.rounds} alternating rounds")
    result = rope_benchmark(rounds=args.rounds)
    textbook = result["textbook rotate_half"]
    floor = result["x.clone() (copy floor)"]
    print(f"{'candidate':32s} {'ms':>8s} {'÷ textbook':>11s} {'÷ clone':>9s}")
    for name, seconds in result.items():
        print(f"{name:32s} {seconds * 1e3:8.1f} {seconds / textbook:11.2f} {seconds / floor:9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
