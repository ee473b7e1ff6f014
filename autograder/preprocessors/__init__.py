"""nbgrader's autograde steps as the course runs them, one per module (as nbgrader keeps its own);
autograder/nbgrader_config.py puts them in nbgrader's lists (with nbgrader's own CheckCellMetadata)."""

from nbgrader.preprocessors import CheckCellMetadata

from .guarded_execute import GuardedExecute
from .inert_outputs import InertOutputs
from .instructor_tests import InstructorTests
from .limit_output import LimitOutput
from .overwrite_cells import OverwriteCells
from .sandboxed_execute import SandboxedExecute

__all__ = ["CheckCellMetadata", "GuardedExecute", "InertOutputs", "InstructorTests", "LimitOutput", "OverwriteCells",
           "SandboxedExecute"]
