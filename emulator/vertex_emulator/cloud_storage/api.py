"""A local Cloud Storage JSON API over ``--gcs-root``, so trainer code reaches ``gs://`` as on Vertex AI.

Replicas get ``STORAGE_EMULATOR_HOST=http://127.0.0.1:<port>``: the stock ``google-cloud-storage`` client (and
``gcsfs``) then send their calls here, with no credentials. Object ``gs://b/x/y`` is the file
``<gcs_root>/b/x/y`` (``gcs.to_local_path``, the emulator's one mapping), so what a replica uploads is what
``package_uris`` and the next job read, and what a user puts under the directory is an object. The subset
served is what those clients use for objects:

* ``GET /storage/v1/b/<bucket>`` (bucket exists = the directory exists), ``POST /storage/v1/b`` (creates the
  directory);
* ``GET /storage/v1/b/<bucket>/o`` (``prefix``, ``delimiter``, ``matchGlob``, ``maxResults``, ``pageToken``,
  ``startOffset``, ``endOffset``);
* ``GET /storage/v1/b/<bucket>/o/<object>`` (metadata; ``alt=media``: the bytes, ``Range`` honoured), ``GET
  /download/storage/v1/b/<bucket>/o/<object>?alt=media``, ``DELETE .../o/<object>``, each with ``generation``
  (only the live one exists: another is 404) and ``ifGenerationMatch``;
* ``POST /upload/storage/v1/b/<bucket>/o`` with ``uploadType=media``, ``multipart`` or ``resumable`` (then
  ``PUT`` chunks with ``Content-Range``), and ``ifGenerationMatch`` preconditions;
* ``POST /storage/v1/b/<bucket>/o/<object>/copyTo/b/<bucket>/o/<object>`` (``Blob.copy_blob``) and
  ``.../rewriteTo/...`` (``Blob.rewrite``; done in one call), with ``ifGenerationMatch``,
  ``ifSourceGenerationMatch`` and ``sourceGeneration``.

How it differs from Cloud Storage (docs/emulator.md): metadata beyond name, size, hashes and times is not
stored (``contentType`` is guessed from the name); an object name ending in ``/`` or one that would make a
file and a directory share a path (``a`` and ``a/b``) is refused with 400; the generation is the file's
modification time in nanoseconds (older generations are not kept). It binds 127.0.0.1 only and refuses a
request that carries an ``Origin`` header or a ``Host`` that is not a loopback name, and one from another
local account than the emulator's without its access token (``Authorization: Bearer``): replicas, processes of
the emulator's user, need none (server/callers.py).

Why not the ``gcp-storage-emulator`` package: it keeps objects in its own layout (with metadata files), not a
plain directory tree that ``package_uris``, ``base_output_directory`` and the user share.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mimetypes
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from vertex_emulator.cloud_storage.tree import (
    CHUNK,
    bucket_dir,
    bucket_resource,
    byte_offset,
    commit,
    copy_object,
    existing,
    generation,
    hashes,
    list_objects,
    live_object,
    object_resource,
    prepare_target,
    temp_beside,
)
from vertex_emulator.cloud_storage.tree import StorageError as _Error
from vertex_emulator.cloud_storage.uploads import Upload, UploadSessions, split_multipart
from vertex_emulator.core.gcs import to_local_path
from vertex_emulator.server import callers
from vertex_emulator.server.httpserve import BoundedHTTPServer, Ceilings, Deadlines
from vertex_emulator.server.jsonlimits import json_depth

__all__ = ["MAX_JSON_DEPTH", "MAX_MULTIPART_BYTES", "STORAGE_HOST", "StorageServer"]

#: largest ``uploadType=multipart`` body (clients switch to resumable uploads well below this).
MAX_MULTIPART_BYTES = 64 * 1024 * 1024
#: how deeply a bucket or object resource may nest, as a body of the REST port (rest.MAX_JSON_DEPTH):
#: counted in linear time before parsing, so a body of 100,000 brackets is a 400, not a RecursionError.
MAX_JSON_DEPTH = 64
log = logging.getLogger(__name__)
STORAGE_HOST = _HOST = "127.0.0.1"  # loopback only, whatever --host says
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")
_CONTENT_RANGE_RE = re.compile(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)")


def _resource_json(raw: bytes, what: str) -> Any:
    """The JSON of a bucket or object resource (an empty body is ``{}``); 400 naming ``what`` when it
    is not JSON or nests deeper than ``MAX_JSON_DEPTH``."""
    depth = json_depth(raw, MAX_JSON_DEPTH)
    if depth > MAX_JSON_DEPTH:
        raise _Error(400, "parseError", f"{what} nests {depth} levels deep, more than {MAX_JSON_DEPTH}")
    try:
        return json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        raise _Error(400, "parseError", f"{what} is not JSON") from None


class _StorageHTTPServer(BoundedHTTPServer):
    def __init__(self, address: tuple[str, int], root: Path, ceilings: Ceilings, token: str | None) -> None:
        super().__init__(address, _Handler, ceilings, backlog=1024)
        self.root, self.auth_token = root, token
        self.uploads = UploadSessions()


class _Handler(Deadlines):
    server: _StorageHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    # -- plumbing ---------------------------------------------------------------------------------

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            # say so: a client that reuses the connection for its next request (after a refused
            # upload, say) would otherwise find it closed under that request
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=UTF-8", headers)

    def _error(self, err: _Error) -> None:
        self._json(
            err.status,
            {
                "error": {
                    "code": err.status,
                    "message": err.message,
                    "errors": [{"message": err.message, "domain": "global", "reason": err.reason}],
                }
            },
        )

    def _length(self) -> int:
        raw = self.headers.get("Content-Length")
        if raw is None:
            return 0
        try:
            length = int(raw)
        except ValueError:
            raise _Error(400, "invalid", f"Content-Length: not a number ({raw!r})") from None
        if length < 0:
            raise _Error(400, "invalid", f"Content-Length: must not be negative ({length})")
        return length

    def _body_chunks(self, length: int) -> Iterator[bytes]:
        left = length
        while left > 0:
            self.progress()  # each block within idle_timeout_s of the last
            block = self.rfile.read(min(CHUNK, left))
            if not block:
                raise _Error(400, "invalid", "the request body ended before Content-Length bytes")
            left -= len(block)
            yield block
        self.busy()

    def _drain(self) -> None:
        with contextlib.suppress(_Error, OSError, ValueError):
            for _ in self._body_chunks(self._length()):
                pass

    def _check_origin(self) -> None:
        if not callers.http_caller_allowed(self, self.server.auth_token):
            raise _Error(403, "forbidden", callers.PEER_REFUSAL)
        if self.headers.get("Origin") is not None:
            raise _Error(403, "forbidden", "requests from web pages (with an Origin header) are refused")
        host = (self.headers.get("Host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in _LOOPBACK:
            raise _Error(403, "forbidden", f"Host: {host!r} is not a loopback name")

    def _route(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        self.busy()
        try:
            self._check_origin()
            if self.headers.get("Transfer-Encoding") is not None:
                raise _Error(411, "required", "Content-Length is required (chunked bodies are not supported)")
            self._dispatch(method, split.path, query)
        except _Error as err:
            self._drain_if_needed(method)
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug or a disk error: answer, and say what, rather than hang up
            log.exception("storage request %s %s failed", method, split.path)
            self.close_connection = True
            self._error(_Error(500, "backendError", f"the emulator's storage failed: {exc!r}"))

    def _drain_if_needed(self, method: str) -> None:
        # a refused upload's body was not read: the connection cannot be reused
        if method in ("POST", "PUT") or self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True

    def do_GET(self) -> None:
        self._route(self.command)  # GET, HEAD, POST, PUT, DELETE, PATCH

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    # -- routing ----------------------------------------------------------------------------------

    def _dispatch(self, method: str, path: str, query: dict[str, str]) -> None:
        parts = path.split("/")
        # ["", "storage", "v1", "b", bucket, "o", object...]; upload/download put a word first
        prefix = ""
        if len(parts) > 1 and parts[1] in ("upload", "download"):
            prefix = parts[1]
            parts = [""] + parts[2:]
        if parts[1:4] != ["storage", "v1", "b"]:
            raise _Error(404, "notFound", f"{path}: not a Cloud Storage JSON API path this emulator serves")
        rest = parts[4:]
        if not rest or rest == [""]:
            if method == "POST" and not prefix:
                return self._insert_bucket(query)
            raise _Error(400, "invalid", f"{method} {path}: listing buckets is not supported")
        bucket = unquote(rest[0])
        if len(rest) == 1:
            if method in ("GET", "HEAD") and not prefix:
                return self._get_bucket(bucket)
            raise _Error(405, "invalid", f"{method} {path}: not supported on a bucket")
        if rest[1] != "o":
            raise _Error(404, "notFound", f"{path}: only objects (/o) are served")
        if len(rest) == 2 or (len(rest) == 3 and rest[2] == ""):
            if prefix == "upload" and method in ("POST", "PUT") and "upload_id" in query:
                return self._resume(query)  # a session URI takes PUT (google-cloud-storage) or POST (gcsfs)
            if prefix == "upload" and method == "POST":
                return self._upload(bucket, query)
            if method in ("GET", "HEAD") and not prefix:
                return self._list(bucket, query)
            raise _Error(405, "invalid", f"{method} {path}: not supported")
        copy = self._copy_target(rest) if method == "POST" and not prefix else None
        if copy is not None:
            end, verb, dest_bucket, dest_name = copy
            return self._copy(bucket, unquote("/".join(rest[2:end])), dest_bucket, dest_name, query, verb)
        name = unquote("/".join(rest[2:]))
        if method in ("GET", "HEAD"):
            obj = live_object(self.server.root, bucket, name, query)  # generation, ifGenerationMatch
            if query.get("alt") == "media" or prefix == "download":
                return self._download(name, obj)
            return self._json(200, object_resource(self._base(), bucket, name, obj))
        if method == "DELETE" and not prefix:
            return self._delete(bucket, name, query)
        if method == "PATCH" and not prefix:
            self._drain()
            return self._json(200, self._resource(bucket, name))
        raise _Error(405, "invalid", f"{method} {path}: not supported")

    @staticmethod
    def _copy_target(rest: list[str]) -> tuple[int, str, str, str] | None:
        """``<bucket>/o/<object>/{copyTo|rewriteTo}/b/<bucket>/o/<object>``: (where the source object's
        segments end, the verb, the destination bucket and object), else ``None``."""
        for end in range(3, len(rest) - 4):
            if rest[end] in ("copyTo", "rewriteTo") and rest[end + 1] == "b" and rest[end + 3] == "o":
                return end, rest[end], unquote(rest[end + 2]), unquote("/".join(rest[end + 4 :]))
        return None

    # -- the tree --------------------------------------------------------------------------------

    def _base(self) -> str:
        return f"http://{_HOST}:{self.server.server_address[1]}"

    def _resource(self, bucket: str, name: str) -> dict[str, Any]:
        return object_resource(self._base(), bucket, name, existing(self.server.root, bucket, name))

    def _get_bucket(self, bucket: str) -> None:
        self._json(200, bucket_resource(self._base(), bucket, bucket_dir(self.server.root, bucket)))

    def _insert_bucket(self, query: dict[str, str]) -> None:
        length = self._length()
        if length > MAX_MULTIPART_BYTES:
            raise _Error(413, "invalid", "bucket resource too large")
        meta = _resource_json(b"".join(self._body_chunks(length)), "the bucket resource")
        bucket = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        try:
            path = to_local_path(f"gs://{bucket}", self.server.root, field="name")
        except ValueError as exc:
            raise _Error(400, "invalid", str(exc)) from None
        if path.is_dir():
            raise _Error(409, "conflict", f"The bucket {bucket} already exists")
        path.mkdir(parents=True)
        self._json(200, bucket_resource(self._base(), bucket, path))

    # -- objects ---------------------------------------------------------------------------------

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        self._json(200, list_objects(self.server.root, self._base(), bucket, query))

    def _download(self, name: str, path: Path) -> None:
        size = path.stat().st_size
        start, stop = 0, size
        status = 200
        headers: dict[str, str] = {}
        spec = self.headers.get("Range")
        if spec:
            match = _RANGE_RE.fullmatch(spec.strip())
            if match is None or (not match[1] and not match[2]):
                raise _Error(400, "invalid", f"Range: {spec!r} is not 'bytes=START-END'")
            if match[1]:
                start = byte_offset(match[1])
                stop = min(size, byte_offset(match[2]) + 1) if match[2] else size
            else:
                start = max(0, size - byte_offset(match[2]))
            if start >= size and size > 0:
                raise _Error(416, "invalid", f"Range: {spec!r} starts past the object's {size} bytes")
            status = 206
            headers["Content-Range"] = f"bytes {start}-{max(start, stop - 1)}/{size}"
        else:
            md5, crc = hashes(path)
            headers["X-Goog-Hash"] = f"crc32c={crc},md5={md5}"
        headers["X-Goog-Generation"] = generation(path)
        headers["X-Goog-Stored-Content-Length"] = str(size)
        length = max(0, stop - start)
        self.send_response(status)
        self.send_header("Content-Type", mimetypes.guess_type(name)[0] or "application/octet-stream")
        self.send_header("Content-Length", str(length))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        with open(path, "rb") as fh:
            fh.seek(start)
            left = length
            while left > 0:
                block = fh.read(min(CHUNK, left))
                if not block:
                    break
                self.wfile.write(block)
                left -= len(block)

    def _delete(self, bucket: str, name: str, query: dict[str, str]) -> None:
        live_object(self.server.root, bucket, name, query).unlink()
        self._send(204, b"", "application/json")

    # -- copies -----------------------------------------------------------------------------------

    def _copy(
        self, bucket: str, name: str, dest_bucket: str, dest_name: str, query: dict[str, str], verb: str
    ) -> None:
        """``objects.copy`` (answers the new object) and ``objects.rewrite`` (answers a finished
        ``storage#rewriteResponse``: the emulator copies in one call, so no ``rewriteToken``). The
        request body (metadata for the new object) is read and dropped, as for uploads; the
        destination's ``ifGenerationMatch`` and the source's ``ifSourceGenerationMatch`` and
        ``sourceGeneration`` are honoured."""
        self._drain()
        source, dest = (bucket, name), (dest_bucket, dest_name)
        resource = copy_object(self.server.root, self._base(), source, dest, query)
        if verb == "copyTo":
            return self._json(200, resource)
        size = resource["size"]
        self._json(
            200,
            {
                "kind": "storage#rewriteResponse",
                "totalBytesRewritten": size,
                "objectSize": size,
                "done": True,
                "resource": resource,
            },
        )

    # -- uploads ----------------------------------------------------------------------------------

    def _commit(
        self, tmp: Path, target: Path, if_generation_match: str | None, bucket: str, name: str
    ) -> None:
        commit(tmp, target, if_generation_match)
        self._json(200, object_resource(self._base(), bucket, name, target))

    def _upload(self, bucket: str, query: dict[str, str]) -> None:
        kind = query.get("uploadType", "")
        if kind == "media":
            name = query.get("name", "")
            target = prepare_target(self.server.root, bucket, name)
            tmp = temp_beside(target)
            try:
                with open(tmp, "wb") as fh:
                    for block in self._body_chunks(self._length()):
                        fh.write(block)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            return self._commit(tmp, target, query.get("ifGenerationMatch"), bucket, name)
        if kind == "multipart":
            return self._multipart(bucket, query)
        if kind == "resumable":
            return self._start_resumable(bucket, query)
        raise _Error(400, "invalid", f"uploadType: must be media, multipart or resumable (got {kind!r})")

    def _multipart(self, bucket: str, query: dict[str, str]) -> None:
        length = self._length()
        if length > MAX_MULTIPART_BYTES:
            raise _Error(
                413, "uploadTooLarge", f"a multipart upload is limited to {MAX_MULTIPART_BYTES} bytes here"
            )
        body = b"".join(self._body_chunks(length))
        metadata, media = split_multipart(body, self.headers.get("Content-Type", ""))
        meta = _resource_json(metadata, "the metadata part")
        name = str(meta.get("name") or query.get("name") or "") if isinstance(meta, dict) else ""
        target = prepare_target(self.server.root, bucket, name)
        tmp = temp_beside(target)
        tmp.write_bytes(media)
        self._commit(tmp, target, query.get("ifGenerationMatch"), bucket, name)

    def _start_resumable(self, bucket: str, query: dict[str, str]) -> None:
        length = self._length()
        if length > MAX_MULTIPART_BYTES:
            raise _Error(413, "invalid", "object resource too large")
        raw = b"".join(self._body_chunks(length))
        meta = _resource_json(raw, "the object resource")
        name = str(meta.get("name") or query.get("name") or "") if isinstance(meta, dict) else ""
        target = prepare_target(self.server.root, bucket, name)
        upload_id = self.server.uploads.open(Upload(bucket, name, target, query.get("ifGenerationMatch")))
        location = (
            f"{self._base()}/upload/storage/v1/b/{quote(bucket, safe='')}/o"
            f"?uploadType=resumable&upload_id={upload_id}"
        )
        self._send(200, b"", "application/json", {"Location": location})

    def _resume(self, query: dict[str, str]) -> None:
        upload_id = query.get("upload_id", "")
        upload = self.server.uploads.get(upload_id)
        if upload is None:
            raise _Error(404, "notFound", f"upload_id: no resumable upload session {upload_id!r}")
        length = self._length()
        spec = self.headers.get("Content-Range", f"bytes */{'*' if length == 0 else length}")
        match = _CONTENT_RANGE_RE.fullmatch(spec.strip())
        if match is None:
            raise _Error(400, "invalid", f"Content-Range: {spec!r} is not 'bytes START-END/TOTAL'")
        with upload.lock:
            if match[1] is not None:
                first, last = byte_offset(match[1]), byte_offset(match[2])
                if first != upload.received or last - first + 1 != length:
                    raise _Error(
                        400,
                        "invalid",
                        f"Content-Range: {spec!r} does not continue the {upload.received} bytes received "
                        f"with this {length}-byte body",
                    )
                with open(upload.tmp, "ab") as fh:
                    for block in self._body_chunks(length):
                        fh.write(block)
                upload.received += length
            elif length:
                raise _Error(400, "invalid", f"Content-Range: {spec!r} with a non-empty body")
            total = match[3]
            if total != "*" and byte_offset(total) == upload.received:
                self.server.uploads.close(upload_id)
                return self._commit(
                    upload.tmp, upload.target, upload.if_generation_match, upload.bucket, upload.name
                )
            if total != "*" and byte_offset(total) < upload.received:
                raise _Error(
                    400,
                    "invalid",
                    f"Content-Range: total {total} is below the {upload.received} bytes received",
                )
            headers = {"Range": f"bytes=0-{upload.received - 1}"} if upload.received else {}
            self._send(308, b"", "text/plain", headers)


class StorageServer:
    """The Cloud Storage JSON API for ``root`` on ``127.0.0.1:port`` (0: a free port), in a thread;
    for the emulator's own user, or a caller with ``auth_token``."""

    def __init__(
        self, root: Path, port: int = 0, ceilings: Ceilings | None = None, auth_token: str | None = None
    ) -> None:
        self._httpd = _StorageHTTPServer((_HOST, port), Path(root), ceilings or Ceilings(), auth_token)
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{_HOST}:{self._httpd.server_address[1]}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="emulator-storage",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()
        self._httpd.uploads.discard_all()
