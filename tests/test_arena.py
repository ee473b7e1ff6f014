"""The arena: a smoke run of the same code paths end to end (seeds, per-position and per-window losses, fixed-scale
and per-length extensions, dynamic NTK, the base sweep, the ceiling, fine-tuning, both controls, the cache that makes
a run resumable, the check), its parts, the paired rule on constructed data, and committed results that the code
reads."""

import copy
import json

import numpy as np
import pytest

import arena.config
import posenc
from arena import check, data, evaluate, stats, table
from arena.__main__ import main
from arena.config import SMOKE, Config
from arena.config import CEILING
from posenc.models import SCHEMES, ModelConfig, TinyDecoder
from posenc.verdicts import paired_verdict


@pytest.mark.slow
def test_smoke_run_end_to_end_resumed_and_its_check(tmp_path, capsys):
    out, cache = tmp_path / "arena.json", tmp_path / "cache"
    config = Config(**SMOKE)
    models = list(config.models())
    assert models == list(SCHEMES) + ["rope_base1000", "sinusoidal_base200", CEILING]

    # interrupted after one model: no results file, that model's numbers in the cache
    assert main(["--smoke", "--out", str(out), "--cache", str(cache), "--limit", "1"]) == 3
    assert not out.exists()
    (kept,) = list(cache.glob("*/*.json"))
    assert "still to train" in capsys.readouterr().err
    stamp, numbers = kept.stat().st_mtime_ns, kept.read_text()

    # started again: the cached model is read, not trained again, and every other model is trained
    assert main(["--smoke", "--out", str(out), "--cache", str(cache)]) == 0
    total = len(models) * len(config.seeds)
    assert f"1 of {total} models already in" in capsys.readouterr().err
    assert kept.stat().st_mtime_ns == stamp and kept.read_text() == numbers
    assert len(list(cache.glob("*/*.json"))) == total and not list(cache.glob("*/*.part"))
    result = json.loads(out.read_text())
    assert result["machine"]["models_from_cache"] == 1
    assert main(["--smoke", "--out", str(tmp_path / "again.json"), "--cache", str(cache)]) == 0
    assert f"{total} of {total} models already in" in capsys.readouterr().err
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["seeds"] == result["seeds"] and again["summary"] == result["summary"]

    assert result["schema"] == 3 and result["config_key"] == config.key()
    assert result["check"]["tolerance"] == check.TOLERANCE
    assert result["models"] == models and list(result["seeds"]["0"]) == models
    assert result["model_specs"][CEILING]["train_len"] == config.ceiling_multiple * config.train_len
    assert result["model_specs"]["sinusoidal_base200"]["sinusoidal_base"] == 200.0
    assert set(result["seeds"]) == {str(s) for s in config.seeds}
    lengths = [str(L) for L in config.eval_lengths]
    from posenc.arena_results import ArenaResults  # the chapters' reader reads the new layout
    runs = ArenaResults(result)
    assert runs.seeds("alibi", config.window).tolist() == result["summary"]["alibi"]["loss"][lengths[-1]]["values"]
    assert runs.per_seed("rope", "windows", config.window)[0] == result["seeds"]["0"]["rope"]["windows"][lengths[-1]]
    # its per-window readers: the same windows in the same order for every model, each the file's own numbers
    L, s0 = config.window, result["seeds"]["0"]
    assert runs.rule == {**result["verdict_rule"], "margin": stats.MARGIN, "z": stats.Z}
    assert runs.windows("alibi", L).tolist() == stats.windows(result, "alibi", "windows", str(L)).tolist()
    assert runs.extension_windows("yarn", L, scale=2)[0].tolist() == \
        s0["rope"]["extensions"]["fixed"]["yarn"]["2"]["windows"][str(L)]
    assert runs.extension_windows("yarn", L)[0].tolist() == s0["rope"]["extensions"]["per_length"]["yarn"][str(L)]["windows"]
    assert runs.dynamic_factors() == [1.0, 2.0]
    assert runs.sampled_windows("dynamic_ntk", L, factor=2)[0].tolist() == \
        s0["rope"]["extensions"]["dynamic_ntk"]["2"]["windows"][str(L)]
    assert runs.sampled("dynamic_ntk", L, factor=2).tolist() == \
        result["summary"]["rope"]["extensions"]["dynamic_ntk"]["2"]["loss"][str(L)]["values"]
    assert runs.truncated_windows("alibi", L)[0].tolist() == s0["alibi"]["truncated"]["windows"][str(L)]
    assert runs.finetune_methods() == list(config.finetune_methods)
    assert runs.finetuned_windows("yarn", L)[1].tolist() == result["seeds"]["1"]["rope"]["finetuned"]["yarn"]["windows"][str(L)]
    probe_L = runs.probe_lengths("alibi")[-1]
    stored = s0["alibi"]["probe"][str(probe_L)]
    assert runs.probe_gain("alibi", probe_L)[0] == pytest.approx(np.subtract(stored["control"], stored["copy"]))
    assert runs.probe_gain("alibi", probe_L).shape == (len(config.seeds), config.probe_windows)
    assert runs.probe_gain("rope", probe_L, finetuned="yarn").shape == (len(config.seeds), config.probe_windows)
    assert runs.probe_distance("alibi", probe_L) == probe_L - config.probe_span
    # the paired rule on the file's own windows, as a chapter's hidden test calls it
    judged = paired_verdict(runs.windows("alibi", L), runs.windows("t5", L), **{k: runs.rule[k] for k in ("margin", "z")})
    assert judged == stats.paired_verdict(runs.windows("alibi", L), runs.windows("t5", L))
    train = str(config.train_len)
    summary = result["summary"]
    for name in result["models"]:
        for L in lengths:
            entry = summary[name]["loss"].get(L)
            if name == "learned" and int(L) > config.train_len:
                assert entry is None  # no rows beyond max_len: not evaluated, not invented
                continue
            assert entry["values"] == [result["seeds"][str(s)][name]["loss"][L] for s in config.seeds]
            assert np.isfinite(entry["mean"]) and entry["min"] <= entry["mean"] <= entry["max"]
            # the per-window losses behind every mean, per seed (rounded), and not summarised
            per_window = stats.windows(result, name, "windows", L)
            assert per_window.shape == (len(config.seeds), config.eval_windows)
            assert per_window.mean(1) == pytest.approx(entry["values"], abs=1e-4)
            assert "windows" not in summary[name]
        probe = result["seeds"]["0"][name]["probe"]
        upto = min(config.train_len if name == "learned" else config.window, config.probe_max_length)
        assert [int(L) for L in probe] == [L for L in config.eval_lengths if 2 * config.probe_span <= L <= upto]
        for L, p in probe.items():
            assert p["distance"] == int(L) - config.probe_span and len(p["copy"]) == config.probe_windows
            assert p["gain"] == pytest.approx(np.mean(p["control"]) - np.mean(p["copy"]), abs=1e-4)
        truncated = result["seeds"]["0"][name].get("truncated")
        if name == "learned":
            assert truncated is None
        else:  # within L_train the truncated context is the whole context
            assert truncated["loss"][train] == pytest.approx(result["seeds"]["0"][name]["loss"][train], abs=1e-6)
    edges = np.array(result["bucket_edges"])
    assert len(summary["rope"]["curve"]) == len(edges) - 1
    assert len(summary["learned"]["curve"]) == int((edges < config.train_len).sum())

    # at L_train every extension is plain RoPE: per-length (s = 1), dynamic NTK, and the same-position estimates
    ext = summary["rope"]["extensions"]
    plain = summary["rope"]["loss"][train]["values"]
    for method in config.static_extensions:
        assert ext["per_length"][method][train]["loss"]["values"] == pytest.approx(plain, abs=1e-6)
        assert set(ext["fixed"][method]) == {str(s) for s in config.fixed_scales}
        assert stats.windows(result, "rope", "extensions", "fixed", method, "2", "windows", lengths[-1]).shape == (
            len(config.seeds), config.eval_windows)
    assert set(ext["dynamic_ntk"]) == {f"{s:g}" for s in config.dynamic_ntk_scale} == {"1", "2"}
    assert ext["dynamic_ntk"]["1"]["loss"][train]["values"] == pytest.approx(plain, abs=1e-6)
    assert ext["same_positions"]["rope"]["loss"][train]["values"] == pytest.approx(plain, abs=1e-6)
    assert ext["dynamic_ntk"]["2"]["positions"] == evaluate.dynamic_positions(config).tolist()
    dynamic = stats.windows(result, "rope", "extensions", "dynamic_ntk", "2", "windows", lengths[-1])
    assert dynamic.mean(1) == pytest.approx(ext["dynamic_ntk"]["2"]["loss"][lengths[-1]]["values"], abs=1e-4)
    # the fine-tuning arm: every method continued from the same RoPE model, evaluated at every length
    tuned = summary["rope"]["finetuned"]
    assert list(tuned) == list(config.finetune_methods)
    for method in config.finetune_methods:
        assert tuned[method]["scale"] == config.finetune_multiple and set(tuned[method]["loss"]) == set(lengths)
    assert summary["learned"]["table"]["nulls"]["smooth"]["offset_explained_variance"]["mean"]["mean"] > 0
    assert np.array(result["learned_table_weights"]).shape == (config.train_len, config.d_model)

    # --check runs the experiment again and compares every number: fixed seeds and deterministic kernels on one
    # thread make the second run identical, so every difference printed is 0
    capsys.readouterr()
    assert main(["--smoke", "--check", "--against", str(out), "--cache", str(tmp_path / "check")]) == 0
    printed = capsys.readouterr().out
    assert "every number reproduces within its tolerance" in printed
    line = next(x for x in printed.splitlines() if x.startswith(f"summary.alibi.loss.{lengths[-1]}.mean "))
    assert "0.00e+00" in line and line.endswith("ok")
    assert any(x.startswith(f"seeds.1.rope.windows.{lengths[-1]}.2 ") for x in printed.splitlines())

    # the same check against a copy with two numbers moved past their tolerance fails, naming both
    bad = copy.deepcopy(result)
    bad["seeds"]["0"]["alibi"]["loss"][lengths[-1]] += 1.5 * check.TOLERANCE["loss"]
    bad["learned_table_weights"][2][3] += 1.5 * check.TOLERANCE["table"]
    perturbed = tmp_path / "perturbed.json"
    perturbed.write_text(json.dumps(bad))
    assert main(["--smoke", "--check", "--against", str(perturbed), "--cache", str(tmp_path / "check")]) == 1
    printed = capsys.readouterr().out
    assert "2 MISMATCH(ES)" in printed
    assert f"seeds.0.alibi.loss.{lengths[-1]}: committed" in printed
    assert "learned_table_weights (max at [2, 3])" in printed


