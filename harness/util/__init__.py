"""Helpers that know nothing about porting: one of each, used by every layer above.

    files      sha256 of a file, atomic writes, log tails, fsync, refused writes as one line
    yamlfile   the one YAML loader: pydantic models from YAML, errors as `file:line: field: message`
    processes  process groups (psutil): start times, signalling, waiting, who listens on a port
    templates  the one jinja2 environment every report and knowledge file is rendered with
    interrupts a Ctrl-C / SIGTERM swallowed in a finaliser, kept and raised at the next safe point
"""
