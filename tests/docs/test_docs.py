"""The documentation site (docs/, Sphinx): it builds with warnings as errors,
every internal link of the result leads to a page and an anchor that exist,
and the references generated from the code cover every setting and command."""

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import click
import pytest

from a2a_flask.cli import a2a_cli
from a2a_flask.config import DEFAULTS
from a2a_flask.settings_docs import DOCS
from serving import REPO_DIR as REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once for this module: (its folder, sphinx's output)."""
    out = tmp_path_factory.mktemp("docs") / "html"
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         os.path.join(REPO, "docs"), str(out)],
        capture_output=True, text=True, timeout=600)
    return out, build


def test_the_site_builds_without_a_warning(site):
    out, build = site
    assert build.returncode == 0, build.stdout + build.stderr
    assert build.stderr == ""
    assert (out / "index.html").is_file()


class _Links(HTMLParser):
    """The ids of a page and the targets of its href and src attributes."""

    def __init__(self):
        super().__init__()
        self.ids, self.targets = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value is not None:
                self.targets.append(value)


def _parse(path):
    links = _Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def test_every_internal_link_leads_somewhere(site):
    out, build = site
    assert build.returncode == 0, build.stdout + build.stderr
    pages = {page: _parse(page) for page in out.rglob("*.html")}
    broken = []
    for page, links in pages.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith("mailto:"):
                continue  # external: not checked (no network here)
            path = page if not parts.path else (page.parent / unquote(parts.path))
            path = path.resolve()
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                broken.append("%s: %s (no such file)" % (page.relative_to(out), target))
            elif parts.fragment and path.suffix == ".html":
                ids = pages[path].ids if path in pages else _parse(path).ids
                if unquote(parts.fragment) not in ids:
                    broken.append("%s: %s (no such anchor)"
                                  % (page.relative_to(out), target))
    assert broken == []
    assert len(pages) > 5


def test_every_setting_has_its_line():
    assert sorted(DEFAULTS) == sorted(DOCS)
    assert all(DOCS[key].strip() for key in DOCS)


def test_the_settings_reference_shows_every_setting(site):
    out, _ = site
    page = (out / "reference" / "settings.html").read_text(encoding="utf-8")
    for key in DEFAULTS:
        assert "<code class=\"docutils literal notranslate\"><span class=\"pre\">%s</span></code>" % key in page


def _commands(group, prefix):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # a2a_cli imports its commands when named
        command = group.get_command(ctx, name)
        yield prefix + " " + name, command
        if isinstance(command, click.Group):
            yield from _commands(command, prefix + " " + name)


def test_the_cli_reference_shows_every_command_and_option(site):
    out, _ = site
    links = _parse(out / "reference" / "cli.html")
    # Rendered as reStructuredText, the help's quotes become
    # typographic ones and its `backticks` markup.
    text = " ".join(visible_text(out / "reference" / "cli.html").translate(
        {0x2018: "'", 0x2019: "'", 0x201c: '"', 0x201d: '"'}).split())
    commands = dict(_commands(a2a_cli, "flask a2a"))
    assert "flask a2a worker" in commands
    for name, command in commands.items():
        assert name.replace(" ", "-") in links.ids
        for param in command.params:
            if getattr(param, "help", None):
                assert " ".join(param.help.replace("`", "").split()[:6]) in text


def test_the_readme_links_to_files_that_exist():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", f.read())
    local = [t for t in targets if not urlsplit(t).scheme]
    assert "docs/quickstart.md" in local
    assert [t for t in local if not os.path.exists(os.path.join(REPO, t))] == []


def test_the_readme_first_screen_starts_the_demo_and_the_tests():
    """What a newcomer sees first: the two commands, where gunicorn must run
    from (it reads gunicorn.conf.py from the current folder only) and -b."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        first = "\n".join(f.read().split("\n")[:30])
    assert "    python3 -m venv .venv && .venv/bin/pip install . && " \
        ".venv/bin/gunicorn -b 127.0.0.1:8000 wsgi:app\n" in first
    assert "    python3 -m venv .venv && .venv/bin/pip install '.[test]' && " \
        ".venv/bin/pytest\n" in first
    assert "from the folder that has `gunicorn.conf.py`" in first
    assert "`-b HOST:PORT`" in first


#: An install from PyPI, where a2a_flask is not: a name, not a path, a wheel
#: or a direct reference (``a2a_flask @ git+https://...``).
_FROM_PYPI = re.compile(r"pip install '?a2a_flask(\[[^\]]*\])?'?(?!\s*@)(\s|$|`)")


def test_no_page_installs_from_pypi():
    pages = [os.path.join(REPO, "README.md")] + [
        os.path.join(REPO, "docs", name) for name in sorted(os.listdir(
            os.path.join(REPO, "docs"))) if name.endswith(".md")]
    found = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            found += ["%s: %s" % (os.path.basename(page), line.strip())
                      for line in f if _FROM_PYPI.search(line)]
    assert found == []
    # The test's own: what it must see, and what it must let pass.
    assert _FROM_PYPI.search("see `pip install 'a2a_flask[client]'`")
    assert not _FROM_PYPI.search("pip install 'a2a_flask @ git+https://x/y.git'")


class _Text(HTMLParser):
    """A page's visible text outside <pre> (where code may show markup on
    purpose), <script> and <style>, one string per text run."""

    _HIDDEN = {"pre", "script", "style"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.runs = 0, []

    def handle_starttag(self, tag, attrs):
        if tag in self._HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self._HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.runs.append(data)


# A directive left as text: what a directive's output in the wrong syntax (an
# reStructuredText one in MyST, or a fence MyST did not know) looks like once
# built; sphinx -W says nothing about either.
_RAW_DIRECTIVE = re.compile(r"(?m)(^|\s)\.\.\s+[A-Za-z][\w:-]*::|(```|:::)\s*\{[\w:-]+\}")


def visible_text(path):
    text = _Text()
    text.feed(path.read_text(encoding="utf-8"))
    return "".join(text.runs)


def visible_raw_directives(path):
    return [m.group(0).strip() for m in _RAW_DIRECTIVE.finditer(visible_text(path))]


def test_no_page_shows_a_raw_directive(site):
    out, build = site
    assert build.returncode == 0, build.stdout + build.stderr
    shown = {}
    for page in sorted(out.rglob("*.html")):
        found = visible_raw_directives(page)
        if found:
            shown[str(page.relative_to(out))] = found
    assert shown == {}


def test_the_raw_directive_check_sees_one(tmp_path):
    # The check itself: text shows, <pre> does not.
    page = tmp_path / "p.html"
    page.write_text("<p>.. program:: flask a2a\n.. rubric:: Usage</p><p>```{click} x</p>"
                    "<pre>.. option:: --key</pre>", encoding="utf-8")
    assert visible_raw_directives(page) == [".. program::", ".. rubric::", "```{click}"]


def test_the_cli_reference_shows_options_as_definitions(site):
    out, _ = site
    page = (out / "reference" / "cli.html").read_text(encoding="utf-8")
    assert page.count('<dl class="std option">') >= len(a2a_cli.params) + 5
    assert '<dt class="sig sig-object std" id="cmdoption-flask-a2a-call-key">' in page
