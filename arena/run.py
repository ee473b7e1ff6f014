"""The whole experiment: every (seed, model) pair trained and evaluated in worker processes, each pair's numbers
kept in a cache as soon as it finishes, then one results file with every seed's numbers and their spreads.

Models (:meth:`arena.config.Config.models`): every scheme of ``config.schemes`` at ``train_len``, the base sweep
(RoPE and sinusoidal at other bases) and the ceiling, ``rope_ceiling``: RoPE trained at ``ceiling_multiple`` x
train_len on a proportionally smaller batch (same steps, same characters seen) at a base suited to that length.
Every model is evaluated on the whole windows (per position, per window), with the two controls
(:func:`arena.evaluate.truncated_losses`, :func:`arena.evaluate.copy_probe`). The RoPE model ``rope`` also runs
every context extension (:func:`arena.evaluate.rope_extensions`) and the fine-tuning arm
(:func:`arena.train.finetune`); the learned model's position table is analysed (:mod:`arena.table`).

Each (seed, model) pair runs in its own process with ``config.threads`` threads, deterministic kernels and its
own seeds, so the numbers do not depend on how pairs are spread over workers, nor on whether a pair came from
the cache: an interrupted run started again trains only the pairs it had not finished. The cache's folder is
named by the configuration's key and a hash of the code that makes the numbers (:func:`code_key`), so a
changed setting or a changed line of that code never reuses old numbers.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from posenc.models import parameter_count

from . import data, evaluate, stats, table
from .config import CEILING, Config
from .train import finetune, train

SCHEMA = 3  # the results file's layout: 3 adds per-window losses, the base sweep, the controls, fine-tuning
# rough CPU cost of each task relative to a plain model, to start the longest first and keep both workers busy
COST = {"rope": 8.0, "t5": 3.0, "alibi": 2.5, CEILING: 2.5, "learned": 1.0}
NUMBER_MODULES = ("config", "data", "evaluate", "run", "table", "train")  # the arena's code that makes numbers
# and posenc's: the model and every module it or the extensions import (posenc.models, posenc.scaling)
POSENC_MODULES = ("models", "_validate", "alibi", "learned", "relative_torch", "relative", "attention", "rope",
                  "rope_torch", "sinusoidal", "scaling")

_progress = None  # a shared step counter, set in each worker


def _init_worker(counter):
    global _progress
    _progress = counter


def _on_step(step, loss):
    if _progress is not None and step % 10 == 9:
        with _progress.get_lock():
            _progress.value += 10


def code_key() -> str:
    """A hash of the source that determines the numbers (:data:`NUMBER_MODULES`, :data:`POSENC_MODULES`) and of
    torch's version: any edit to those files, even to a comment, starts a new cache."""
    here = Path(__file__).resolve().parent
    files = [here / f"{name}.py" for name in NUMBER_MODULES]
    files += [here.parent / "posenc" / f"{name}.py" for name in POSENC_MODULES]
    digest = hashlib.sha256(torch.__version__.encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def cache_folder(config: Config, root: Path) -> Path:
    return Path(root) / f"{config.key()}-{code_key()}"


def task(config: Config, seed: int, name: str) -> tuple[int, str, dict]:
    """Train and evaluate one model: ``(seed, name, numbers)``."""
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    spec = config.models()[name]
    text = data.corpus(config)
    (train_data, held_out), vocab = data.encode([text["train"], text["held_out"]])
    windows = data.eval_windows(held_out, config)
    wall, cpu = time.perf_counter(), time.process_time()
    model = train(spec, train_data, len(vocab), config, seed, on_step=_on_step)
    spent = {"train_seconds": time.perf_counter() - wall, "train_cpu_seconds": time.process_time() - cpu}
    rows = spec.train_len if spec.scheme == "learned" else config.window  # a learned table has no rows past it

    def lap(part):  # CPU seconds of each part of the evaluation, to see where the time goes
        spent[f"{part}_cpu_seconds"] = time.process_time() - cpu - sum(
            v for k, v in spent.items() if k.endswith("cpu_seconds"))

    losses = evaluate.position_losses(model, windows, rows)
    numbers = {"parameters": parameter_count(model), **evaluate.summary(losses, config)}
    lap("evaluate")
    numbers["probe"] = evaluate.copy_probe(model, windows, config, upto=rows)
    lap("probe")
    if rows > config.train_len:
        numbers["truncated"] = evaluate.summary(evaluate.truncated_losses(model, windows, config), config)
        lap("truncated")
    if name == "rope":
        numbers["extensions"] = evaluate.rope_extensions(model, windows, losses, config, spec.rope_base)
        lap("extensions")
        numbers["finetuned"] = {}
        for method in config.finetune_methods:
            tuned = finetune(model, method, spec.rope_base, train_data, config, seed, on_step=_on_step)
            numbers["finetuned"][method] = {
                **evaluate.summary(evaluate.position_losses(tuned, windows, config.window), config),
                "probe": evaluate.copy_probe(tuned, windows, config, upto=config.window),
                "scale": float(config.finetune_multiple)}
        lap("finetune")
    if spec.scheme == "learned":
        weights = model.learned.weight.detach().double().numpy()
        numbers["table"] = table.analysis(weights, spec.sinusoidal_base, config.table_null_draws, seed)
        if seed == config.seeds[0]:
            numbers["table_weights"] = np.round(weights, 4).tolist()  # one seed's table, for the figures
    spent["seconds"] = time.perf_counter() - wall
    spent["cpu_seconds"] = time.process_time() - cpu
    return seed, name, {**numbers, "timing": spent}


def to_json(value, depth: int = 0) -> str:
    """``value`` as JSON indented by one space per level, as ``json.dumps(value, indent=1)`` writes it, except
    that a list of numbers stays on one line: the per-window losses would otherwise take a line per number."""
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(str(k))}: {to_json(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, (dict, list, tuple)) for v in value):
        return "[\n" + ",\n".join(inner + to_json(v, depth + 1) for v in value) + "\n" + pad + "]"
    return json.dumps(value)


