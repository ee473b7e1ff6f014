# nbgrader reads this file when run from the repository root; the course's settings are in autograder/.
load_subconfig("autograder/nbgrader_config.py")  # noqa: F821
