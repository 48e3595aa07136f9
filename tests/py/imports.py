#!/usr/bin/env python3
"""The modules a set of Python files imports from outside the standard library.

usage: imports.py FILE...

Every `import x` and `from x import ...` anywhere in a file (inside functions
and `if` blocks too: an import that runs only with some option still needs its
package) is read with `ast`. A module with a file beside the importing one
(`x.py` or a package `x/`) is the repository's own: its file is read in turn.
Prints the other top-level modules outside `sys.stdlib_module_names`, one a
line, sorted, each followed by a tab and the files that import it.
"""

import ast
import os
import sys


def local_path(folder, name):
    for p in (os.path.join(folder, name + ".py"), os.path.join(folder, name, "__init__.py")):
        if os.path.isfile(p):
            return p
    return None


def main():
    todo = [os.path.normpath(f) for f in sys.argv[1:]]
    seen = set()
    found = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        folder = os.path.dirname(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                local = local_path(folder, top)
                if local is not None:
                    todo.append(os.path.normpath(local))
                elif top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(path)
    for top in sorted(found):
        print(top + "\t" + " ".join(sorted(found[top])))


main()
