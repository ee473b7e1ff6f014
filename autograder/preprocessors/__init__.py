"""nbgrader's autograde steps as the course runs them, one per module (nbgrader keeps its own preprocessors the
same way); autograder/nbgrader_config.py puts them in nbgrader's lists.

* ``instructor_tests``: ``InstructorTests``, the instructor's test sources and setup imports in the resources;
* ``guarded_execute``: ``GuardedExecute``, nbgrader's Execute; a dead kernel costs the rest of the notebook, not
  the grade; demo cells nothing needs are left out; test cells run only in the grading process;
* ``sandboxed_execute``: ``SandboxedExecute``, ``GuardedExecute`` with the kernel in the bubblewrap sandbox
  (autograde's default);
* ``limit_output``: ``LimitOutput``, nbgrader's line limit plus characters per output;
* ``overwrite_cells``: ``OverwriteCells``, deleted test cells put back even when their neighbours were deleted;
* ``inert_outputs``: ``InertOutputs``, only text, images and errors reach the autograded notebook and feedback;
* ``check_cell_metadata``: ``CheckCellMetadata``, nbgrader's check of the cells' metadata, its schema checked once.
"""

from .check_cell_metadata import CheckCellMetadata
from .guarded_execute import GuardedExecute
from .inert_outputs import InertOutputs
from .instructor_tests import InstructorTests
from .limit_output import LimitOutput
from .overwrite_cells import OverwriteCells
from .sandboxed_execute import SandboxedExecute

__all__ = ["CheckCellMetadata", "GuardedExecute", "InertOutputs", "InstructorTests", "LimitOutput", "OverwriteCells",
           "SandboxedExecute"]
