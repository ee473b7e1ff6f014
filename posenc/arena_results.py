"""The one reader of the extrapolation arena's published results (``posenc.ARENA_RESULTS``, the file the arena
writes): chapters 5, 8 and 9, their figures and their hidden tests read the numbers through it, so the layout of
the file is known in one place.

    from posenc.arena_results import ArenaResults
    runs = ArenaResults()                  # the published file; ArenaResults(a_dict) reads a dict of that layout
    runs.seeds("alibi", 1024)              # the seeds' losses at L = 1024, float64 (n_seeds,), or None
    runs.delta("alibi", 1024)              # per seed, the loss at 1024 minus the same model's at L_train
    runs.extension("yarn", 1024, scale=4)  # the RoPE model with YaRN at s = 4, the seeds' losses at 1024
    runs.sampled("dynamic_ntk", 1024)      # on the positions dynamic NTK was scored at
    runs.curve("alibi"), runs.bucket_edges  # the per-position loss, (buckets, n_seeds), and the buckets' edges

Reading needs numpy and json only (no torch, no arena). It holds no rule of the arena (the verdict between two
models is an exercise: the kernel that grades it sees posenc), only where each number is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def load(path: str | Path | None = None) -> dict:
    """The results file as ``json.loads`` returns it (default: ``posenc.ARENA_RESULTS``)."""
    if path is None:
        from . import ARENA_RESULTS as path
    return json.loads(Path(path).read_text())


def values(spread: dict | None) -> np.ndarray | None:
    """One number per seed, in seed order, from a stored spread (its ``"values"``), float64; None for None
    (a number the file does not have)."""
    return None if spread is None else np.array(spread["values"], dtype=np.float64)


class ArenaResults:
    """The arena's results, read by model and evaluation length. ``results`` is a dict with the file's layout
    (``models``, ``summary``, ``seeds``, ``config``, ``eval_lengths``; a part may be missing where nobody reads
    it); None reads the published file."""

    def __init__(self, results: dict | None = None):
        self.data = load() if results is None else results

    values = staticmethod(values)

    @property
    def config(self) -> dict:
        return self.data["config"]

    @property
    def summary(self) -> dict:
        """Per model, its numbers summarised over seeds (``{"loss": {"<L>": spread}, ...}``)."""
        return self.data["summary"]

    @property
    def models(self) -> list[str]:
        return list(self.data["models"])

    @property
    def train_len(self) -> int:
        """L_train: the length every model was trained at."""
        return int(self.config["train_len"])

    @property
    def n_seeds(self) -> int:
        """How many seeds (training runs) each model has."""
        return len(self.data["seeds"])

    @property
    def eval_lengths(self) -> list[int]:
        return sorted(int(length) for length in self.data["eval_lengths"])

    @property
    def bucket_edges(self) -> np.ndarray:
        """The edges of the position buckets the per-position curves are averaged over (int64, n_buckets + 1)."""
        return np.array(self.data["bucket_edges"], dtype=np.int64)

    def curve(self, model: str) -> np.ndarray:
        """The model's per-position loss: its mean loss in each position bucket (:attr:`bucket_edges`), per seed,
        float64 (n_buckets, n_seeds); a model whose table ends early (learned) has fewer buckets."""
        return np.array([bucket["values"] for bucket in self.summary[model]["curve"]], dtype=np.float64)

    def lengths(self, model: str, key: str = "loss") -> list[int]:
        """The evaluation lengths at which ``model`` has ``key`` (the learned model stops at its table's rows)."""
        return sorted(int(length) for length in self.summary[model][key])

    def spread(self, model: str, length: int, key: str = "loss") -> dict | None:
        """The stored summary of ``key`` for ``model`` at ``length`` over the seeds (``{"mean", "sd", "min",
        "max", "values"}``), or None where the model has none."""
        return self.summary[model][key].get(str(int(length)))

    def seeds(self, model: str, length: int, key: str = "loss") -> np.ndarray | None:
        """The seeds' values of ``key`` for ``model`` at ``length``: float64 (n_seeds,), or None where the
        model has none (the learned table past its rows)."""
        return values(self.spread(model, length, key))

    def delta(self, model: str, length: int) -> np.ndarray | None:
        """Delta L per seed: the loss at ``length`` minus the same model's loss at L_train (nats), within each
        seed; None where the model has no loss at ``length``."""
        at = self.seeds(model, length)
        return None if at is None else at - self.seeds(model, self.train_len)

    def per_seed(self, model: str, key: str, length: int) -> list[float | None]:
        """The raw number ``key`` of ``model`` at ``length`` in each seed's own record (``results["seeds"]``, in
        the file's seed order), None in a seed that has none."""
        return [run[model][key].get(str(int(length))) for run in self.data["seeds"].values()]

    def parameters(self, model: str) -> int:
        """The model's parameter count (the same in every seed)."""
        return int(next(iter(self.data["seeds"].values()))[model]["parameters"])

    def spec(self, model: str) -> dict:
        """How ``model`` was trained: ``{"name", "scheme", "train_len", "batch", "rope_base", "sinusoidal_base"}``
        (the base sweep and the ceiling differ from the scheme's own model only here)."""
        return dict(self.data["model_specs"][model])

    @property
    def tolerance(self) -> float:
        """The loss tolerance of ``python -m arena --check`` (nats): how far a rerun on another machine may move
        one stored loss."""
        return float(self.data["check"]["tolerance"]["loss"])

    def _extensions(self, model: str) -> dict:
        return self.summary[model]["extensions"]

    def extension_methods(self, model: str = "rope") -> list[str]:
        """The static context extensions ``model`` was run with (``position_interpolation``, ...)."""
        return list(self._extensions(model)["per_length"])

    def sampled_names(self, model: str = "rope") -> list[str]:
        """Every name :meth:`sampled` reads: ``model`` (plain), each ``"<method>@<s>"``, ``"dynamic_ntk"``."""
        return [*self._extensions(model)["same_positions"], "dynamic_ntk"]

    def extension_curve(self, method: str, scale: float, model: str = "rope") -> dict:
        """The stored per-position loss curve of ``model`` with ``method`` at the fixed ``scale`` (the layout of
        a model's ``curve``)."""
        return self._extensions(model)["fixed"][method][f"{scale:g}"]["curve"]

    def extension(self, method: str, length: int, scale: float | None = None, model: str = "rope") -> np.ndarray:
        """The seeds' losses at ``length`` of ``model`` run with the static context extension ``method``
        (``position_interpolation``, ``ntk_aware``, ``yarn``): at the fixed ``scale``, or, with None, at the
        oracle's s = max(1, length / L_train)."""
        ext = self._extensions(model)
        if scale is None:
            return values(ext["per_length"][method][str(int(length))]["loss"])
        return values(ext["fixed"][method][f"{scale:g}"]["loss"][str(int(length))])

    def sampled(self, name: str, length: int, model: str = "rope", factor: float = 1.0) -> np.ndarray:
        """The seeds' losses at ``length`` on the sample of positions dynamic NTK was scored at: ``name`` is
        ``"dynamic_ntk"`` (with transformers' ``factor``), ``model`` itself (plain) or ``"<method>@<s>"`` (a
        static method at the fixed scale s)."""
        return values(self._sampled_entry(self._extensions(model), name, factor)["loss"][str(int(length))])

    @staticmethod
    def _sampled_entry(ext: dict, name: str, factor: float) -> dict:
        if name != "dynamic_ntk":
            return ext["same_positions"][name]
        dynamic = ext["dynamic_ntk"]
        return dynamic if "loss" in dynamic else dynamic[f"{factor:g}"]  # one factor, or one entry per factor

    # Per-window losses (layout 3): every comparison is paired, seed by seed and window by window, so the readers
    # below return ``(n_seeds, n_windows)`` arrays of the same windows in the same order, for
    # :func:`posenc.verdicts.paired_verdict`.

    @property
    def rule(self) -> dict:
        """The paired rule's settings the results were judged with: ``{"margin": nats, "z": standard errors}``."""
        return self.data["verdict_rule"]

    def _per_seed_record(self, model: str) -> list[dict]:
        return [run[model] for run in self.data["seeds"].values()]

    @staticmethod
    def _stack(rows) -> np.ndarray:
        return np.array(list(rows), dtype=np.float64)

    def windows(self, model: str, length: int) -> np.ndarray:
        """``model``'s loss at ``length`` in each held-out window, per seed: float64 (n_seeds, n_windows)."""
        return self._stack(run["windows"][str(int(length))] for run in self._per_seed_record(model))

    def extension_windows(self, method: str, length: int, scale: float | None = None,
                          model: str = "rope") -> np.ndarray:
        """:meth:`extension`, per window: (n_seeds, n_windows)."""
        if scale is None:
            return self._stack(run["extensions"]["per_length"][method][str(int(length))]["windows"]
                               for run in self._per_seed_record(model))
        return self._stack(run["extensions"]["fixed"][method][f"{scale:g}"]["windows"][str(int(length))]
                           for run in self._per_seed_record(model))

    def sampled_windows(self, name: str, length: int, model: str = "rope", factor: float = 1.0) -> np.ndarray:
        """:meth:`sampled`, per window: (n_seeds, n_windows)."""
        return self._stack(self._sampled_entry(run["extensions"], name, factor)["windows"][str(int(length))]
                           for run in self._per_seed_record(model))

    def dynamic_factors(self, model: str = "rope") -> list[float]:
        """The factors s dynamic NTK was run with."""
        return [float(f) for f in self._extensions(model)["dynamic_ntk"]]

    def truncated_windows(self, model: str, length: int) -> np.ndarray:
        """Control 1, per window: ``model``'s loss at ``length`` with every position's context cut to about
        L_train (n_seeds, n_windows)."""
        return self._stack(run["truncated"]["windows"][str(int(length))] for run in self._per_seed_record(model))

    def finetune_methods(self, model: str = "rope") -> list[str]:
        """The fine-tuning arm's methods ("default" is the control: longer windows, no rescaling)."""
        return list(self._per_seed_record(model)[0]["finetuned"])

    def finetuned_windows(self, method: str, length: int, model: str = "rope") -> np.ndarray:
        """The fine-tuning arm, per window: ``model`` fine-tuned with ``method`` (n_seeds, n_windows)."""
        return self._stack(run["finetuned"][method]["windows"][str(int(length))]
                           for run in self._per_seed_record(model))

    def probe_lengths(self, model: str) -> list[int]:
        """The lengths control 2 (the copy probe) was run at for ``model``."""
        return sorted(int(length) for length in self._per_seed_record(model)[0]["probe"])

    def probe_gain(self, model: str, length: int, finetuned: str | None = None) -> np.ndarray:
        """Control 2, per window: the control's loss minus the copy's on the copied span, at ``length`` (the copy
        ``length - span`` characters back), per seed (n_seeds, n_probe_windows); clearly above 0 where the model
        reads that far. ``finetuned``: the fine-tuned RoPE model of that method instead."""
        runs = self._per_seed_record(model)
        if finetuned is not None:
            runs = [run["finetuned"][finetuned] for run in runs]
        probes = [run["probe"][str(int(length))] for run in runs]
        return self._stack(np.subtract(p["control"], p["copy"]) for p in probes)

    def probe_distance(self, model: str, length: int) -> int:
        """How far back the copy lies in control 2 at ``length`` (characters)."""
        return int(self._per_seed_record(model)[0]["probe"][str(int(length))]["distance"])