def _tiny_result():
    return {"config": {"train_len": 4}, "config_key": "k", "eval_lengths": [4, 8], "versions": {"torch": "a"},
            "wall_seconds": 10.0, "timing": {"0/rope": {"cpu_seconds": 3.0}},
            "seeds": {"0": {"rope": {"parameters": 100, "loss": {"4": 2.0, "8": 2.5}, "curve": [2.1, 2.4],
                                     "loss_beyond_train": {"4": None, "8": 2.7}},
                            "learned": {"parameters": 116, "loss": {"4": 2.1},
                                        "table": {"learned": {"offset_explained_variance": 0.8}}}}},
            "learned_table_weights": [[0.1, 0.2], [0.3, 0.4]]}


def test_compare_passes_within_tolerance_and_skips_facts_about_the_run():
    committed, rerun = _tiny_result(), _tiny_result()
    rerun["seeds"]["0"]["rope"]["loss"]["8"] += 0.5 * check.TOLERANCE["loss"]
    rerun["learned_table_weights"][1][0] -= 0.5 * check.TOLERANCE["table"]
    rerun["versions"]["torch"], rerun["wall_seconds"], rerun["timing"]["0/rope"]["cpu_seconds"] = "b", 99.0, 7.0
    rows = check.compare(committed, rerun)
    assert all(row["ok"] for row in rows)
    names = {row["name"] for row in rows}
    assert {"seeds.0.rope.loss.8", "seeds.0.rope.curve.1", "learned_table_weights"} <= names
    assert not {"versions.torch", "wall_seconds", "timing.0/rope.cpu_seconds"} & names


