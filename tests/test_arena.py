"""The arena: a smoke run of the same code path end to end, and committed results that match the code."""

import json

import numpy as np
import pytest

from posenc import arena
from posenc.models import SCHEMES, TinyDecoder


@pytest.mark.slow
def test_smoke_run_end_to_end(tmp_path):
    out = tmp_path / "arena.json"
    assert arena.main(["--smoke", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    config = arena.Config(**arena.SMOKE)
    assert result["config_key"] == config.key()
    lengths = [str(int(config.train_len * m)) for m in config.eval_multiples]
    for scheme in SCHEMES:
        for length in lengths:
            entry = result["schemes"][scheme]["by_length"][length]
            if scheme == "learned" and int(length) > config.train_len:
                assert entry is None  # no rows beyond max_len: not evaluated, not invented
            else:
                assert np.isfinite(entry["loss"]) and 0 < entry["loss"] < 10
    for method in arena.EXTENSIONS:
        assert set(result["rope_extensions"][method]) == set(lengths)
    # at the training length every extension is plain RoPE (scale 1)
    plain = result["schemes"]["rope"]["by_length"][str(config.train_len)]["loss"]
    for method in ("position_interpolation", "ntk_aware", "yarn"):
        assert result["rope_extensions"][method][str(config.train_len)]["loss"] == pytest.approx(plain, rel=1e-6)
    table = result["learned_table"]
    assert np.array(table["similarity"]).shape == (config.train_len, config.train_len)
    # fixed seeds and deterministic kernels: a second run gives the same numbers (the tolerance README states)
    again = arena.run(config, show_progress=False)
    for scheme in SCHEMES:
        for length in lengths:
            first, second = result["schemes"][scheme]["by_length"][length], again["schemes"][scheme]["by_length"][length]
            if first is not None:
                assert second["loss"] == pytest.approx(first["loss"], rel=1e-6, abs=1e-6)


def test_committed_results_match_the_current_experiment():
    assert arena.RESULTS.is_file(), "book/data/arena.json is missing: run `make arena` and commit it"
    result = json.loads(arena.RESULTS.read_text())
    config = arena.Config()
    assert result["config_key"] == config.key(), (
        "book/data/arena.json was produced by a different experiment configuration: re-run `make arena`")
    text, checksum = arena.corpus(config)
    assert result["corpus"]["sha256"] == checksum, "the corpus differs from the one the results were computed on"


def test_model_rejects_bad_scheme_and_sizes():
    with pytest.raises(ValueError, match=r"scheme must be one of .* got 'relative'"):
        TinyDecoder(10, "relative")
    with pytest.raises(ValueError, match=r"d_model / n_heads must be an even integer"):
        TinyDecoder(10, "rope", d_model=12, n_heads=4)


def test_learned_model_refuses_positions_beyond_training():
    import torch
    model = TinyDecoder(10, "learned", d_model=8, n_heads=2, n_layers=1, max_len=8)
    with pytest.raises(ValueError, match=r"max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
