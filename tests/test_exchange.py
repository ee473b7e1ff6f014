"""The hub's exchange (autograder/exchange.py) on folders made here: what a submission may hold, and the time it
records. The hub's test (tests/test_hub.py) attacks the same code with real Unix users through nbgrader."""

import os
import time

import pytest

from autograder.exchange import Refused, exchange_tree, server_time

LIMIT = 10  # kilobytes, as nbgrader's CourseDirectory.max_dir_size


def submission(tmp_path):
    folder = tmp_path / "ada+02_sinusoidal+2026-01-01 00:00:00.000000 UTC+x"
    (folder / "sub").mkdir(parents=True)
    (folder / "02_sinusoidal.ipynb").write_text("{}")
    (folder / "sub" / "data.txt").write_text("1234")
    (folder / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "link").symlink_to("/etc/passwd")  # ignored, as nbgrader ignores it
    return folder


def test_a_plain_submission_is_copied_without_its_timestamp(tmp_path):
    folder = submission(tmp_path)
    tree = exchange_tree(LIMIT, os.getuid(), [".ipynb_checkpoints"]).read(folder, tmp_path / "copy")
    assert sorted(p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*")) == [
        "02_sinusoidal.ipynb", "sub", "sub/data.txt"]
    assert (tmp_path / "copy" / "sub" / "data.txt").read_text() == "1234"
    assert tree.ctime >= os.lstat(folder).st_ctime and not server_time(tree).startswith("2000")


@pytest.mark.parametrize("make, reason", [
    (lambda f: (f / "sub" / "link").symlink_to("/etc/passwd"), "symbolic link"),
    (lambda f: os.mkfifo(f / "sub" / "pipe"), "not a regular file"),
    (lambda f: (f / "big").write_bytes(b"x" * 1000 * LIMIT), "size limit"),
    (lambda f: os.truncate(f / "sub" / "data.txt", 10_000 * LIMIT), "size limit"),
])
def test_a_submission_is_refused_before_anything_is_copied(tmp_path, make, reason):
    folder = submission(tmp_path)
    make(folder)
    with pytest.raises(Refused, match=reason):
        exchange_tree(LIMIT, os.getuid(), [".ipynb_checkpoints"]).read(folder)


def test_the_folder_itself_as_a_link_is_refused(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(submission(tmp_path))
    with pytest.raises(Refused, match="not a folder of its own"):
        exchange_tree(LIMIT, os.getuid(), []).read(link)


def test_an_entry_of_another_owner_is_refused(tmp_path):
    with pytest.raises(Refused, match="belongs to"):
        exchange_tree(LIMIT, os.getuid() + 1, [".ipynb_checkpoints"]).read(submission(tmp_path))


def test_a_change_after_submitting_moves_the_time_on(tmp_path):
    folder = submission(tmp_path)
    before = exchange_tree(LIMIT, os.getuid(), [".ipynb_checkpoints"]).read(folder).ctime
    time.sleep(0.02)
    (folder / "sub" / "data.txt").write_text("changed after the due date")
    os.utime(folder / "sub" / "data.txt", (0, 0))  # the modification time moved back: the change time cannot be
    assert exchange_tree(LIMIT, os.getuid(), [".ipynb_checkpoints"]).read(folder).ctime > before


def test_feedback_one_student_cannot_release_costs_only_that_student_a_line(tmp_path):
    """A feedback folder nbgrader cannot copy (here its page is a folder) is its student's ERROR line; the
    students after it still get their feedback."""
    import logging

    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    from autograder.exchange import ReleaseFeedbackEach

    for student in ("ada", "bob", "chuck"):
        folder = tmp_path / "course" / "feedback" / student / "01"
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-11-27 10:00:00.000000 UTC")
        (folder / "submission_secret.txt").write_text(f"secret-{student}")
        if student == "bob":
            (folder / "01.html").mkdir()
        else:
            (folder / "01.html").write_text(f"<p>{student}</p>")
    records = []
    log = logging.getLogger("test-release-feedback")
    log.addHandler(type("H", (logging.Handler,), {"emit": lambda self, r: records.append(r)})())
    coursedir = CourseDirectory(root=str(tmp_path / "course"), course_id="c", assignment_id="01")
    release = ReleaseFeedbackEach(coursedir=coursedir, authenticator=Authenticator(),
                                  root=str(tmp_path / "exchange"), log=log)
    release.init_src()
    release.init_dest()
    release.copy_files()
    released = sorted(p.read_text() for p in (tmp_path / "exchange" / "c" / "feedback").glob("*.html"))
    assert released == ["<p>ada</p>", "<p>chuck</p>"]
    errors = [r.getMessage() for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("Feedback not released for bob (01): "), errors
