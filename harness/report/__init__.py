"""Markdown reports rendered from evidence on disk (jinja2 templates in `templates/`)."""