@pytest.mark.parametrize("change, name", [
    (lambda r: r["seeds"]["0"]["rope"]["loss"].update({"8": 2.53}), "seeds.0.rope.loss.8"),
    (lambda r: r["seeds"]["0"]["rope"]["curve"].__setitem__(0, 2.2), "seeds.0.rope.curve.0"),
    (lambda r: r["seeds"]["0"]["rope"].update(parameters=101), "seeds.0.rope.parameters"),
    (lambda r: r["seeds"]["0"]["rope"]["loss_beyond_train"].update({"4": 2.0}),
     "seeds.0.rope.loss_beyond_train.4"),  # a number where the file has none
    (lambda r: r["seeds"]["0"]["rope"]["loss"].pop("8"), "seeds.0.rope.loss.8"),
    (lambda r: r["seeds"]["0"]["learned"]["table"]["learned"].update(offset_explained_variance=0.9),
     "seeds.0.learned.table.learned.offset_explained_variance"),
    (lambda r: r["config"].update(train_len=8), "config.train_len"),
])
def test_compare_flags_what_moved_and_report_says_so(change, name):
    rerun = _tiny_result()
    change(rerun)
    rows = check.compare(_tiny_result(), rerun)
    assert [row["name"] for row in rows if not row["ok"]] == [name]
    printed = []
    assert check.report(rows, out=printed.append) == 1
    assert f"1 MISMATCH(ES):\n  {name}: committed" in "\n".join(printed)


