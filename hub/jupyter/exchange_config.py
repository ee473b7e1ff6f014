"""The exchange's settings for every server of the course's hub (loaded by jupyter/instructor/ and jupyter/student/
nbgrader_config.py): nbgrader's file-system exchange with identity and time taken from the file system, symbolic
links never followed, and one bad submission costing only its student (autograder/exchange.py); the limit of
one submission, enforced at submit and at collect before anything is copied (hub/README.md, "The exchange")."""

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.ExchangeFactory.submit = "autograder.exchange.SubmitChecked"
c.ExchangeFactory.collect = "autograder.exchange.CollectFromOwner"
c.ExchangeFactory.release_feedback = "autograder.exchange.ReleaseFeedbackEach"
# kilobytes of 1000 bytes (nbgrader's unit): 50 MB for a whole submission, as the grading command allows one notebook
c.CourseDirectory.max_dir_size = 50_000
c.CourseDirectory.max_file_size = 50_000
