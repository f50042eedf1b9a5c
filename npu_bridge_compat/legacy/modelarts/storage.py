"""Where a URL of a ModelArts program goes on this host: a local path is itself; `obs://bucket/key` and
`s3://bucket/key` are an object of an S3-compatible endpoint (Huawei OBS is one) reached with boto3, or, where the
user maps them to a folder (`run --obs-root DIR`), the file DIR/bucket/key.

`ObjectStorage` holds the facts (the folder mapping, the credentials and endpoint `mox.file.set_auth` gave) and
answers `locate(url)`; `run` and `set_auth` change its `settings` through the changes registry, so that undoing puts
them back. Credentials and endpoint are read when the first object is reached, in this order: `set_auth`'s, then
OBS's own variables (OBS_ACCESS_KEY_ID, OBS_SECRET_ACCESS_KEY, OBS_SECURITY_TOKEN, as the OBS SDKs read them), then
boto3's own chain (AWS_ACCESS_KEY_ID & co., AWS_PROFILE, ~/.aws); the endpoint: `set_auth(server=)`, then
S3_ENDPOINT (with S3_USE_HTTPS, as ModelArts sets them for TensorFlow's S3 file system), then boto3's own
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL. No instance-metadata service is asked (that would reach past this host).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.errors import NpuConfigError

OBJECT_SCHEMES = ("obs", "s3")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")

ACCESS_KEY_VARIABLES = ("OBS_ACCESS_KEY_ID", "OBS_SECRET_ACCESS_KEY", "OBS_SECURITY_TOKEN")
ENDPOINT_VARIABLES = ("S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
WHAT_TO_SET = (
    "set OBS_ACCESS_KEY_ID and OBS_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), call "
    "mox.file.set_auth(ak=..., sk=...), or map obs:// URLs to a local folder with `run --obs-root DIR`"
)
WHERE_TO_SET = (
    "set AWS_ENDPOINT_URL (or S3_ENDPOINT) to the storage's endpoint (Huawei OBS: https://obs.<region>."
    "myhuaweicloud.com), call mox.file.set_auth(server=...), or map obs:// URLs to a local folder with "
    "`run --obs-root DIR`"
)


CLIENTS = changes.ProcessState(
    "moxing's boto3 clients, one per storage settings and environment", Owner.MODELARTS_WORLD, dict
)
SAID = changes.ProcessState("where moxing's obs:// URLs go, said once per choice", Owner.MODELARTS_WORLD, set)


class ObjectStorageError(NpuConfigError, OSError):
    """A URL could not be reached as the program asked: an unknown scheme, no credentials, no endpoint, an endpoint
    that refuses. An OSError too, as moxing's own errors of this kind were."""


@dataclass(frozen=True)
class StorageSettings:
    """What the user chose: a folder obs:// and s3:// URLs map to, and `mox.file.set_auth`'s values."""

    obs_root: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    server: str | None = None
    port: int | None = None
    is_secure: bool | None = None
    ssl_verify: bool | None = None
    retries: int | None = None


@dataclass(frozen=True)
class ObjectKey:
    """An object (or a prefix, for a folder) of a bucket, and the URL the program named it by."""

    url: str
    scheme: str
    bucket: str
    key: str

    def child(self, name: str) -> ObjectKey:
        key = f"{self.key.rstrip('/')}/{name}" if self.key.strip("/") else name
        return ObjectKey(f"{self.scheme}://{self.bucket}/{key}", self.scheme, self.bucket, key)

    @property
    def folder_prefix(self) -> str:
        """The key as a folder: the prefix its children's keys start with ('' for the bucket itself)."""
        stripped = self.key.strip("/")
        return f"{stripped}/" if stripped else ""


