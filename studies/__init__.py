"""Optional studies, one folder each (rules, analysis, figure, report section, scripts, README);
the core never imports one: experiments/plan/studies.py loads those the config names (studies/README.md).
"""
