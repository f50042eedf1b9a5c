"""moxing's file API (`mox.file.*`) with its documented semantics, on local paths and on obs:// / s3:// URLs.

Every name takes a local path or a URL (storage.py says where each goes): local files through os and shutil, objects
through boto3. What is written appears whole or not at all: a local file is written beside its destination and
renamed onto it; an object is one PUT, or a multipart upload that boto3's transfer manager completes or aborts; a
`File` opened for writing that leaves its `with` block by an exception writes nothing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import fnmatch
import glob as local_glob
import io
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from npu_bridge_compat.changes import Owner
from npu_bridge_compat.legacy.modelarts.storage import (
    ObjectKey,
    ObjectStorage,
    ObjectStorageError,
    StorageSettings,
    is_url,
)

DEFAULT_THREADS = 16  # moxing's copy_parallel default


@dataclass(frozen=True)
class FileStat:
    """What `mox.file.stat` gives: the size in bytes, the modification time in nanoseconds, whether a folder."""

    length: int
    mtime_nsec: int
    is_directory: bool


# --- local files, written whole ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _written_aside(path: str) -> Iterator[str]:
    """A temporary path beside `path`, renamed onto it when the block ends normally and removed otherwise."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    # made by open (not mkstemp, whose files only their owner reads): the mode the program's own files get
    aside = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex[:8]}.part")
    open(aside, "xb").close()
    try:
        yield aside
        os.replace(aside, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(aside)
        raise


def _local_write(path: str, data: bytes) -> None:
    with _written_aside(path) as aside, open(aside, "wb") as file:
        file.write(data)


def _local_copy(source: str, destination: str) -> None:
    with _written_aside(destination) as aside:
        shutil.copyfile(source, aside)


# --- objects ------------------------------------------------------------------------------------------------------


class _Objects:
    """The object operations behind the API, each turning boto3's errors into ones that name the URL."""

    def __init__(self, storage: ObjectStorage) -> None:
        self.storage = storage

    def client(self, location: ObjectKey) -> Any:
        self.storage.say_once(location.url)
        return self.storage.client(location)

    @contextlib.contextmanager
    def reaching(self, location: ObjectKey) -> Iterator[None]:
        from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

        try:
            yield
        except EndpointConnectionError as error:
            raise ObjectStorageError(
                f"{location.url}: the object-storage endpoint refused the connection ({error}): start it, or correct "
                "AWS_ENDPOINT_URL / S3_ENDPOINT / mox.file.set_auth(server=...), or map obs:// URLs to a local folder "
                "with `run --obs-root DIR`"
            ) from None
        except NoCredentialsError:
            raise ObjectStorageError(f"{location.url}: no credentials for object storage") from None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise FileNotFoundError(errno.ENOENT, "no such object", location.url) from None
            if code == "NoSuchBucket":
                raise ObjectStorageError(f"{location.url}: the bucket {location.bucket!r} does not exist") from None
            if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403", "Forbidden"):
                raise ObjectStorageError(
                    f"{location.url}: the endpoint refused the credentials ({code}): check OBS_ACCESS_KEY_ID / "
                    "OBS_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or mox.file.set_auth's ak "
                    "and sk)"
                ) from None
            raise

    def head(self, location: ObjectKey) -> dict | None:
        """The object's metadata, None where there is no object of that key."""
        if not location.key:
            return None
        from botocore.exceptions import ClientError

        client = self.client(location)
        with self.reaching(location):
            try:
                return client.head_object(Bucket=location.bucket, Key=location.key)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise

    def keys(self, location: ObjectKey, delimiter: bool) -> tuple[list[str], list[dict]]:
        """The folder's direct sub-prefixes (with `delimiter`) and its objects, as listed under its prefix."""
        client = self.client(location)
        prefixes: list[str] = []
        objects: list[dict] = []
        arguments = {"Bucket": location.bucket, "Prefix": location.folder_prefix}
        if delimiter:
            arguments["Delimiter"] = "/"
        with self.reaching(location):
            for page in client.get_paginator("list_objects_v2").paginate(**arguments):
                prefixes += [entry["Prefix"] for entry in page.get("CommonPrefixes", ())]
                objects += page.get("Contents", ())
        return prefixes, objects

    def is_folder(self, location: ObjectKey) -> bool:
        if not location.key.strip("/"):
            client = self.client(location)
            with self.reaching(location):
                client.head_bucket(Bucket=location.bucket)
            return True
        client = self.client(location)
        with self.reaching(location):
            listed = client.list_objects_v2(Bucket=location.bucket, Prefix=location.folder_prefix, MaxKeys=1)
        return bool(listed.get("KeyCount"))

    def read(self, location: ObjectKey) -> bytes:
        client = self.client(location)
        with self.reaching(location):
            return client.get_object(Bucket=location.bucket, Key=location.key)["Body"].read()

    def write(self, location: ObjectKey, data: bytes) -> None:
        self.upload(io.BytesIO(data), location)

    def upload(self, source: IO[bytes] | str, location: ObjectKey, callback: Callable[[int], None] | None = None):
        """One PUT, or a multipart upload that boto3 completes, or aborts when a part fails or `callback` raises."""
        client = self.client(location)
        with self.reaching(location):
            if isinstance(source, str):
                client.upload_file(source, location.bucket, location.key, Callback=callback)
            else:
                client.upload_fileobj(source, location.bucket, location.key, Callback=callback)

    def download(self, location: ObjectKey, path: str) -> None:
        client = self.client(location)
        with self.reaching(location), _written_aside(path) as aside, open(aside, "wb") as file:
            client.download_fileobj(location.bucket, location.key, file)

    def copy(self, source: ObjectKey, destination: ObjectKey) -> None:
        client = self.client(destination)
        with self.reaching(destination):
            client.copy({"Bucket": source.bucket, "Key": source.key}, destination.bucket, destination.key)

    def delete(self, location: ObjectKey) -> None:
        client = self.client(location)
        with self.reaching(location):
            client.delete_object(Bucket=location.bucket, Key=location.key)


class MoxFile:
    """`mox.file`: the functions ModelArts programs call, on the facts of one `ObjectStorage`."""

    def __init__(
        self, storage: ObjectStorage, change_settings: Callable[[StorageSettings], None], owner: Owner
    ) -> None:
        self._storage = storage
        self._objects = _Objects(storage)
        self._change_settings = change_settings  # how set_auth's settings take effect (through the registry)
        self._owner = owner  # whose changes `shift` makes

    def _locate(self, url: str) -> str | ObjectKey:
        return self._storage.locate(url)

    # --- questions ---------------------------------------------------------------------------------------------

    def exists(self, url: str) -> bool:
        """Whether `url` is a file or a folder."""
        where = self._locate(url)
        if isinstance(where, str):
            return os.path.exists(where)
        return self._objects.head(where) is not None or self._objects.is_folder(where)

    def is_directory(self, url: str) -> bool:
        """Whether `url` is a folder (for objects: a prefix some object's key starts with, or a folder marker)."""
        where = self._locate(url)
        if isinstance(where, str):
            return os.path.isdir(where)
        return self._objects.is_folder(where)

    def list_directory(self, url: str, recursive: bool = False) -> list[str]:
        """The names in folder `url` (files and folders), sorted; with `recursive`, every file and folder below it,
        as paths relative to `url`."""
        where = self._locate(url)
        if isinstance(where, str):
            if not os.path.isdir(where):
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", url)
            if not recursive:
                return sorted(os.listdir(where))
            found = []
            for folder, folders, files in os.walk(where):
                relative = os.path.relpath(folder, where)
                found += [os.path.normpath(os.path.join(relative, name)) for name in (*folders, *files)]
            return sorted(found)
        prefixes, objects = self._objects.keys(where, delimiter=not recursive)
        base = where.folder_prefix
        if not prefixes and not objects and not self._objects.is_folder(where):
            raise FileNotFoundError(errno.ENOENT, "no such folder", url)
        names = {prefix[len(base) :].rstrip("/") for prefix in prefixes}
        for entry in objects:
            relative = entry["Key"][len(base) :].rstrip("/")
            if not relative:
                continue  # the folder's own marker
            names.add(relative)
            if recursive:  # the folders on the way, which an object store holds no entries for
                parts = relative.split("/")
                names.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
        return sorted(names)

    def walk(self, url: str, topdown: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
        """As os.walk: (folder, its folders, its files) for `url` and every folder below it, URLs kept as URLs."""
        where = self._locate(url)
        if isinstance(where, str) and not is_url(url):
            yield from os.walk(where, topdown=topdown)
            return
        folders, files = [], []
        for name in self.list_directory(url):
            (folders if self.is_directory(_join(url, name)) else files).append(name)
        if topdown:
            yield url, folders, files
        for name in folders:
            yield from self.walk(_join(url, name), topdown=topdown)
        if not topdown:
            yield url, folders, files

    def glob(self, url: str) -> list[str]:
        """The files and folders whose paths match the pattern `url` (*, ?, [...] within one level), sorted."""
        where = self._locate(url)
        if isinstance(where, str):
            matches = sorted(local_glob.glob(where))
            if is_url(url):  # mapped by --obs-root: given back as the URLs the program named
                root = where[: len(where) - len(url.split("://", 1)[1])]
                scheme = url.split("://", 1)[0]
                return [f"{scheme}://{match[len(root) :]}" for match in matches]
            return matches
        fixed = where.key.split("*")[0].split("?")[0].split("[")[0]
        folder = ObjectKey(where.url, where.scheme, where.bucket, fixed.rpartition("/")[0])
        _, objects = self._objects.keys(folder, delimiter=False)
        candidates = set()
        for entry in objects:
            parts = entry["Key"].rstrip("/").split("/")
            candidates.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        depth = where.key.rstrip("/").count("/")
        return sorted(
            f"{where.scheme}://{where.bucket}/{key}"
            for key in candidates
            if key.count("/") == depth and fnmatch.fnmatchcase(key, where.key.rstrip("/"))
        )

    def get_size(self, url: str, recursive: bool = False) -> int:
        """The size of file `url` in bytes; of a folder, with `recursive`, the sum of its files'."""
        where = self._locate(url)
        if isinstance(where, str):
            if os.path.isdir(where):
                if not recursive:
                    raise IsADirectoryError(errno.EISDIR, "a folder: get_size(url, recursive=True) sums it", url)
                return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(where) for f in files)
            return os.path.getsize(where)
        head = self._objects.head(where)
        if head is not None:
            return int(head["ContentLength"])
        if not recursive or not self._objects.is_folder(where):
            raise FileNotFoundError(errno.ENOENT, "no such object", url)
        return sum(int(entry["Size"]) for entry in self._objects.keys(where, delimiter=False)[1])

    def stat(self, url: str) -> FileStat:
        """The size, modification time (ns) and kind of `url`."""
        where = self._locate(url)
        if isinstance(where, str):
            info = os.stat(where)
            return FileStat(info.st_size, info.st_mtime_ns, os.path.isdir(where))
        head = self._objects.head(where)
        if head is not None:
            return FileStat(int(head["ContentLength"]), int(head["LastModified"].timestamp() * 1e9), False)
        if self._objects.is_folder(where):
            return FileStat(0, 0, True)
        raise FileNotFoundError(errno.ENOENT, "no such object", url)

    # --- reading and writing ------------------------------------------------------------------------------------

    def read(self, url: str, binary: bool = False) -> str | bytes:
        """The whole content of file `url`: bytes with `binary`, else text (UTF-8)."""
        where = self._locate(url)
        if isinstance(where, str):
            with open(where, "rb") as file:
                data = file.read()
        else:
            data = self._objects.read(where)
        return data if binary else data.decode("utf-8")

    def write(self, url: str, content: str | bytes, binary: bool = False) -> None:
        """Write `content` as the whole of file `url` (bytes with `binary`, else text), replacing it."""
        data = _as_bytes(content, binary, url)
        where = self._locate(url)
        if isinstance(where, str):
            _local_write(where, data)
        else:
            self._objects.write(where, data)

    def append(self, url: str, content: str | bytes, binary: bool = False) -> None:
        """Add `content` at the end of file `url` (created where there is none)."""
        data = _as_bytes(content, binary, url)
        where = self._locate(url)
        if isinstance(where, str):
            with open(where, "ab") as file:
                file.write(data)
            return
        before = self._objects.read(where) if self._objects.head(where) is not None else b""
        self._objects.write(where, before + data)  # an object is replaced whole: its new content in one PUT

    def File(self, url: str, mode: str = "r", encoding: str | None = None) -> IO:  # noqa: N802 - moxing's name
        """A file object for `url` (modes r, w, a, rb, wb, ab; a context manager). What is written appears at
        `close()` whole; leaving a `with` block by an exception writes nothing."""
        if mode.replace("t", "") not in ("r", "w", "a", "rb", "wb", "ab"):
            raise ValueError(f"mox.file.File({url!r}, {mode!r}): mode must be one of r, w, a, rb, wb, ab")
        binary = "b" in mode
        where = self._locate(url)
        if mode[0] == "r":
            raw = open(where, "rb") if isinstance(where, str) else io.BytesIO(self._objects.read(where))
            return raw if binary else io.TextIOWrapper(raw, encoding=encoding or "utf-8")
        start = b""
        if mode[0] == "a" and self.exists(url):
            start = self.read(url, binary=True)
        writer = _WholeWriter(lambda data: self._store(where, data), start)
        return writer if binary else _TextWriter(writer, encoding=encoding or "utf-8")

    def _store(self, where: str | ObjectKey, data: bytes) -> None:
        if isinstance(where, str):
            _local_write(where, data)
        else:
            self._objects.write(where, data)

    # --- folders ------------------------------------------------------------------------------------------------

    def make_dirs(self, url: str) -> None:
        """Make folder `url` and the folders above it (nothing where it exists)."""
        where = self._locate(url)
        if isinstance(where, str):
            os.makedirs(where, exist_ok=True)
        elif where.key.strip("/") and not self._objects.is_folder(where):
            self._objects.write(ObjectKey(where.url, where.scheme, where.bucket, where.folder_prefix), b"")

    def mk_dir(self, url: str) -> None:
        """Make folder `url`; its parent must exist (for objects, folders above are implied, as OBS has them)."""
        where = self._locate(url)
        if isinstance(where, str):
            os.mkdir(where)
        else:
            self.make_dirs(url)

    def remove(self, url: str, recursive: bool = False) -> None:
        """Remove file `url`; a folder and all below it with `recursive`."""
        where = self._locate(url)
        if isinstance(where, str):
            if os.path.isdir(where):
                if not recursive:
                    raise IsADirectoryError(errno.EISDIR, "a folder: remove(url, recursive=True) removes it", url)
                shutil.rmtree(where)
            else:
                os.remove(where)
            return
        if self._objects.head(where) is not None:
            self._objects.delete(where)
            return
        _, objects = self._objects.keys(where, delimiter=False)
        if not objects:
            raise FileNotFoundError(errno.ENOENT, "no such object", url)
        if not recursive:
            raise IsADirectoryError(errno.EISDIR, "a folder: remove(url, recursive=True) removes it", url)
        for entry in objects:
            self._objects.delete(ObjectKey(url, where.scheme, where.bucket, entry["Key"]))

    def rename(self, src_url: str, dst_url: str) -> None:
        """Move file or folder `src_url` to `dst_url`."""
        source, destination = self._locate(src_url), self._locate(dst_url)
        if isinstance(source, str) and isinstance(destination, str):
            os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
            shutil.move(source, destination)
            return
        if self.is_directory(src_url):
            self.copy_parallel(src_url, dst_url)
            self.remove(src_url, recursive=True)
        else:
            self.copy(src_url, dst_url)
            self.remove(src_url)

    # --- copying ------------------------------------------------------------------------------------------------

    def copy(self, src_url: str, dst_url: str, **options: Any) -> None:
        """Copy file `src_url` to `dst_url` (a local path or URL either side), replacing it whole."""
        source, destination = self._locate(src_url), self._locate(dst_url)
        if isinstance(source, str):
            if os.path.isdir(source):
                raise IsADirectoryError(errno.EISDIR, "a folder: copy_parallel copies folders", src_url)
            if isinstance(destination, str):
                _local_copy(source, destination)
            else:
                self._objects.upload(source, destination, options.get("callback"))
        elif isinstance(destination, str):
            if self._objects.head(source) is None:
                raise FileNotFoundError(errno.ENOENT, "no such object", src_url)
            self._objects.download(source, destination)
        else:
            self._objects.copy(source, destination)

    def copy_parallel(
        self,
        src_url: str,
        dst_url: str,
        file_list: list[str] | None = None,
        threads: int = DEFAULT_THREADS,
        is_processing: bool = False,
        use_queue: bool = False,
        **options: Any,
    ) -> None:
        """Copy folder `src_url` into folder `dst_url`, every file below it, `threads` at a time (only the files of
        `file_list`, paths relative to `src_url`, where given); a file `src_url` is copied to `dst_url`. Each file
        appears whole or not at all; the first failure stops the copy and is raised. `is_processing` and
        `use_queue` chose moxing's own workers; here the copies are threads."""
        if not self.is_directory(src_url):
            if not self.exists(src_url):
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", src_url)
            self.copy(src_url, dst_url, **options)
            return
        relative = file_list if file_list is not None else self._files_below(src_url)
        self.make_dirs(dst_url)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            copies = [
                pool.submit(self.copy, _join(src_url, name), _join(dst_url, name), **options) for name in relative
            ]
            try:
                for done in concurrent.futures.as_completed(copies):
                    done.result()
            except BaseException:
                for waiting in copies:
                    waiting.cancel()
                raise

    def _files_below(self, url: str) -> list[str]:
        where = self._locate(url)
        if isinstance(where, str):
            return sorted(
                os.path.relpath(os.path.join(folder, name), where)
                for folder, _, files in os.walk(where)
                for name in files
            )
        base = where.folder_prefix
        _, objects = self._objects.keys(where, delimiter=False)
        return sorted(entry["Key"][len(base) :] for entry in objects if not entry["Key"].endswith("/"))

    # --- configuration --------------------------------------------------------------------------------------------

    def shift(self, source: str, target: str) -> None:
        """shift('os', 'mox'): os, os.path and open take obs:// and s3:// URLs; shift('mox', 'os') undoes it."""
        from npu_bridge_compat.legacy.modelarts.shift import shift_to_mox, shift_to_os

        if (source, target) == ("os", "mox"):
            shift_to_mox(self, self._owner)
        elif (source, target) == ("mox", "os"):
            shift_to_os(self._owner)
        else:
            raise ValueError(f"mox.file.shift({source!r}, {target!r}): shift('os', 'mox') or shift('mox', 'os')")

    def set_auth(
        self,
        ak: str | None = None,
        sk: str | None = None,
        server: str | None = None,
        port: int | None = None,
        is_secure: bool | None = None,
        ssl_verify: bool | None = None,
        retry: int | None = None,
        security_token: str | None = None,
        **ignored: Any,
    ) -> None:
        """The credentials and endpoint for obs:// URLs, over the environment's (moxing's own client options, such
        as obs_client_log or long_conn_mode, choose nothing here)."""
        if (ak is None) != (sk is None):
            raise ObjectStorageError("mox.file.set_auth: give ak and sk together")
        self._change_settings(
            self._storage.with_auth(
                access_key=ak,
                secret_key=sk,
                security_token=security_token,
                server=server,
                port=port,
                is_secure=is_secure,
                ssl_verify=ssl_verify,
                retries=retry,
            )
        )


def _join(url: str, name: str) -> str:
    return f"{url.rstrip('/')}/{name}" if is_url(url) else os.path.join(url, name)


def _as_bytes(content: str | bytes, binary: bool, url: str) -> bytes:
    if binary:
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError(f"mox.file: binary=True writes bytes to {url}, not {type(content).__name__}")
        return bytes(content)
    if not isinstance(content, str):
        raise TypeError(f"mox.file: writes text to {url} (binary=True writes bytes), not {type(content).__name__}")
    return content.encode("utf-8")


class _WholeWriter(io.BytesIO):
    """A binary file object whose content is stored whole at `close()`, unless a `with` block ended by an
    exception."""

    def __init__(self, store: Callable[[bytes], None], start: bytes = b"") -> None:
        super().__init__()
        self.write(start)
        self._store: Callable[[bytes], None] | None = store

    def close(self) -> None:
        if self._store is not None and not self.closed:
            store, self._store = self._store, None
            store(self.getvalue())
        super().close()

    def discard(self) -> None:
        self._store = None
        super().close()

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            self.discard()
        else:
            self.close()


class _TextWriter(io.TextIOWrapper):
    """The text form of `_WholeWriter`."""

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            self.buffer.discard()
        else:
            self.close()
