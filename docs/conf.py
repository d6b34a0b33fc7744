"""Sphinx configuration of the a2a_flask documentation.

Build: ``sphinx-build -W docs docs/_build/html`` (the ``docs`` extra);
tests/docs/test_docs.py runs the same, warnings as errors, and checks every
internal link of the result.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))

import a2a_flask  # noqa: E402

project = "a2a_flask"
author = "a2a_flask contributors"
copyright = "a2a_flask contributors"
release = version = a2a_flask.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_click",
    "a2a_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Markdown: `(target)=` labels, ::: fences, and ids on headings so that
# [text](page.md#a-heading) links resolve (and fail the build when they do not).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "furo"
html_title = "a2a_flask %s" % release
html_static_path = []
html_show_sourcelink = False

# Quotes and ellipses, not dashes: "--" is an option's prefix on every page
# (the CLI reference's help texts included), never a dash meant as one.
smartquotes_action = "qe"
