"""The instructor's commands, one module each: ``python -m autograder <command>`` (autograder/__main__.py) calls
the function of the same name in ``autograder.commands.<command>``."""