def test_check_refuses_a_missing_file_or_one_from_another_configuration(tmp_path, capsys):
    other = tmp_path / "other.json"
    assert main(["--smoke", "--check", "--against", str(other)]) == 2
    assert "does not exist" in capsys.readouterr().err
    other.write_text(json.dumps({**_tiny_result(), "config_key": "0123456789abcdef"}))
    assert main(["--smoke", "--check", "--against", str(other)]) == 2  # before running anything
    assert "run the experiment (make arena)" in capsys.readouterr().err


def test_summary_reads_every_length_from_one_pass_and_buckets_the_curve():
    config = Config(**SMOKE)  # train_len 16, lengths 16, 32, 64; buckets 4 wide before 16, 8 after
    rng = np.random.default_rng(0)
    losses = rng.uniform(1, 3, size=(3, 64))
    s = evaluate.summary(losses, config)
    assert s["loss"]["32"] == pytest.approx(losses[:, :32].mean())
    assert s["loss_beyond_train"]["64"] == pytest.approx(losses[:, 16:].mean())
    assert s["loss_beyond_train"]["16"] is None
    assert s["text_se"]["16"] == pytest.approx(losses[:, :16].mean(1).std(ddof=1) / np.sqrt(3))
    assert evaluate.bucket_edges(config).tolist() == [0, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64]
    assert s["curve"][4] == pytest.approx(losses[:, 16:24].mean())
    short = evaluate.summary(losses[:, :16], config)  # a learned table: only up to L_train
    assert set(short["loss"]) == {"16"} and len(short["curve"]) == 4


def test_sampled_estimate_is_exact_when_the_loss_is_constant_within_each_bucket():
    config = Config(**SMOKE)
    edges = evaluate.bucket_edges(config)
    rng = np.random.default_rng(1)
    per_bucket = rng.uniform(1, 3, size=len(edges) - 1)
    curve = np.repeat(per_bucket, np.diff(edges))  # (64,)
    estimate = evaluate.sampled_estimate({t: curve[t] for t in range(64)}, config)
    for L in config.eval_lengths:
        assert estimate["loss"][str(L)] == pytest.approx(curve[:L].mean())
    assert evaluate.dynamic_positions(config).tolist() == [20, 28, 36, 44, 52, 60]


def test_bucket_widths_must_put_every_length_on_a_boundary():
    with pytest.raises(ValueError, match=r"evaluation lengths \[24\] do not fall on bucket boundaries"):
        evaluate.bucket_edges(Config(**{**SMOKE, "eval_multiples": (1, 1.5, 4), "bucket_width": (4, 16)}))


