"""Count the fully annotated public functions of a package.

    python tools/annotations.py [PACKAGE_DIR] [--list]

Public: every ``def`` (methods and nested functions included) whose name
does not start with ``_``. Fully annotated: a return annotation and every
argument but a method's first (``self``/``cls``) annotated. ``--list``
prints the ones that are not.
"""

import ast
import os
import sys


def _functions(tree):
    """(function node, is it a method) for every def of the tree."""
    def visit(node, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, in_class
                yield from visit(child, False)
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, True)
            else:
                yield from visit(child, in_class)
    yield from visit(tree, False)


def _annotated(node, method):
    args = node.args
    positional = args.posonlyargs + args.args
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                 for d in node.decorator_list)
    if method and not static and positional:
        positional = positional[1:]
    every = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return node.returns is not None and all(a.annotation is not None for a in every)


def count(root):
    """(annotated, public, [(path, line, name) not annotated])."""
    annotated, public, missing = 0, 0, []
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read(), path)
            for node, method in _functions(tree):
                if node.name.startswith("_"):
                    continue
                public += 1
                if _annotated(node, method):
                    annotated += 1
                else:
                    missing.append((path, node.lineno, node.name))
    return annotated, public, missing


def main(argv):
    root = next((a for a in argv if not a.startswith("-")), "a2a_flask")
    annotated, public, missing = count(root)
    if "--list" in argv:
        for path, line, name in missing:
            print("%s:%d: %s" % (path, line, name))
    print("%d of %d public functions fully annotated (%.0f%%)"
          % (annotated, public, 100.0 * annotated / max(public, 1)))


if __name__ == "__main__":
    main(sys.argv[1:])
