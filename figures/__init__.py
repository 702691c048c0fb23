"""Figures of the study, drawn from results/matmul.parquet only, in English and 简体中文."""