def test_config_refuses_a_stride_or_probe_that_does_not_fit():
    with pytest.raises(ValueError, match=r"truncated_stride must divide window - train_len \(3840\)"):
        Config(truncated_stride=100)
    with pytest.raises(ValueError, match="probe_span must be in 2 .. train_len / 2"):
        Config(probe_windows=64)
    with pytest.raises(ValueError, match=r"batch \(6\) must be a multiple of 4"):
        Config(batch=6)


def _tiny_model(scheme="rope", max_len=16):
    import torch
    torch.manual_seed(0)
    return TinyDecoder(ModelConfig(20, scheme, d_model=16, n_heads=2, n_layers=1, max_len=max_len,
                                   t5_buckets=8, t5_max_distance=16)).eval()


def test_truncated_context_scores_each_position_from_its_last_train_len_characters_at_most():
    import torch
    config = Config(**SMOKE)  # train_len 16, window 64, stride 4
    model = _tiny_model()
    windows = np.random.default_rng(0).integers(0, 20, size=(2, config.window + 1))
    got = evaluate.truncated_losses(model, windows, config)
    assert got.shape == (2, config.window)
    assert got[:, :16] == pytest.approx(evaluate.position_losses(model, windows, 16), abs=1e-6)
    for t in (16, 19, 20, 41, 63):  # the loop oracle: one pass per position, on the context the docstring says
        first = t + 1 - (config.train_len - config.truncated_stride + 1 + (t - 16) % config.truncated_stride)
        assert t - first + 1 <= config.train_len
        with torch.no_grad():
            logits = model(torch.as_tensor(windows[:, first:t + 1]))[:, -1]
        want = torch.nn.functional.cross_entropy(logits, torch.as_tensor(windows[:, t + 1]), reduction="none")
        assert got[:, t] == pytest.approx(want.numpy(), abs=1e-5)


def test_copy_probe_places_the_copy_and_gains_nothing_for_a_model_that_reads_nothing():
    import torch

    class Uniform(torch.nn.Module):  # the same logits whatever it reads
        def forward(self, tokens):
            return torch.zeros(*tokens.shape, 20)

    config = Config(**SMOKE)
    windows = np.random.default_rng(0).integers(0, 20, size=(3, config.window + 1))
    probe = evaluate.copy_probe(Uniform(), windows, config, upto=32)
    assert list(probe) == ["16", "32"] and probe["32"]["distance"] == 28
    assert probe["32"]["gain"] == 0 and probe["32"]["copy"] == [pytest.approx(np.log(20), abs=1e-4)] * 2
    real = evaluate.copy_probe(_tiny_model(max_len=64), windows, config, upto=64)
    assert [p["distance"] for p in real.values()] == [12, 28, 60]
    shorter = Config(**{**SMOKE, "probe_max_length": 32})
    assert list(evaluate.copy_probe(Uniform(), windows, shorter, upto=64)) == ["16", "32"]


def test_config_refuses_untrained_t5_buckets_and_held_out_files_in_training():
    with pytest.raises(ValueError, match=r"t5_max_distance must be at most train_len \(256\)"):
        Config(t5_max_distance=512)
    with pytest.raises(ValueError, match=r"held_out_modules must not be trained on, got \['heapq'\]"):
        Config(train_modules=("heapq",))
    assert Config(weight_decay=0.1).key() != Config().key()


def test_held_out_windows_come_from_several_files_and_do_not_overlap():
    config = Config()
    held_out = data.read_modules(config.held_out_modules)
    starts = data.window_starts(len(held_out), config.window, config.eval_windows)
    assert np.all(np.diff(starts) >= config.window + 1)
    bounds = np.cumsum([len(data.read_modules([m])) + 1 for m in config.held_out_modules])
    files = set(np.searchsorted(bounds, starts, side="right"))
    assert files == set(range(len(config.held_out_modules))), "every held-out file holds a window start"


def _never_turn_fraction(d, base, length):
    return float(np.mean(length * posenc.rope_frequencies(d, base) < 2 * np.pi))


