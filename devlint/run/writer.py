"""Writing a fixed file without ever leaving it half-written or clobbering someone else's edit.

The new bytes go to a temporary file in the same folder, are flushed to disk, and replace the
file with one ``rename``: a reader (or a crash, or Ctrl-C) sees the old file or the new one,
never a mix. Right before the rename the file is read again and compared with what was fixed;
if it changed in the meantime (an editor saved it, another devlint run fixed it), it is left
alone and reported.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from devlint.signals import interrupts_deferred

TEMP_SUFFIX = ".devlint-tmp"


class WriteError(Exception):
    pass


def _check_writable(target: Path) -> os.stat_result:
    try:
        info = target.stat()
    except OSError as error:
        raise WriteError(f"cannot write: {error.strerror}") from None
    # No write bit for anyone means "do not touch", even for root (who passes every access check).
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise WriteError("file is read-only; left unchanged")
    return info


def write_atomic(path: Path, data: bytes, expected: bytes) -> None:
    """Replace ``path`` with ``data``, keeping its permissions (and owner, where allowed).

    Refuses when the file no longer holds ``expected`` (it changed on disk since it was read).
    A symbolic link stays a link: the file it points to is replaced.
    """
    # Imported here: a check writes nothing, and tempfile brings random with it.
    import tempfile

    target = Path(os.path.realpath(path))
    info = _check_writable(target)
    with interrupts_deferred():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
        except OSError as error:
            raise WriteError(f"cannot write a temporary file in {target.parent}: {error.strerror}; left unchanged") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, stat.S_IMODE(info.st_mode))
            _keep_owner(tmp, info)
            _refuse_if_changed(path, expected)
            os.replace(tmp, target)
        except OSError as error:
            _remove(tmp)
            raise WriteError(f"cannot write: {error.strerror}; left unchanged") from None
        except BaseException:
            _remove(tmp)
            raise


def _refuse_if_changed(path: Path, expected: bytes) -> None:
    try:
        current = path.read_bytes()
    except OSError as error:
        raise WriteError(f"cannot re-read before writing: {error.strerror}; left unchanged") from None
    if current != expected:
        raise WriteError("changed on disk since it was read; not overwritten")


def _keep_owner(tmp: str, info: os.stat_result) -> None:
    if not hasattr(os, "chown"):
        return
    # Only root may give a file away; for anyone else the new file is theirs, as an editor's is.
    with contextlib.suppress(OSError):
        now = os.stat(tmp)
        if (now.st_uid, now.st_gid) != (info.st_uid, info.st_gid):
            os.chown(tmp, info.st_uid, info.st_gid)


def _remove(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)
