"""The synthetic class: generated submissions and the scores nbgrader must give them (``builder``), the hostile
code some of them carry (``payloads``), and the code pasted into their cells (``student_code``). Test data, read
by the tests and the grading benchmark; the autograder package never imports it."""

from .builder import (Assignment, Builder, Exercise, Student, find_cell, hostile_class, record_calls,
                      standard_class, strip_markers, submit)
from .payloads import FAKE_CHECKS, HARMLESS_HOOKS, PATCHES, PAYLOADS

__all__ = ["Assignment", "Builder", "Exercise", "FAKE_CHECKS", "HARMLESS_HOOKS", "PATCHES", "PAYLOADS", "Student",
           "find_cell", "hostile_class", "record_calls", "standard_class", "strip_markers", "submit"]
