"""A local Cloud Storage JSON API over ``--gcs-root``, so trainer code reaches ``gs://`` as on Vertex AI.

Replicas get ``STORAGE_EMULATOR_HOST=http://127.0.0.1:<port>``: the stock ``google-cloud-storage`` client (and
``gcsfs``) then send their calls here, with no credentials. Object ``gs://b/x/y`` is the file
``<gcs_root>/b/x/y`` (``gcs.to_local_path``, the emulator's one mapping), so what a replica uploads is what
``package_uris`` and the next job read, and what a user puts under the directory is an object. The subset
served is what those clients use for objects:

* ``GET /storage/v1/b/<bucket>`` (bucket exists = the directory exists), ``POST /storage/v1/b`` (creates the
  directory), ``GET /storage/v1/b?project=`` (lists them) and ``DELETE /storage/v1/b/<bucket>`` (removes an
  empty one): buckets.py;
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
modification time in nanoseconds (older generations are not kept); an upload's object is written at the
service's time (``clock``: a scenario's, core/clock.py), a copy and a file put in the tree at the
machine's. It binds 127.0.0.1 only and refuses a request that carries an ``Origin`` header or a ``Host``
that is not a loopback name, and one from another local account than the emulator's without its access
token (``Authorization: Bearer``): replicas, processes of the emulator's user, need none
(server/callers.py).

Why not the ``gcp-storage-emulator`` package: it keeps objects in its own layout (with metadata files), not a
plain directory tree that ``package_uris``, ``base_output_directory`` and the user share.
"""

from __future__ import annotations

import json
import mimetypes
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from vertex_emulator.cloud_storage.buckets import check_new_bucket_name, delete_bucket, list_buckets
from vertex_emulator.cloud_storage.handler import STORAGE_HOST, StorageHTTPServer, StorageRequestHandler
from vertex_emulator.cloud_storage.listing import list_objects
from vertex_emulator.cloud_storage.routes import Route, byte_range, route
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
    live_object,
    object_resource,
    prepare_target,
    temp_beside,
)
from vertex_emulator.cloud_storage.tree import StorageError as _Error
from vertex_emulator.cloud_storage.uploads import Upload, split_multipart
from vertex_emulator.core.gcs import to_local_path
from vertex_emulator.server.httpserve import Ceilings
from vertex_emulator.server.jsonlimits import json_depth

if TYPE_CHECKING:
    from vertex_emulator.core.clock import ServiceClock

__all__ = ["MAX_JSON_DEPTH", "MAX_MULTIPART_BYTES", "STORAGE_HOST", "StorageServer"]

#: largest ``uploadType=multipart`` body (clients switch to resumable uploads well below this).
MAX_MULTIPART_BYTES = 64 * 1024 * 1024
#: how deeply a bucket or object resource may nest, as a body of the REST port (rest.MAX_JSON_DEPTH):
#: counted in linear time before parsing, so a body of 100,000 brackets is a 400, not a RecursionError.
MAX_JSON_DEPTH = 64
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


class _Handler(StorageRequestHandler):
    """The API's paths (``routes.route``) and what each does with the tree."""

    def _dispatch(self, method: str, path: str, query: dict[str, str]) -> None:
        call = route(method, path, query)
        if call.action in _BUCKET_ACTIONS:
            return self._bucket_call(call, query)
        if call.action in ("get", "download"):
            obj = live_object(
                self.server.root, call.bucket, call.name, query
            )  # generation, ifGenerationMatch
            if call.action == "download":
                return self._download(call.name, obj)
            return self._json(200, object_resource(self._base(), call.bucket, call.name, obj))
        if call.action == "delete":
            return self._delete(call.bucket, call.name, query)
        if call.action == "patch":
            self._drain()
            return self._json(200, self._resource(call.bucket, call.name))
        return self._copy(call, query)

    def _bucket_call(self, call: Route, query: dict[str, str]) -> None:
        """The calls on a bucket and on its ``/o`` collection: uploads and listing."""
        if call.action == "insert_bucket":
            return self._insert_bucket(query)
        if call.action == "get_bucket":
            return self._get_bucket(call.bucket)
        if call.action == "list_buckets":
            return self._json(200, list_buckets(self.server.root, self._base(), query))
        if call.action == "delete_bucket":
            delete_bucket(self.server.root, call.bucket)
            return self._send(204, b"", "application/json")
        if call.action == "resume":
            return self._resume(query)
        if call.action == "upload":
            return self._upload(call.bucket, query)
        return self._list(call.bucket, query)

    # -- the tree --------------------------------------------------------------------------------

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
        check_new_bucket_name(bucket)
        try:
            path = to_local_path(f"gs://{bucket}", self.server.root, field="name")
        except ValueError as exc:
            raise _Error(400, "invalid", str(exc)) from None
        if path.is_dir():
            raise _Error(
                409,
                "conflict",
                "Your previous request to create the named bucket succeeded and you already own it.",
            )
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
            start, stop = byte_range(spec, size)
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

    def _copy(self, call: Route, query: dict[str, str]) -> None:
        """``objects.copy`` (answers the new object) and ``objects.rewrite`` (answers a finished
        ``storage#rewriteResponse``: the emulator copies in one call, so no ``rewriteToken``). The
        request body (metadata for the new object) is read and dropped, as for uploads; the
        destination's ``ifGenerationMatch`` and the source's ``ifSourceGenerationMatch`` and
        ``sourceGeneration`` are honoured."""
        self._drain()
        source, dest = (call.bucket, call.name), (call.dest_bucket, call.dest_name)
        resource = copy_object(self.server.root, self._base(), source, dest, query)
        if call.verb == "copyTo":
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
        clock = self.server.clock  # the service's time: a scenario's objects carry the scenario's times
        commit(tmp, target, if_generation_match, None if clock is None else clock.time_ns())
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


_BUCKET_ACTIONS = frozenset(
    {"insert_bucket", "list_buckets", "get_bucket", "delete_bucket", "resume", "upload", "list"}
)


class StorageServer:
    """The Cloud Storage JSON API for ``root`` on ``127.0.0.1:port`` (0: a free port), in a thread;
    for the emulator's own user, or a caller with ``auth_token``."""

    def __init__(
        self,
        root: Path,
        port: int = 0,
        ceilings: Ceilings | None = None,
        auth_token: str | None = None,
        clock: ServiceClock | None = None,
    ) -> None:
        self._httpd = StorageHTTPServer(
            (STORAGE_HOST, port), _Handler, Path(root), ceilings or Ceilings(), auth_token
        )
        self._httpd.clock = clock
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{STORAGE_HOST}:{self._httpd.server_address[1]}"

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
