"""The extrapolation arena: tiny causal language models, one per positional scheme, measured past their
training length (``python -m arena``; ``make arena`` and ``make arena-check``).

The experiment lives here, apart from the formulas: :mod:`posenc` holds the schemes and the model they plug
into (:mod:`posenc.models`); this package trains, evaluates, summarises over seeds and checks. One job per
module:

=================  ==========================================================================================
:mod:`.config`     the experiment's settings (:class:`Config`), the smoke settings, the configuration key
:mod:`.data`       the corpus (training files, held-out files), the evaluation windows
:mod:`.train`      one model of one scheme and one seed
:mod:`.evaluate`   per-position losses: every scheme, the RoPE extensions (per-length and fixed scale), dynamic NTK
:mod:`.table`      what the learned position table learned, against an i.i.d. and a smooth random null
:mod:`.stats`      means and spreads over seeds, and the rule that calls a difference a difference
:mod:`.run`        the whole experiment, seeds spread over worker processes, and the results file
:mod:`.check`      a rerun compared number by number with the committed results
=================  ==========================================================================================
"""

from pathlib import Path

from posenc import ARENA_RESULTS

RESULTS: Path = ARENA_RESULTS
