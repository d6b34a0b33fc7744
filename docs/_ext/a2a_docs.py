"""Directives that generate reference pages from the code, so they cannot
drift from it: ``a2a-settings`` renders ``a2a_flask.config.DEFAULTS`` with
the line each setting has in ``a2a_flask.settings_docs.DOCS``."""

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def shown_default(value):
    """A default as the settings table shows it."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return "`%s`" % value if value else "empty"
    return "`%r`" % (value,)


def settings_table():
    """The settings reference as MyST Markdown table lines, one row a setting."""
    from a2a_flask.config import DEFAULTS
    from a2a_flask.settings_docs import DOCS

    missing = sorted(set(DEFAULTS) - set(DOCS))
    if missing:
        raise ValueError("settings without a line in a2a_flask.settings_docs.DOCS: %s"
                         % ", ".join(missing))
    lines = ["| setting | default | what |", "|---|---|---|"]
    for key, value in DEFAULTS.items():
        doc = " ".join(DOCS[key].split()).replace("|", "\\|")
        lines.append("| `%s` | %s | %s |" % (key, shown_default(value), doc))
    return lines


class SettingsTable(SphinxDirective):
    """``a2a-settings``: the table of every ``A2A_*`` setting."""

    def run(self):
        from a2a_flask import config, settings_docs

        self.env.note_dependency(config.__file__)
        self.env.note_dependency(settings_docs.__file__)
        holder = nodes.container()
        self.state.nested_parse(StringList(settings_table(), "a2a_flask/config.py"),
                                self.content_offset, holder)
        return holder.children


def setup(app):
    app.add_directive("a2a-settings", SettingsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
