"""Rendering: the only package that imports ``jinja2``. Views -> Block Kit, Markdown, text."""
