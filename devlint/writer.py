"""Writing a fixed file without ever leaving it half-written or clobbering someone else's edit."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class WriteError(Exception):
    pass


def write_atomic(path: Path, data: bytes, expected: bytes) -> None:
    """Replace ``path`` with ``data`` via a temporary file in the same folder and a rename,
    keeping its permissions. Refuses when the file no longer holds ``expected`` (it changed
    on disk since it was read)."""
    try:
        current = path.read_bytes()
    except OSError as error:
        raise WriteError(f"cannot re-read before writing: {error.strerror}") from None
    if current != expected:
        raise WriteError("changed on disk since it was read; not overwritten")
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777
        if not os.access(target, os.W_OK):
            raise WriteError("file is not writable; left unchanged")
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".devlint-tmp", dir=target.parent)
    except OSError as error:
        raise WriteError(f"cannot write: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
