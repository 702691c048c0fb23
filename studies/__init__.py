"""Optional studies: each folder is one study, with its rules (rules.smk), analysis, figure, report
section, scripts and doc page (README.md) together. The core (kernels/, experiments/, figures/, report/)
never imports a study; experiments/plan/studies.py loads those the config's `studies` list names, and
each registers its figures and report section. A folder that is a config overlay only (generations,
search) has a config.yaml and a README instead: it widens what the core draws (the generations and
search figures are the core's kinds), and sets no `studies`.
"""
