"""The instructor's commands, one module each, called by ``python -m autograder <command>``."""
