"""The whole experiment: every (seed, model) pair trained and evaluated in worker processes, then one results
file with every seed's numbers and their spreads.

Models: every scheme of ``config.schemes`` at ``train_len``, and the ceiling, ``rope_ceiling``: RoPE trained at
``ceiling_multiple`` x train_len on a proportionally smaller batch (same steps, same characters seen). The RoPE
model's evaluation also runs every context extension (:func:`arena.evaluate.rope_extensions`); the learned model's
position table is analysed (:mod:`arena.table`).

Each (seed, model) pair runs in its own process with ``config.threads`` threads, deterministic kernels and its
own seeds, so the numbers do not depend on how pairs are spread over workers.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import time
from dataclasses import asdict

import numpy as np
import torch
from tqdm import tqdm

from posenc.models import parameter_count

from . import data, evaluate, stats, table
from .config import Config
from .train import train

CEILING = "rope_ceiling"
# rough CPU cost of each task (seconds at full size), to start the longest first and keep both workers busy
COST = {"rope": 3.0, "alibi": 2.0, "t5": 2.0, CEILING: 2.2}

_progress = None  # a shared step counter, set in each worker


def _init_worker(counter):
    global _progress
    _progress = counter


def _on_step(step, loss):
    if _progress is not None and step % 10 == 9:
        with _progress.get_lock():
            _progress.value += 10


def task(config: Config, seed: int, name: str) -> tuple[int, str, dict]:
    """Train and evaluate one model: ``(seed, name, numbers)``."""
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    text = data.corpus(config)
    (train_data, held_out), vocab = data.encode([text["train"], text["held_out"]])
    windows = data.eval_windows(held_out, config)
    wall, cpu = time.perf_counter(), time.process_time()
    if name == CEILING:
        factor = config.ceiling_multiple
        model = train("rope", train_data, len(vocab), config, seed, train_len=factor * config.train_len,
                      batch=max(1, config.batch // factor), on_step=_on_step)
    else:
        model = train(name, train_data, len(vocab), config, seed, on_step=_on_step)
    spent = {"train_seconds": time.perf_counter() - wall, "train_cpu_seconds": time.process_time() - cpu}
    rows = config.train_len if name == "learned" else config.window  # a learned table has no rows past L_train
    losses = evaluate.position_losses(model, windows, rows)
    numbers = {"parameters": parameter_count(model), **evaluate.summary(losses, config)}
    if name == "rope":
        numbers["extensions"] = evaluate.rope_extensions(model, windows, losses, config)
    if name == "learned":
        weights = model.learned.weight.detach().double().numpy()
        numbers["table"] = table.analysis(weights, config.sinusoidal_base, config.table_null_draws, seed)
        if seed == config.seeds[0]:
            numbers["table_weights"] = np.round(weights, 4).tolist()  # one seed's table, for the figures
    spent["seconds"] = time.perf_counter() - wall
    spent["cpu_seconds"] = time.process_time() - cpu
    return seed, name, {**numbers, "timing": spent}


def run(config: Config, workers: int = 2, show_progress: bool = True) -> dict:
    start_wall, load_start = time.perf_counter(), os.getloadavg()
    text = data.corpus(config)
    (_, held_out), vocab = data.encode([text["train"], text["held_out"]])
    names = list(config.schemes) + ([CEILING] if "rope" in config.schemes else [])
    tasks = sorted(((seed, name) for seed in config.seeds for name in names), key=lambda t: -COST.get(t[1], 1.0))
    counter = multiprocessing.get_context("spawn").Value("q", 0)
    per_seed = {seed: {} for seed in config.seeds}
    total_steps = config.steps * len(tasks)
    with multiprocessing.get_context("spawn").Pool(workers, initializer=_init_worker, initargs=(counter,)) as pool, \
            tqdm(total=total_steps, desc="arena", unit="step", disable=not show_progress) as bar:
        pending = [pool.apply_async(task, (config, seed, name)) for seed, name in tasks]
        while pending:
            for job in [j for j in pending if j.ready()]:
                seed, name, numbers = job.get()
                per_seed[seed][name] = numbers
                pending.remove(job)
                bar.set_postfix_str(f"done: seed {seed} {name}")
            bar.n = min(counter.value, total_steps)
            bar.refresh()
            time.sleep(0.5)
    timing = {f"{seed}/{name}": per_seed[seed][name].pop("timing") for seed in config.seeds for name in names}
    weights = per_seed[config.seeds[0]].get("learned", {}).pop("table_weights", None)
    ordered = [per_seed[seed] for seed in config.seeds]
    return {
        "config": asdict(config),
        "config_key": config.key(),
        "corpus": {"sha256": text["sha256"], "vocab_size": len(vocab), "train_characters": len(text["train"]),
                   "held_out_characters": len(held_out), "held_out_modules": list(config.held_out_modules),
                   "window_starts": data.window_starts(len(held_out), config.window, config.eval_windows).tolist(),
                   "source": f"Python {platform.python_version()} standard library (PSF licence)"},
        "eval_lengths": config.eval_lengths,
        "bucket_edges": evaluate.bucket_edges(config).tolist(),
        "models": names,
        "summary": stats.combine(ordered),
        "seeds": {str(seed): per_seed[seed] for seed in config.seeds},
        "learned_table_weights": weights,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__},
        "machine": {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(),
                    "workers": workers, "load_average_start": [round(x, 2) for x in load_start],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "wall_seconds": time.perf_counter() - start_wall,
        "cpu_seconds": sum(t["cpu_seconds"] for t in timing.values()),
        "timing": timing,
    }