def _save(folder: Path, seed: int, name: str, numbers: dict):
    """One pair's numbers, written whole or not at all (a temporary file renamed into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{seed}-{name}.json"
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(numbers))
    os.replace(partial, path)


def run(config: Config, workers: int = 2, show_progress: bool = True, cache: Path | None = None,
        limit: int | None = None, log=print) -> dict | None:
    """The experiment's results, or None when pairs remain (``limit`` trains at most that many pairs; their
    numbers are in ``cache``, and a later run with the same cache trains only the rest). Without ``cache``,
    nothing is kept between runs."""
    start_wall, load_start = time.perf_counter(), os.getloadavg()
    text = data.corpus(config)
    (_, held_out), vocab = data.encode([text["train"], text["held_out"]])
    specs = config.models()
    names = list(specs)
    folder = cache_folder(config, cache) if cache is not None else None
    per_seed = {seed: {} for seed in config.seeds}
    todo = []
    for seed, name in sorted(((seed, name) for seed in config.seeds for name in names),
                             key=lambda t: -COST.get(t[1], 1.0)):
        path = folder / f"{seed}-{name}.json" if folder is not None else None
        if path is not None and path.is_file():
            per_seed[seed][name] = json.loads(path.read_text())
        else:
            todo.append((seed, name))
    reused = sum(len(v) for v in per_seed.values())
    if folder is not None:
        log(f"arena: {reused} of {reused + len(todo)} models already in {folder}, {len(todo)} to train")
    todo = todo if limit is None else todo[:limit]
    counter = multiprocessing.get_context("spawn").Value("q", 0)
    steps = {name: config.steps + (config.finetune_steps * len(config.finetune_methods) if name == "rope" else 0)
             for name in names}
    total_steps = sum(steps[name] for _, name in todo)
    if todo:
        with multiprocessing.get_context("spawn").Pool(min(workers, len(todo)), initializer=_init_worker,
                                                       initargs=(counter,)) as pool, \
                tqdm(total=total_steps, desc="arena", unit="step", disable=not show_progress) as bar:
            pending = [pool.apply_async(task, (config, seed, name)) for seed, name in todo]
            while pending:
                for job in [j for j in pending if j.ready()]:
                    seed, name, numbers = job.get()
                    per_seed[seed][name] = json.loads(json.dumps(numbers))  # as a cached one reads
                    if folder is not None:
                        _save(folder, seed, name, numbers)
                    pending.remove(job)
                    bar.set_postfix_str(f"done: seed {seed} {name}")
                bar.n = min(counter.value, total_steps)
                bar.refresh()
                time.sleep(0.2)
    missing = [(seed, name) for seed in config.seeds for name in names if name not in per_seed[seed]]
    if missing:
        log(f"arena: {len(missing)} models still to train; run again with the same cache to resume")
        return None
    per_seed = {seed: {name: per_seed[seed][name] for name in names} for seed in config.seeds}  # in a fixed order
    timing = {f"{seed}/{name}": per_seed[seed][name].pop("timing") for seed in config.seeds for name in names}
    weights = per_seed[config.seeds[0]].get("learned", {}).pop("table_weights", None)
    ordered = [per_seed[seed] for seed in config.seeds]
    return {
        "schema": SCHEMA,
        "config": asdict(config),
        "config_key": config.key(),
        "corpus": {"sha256": text["sha256"], "vocab_size": len(vocab), "train_characters": len(text["train"]),
                   "held_out_characters": len(held_out), "held_out_modules": list(config.held_out_modules),
                   "window_starts": data.window_starts(len(held_out), config.window, config.eval_windows).tolist(),
                   "source": f"Python {platform.python_version()} standard library (PSF licence)"},
        "eval_lengths": config.eval_lengths,
        "bucket_edges": evaluate.bucket_edges(config).tolist(),
        "models": names,
        "model_specs": {name: asdict(spec) for name, spec in specs.items()},
        "summary": stats.combine(ordered),
        "seeds": {str(seed): per_seed[seed] for seed in config.seeds},
        "learned_table_weights": weights,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__},
        "machine": {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(),
                    "workers": workers, "load_average_start": [round(x, 2) for x in load_start],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()],
                    "models_from_cache": reused},
        "wall_seconds": time.perf_counter() - start_wall,
        "cpu_seconds": sum(t["cpu_seconds"] for t in timing.values()),
        "timing": timing,
    }
