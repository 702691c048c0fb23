"""Optional studies: each folder is one study, with its rules (rules.smk), analysis, figure, report
section, scripts and doc page (README.md) together. The core (kernels/, experiments/, figures/, report/)
never imports a study; experiments/plan/studies.py loads those the config's `studies` list names, and
each registers its figures and report section. A study that is a config overlay only (generations,
search) has a config.yaml instead of rules.
"""
