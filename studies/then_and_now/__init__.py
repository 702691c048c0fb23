"""Then and now: the post's configurations compiled by the compiler of its time and by today's, against
the post's own VMEM verdicts (README.md). Loading the study (experiments/plan/studies.py) imports
specs.py, figure.py and section.py, which register its figure and its report section with the core."""