def test_the_rope_regime_the_config_documents():
    config = Config()
    assert _never_turn_fraction(config.d_head, config.rope_base, config.train_len) == 0.25
    assert _never_turn_fraction(config.d_head, 10000.0, config.train_len) == 0.5
    assert _never_turn_fraction(128, 10000.0, 4096) == pytest.approx(0.28, abs=0.005)  # Llama 2
    fastest_turns = config.train_len / (2 * np.pi)
    assert fastest_turns > 32 > 2 * np.pi * 32 / config.train_len  # YaRN's beta_fast boundary inside the spectrum
    # the ramp posenc.yarn uses is transformers', and the docstring's weights are its and the paper's
    ramp = posenc.scaling.yarn_ramp(config.d_head, config.rope_base, config.train_len)
    assert np.round(ramp, 2).tolist() == [1, 0.83, 0.67, 0.5, 0.33, 0.17, 0, 0]
    paper = posenc.scaling.yarn_ramp_paper(config.d_head, config.rope_base, config.train_len)
    assert np.round(paper, 2).tolist() == [1, 0.65, 0.32, 0.15, 0.06, 0.02, 0, 0]
    assert "transformers' ramp" in arena.config.__doc__


def test_the_bases_are_chosen_as_the_config_says():
    bound = posenc.scaling.base_context_bound
    config = Config()
    assert config.rope_sweep_bases == (12000.0, 10000.0) and config.sinusoidal_sweep_bases == (config.rope_base,)
    assert bound(config.d_head, config.rope_base) == 29  # 11 % of L_train
    assert bound(config.d_head, 10000.0) == 91  # 36 %; Llama 2: 1,707 of 4,096 (42 %)
    assert bound(config.d_head, 12000.0, max_offset=4096) == 291 >= config.train_len > bound(config.d_head, 11950.0)
    long = config.ceiling_multiple * config.train_len
    assert bound(config.d_head, config.ceiling_base, max_offset=4096) >= long
    assert bound(config.d_head, config.ceiling_base - 500, max_offset=4096) < long
    ceiling = config.models()[CEILING]
    assert ceiling.train_len * ceiling.batch == config.train_len * config.batch  # the same characters per step


def test_stats_spread_verdict_and_combine():
    assert stats.spread([1.0, 2.0, 3.0]) == {"mean": 2.0, "sd": 1.0, "min": 1.0, "max": 3.0, "values": [1.0, 2.0, 3.0]}
    assert stats.spread([1.0, None]) is None
    assert stats.verdict([1.0, 1.1, 1.2], [1.3, 1.4, 1.5]) == "lower"
    assert stats.verdict([1.3, 1.4, 1.5], [1.0, 1.1, 1.2]) == "higher"
    assert stats.verdict([1.0, 1.35, 1.2], [1.3, 1.4, 1.5]) == "tie"
    assert stats.verdict(stats.spread([1.0, 1.1]), stats.spread([2.0, 2.1])) == "lower"
    merged = stats.combine([{"loss": {"8": 1.0}, "scale": 2.0, "curve": [1.0, 2.0], "windows": {"8": [1.0, 1.0]}},
                            {"loss": {"8": 3.0}, "scale": 2.0, "curve": [3.0, 4.0], "windows": {"8": [3.0, 3.0]}}])
    assert merged["loss"]["8"]["mean"] == 2.0 and merged["scale"] == 2.0 and merged["curve"][1]["mean"] == 3.0
    assert "windows" not in merged  # per-window losses stay per seed
    with pytest.raises(ValueError, match="scale differs between seeds"):
        stats.combine([{"scale": 2.0}, {"scale": 4.0}])


def _pair(seed_differences, window_sd=0.05, windows=32, seed=0):
    """Constructed (seeds, windows) losses of two models whose per-seed mean difference is exactly as given."""
    rng = np.random.default_rng(seed)
    b = 2.0 + rng.normal(0, 0.3, (len(seed_differences), windows))  # the text: windows differ a lot
    noise = rng.normal(0, window_sd, b.shape)
    noise -= noise.mean(1, keepdims=True)
    return b + np.asarray(seed_differences)[:, None] + noise, b


