"""The arena: a smoke run of the same code path end to end (run, write, check), the check's comparison, and
committed results that match the code."""

import copy
import json

import numpy as np
import pytest

from posenc import arena
from posenc.models import SCHEMES, TinyDecoder


@pytest.mark.slow
def test_smoke_run_end_to_end_and_its_check(tmp_path, capsys):
    out = tmp_path / "arena.json"
    assert arena.main(["--smoke", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    config = arena.Config(**arena.SMOKE)
    assert result["config_key"] == config.key()
    assert result["check"]["tolerance"] == arena.TOLERANCE
    assert result["wall_seconds"] > 0 and result["cpu_seconds"] > 0
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
    # at the training length every extension is plain RoPE (scale 1), dynamic NTK included
    plain = result["schemes"]["rope"]["by_length"][str(config.train_len)]["loss"]
    for method in arena.EXTENSIONS:
        assert result["rope_extensions"][method][str(config.train_len)]["loss"] == pytest.approx(plain, rel=1e-6)
    dynamic = result["rope_extensions"]["dynamic_ntk"][lengths[-1]]
    assert dynamic["positions"] == arena.sampled_positions(config.train_len, int(lengths[-1]),
                                                           config.dynamic_positions).tolist()
    assert np.isfinite(dynamic["rope_same_positions"]["loss_beyond_train"])
    table = result["learned_table"]
    assert np.array(table["similarity"]).shape == (config.train_len, config.train_len)

    # --check runs the experiment again and compares every number: fixed seeds and deterministic kernels on one
    # thread make the second run identical, so every difference printed is 0
    capsys.readouterr()
    assert arena.main(["--smoke", "--check", "--against", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "every number reproduces within its tolerance" in printed
    loss_line = next(line for line in printed.splitlines() if line.startswith(f"schemes.rope.by_length.{lengths[-1]}.loss "))
    assert "0.00e+00" in loss_line and loss_line.endswith("ok")

    # the same check against a copy with two numbers moved past their tolerance fails, naming both
    bad = copy.deepcopy(result)
    bad["schemes"]["alibi"]["by_length"][lengths[-1]]["loss"] += 1.5 * arena.TOLERANCE["loss"]
    bad["learned_table"]["table"][2][3] += 1.5 * arena.TOLERANCE["table"]
    perturbed = tmp_path / "perturbed.json"
    perturbed.write_text(json.dumps(bad))
    assert arena.main(["--smoke", "--check", "--against", str(perturbed)]) == 1
    printed = capsys.readouterr().out
    assert "2 MISMATCH(ES)" in printed
    assert f"schemes.alibi.by_length.{lengths[-1]}.loss: committed" in printed
    assert "learned_table.table (max at [2, 3])" in printed


def _tiny_result():
    return {"config": {"train_len": 4, "eval_multiples": [1, 2]}, "config_key": "k", "eval_lengths": [4, 8],
            "versions": {"torch": "a"}, "wall_seconds": 10.0, "timing": {"train": {"cpu_seconds": 3.0}},
            "schemes": {"rope": {"parameters": 100, "train_seconds": 1.0,
                                 "by_length": {"4": {"loss": 2.0, "loss_beyond_train": None},
                                               "8": {"loss": 2.5, "loss_beyond_train": 2.7}}},
                        "learned": {"parameters": 116, "by_length": {"4": {"loss": 2.1, "loss_beyond_train": None},
                                                                     "8": None}}},
            "learned_table": {"table": [[0.1, 0.2], [0.3, 0.4]], "offset_explained_variance": 0.8}}


def test_compare_passes_within_tolerance_and_skips_facts_about_the_run():
    committed, rerun = _tiny_result(), _tiny_result()
    rerun["schemes"]["rope"]["by_length"]["8"]["loss"] += 0.5 * arena.TOLERANCE["loss"]
    rerun["learned_table"]["table"][1][0] -= 0.5 * arena.TOLERANCE["table"]
    rerun["versions"]["torch"], rerun["wall_seconds"], rerun["schemes"]["rope"]["train_seconds"] = "b", 99.0, 7.0
    rows = arena.compare(committed, rerun)
    assert all(row["ok"] for row in rows)
    names = {row["name"] for row in rows}
    assert "schemes.rope.by_length.8.loss" in names and "learned_table.table" in names
    assert not {"versions.torch", "wall_seconds", "schemes.rope.train_seconds", "timing.train.cpu_seconds"} & names


@pytest.mark.parametrize("change, name", [
    (lambda r: r["schemes"]["rope"]["by_length"]["8"].update(loss=2.53), "schemes.rope.by_length.8.loss"),
    (lambda r: r["schemes"]["rope"].update(parameters=101), "schemes.rope.parameters"),
    (lambda r: r["schemes"]["rope"]["by_length"]["4"].update(loss_beyond_train=2.0),
     "schemes.rope.by_length.4.loss_beyond_train"),  # a number where the file has none
    (lambda r: r["schemes"]["rope"]["by_length"]["8"].pop("loss"), "schemes.rope.by_length.8.loss"),
    (lambda r: r["learned_table"].update(offset_explained_variance=0.9), "learned_table.offset_explained_variance"),
    (lambda r: r["config"].update(eval_multiples=[1, 3]), "config.eval_multiples"),
])
def test_compare_flags_what_moved_and_report_says_so(change, name, capsys):
    rerun = _tiny_result()
    change(rerun)
    rows = arena.compare(_tiny_result(), rerun)
    assert [row["name"] for row in rows if not row["ok"]] == [name]
    assert arena.report(rows) == 1
    assert f"1 MISMATCH(ES):\n  {name}: committed" in capsys.readouterr().out


def test_check_refuses_a_file_from_another_configuration(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**_tiny_result(), "config_key": "0123456789abcdef"}))
    assert arena.main(["--smoke", "--check", "--against", str(other)]) == 2  # before running anything
    assert "run the experiment (make arena)" in capsys.readouterr().err


def test_summarise_estimates_the_window_mean_from_sampled_positions():
    rng = np.random.default_rng(0)
    losses = rng.uniform(1, 3, size=40)
    full = arena.summarise(losses, 8)
    assert full["loss"] == pytest.approx(losses.mean()) and full["loss_beyond_train"] == pytest.approx(losses[8:].mean())
    positions = np.concatenate([np.arange(8), arena.sampled_positions(8, 40, 5)])  # (13,)
    sampled = arena.summarise(losses[positions], 8, positions, 40)
    assert sampled["loss_beyond_train"] == pytest.approx(losses[positions[8:]].mean())
    assert sampled["loss"] == pytest.approx((losses[:8].sum() + 32 * losses[positions[8:]].mean()) / 40)
    assert arena.sampled_positions(8, 40, 5).tolist() == [8, 16, 24, 31, 39]
    assert arena.sampled_positions(8, 12, 10).tolist() == [8, 9, 10, 11]  # fewer than asked: every position
    assert arena.sampled_positions(8, 8, 10).size == 0
    with pytest.raises(ValueError, match="every position before train_len"):
        arena.summarise(losses[positions[1:]], 8, positions[1:], 40)


def test_config_settings_reach_the_model():
    config = arena.Config(t5_buckets=8, t5_max_distance=20, d_model=16, n_heads=2, n_layers=1)
    model = arena.build("t5", 30, config)
    assert tuple(model.t5.table.weight.shape) == (8, 2)
    assert arena.Config(weight_decay=0.1).key() != arena.Config().key()


def test_committed_results_match_the_current_experiment():
    assert arena.RESULTS.is_file(), "book/data/arena.json is missing: run `make arena` and commit it"
    result = json.loads(arena.RESULTS.read_text())
    config = arena.Config()
    assert result["config_key"] == config.key(), (
        "book/data/arena.json was produced by a different experiment configuration: re-run `make arena`")
    text, checksum = arena.corpus(config)
    assert result["corpus"]["sha256"] == checksum, "the corpus differs from the one the results were computed on"
    assert result["check"]["tolerance"] == arena.TOLERANCE, "the file states other tolerances than --check uses"
    assert result["wall_seconds"] <= 20 * 60, "the issue asks for the full experiment in at most 20 minutes"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_model_is_causal_so_a_prefix_scores_like_the_whole_window(scheme):
    # what the arena relies on to read plain RoPE at dynamic NTK's positions from one pass over the window
    import torch
    torch.manual_seed(0)
    model = TinyDecoder(20, scheme, d_model=16, n_heads=2, n_layers=2, max_len=12).eval()
    tokens = torch.randint(0, 20, (3, 12))
    with torch.no_grad():
        whole, prefix = model(tokens), model(tokens[:, :7])
    torch.testing.assert_close(prefix, whole[:, :7], rtol=1e-5, atol=1e-5)


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
