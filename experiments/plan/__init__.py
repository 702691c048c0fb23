"""From config/config.yaml to work: validation and the jobs the sweeps fan out into."""
