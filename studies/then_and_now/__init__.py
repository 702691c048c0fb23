"""Then and now: the post's configurations compiled by the compiler of its time and by today's, against
the post's own VMEM verdicts (README.md). Importing the package registers its figure (figure.py) and its
report section (section.py) with the core."""
from studies.then_and_now import figure, section  # noqa: F401  (they register themselves)
