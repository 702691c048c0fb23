"""The bilingual report: findings computed from the tidy table, Jinja templates, gettext catalogs."""
