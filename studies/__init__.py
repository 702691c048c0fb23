"""Optional studies: each folder is one study, with its rules (rules.smk), analysis, figure, scripts and
doc page (README.md) together. The core (kernels/, experiments/, figures/, report/) never imports a
study; a study imports the core. The Snakefile includes `studies/<name>/rules.smk` for every study
named in the config's `studies` list; a study that is a config overlay only (generations, search)
has a config.yaml instead of rules.
"""