def test_paired_rule_calls_a_consistent_difference_beyond_noise_and_margin():
    a, b = _pair([-0.10, -0.08, -0.12, -0.09, -0.11])
    result = stats.paired_verdict(a, b)
    assert result["verdict"] == "lower" and result["difference"] == pytest.approx(-0.10)
    assert result["per_seed"] == pytest.approx([-0.10, -0.08, -0.12, -0.09, -0.11])
    assert result["smallest"] == pytest.approx(-0.08) and result["margin"] == 2 * check.TOLERANCE["loss"]
    assert stats.paired_verdict(b, a)["verdict"] == "higher"
    # the seed ranges overlap (the windows' text moves each seed's mean), yet the pairing resolves it
    assert stats.verdict(a.mean(1), b.mean(1)) == "tie"


@pytest.mark.parametrize("differences, window_sd, why", [
    ([-0.10, -0.08, 0.05, -0.09, -0.11], 0.05, "one seed has the other sign"),
    ([-0.03, -0.035, -0.03, -0.032, -0.031], 0.05, "same sign, but inside twice the check's tolerance"),
    ([-0.06, -0.07, -0.05, -0.06, -0.08], 0.5, "same sign beyond the margin, but within 2 SE of the windows"),
])
def test_paired_rule_leaves_the_rest_unresolved_with_its_size(differences, window_sd, why):
    a, b = _pair(differences, window_sd=window_sd)
    result = stats.paired_verdict(a, b)
    assert result["verdict"] == "unresolved", why
    assert result["difference"] == pytest.approx(np.mean(differences))
    assert np.all(np.array(result["threshold"]) >= result["margin"])


def test_paired_rule_refuses_unpaired_shapes():
    with pytest.raises(ValueError, match=r"\(seeds, windows\) arrays of one shape"):
        stats.paired_verdict(np.zeros((5, 32)), np.zeros((5, 16)))


def test_false_alarm_rate_is_below_the_sign_bound_and_as_documented():
    bound = 2 * 0.5 ** 5  # all five seeds of one sign when nothing differs
    assert stats.false_alarm_rate(seed_sd=5.0, draws=4000) <= bound + 0.01
    assert stats.false_alarm_rate(seed_sd=0.01, draws=4000) == 0.0
    assert stats.false_alarm_rate(seed_sd=0.2, draws=20000) == pytest.approx(0.025, abs=0.001)  # the docstring's
    assert "2.5 % at 0.2" in stats.__doc__


def test_windows_reads_every_seed_from_a_results_file():
    result = {"seeds": {"0": {"rope": {"windows": {"8": [1.0, 2.0]}}}, "1": {"rope": {"windows": {"8": [3.0, 4.0]}}}}}
    assert stats.windows(result, "rope", "windows", "8").tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_smooth_random_tables_have_the_asked_smoothness_and_more_offset_structure_than_iid():
    rng = np.random.default_rng(0)
    smooth = table.smooth_random((400, 64), 0.9, rng)
    assert table.lag1_autocorrelation(smooth) == pytest.approx(0.9, abs=0.03)
    reference = table.cosine_similarity(posenc.sinusoidal(np.arange(400), 64, 10000.0))
    iid = table.statistics(rng.normal(size=(400, 64)), reference)
    assert table.statistics(smooth, reference)["offset_explained_variance"] > iid["offset_explained_variance"]
    result = table.analysis(smooth[:64], 10000.0, draws=5)
    assert result["lag1_autocorrelation"] == pytest.approx(table.lag1_autocorrelation(smooth[:64]))
    for null in ("iid", "smooth"):
        stat = result["nulls"][null]["offset_explained_variance"]
        assert stat["low"] <= stat["mean"] <= stat["high"]