def scheme_of(url: str) -> str | None:
    """The scheme of `url` (`obs`, `s3`, ...), None for a local path."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def is_url(path: Any) -> bool:
    """Whether `path` is a URL of a scheme moxing reads (obs://, s3://), not a local path."""
    return isinstance(path, str) and scheme_of(path) in OBJECT_SCHEMES


def parse_object_url(url: str) -> ObjectKey:
    """`obs://bucket/key` as its parts; ObjectStorageError for another scheme or a URL without a bucket."""
    scheme = scheme_of(url)
    if scheme not in OBJECT_SCHEMES:
        raise ObjectStorageError(
            f"{url}: unknown URL scheme {scheme + '://' if scheme else ''!r}: moxing's file API under `run` reads "
            "local paths, obs://bucket/key and s3://bucket/key"
        )
    bucket, _, key = url[len(scheme) + 3 :].partition("/")
    if not bucket:
        raise ObjectStorageError(f"{url}: no bucket: write obs://bucket/key")
    return ObjectKey(url, scheme, bucket, key)


class ObjectStorage:
    """The facts of where obs:// and s3:// URLs go on this host, and the boto3 client that reaches them."""

    def __init__(self) -> None:
        self.settings = StorageSettings()  # changed through the registry (run --obs-root, mox.file.set_auth)
        self._lock = threading.Lock()

    # --- where a URL goes ------------------------------------------------------------------------------------

    def locate(self, url: str) -> str | ObjectKey:
        """A local path (a path, or an obs:// URL mapped by --obs-root) or the object a URL names. Any str that is
        not a URL of a known scheme is a local path; a URL of another scheme is an ObjectStorageError."""
        url = os.fspath(url)
        scheme = scheme_of(url)
        if scheme is None:
            return url
        location = parse_object_url(url)
        if self.settings.obs_root is not None:
            return os.path.join(self.settings.obs_root, location.bucket, *location.key.split("/"))
        return location

    def describe(self, environment: Mapping[str, str] | None = None) -> str:
        """Where obs:// and s3:// URLs go, in one sentence (what `run` says at the first one, and `explain`)."""
        if self.settings.obs_root is not None:
            return f"obs:// and s3:// URLs are files under {self.settings.obs_root} (run --obs-root): obs://b/k is " + (
                os.path.join(self.settings.obs_root, "b", "k")
            )
        environment = os.environ if environment is None else environment
        endpoint, endpoint_source = self._endpoint(environment)
        if endpoint is None:
            return f"obs:// and s3:// URLs are objects reached through boto3, but no endpoint is set: {WHERE_TO_SET}"
        return (
            f"obs:// and s3:// URLs are objects of the S3-compatible endpoint {endpoint} ({endpoint_source}), through "
            f"boto3; credentials: {self._credential_source(environment)}"
        )

    def say_once(self, url: str) -> None:
        """Say where URLs go, once per choice, when the program reaches its first one."""
        sentence = self.describe()
        said = changes.state(SAID)
        with self._lock:
            if sentence in said:
                return
            said.add(sentence)
        from npu_bridge_compat.logs import log_line

        log_line(f"npu_bridge_compat: moxing: {sentence} (first: {url})")

    def endpoint(self) -> str | None:
        """The endpoint obs:// URLs reach with this process's environment (None where none is set)."""
        return self._endpoint(os.environ)[0]

    # --- the client ------------------------------------------------------------------------------------------

    def _endpoint(self, environment: Mapping[str, str]) -> tuple[str | None, str]:
        settings = self.settings
        if settings.server:
            server = settings.server
            if not scheme_of(server):
                server = ("https" if settings.is_secure in (None, True) else "http") + "://" + server
            if settings.port:
                server = f"{server.rstrip('/')}:{settings.port}"
            return server, "mox.file.set_auth(server=...)"
        if environment.get("S3_ENDPOINT"):
            server = environment["S3_ENDPOINT"]
            if not scheme_of(server):
                secure = environment.get("S3_USE_HTTPS", "1").strip().lower() not in ("0", "false", "no")
                server = ("https" if secure else "http") + "://" + server
            return server, "S3_ENDPOINT"
        for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
            if environment.get(name):
                return environment[name], name
        return None, ""

    def _credential_source(self, environment: Mapping[str, str]) -> str:
        if self.settings.access_key:
            return "mox.file.set_auth(ak=..., sk=...)"
        if environment.get("OBS_ACCESS_KEY_ID"):
            return "OBS_ACCESS_KEY_ID / OBS_SECRET_ACCESS_KEY"
        if environment.get("AWS_ACCESS_KEY_ID"):
            return "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
        return "boto3's own configuration (AWS_PROFILE, ~/.aws)"

    def client(self, location: ObjectKey) -> Any:
        """The boto3 S3 client for `location`, made once per settings and environment; ObjectStorageError naming
        the URL and what to set where there is no endpoint (for obs://) or no credentials."""
        environment = dict(os.environ)
        endpoint, endpoint_source = self._endpoint(environment)
        key = (self.settings, endpoint, *(environment.get(name) for name in ACCESS_KEY_VARIABLES))
        clients = changes.state(CLIENTS)
        with self._lock:
            client = clients.get(key)
        if client is not None:
            return client
        if endpoint is None and location.scheme == "obs":
            raise ObjectStorageError(f"{location.url}: no object-storage endpoint for obs:// URLs: {WHERE_TO_SET}")
        client = self._make_client(location, endpoint, environment)
        with self._lock:
            clients[key] = client
        return client

    def _make_client(self, location: ObjectKey, endpoint: str | None, environment: dict[str, str]) -> Any:
        import boto3
        import botocore.session
        from botocore.config import Config

        core = botocore.session.Session()
        resolver = core.get_component("credential_provider")
        for provider in ("iam-role", "container-role"):  # providers that ask a metadata service past this host
            if resolver.get_provider(provider) is not None:
                resolver.remove(provider)
        session = boto3.Session(botocore_session=core)
        settings = self.settings
        access_key, secret_key, token = settings.access_key, settings.secret_key, settings.security_token
        if access_key is None and environment.get("OBS_ACCESS_KEY_ID"):
            access_key = environment["OBS_ACCESS_KEY_ID"]
            secret_key = environment.get("OBS_SECRET_ACCESS_KEY")
            token = environment.get("OBS_SECURITY_TOKEN") or None
            if not secret_key:
                raise ObjectStorageError(
                    f"{location.url}: OBS_ACCESS_KEY_ID is set but OBS_SECRET_ACCESS_KEY is not: set both"
                )
        if access_key is None and session.get_credentials() is None:
            raise ObjectStorageError(f"{location.url}: no credentials for object storage: {WHAT_TO_SET}")
        verify = settings.ssl_verify
        if verify is None and environment.get("S3_VERIFY_SSL", "").strip().lower() in ("0", "false", "no"):
            verify = False
        return session.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            aws_session_token=token,
            region_name=environment.get("AWS_REGION") or environment.get("AWS_DEFAULT_REGION") or "us-east-1",
            verify=verify,
            config=Config(
                retries={"max_attempts": settings.retries or 3, "mode": "standard"},
                connect_timeout=10,
                s3={"addressing_style": "path"},
            ),
        )

    def with_auth(self, **values: Any) -> StorageSettings:
        """The settings with `set_auth`'s values replacing theirs (None: unchanged)."""
        given = {name: value for name, value in values.items() if value is not None}
        return dataclasses.replace(self.settings, **given)
