"""``python -m autograder validate NOTEBOOK ... [--unsandboxed]``: nbgrader's validate (the visible tests, as a
student's Validate button runs them) on handed-in notebooks, their kernel in the sandbox."""

from __future__ import annotations

from pathlib import Path

from nbgrader.preprocessors import CheckCellMetadata, ClearOutput
from nbgrader.validator import Validator

from .. import config, gradebook
from ..preprocessors import GuardedExecute


class RecordingValidator(Validator):
    """nbgrader's Validator, keeping the results it prints (for the exit status)."""

    def validate(self, filename):
        self.results = super().validate(filename)
        return self.results


def validate(paths, unsandboxed: bool = False, out=print) -> int:
    """Returns 1 if a notebook is missing or fails its tests, 2 if refused, 0 otherwise."""
    if config.refused(unsandboxed, out):
        return 2
    cfg = config.load_config(sandboxed=not unsandboxed)
    validator = RecordingValidator(config=cfg)
    validator.preprocessors = [CheckCellMetadata, ClearOutput, GuardedExecute]  # (autograde's Execute)
    status = 0
    with gradebook.session():
        for path in map(Path, paths):
            if not path.is_file():
                out(f"ERROR {path}: no such notebook")
                status = 1
                continue
            out(f"[{path}]")
            try:
                validator.validate_and_print(str(path.resolve()))
                status |= any(validator.results.get(key) for key in ("failed", "type_changed", "changed"))
            except Exception as exc:  # a corrupt file, a kernel that would not start: name it, go on
                out(f"ERROR {path}: could not be validated: {type(exc).__name__}: {exc}")
                status = 1
    return status
