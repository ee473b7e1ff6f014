"""Every chapter's students, from tests/students/chNN.py (one module per chapter, so that a chapter's students
change with its text):

* DIFFERENT: correct solutions written differently from the model solutions, one per exercise: loops instead of
  vectorised code, Python lists and tuples, math instead of numpy, other but equivalent formulas, helpers and
  prints, autograd imported by name. The synthetic class (tests/test_autograder_class.py) grades them with the
  real pipeline and tests/test_fair_draws.py on many draws: every one must score full marks.
* WARNING_VARIANTS: correct solutions that print a numpy RuntimeWarning on stderr (a branch np.where throws
  away), which must not cost a point.
* FLOAT32_BY_HAND: correct solutions computed in float32 throughout (the model solutions wrapped to work in
  float32 stand in for the exercises not listed); FLOAT64_PINNED: exercises whose prompt pins float64, with the
  reason the prompt gives, where no float32 student is owed.
* PLAUSIBLY_WRONG: {chapter: {solution id: {what is wrong: source}}}, answers with a mistake a student would
  make; each must lose its exercise's points on every draw (tests/test_fair_draws.py).
"""

import importlib

from autograder import course


def _chapters():
    for name in course.assignments():
        yield name, importlib.import_module(f"students.ch{name[:2]}")


def _gather(attribute: str) -> dict:
    return {name: getattr(module, attribute) for name, module in _chapters() if getattr(module, attribute)}


DIFFERENT = _gather("DIFFERENT")
WARNING_VARIANTS = _gather("WARNING_VARIANTS")
FLOAT32_BY_HAND = _gather("FLOAT32_BY_HAND")
FLOAT64_PINNED = _gather("FLOAT64_PINNED")
PLAUSIBLY_WRONG = _gather("PLAUSIBLY_WRONG")
