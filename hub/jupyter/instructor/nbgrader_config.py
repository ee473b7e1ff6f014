"""nbgrader in the instructor's server on the course's JupyterHub (hub/jupyterhub_config.py puts this folder first
on the server's JUPYTER_CONFIG_PATH). The course's settings (autograder/nbgrader_config.py: the sandboxed
autograde, the feedback page, the gradebook), with nbgrader's course folder in the instructor's home
(POSENC_COURSE_DIR, ~/posenc-course, private: gradebook, submitted, autograded, feedback, release) and the hub's
exchange (POSENC_EXCHANGE_DIR). The spawner sets both.

The course folder is the one `python -m autograder` uses with the same POSENC_COURSE_DIR (a terminal of this
server has it): formgrader's buttons and the command line read and write the same gradebook. Its `solutions`
is a link to the checkout's solutions/, the source notebooks, so that formgrader's links open them."""

import os
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
ROOT = Path(__file__).resolve().parents[3]
load_subconfig(str(ROOT / "autograder" / "nbgrader_config.py"))  # noqa: F821
load_subconfig(str(ROOT / "hub" / "jupyter" / "exchange_config.py"))  # noqa: F821

if not (os.environ.get("POSENC_COURSE_DIR") and os.environ.get("POSENC_EXCHANGE_DIR")):
    raise RuntimeError("POSENC_COURSE_DIR and POSENC_EXCHANGE_DIR are not set: this configuration is for the "
                       "instructor's server the course's hub starts")
COURSE = Path(os.environ["POSENC_COURSE_DIR"])
COURSE.mkdir(mode=0o700, parents=True, exist_ok=True)
if not os.path.lexists(COURSE / "solutions"):
    os.symlink(ROOT / "solutions", COURSE / "solutions")
c.CourseDirectory.root = str(COURSE)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "release"  # as `python -m autograder` (autograder/config.py)
c.Exchange.root = os.environ["POSENC_EXCHANGE_DIR"]
