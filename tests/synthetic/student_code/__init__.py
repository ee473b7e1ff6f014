"""Code that generated submissions carry in their cells. Each module here is self-contained (its own imports,
names that start with ``_`` so that they do not meet the student's) and is pasted whole, as its source, into a
cell: ``pasted(module)``. Being real modules, the linter and the tests read them."""

import inspect


def pasted(module) -> str:
    """A module's source as cell code."""
    return inspect.getsource(module)
