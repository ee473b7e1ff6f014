"""The course's autograde steps, one per module; autograder/nbgrader_config.py puts them in nbgrader's lists."""

from .guarded_execute import GuardedExecute
from .inert_outputs import InertOutputs
from .instructor_tests import InstructorTests
from .overwrite_cells import OverwriteCells

__all__ = ["GuardedExecute", "InertOutputs", "InstructorTests", "OverwriteCells"]
