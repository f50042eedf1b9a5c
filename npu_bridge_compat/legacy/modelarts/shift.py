"""`mox.file.shift('os', 'mox')`: os, os.path and open take obs:// and s3:// URLs too, as moxing makes them; every
other argument goes to the function it replaced, unchanged. `shift('mox', 'os')` puts them back; so does undoing
the ModelArts world (each replacement is a change of its owner in the registry)."""

from __future__ import annotations

import builtins
import errno
import io
import os
from collections.abc import Callable
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.legacy.modelarts.storage import is_url


def _with_urls(original: Callable[..., Any], on_url: Callable[..., Any]) -> Callable[..., Any]:
    def shifted(path: Any, *args: Any, **kwargs: Any) -> Any:
        return on_url(path, *args, **kwargs) if is_url(path) else original(path, *args, **kwargs)

    shifted.__name__ = getattr(original, "__name__", "shifted")
    shifted.__doc__ = original.__doc__
    return shifted


def _shifted(api: Any) -> dict[tuple[Any, str], Callable[..., Any]]:
    """What each function of os, os.path and builtins does with a URL, `api` being the world's mox.file (a MoxFile)."""

    def open_url(path, mode="r", buffering=-1, encoding=None, *args, **kwargs):
        return api.File(path, mode, encoding=encoding)

    def makedirs(path, mode=0o777, exist_ok=False):
        if api.exists(path) and not exist_ok:
            raise FileExistsError(errno.EEXIST, "exists", path)
        api.make_dirs(path)

    def stat_url(path, *args, **kwargs):
        found = api.stat(path)
        return os.stat_result(
            (
                0o40755 if found.is_directory else 0o100644,
                0,
                0,
                1,
                0,
                0,
                found.length,
                found.mtime_nsec // 10**9,
                found.mtime_nsec // 10**9,
                found.mtime_nsec // 10**9,
            )
        )

    def isfile(path):
        return api.exists(path) and not api.is_directory(path)

    return {
        (builtins, "open"): open_url,
        (io, "open"): open_url,
        (os, "listdir"): lambda path=".": api.list_directory(path),
        (os, "makedirs"): makedirs,
        (os, "mkdir"): lambda path, mode=0o777, **kwargs: api.mk_dir(path),
        (os, "remove"): lambda path, **kwargs: api.remove(path),
        (os, "unlink"): lambda path, **kwargs: api.remove(path),
        (os, "rename"): lambda src, dst, **kwargs: api.rename(src, dst),
        (os, "walk"): lambda top, topdown=True, onerror=None, followlinks=False: api.walk(top, topdown),
        (os, "stat"): stat_url,
        (os.path, "exists"): api.exists,
        (os.path, "isdir"): api.is_directory,
        (os.path, "isfile"): isfile,
        (os.path, "getsize"): lambda path: api.get_size(path),
    }


def shift_to_mox(api: Any, owner: Owner) -> None:
    """os, os.path and open take URLs too, until `shift_to_os` or undoing `owner`."""
    for (target, name), on_url in _shifted(api).items():
        if changes.attribute_change(target, name) is not None:
            continue  # shifted already
        changes.replace_attribute(
            target,
            name,
            _with_urls(getattr(target, name), on_url),
            owner=owner,
            label=target.__name__,
            reason="mox.file.shift('os', 'mox'): the program's os, os.path and open take obs:// and s3:// URLs, "
            "as moxing made them; other arguments reach the function it replaced",
        )


def shift_to_os(owner: Owner) -> None:
    """os, os.path and open as they were."""
    shifted = [changes.attribute_change(target, name) for target, name in _shifted_keys()]
    changes.undo(changes=[change for change in shifted if change is not None and owner in change.owners])


def _shifted_keys() -> list[tuple[Any, str]]:
    return [
        (builtins, "open"),
        (io, "open"),
        *((os, name) for name in ("listdir", "makedirs", "mkdir", "remove", "unlink", "rename", "walk", "stat")),
        *((os.path, name) for name in ("exists", "isdir", "isfile", "getsize")),
    ]
