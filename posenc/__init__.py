"""posenc: reference implementations of positional encodings in transformers.

One module per family, each function one formula, numpy float64 first, torch where a model needs it.
Every number in the course book is computed here.
"""

import importlib
import os as _os
from pathlib import Path as _Path

# The extrapolation arena's published results (the arena package writes them; chapters 5, 8 and 9 read
# them): book/data/arena.json in the repository, or the copy inside the package that an installed wheel
# carries (pyproject.toml puts it there), or the file POSENC_ARENA_RESULTS names (a run of one's own, e.g.
# `python -m arena --out mine.json`). Reading them needs neither torch nor the arena.
ARENA_RESULTS = _Path(__file__).resolve().parent.parent / "book" / "data" / "arena.json"
if not ARENA_RESULTS.is_file():
    ARENA_RESULTS = _Path(__file__).resolve().parent / "data" / "arena.json"
if _os.environ.get("POSENC_ARENA_RESULTS"):
    ARENA_RESULTS = _Path(_os.environ["POSENC_ARENA_RESULTS"]).resolve()

from .alibi import alibi_bias, alibi_slopes, alibi_weight_within
from .attention import attention, causal_mask, permutation_matrix, positions_from_mask, softmax
from .relative import (
    relative_bias,
    relative_positions,
    shaw_attention,
    shaw_relative_ids,
    t5_bucket,
    transformer_xl_terms,
)
from .rope import (
    apply_rope,
    apply_rope_complex,
    layout_permutation,
    rope_angles,
    rope_frequencies,
    rope_matrix,
    rope_score_bound,
)
from .scaling import (
    METHODS,
    base_context_bound,
    dynamic_ntk,
    dynamic_ntk_base,
    llama3,
    longrope,
    longrope_attention_factor,
    ntk_aware,
    ntk_base,
    position_interpolation,
    yarn,
    yarn_attention_factor,
    yarn_correction_range,
    yarn_ramp,
    yarn_ramp_paper,
)
from .sinusoidal import frequencies, shift_matrix, sinusoidal, sinusoidal_dot, wavelengths
from .deployed import (
    deepseek_softmax_scale,
    layer_types,
    llama4_attention_scale,
    logn_attention_scale,
    mla_scores,
    mrope_angles,
    mrope_interleaved_pair_axes,
    mrope_pair_axes,
    mrope_positions,
    mrope_vision_positions,
    proportional_frequencies,
    self_extend_distances,
)

# Torch is imported only by the parts that need it (about 2 s of CPU at start-up): these names load on
# first use, so a notebook that never touches them never imports torch.
_LAZY = {
    "LearnedPositionalEmbedding": "learned",
    "learned_parameter_count": "learned",
    "RelativePositionBias": "relative_torch",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ARENA_RESULTS",
    "frequencies", "wavelengths", "sinusoidal", "shift_matrix", "sinusoidal_dot",
    "LearnedPositionalEmbedding", "learned_parameter_count",
    "relative_positions", "shaw_relative_ids", "shaw_attention", "t5_bucket", "relative_bias",
    "RelativePositionBias",
    "transformer_xl_terms",
    "alibi_slopes", "alibi_bias", "alibi_weight_within",
    "rope_frequencies", "rope_angles", "apply_rope", "apply_rope_complex", "rope_matrix", "layout_permutation",
    "rope_score_bound",
    "position_interpolation", "ntk_base", "ntk_aware", "dynamic_ntk_base", "dynamic_ntk", "yarn",
    "yarn_attention_factor", "yarn_correction_range", "yarn_ramp", "yarn_ramp_paper", "llama3", "longrope",
    "longrope_attention_factor", "base_context_bound", "METHODS",
    "softmax", "causal_mask", "positions_from_mask", "attention", "permutation_matrix",
    "proportional_frequencies", "layer_types", "llama4_attention_scale", "logn_attention_scale",
    "self_extend_distances", "mrope_pair_axes", "mrope_interleaved_pair_axes", "mrope_angles",
    "mrope_vision_positions", "mrope_positions",
    "deepseek_softmax_scale", "mla_scores",
]
