"""nbgrader in a student's server on the course's JupyterHub (hub/jupyterhub_config.py puts this folder first on
the server's JUPYTER_CONFIG_PATH). The course's settings (autograder/nbgrader_config.py), so that the Validate
button runs every cell with the grading timeout exactly as `make lab` does, and the hub's exchange, whose folder
the spawner passes in POSENC_EXCHANGE_DIR. Fetched assignments go to ~/posenc/<chapter>/."""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
ROOT = Path(__file__).resolve().parents[3]
# nbgrader's command line puts its working folder first on sys.path; in a student's home that folder holds
# ~/posenc/ (the fetched chapters, named after the course), which would shadow the posenc package that the
# course's settings import, and `nbgrader submit` typed in a terminal there would fail. Not from the home, then.
HOME = Path.home().resolve()
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HOME]
load_subconfig(str(ROOT / "autograder" / "nbgrader_config.py"))  # noqa: F821
load_subconfig(str(ROOT / "hub" / "jupyter" / "exchange_config.py"))  # noqa: F821

if not os.environ.get("POSENC_EXCHANGE_DIR"):
    raise RuntimeError("POSENC_EXCHANGE_DIR is not set: this configuration is for servers the course's hub starts")
c.CourseDirectory.root = os.path.expanduser("~")
c.Exchange.root = os.environ["POSENC_EXCHANGE_DIR"]
