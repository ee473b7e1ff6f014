"""nbgrader's autograde steps as the course runs them, one per module (nbgrader keeps its own preprocessors the
same way); autograder/nbgrader_config.py puts them in nbgrader's lists.

* ``restore_imports``: ``RestoreImports``, the setup cell's imports (and ``checks.untampered()``) at the top of
  every test cell, and the instructor's test sources in the resources;
* ``guarded_execute``: ``GuardedExecute``, nbgrader's Execute; a dead kernel costs the rest of the notebook, not
  the grade; demo cells nothing needs are left out; test cells are decided in the grading process;
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
from .limit_output import LimitOutput
from .overwrite_cells import OverwriteCells
from .restore_imports import RestoreImports
from .sandboxed_execute import SandboxedExecute

__all__ = ["CheckCellMetadata", "GuardedExecute", "InertOutputs", "LimitOutput", "OverwriteCells", "RestoreImports",
           "SandboxedExecute"]