def test_committed_results_match_the_current_experiment():
    from arena import RESULTS

    assert RESULTS.is_file(), "book/data/arena.json is missing: run `make arena` and commit it"
    result = json.loads(RESULTS.read_text())
    config = Config()
    assert result["check"]["tolerance"] == check.TOLERANCE, "the file states other tolerances than --check uses"
    assert result["config_key"] == config.key(), (
        "book/data/arena.json was produced by a different experiment configuration: re-run `make arena`")
    assert result["schema"] == 3 and result["models"] == list(config.models())
    long = str(config.ceiling_multiple * config.train_len)  # the ceiling beats the short model at its own length
    beats = stats.paired_verdict(stats.windows(result, CEILING, "windows", long),
                                 stats.windows(result, "rope", "windows", long))
    assert beats["verdict"] == "lower", f"the ceiling is not a ceiling at {long}: {beats}"
    assert result["corpus"]["sha256"] == data.corpus(config)["sha256"], "the corpus differs from the results'"
    assert len(result["seeds"]) >= 5
    assert result["verdict_rule"] == {**result["verdict_rule"], "margin": stats.MARGIN, "z": stats.Z}
    first = result["seeds"][str(config.seeds[0])]
    assert all(f"rope_base{base:g}" in first for base in config.rope_sweep_bases)  # the base sweep
    assert all("probe" in first[m] for m in config.models())  # the two controls (the learned table has no
    assert all("truncated" in first[m] for m in config.models() if m != "learned")  # positions past L_train)
    # the work itself, independent of what else the machine ran meanwhile: the workers' CPU time spread over the
    # two cores must fit the two hours the issue allows for `make arena`
    assert result["cpu_seconds"] / result["machine"]["workers"] <= 120 * 60, "the experiment's work exceeds 2 hours"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_model_is_causal_so_a_prefix_scores_like_the_whole_window(scheme):
    # what the arena relies on to read every evaluation length from one pass over the longest windows
    import torch
    torch.manual_seed(0)
    model = TinyDecoder(ModelConfig(20, scheme, d_model=16, n_heads=2, n_layers=2, max_len=12,
                                    t5_buckets=8, t5_max_distance=12)).eval()
    tokens = torch.randint(0, 20, (3, 12))
    with torch.no_grad():
        whole, prefix = model(tokens), model(tokens[:, :7])
    torch.testing.assert_close(prefix, whole[:, :7], rtol=1e-5, atol=1e-5)


def test_model_config_rejects_bad_scheme_and_sizes():
    with pytest.raises(ValueError, match=r"scheme must be one of .* got 'relative'"):
        ModelConfig(10, "relative")
    with pytest.raises(ValueError, match=r"d_model / n_heads must be an even integer"):
        ModelConfig(10, "rope", d_model=12, n_heads=4)
    with pytest.raises(TypeError, match="config must be a posenc.models.ModelConfig, got int"):
        TinyDecoder(10)


def test_t5_table_starts_as_t5_starts_it():
    import torch
    torch.manual_seed(0)
    model = TinyDecoder(ModelConfig(10, "t5", d_model=128, n_heads=64, n_layers=1, t5_buckets=32))
    assert float(model.t5.table.weight.std()) == pytest.approx(128 ** -0.5, rel=0.1)  # 2048 draws


def test_learned_model_refuses_positions_beyond_training():
    import torch
    model = TinyDecoder(ModelConfig(10, "learned", d_model=8, n_heads=2, n_layers=1, max_len=8))
    with pytest.raises(ValueError, match=r"max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_the_cache_key_covers_every_posenc_module_the_numbers_come_from():
    import ast
    from pathlib import Path

    import arena.run

    root = Path(arena.run.__file__).resolve().parent.parent
    todo = [root / "arena" / f"{name}.py" for name in arena.run.NUMBER_MODULES]
    seen = set()
    while todo:  # every posenc module these files import, and what those import in turn
        path = todo.pop()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            inside = path.parent.name == "posenc" and node.level == 1
            if node.module and (node.module.startswith("posenc.") or inside):
                names = [node.module.split(".")[-1]]
            elif node.module == "posenc" or (inside and node.module is None):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if (root / "posenc" / f"{name}.py").is_file() and name not in seen:
                    seen.add(name)
                    todo.append(root / "posenc" / f"{name}.py")
    assert seen and seen <= set(arena.run.POSENC_MODULES), sorted(seen - set(arena.run.POSENC_MODULES))


def test_results_are_written_as_json_with_lists_of_numbers_on_one_line():
    from arena.run import to_json

    value = {"windows": {"8": [2.1234, 2.5, None]}, "nested": [[0.1, 0.2], [0.3]], "empty": [], "none": {}, "s": "x"}
    text = to_json(value)
    assert json.loads(text) == value
    assert '"8": [2.1234, 2.5, null]' in text and "\n  [0.1, 0.2],\n" in text
