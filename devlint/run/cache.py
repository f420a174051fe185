"""Check results kept between runs in ``.devlint_cache/``, keyed by what decides them.

An entry is the result of checking one file's exact bytes: the key is a digest of the content,
the kind of file (a notebook is read differently), and a run key made of devlint's own code
(its version and a digest of its source and rules), the Python and LibCST versions, the codes
checked and the fix settings. A result that read other files of the project (the constants a
file imports from them, devlint.run.project_imports) keeps what it read: where resolution
started and each file's content digest (or its absence), and counts only while all of them are
unchanged. Nothing that changes a result is left out, so no entry is ever stale; entries nobody
used for a month are dropped.

The store is one JSON file per run key, read once and written once per run (atomically: a
temporary file renamed over the old one). A warm run on thousands of files then costs one file
read instead of thousands of small ones. JSON, not pickle: the cache folder sits inside the
checked project, and loading it must never run code. Any problem with the cache (unreadable,
corrupt, unwritable, a full disk) makes it a miss or a no-op, never an error of the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from devlint import __version__
from devlint.findings import Edit, FileError, Finding, Fix, ImportNames, Location, Release

DIRECTORY = ".devlint_cache"
# Set to a folder to keep the cache there instead of ./.devlint_cache (benchmarks, CI caches).
DIRECTORY_VARIABLE = "DEVLINT_CACHE_DIR"
# https://bford.info/cachedir/: backup and archiving tools skip folders with this file.
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by devlint.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
FORMAT = 2
MAX_AGE_DAYS = 30
# What a result read besides its file: where resolution started, and (path, digest or None).
Depends = tuple[str, tuple[tuple[str, "str | None"], ...]]


@cache
def code_fingerprint() -> str:
    """Changes whenever devlint's code or its rules change, released or not (editable installs)."""
    import devlint
    import devlint.rules

    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{FORMAT} {__version__} {sys.version_info[:2]} {_libcst_version()}".encode())
    for package in (devlint, devlint.rules):
        for folder in package.__path__:
            for path in sorted(Path(folder).rglob("*.py")):
                digest.update(str(path.relative_to(folder)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _libcst_version() -> str:
    """LibCST's version file, read without importing LibCST or importlib.metadata: either would
    cost more than a warm run on a small project."""
    spec = importlib.util.find_spec("libcst")
    if spec is None or spec.origin is None:
        return "unknown"
    try:
        return hashlib.blake2b(Path(spec.origin).with_name("_version.py").read_bytes(), digest_size=8).hexdigest()
    except OSError:
        return _installed_version("libcst")


def _installed_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def run_key(codes: tuple[str, ...], settings: object) -> str:
    """The part of a key shared by every file checked alike (``settings``: a frozen dataclass)."""
    text = repr((code_fingerprint(), codes, settings))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def entry_key(filename: str, digest: str) -> str:
    return f"{'ipynb' if filename.endswith('.ipynb') else 'py'}:{digest}"


def default_directory() -> Path:
    return Path(os.environ.get(DIRECTORY_VARIABLE) or DIRECTORY)


class Cache:
    """Results by (run key, entry key); ``save()`` writes what this run added or used."""

    def __init__(self, directory: Path | None = None, today: int | None = None) -> None:
        self.directory = directory if directory is not None else default_directory()
        self._today = today if today is not None else int(time.time() // 86400)
        # run key -> entry key -> [day last used, encoded result]
        self._stores: dict[str, dict[str, list[Any]]] = {}
        self._dirty: set[str] = set()

    def is_empty(self, run: str) -> bool:
        return not self._store(run)

    def get(
        self, run: str, entry: str, filename: str, valid: Callable[[Depends], bool] | None = None
    ) -> tuple[list[Finding], FileError | None] | None:
        """The findings and error a check of this content gave, renamed to ``filename``; None when
        the check read other files and ``valid`` (or its absence) says they changed."""
        stored = self._store(run).get(entry)
        if stored is None:
            return None
        try:
            found = _decode(stored[1], filename)
            depends = _depends(stored[1].get("read"))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        if depends is not None and (valid is None or not valid(depends)):
            return None
        if stored[0] != self._today:
            stored[0] = self._today
            self._dirty.add(run)
        return found

    def put(
        self, run: str, entry: str, findings: list[Finding], error: FileError | None, depends: Depends | None = None
    ) -> None:
        encoded = _encode(findings, error)
        if depends is not None:
            encoded["read"] = [depends[0], [list(read) for read in depends[1]]]
        # A field added to a finding that this module does not know would be lost: such results
        # are not kept, rather than kept wrong.
        name = error.filename if error is not None else findings[0].filename if findings else ""
        if _decode(json.loads(json.dumps(encoded)), name) != (findings, error):
            return
        self._store(run)[entry] = [self._today, encoded]
        self._dirty.add(run)

    def save(self) -> None:
        for run in sorted(self._dirty):
            try:
                self._write(run)
            except (OSError, ValueError, TypeError):
                continue
        self._dirty.clear()

    def _store(self, run: str) -> dict[str, list[Any]]:
        store = self._stores.get(run)
        if store is None:
            store = self._read(run)
            self._stores[run] = store
        return store

    def _path(self, run: str) -> Path:
        return self.directory / f"{run}.json"

    def _read(self, run: str) -> dict[str, list[Any]]:
        try:
            data = json.loads(self._path(run).read_bytes())
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            key: value
            for key, value in data.items()
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)
        }

    def _write(self, run: str) -> None:
        self._prepare_directory()
        # Another run may have saved since this one read: keep its entries too.
        merged = {**self._read(run), **self._stores[run]}
        oldest = self._today - MAX_AGE_DAYS
        kept = {key: value for key, value in merged.items() if value[0] >= oldest}
        _write_atomic(self._path(run), json.dumps(kept, separators=(",", ":")).encode())

    def _prepare_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
            path = self.directory / name
            if not path.exists():
                _write_atomic(path, content.encode())


def _write_atomic(path: Path, data: bytes) -> None:
    # Not mkstemp: its files are private (0600); the cache follows the umask like any file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        with open(temporary, "xb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


# -- results as JSON ------------------------------------------------------------------------


def _encode(findings: list[Finding], error: FileError | None) -> dict[str, Any]:
    def finding(f: Finding) -> dict[str, Any]:
        data = dataclasses.asdict(f)
        del data["filename"]
        if f.fix is not None:
            # JSON has no sets: a release's uses are kept as a sorted list
            for release in data["fix"]["releases"]:
                release["uses"] = sorted(release["uses"])
        return data

    return {
        "findings": [finding(f) for f in findings],
        "error": None if error is None else [error.message, error.row, error.column],
    }


def _decode(data: Mapping[str, Any], filename: str) -> tuple[list[Finding], FileError | None]:
    error = data["error"]
    return (
        [_finding(item, filename) for item in data["findings"]],
        None if error is None else FileError(filename, error[0], error[1], error[2]),
    )


def _depends(data: Any) -> Depends | None:
    if data is None:
        return None
    origin, files = data
    if not isinstance(origin, str):
        raise TypeError("origin")
    reads = tuple((str(path), None if digest is None else str(digest)) for path, digest in files)
    return origin, reads


def _location(data: Mapping[str, Any]) -> Location:
    return Location(**data)


def _edit(data: Mapping[str, Any]) -> Edit:
    held = data.get("held")
    return Edit(
        **{**data, "start": _location(data["start"]), "end": _location(data["end"]), "held": None if held is None else tuple(held)}
    )


def _release(data: Mapping[str, Any]) -> Release:
    bindings = tuple(
        (
            ImportNames(
                tuple(names["lines"]), tuple(tuple(span) for span in names["names"]), names["end"], names["emptied"]
            ),
            index,
        )
        for names, index in data["bindings"]
    )
    return Release(data["name"], bindings, frozenset(data["uses"]), data["count"])


def _finding(data: Mapping[str, Any], filename: str) -> Finding:
    fix = data["fix"]
    return Finding(
        **{
            **data,
            "filename": filename,
            "location": _location(data["location"]),
            "end_location": _location(data["end_location"]),
            "fix": None
            if fix is None
            else Fix(
                fix["applicability"],
                fix["message"],
                tuple(_edit(edit) for edit in fix["edits"]),
                tuple(_release(release) for release in fix["releases"]),
                tuple(_edit(edit) for edit in fix["unused_imports"]),
            ),
        }
    )
