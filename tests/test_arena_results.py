"""posenc.arena_results, the one reader of the arena's published results that chapters 5, 8 and 9 and their hidden
tests use: every number it gives is the one the file stores, found by model and length."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posenc
from posenc.arena_results import ArenaResults, load, values

RAW = json.loads(posenc.ARENA_RESULTS.read_text())


def test_it_reads_the_published_file():
    runs = ArenaResults()
    assert runs.data == RAW == load()
    assert runs.models == list(RAW["models"]) and runs.train_len == int(RAW["config"]["train_len"])
    assert runs.eval_lengths == sorted(int(L) for L in RAW["eval_lengths"])
    assert runs.n_seeds == len(RAW["seeds"]) == len(RAW["config"]["seeds"])


@pytest.mark.parametrize("model", RAW["models"])
def test_seeds_and_delta_are_the_stored_values(model):
    runs = ArenaResults(RAW)
    L_train = str(RAW["config"]["train_len"])
    for L in sorted({int(x) for x in RAW["eval_lengths"]}):
        stored = RAW["summary"][model]["loss"].get(str(L))
        got = runs.seeds(model, L)
        if stored is None:  # the learned table past its rows
            assert got is None and runs.delta(model, L) is None and runs.spread(model, L) is None
            continue
        assert got.dtype == np.float64 and got.tolist() == stored["values"]
        assert runs.spread(model, L) is stored
        want = np.array(stored["values"]) - np.array(RAW["summary"][model]["loss"][L_train]["values"])
        assert runs.delta(model, L).tolist() == want.tolist()
        assert runs.per_seed(model, "loss", L) == [run[model]["loss"][str(L)] for run in RAW["seeds"].values()]
    assert runs.lengths(model) == sorted(int(x) for x in RAW["summary"][model]["loss"])
    assert runs.parameters(model) == int(next(iter(RAW["seeds"].values()))[model]["parameters"])


def test_a_dict_of_the_files_layout_needs_only_the_parts_read():
    """Hidden tests build random results with only the parts an exercise reads (models and losses)."""
    fake = {"models": ["b", "a"],
            "summary": {"a": {"loss": {"8": {"values": [1.0, 2.0]}}}, "b": {"loss": {}}}}
    runs = ArenaResults(fake)
    assert runs.models == ["b", "a"]
    assert runs.seeds("a", 8).tolist() == [1.0, 2.0] and runs.seeds("b", 8) is None
    assert values(None) is None and runs.values({"values": [3]}).tolist() == [3.0]
    with pytest.raises(KeyError):
        runs.train_len  # no config: asked only where a length is compared with L_train


def test_the_extensions_are_the_stored_values():
    """The RoPE model run with each context extension: at a fixed scale, at the oracle's scale, on dynamic NTK's
    positions, and its per-position curves, each the number the file stores there."""
    runs = ArenaResults(RAW)
    ext = RAW["summary"]["rope"]["extensions"]
    assert runs.extension_methods() == list(ext["per_length"]) and runs.extension_methods()
    for method in runs.extension_methods():
        for L, entry in ext["per_length"][method].items():
            assert runs.extension(method, int(L)).tolist() == entry["loss"]["values"]
        for scale, entry in ext["fixed"][method].items():
            assert runs.extension_curve(method, float(scale)) is entry["curve"]
            for L, spread in entry["loss"].items():
                assert runs.extension(method, int(L), scale=int(scale)).tolist() == spread["values"]
    names = runs.sampled_names()
    assert names[-1] == "dynamic_ntk" and set(names[:-1]) == set(ext["same_positions"])
    for name in names[:-1]:
        for L, spread in ext["same_positions"][name]["loss"].items():
            assert runs.sampled(name, int(L)).tolist() == spread["values"]
    dynamic = ext["dynamic_ntk"]
    per_factor = {1.0: dynamic} if "loss" in dynamic else {float(f): entry for f, entry in dynamic.items()}
    if "loss" not in dynamic:  # one entry per factor (layout 3)
        assert runs.dynamic_factors() == list(per_factor) and len(per_factor) > 1
    for factor, entry in per_factor.items():
        for L, spread in entry["loss"].items():
            assert runs.sampled("dynamic_ntk", int(L), factor=factor).tolist() == spread["values"]


def test_how_each_model_was_trained_and_the_checks_tolerance():
    """The base sweep and the ceiling differ from the scheme's own model in their specification only."""
    runs = ArenaResults(RAW)
    for model in runs.models:
        assert runs.spec(model) == RAW["model_specs"][model] and runs.spec(model) is not RAW["model_specs"][model]
    ceiling = runs.spec("rope_ceiling")
    assert ceiling["train_len"] * ceiling["batch"] == runs.train_len * runs.spec("rope")["batch"]
    assert runs.tolerance == RAW["check"]["tolerance"]["loss"] > 0


@pytest.mark.parametrize("model", RAW["models"])
def test_a_curve_is_the_stored_spreads_per_bucket(model):
    runs = ArenaResults(RAW)
    stored = RAW["summary"][model]["curve"]
    curve = runs.curve(model)
    assert curve.shape == (len(stored), runs.n_seeds) and curve.dtype == np.float64
    assert curve.tolist() == [bucket["values"] for bucket in stored]
    assert runs.bucket_edges.tolist() == RAW["bucket_edges"] and len(stored) <= len(RAW["bucket_edges"]) - 1
