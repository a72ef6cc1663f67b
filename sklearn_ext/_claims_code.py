"""What a benchmark measured: the package code behind a results file, hashed.

A results file of the claims ledger records, per file of the code it ran, a
hash of that file's syntax tree with docstrings removed (comments never reach
the tree), so that an edit of the prose changes nothing and any edit of the
code does. The code a benchmark ran is the transitive closure of its imports:
the benchmark script, the ``benchmarks/_*.py`` helpers it imports, and every
``sklearn_ext`` module reachable from them (imports inside functions
included; ``from package import Name`` leads to the module that defines
``Name``, not to every module the package re-exports).

Files are read through a *reader*, ``reader(path) -> text or None``, so that
the same closure can be taken of the working tree or of an earlier commit.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import ast
import functools
import hashlib
import subprocess
from pathlib import Path

__all__ = [
    "bench_closure",
    "git_reader",
    "hashes",
    "normalized_hash",
    "package_closure",
    "tree_reader",
]


def tree_reader(root):
    """A reader of the files of the working tree under ``root`` (memoised)."""
    root = Path(root)

    @functools.cache
    def read(path):
        p = root / path
        return p.read_text(encoding="utf-8") if p.is_file() else None

    return read


def git_reader(root, commit):
    """A reader of the files of ``commit`` in the repository at ``root`` (memoised)."""

    @functools.cache
    def read(path):
        out = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=root,
            capture_output=True,
            text=True,
        )
        return out.stdout if out.returncode == 0 else None

    return read


def docstring_owners(tree):
    """The module, class and function nodes of ``tree`` that have a docstring."""
    for node in ast.walk(tree):
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                yield node


def _strip_docstrings(tree):
    for node in list(docstring_owners(tree)):
        node.body = node.body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=4096)
def normalized_hash(source):
    """sha256 (16 hex digits) of the syntax tree of ``source`` without docstrings."""
    tree = _strip_docstrings(ast.parse(source))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def _module_path(module, read):
    """The file of a dotted module name, as a path relative to the root, or None."""
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if read(candidate) is not None:
            return candidate
    return None


def _is_package(path):
    return path.endswith("/__init__.py")


def _package_of(path):
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts)
    return ".".join(parts[:-1])


@functools.lru_cache(maxsize=4096)
def _imports(source, path):
    """``(module, names)`` of every import in ``source`` (relative ones resolved).

    ``names`` is the tuple of imported names of a ``from`` import, else ().
    """
    out = []
    package = _package_of(path)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                module = ".".join(parts + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, tuple(alias.name for alias in node.names)))
    return tuple(out)


def _defining_module(package_path, name, read):
    """The module a package's ``__init__`` takes ``name`` from, or None."""
    source = read(package_path)
    if source is None:
        return None
    for module, names in _imports(source, package_path):
        if name in names:
            return module
    return None


def _targets(module, names, read):
    """The files an import of ``names`` from ``module`` leads to."""
    path = _module_path(module, read)
    if path is None:
        return []
    if not names or not _is_package(path):
        return [path]
    out = []
    for name in names:
        sub = _module_path(f"{module}.{name}", read)
        if sub is not None:
            out.append(sub)
            continue
        origin = _defining_module(path, name, read)
        target = _module_path(origin, read) if origin else None
        out.append(target or path)
    return out


# The ledger's own tooling is not code a benchmark measures.
NOT_MEASURED = ("sklearn_ext/_claims", "sklearn_ext/__main__.py")


def package_closure(start_paths, read, prefix="sklearn_ext"):
    """Every ``prefix`` module file reachable by imports from ``start_paths``.

    Package ``__init__`` files are followed (to find where a name comes from)
    but not returned: they only re-export. The ledger's own modules
    (``NOT_MEASURED``) are neither followed nor returned.
    """
    seen, stack, found = set(), list(start_paths), set()
    while stack:
        path = stack.pop()
        if path in seen or path.startswith(NOT_MEASURED):
            continue
        seen.add(path)
        source = read(path)
        if source is None:
            continue
        if path.startswith(prefix + "/") and not _is_package(path):
            found.add(path)
        for module, names in _imports(source, path):
            if module != prefix and not module.startswith(prefix + "."):
                continue
            stack += _targets(module, names, read)
    return sorted(found)


def bench_closure(script, read, folder="benchmarks"):
    """The benchmark script and the ``folder/_*.py`` helpers it imports."""
    seen, stack = set(), [script]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        source = read(path)
        if source is None:
            continue
        seen.add(path)
        for module, _ in _imports(source, path):
            top = module.split(".")[0]
            if top.startswith("_"):
                helper = f"{folder}/{top}.py"
                if read(helper) is not None:
                    stack.append(helper)
    return sorted(seen)


def hashes(paths, read):
    """``{path: normalized_hash}`` of the files that exist among ``paths``."""
    out = {}
    for path in paths:
        source = read(path)
        if source is not None:
            out[path] = normalized_hash(source)
    return out
