"""The extrapolation arena: tiny causal language models, one per positional scheme, measured past their
training length (``python -m arena``; ``make arena`` and ``make arena-check``).

The experiment lives here, apart from the formulas: :mod:`posenc` holds the schemes and the model they plug
into (:mod:`posenc.models`); this package trains, evaluates, summarises over seeds and checks. One job per
module:

=================  ==========================================================================================
:mod:`.config`     the experiment's settings (:class:`Config`), the smoke settings, the configuration key
:mod:`.data`       the corpus (training files, held-out files), the evaluation windows
:mod:`.train`      one model of one scheme and one seed, and the fine-tuning arm
:mod:`.evaluate`   per-position and per-window losses, the RoPE extensions, dynamic NTK, the two controls
:mod:`.table`      what the learned position table learned, against an i.i.d. and a smooth random null
:mod:`.stats`      means and spreads over seeds, and the paired rule that calls a difference a difference
:mod:`.run`        the whole experiment, pairs spread over worker processes, each cached, and the results file
:mod:`.check`      a rerun compared number by number with the committed results
=================  ==========================================================================================
"""

from pathlib import Path

from posenc import ARENA_RESULTS

RESULTS: Path = ARENA_RESULTS
BUILD: Path = Path(__file__).resolve().parent.parent / "_build"  # the course's build area (git-ignored): the cache
