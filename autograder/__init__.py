"""The course's grading side: test-cell helpers (``autograder.checks``) and the instructor CLI (``python -m autograder``)."""
