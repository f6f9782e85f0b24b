"""Service-to-service calls: the same frozen dataclasses every process uses inside, over HTTP/JSON.

When services run as separate processes (``risingspark meta|frontend|compute|compactor``), a
frontend calls meta, meta calls its compute nodes (barriers) and compactors call meta, all with
``POST /rpc/<method>`` whose body is the JSON of the arguments. Values are encoded with a small
tagged JSON codec that keeps what plain JSON loses: tuples, non-string dict keys, enums, dates,
decimals, bytes, and frozen dataclasses (only of RisingSpark's own packages, so a request can never
name an arbitrary class). Errors travel as ``{"$error": {sqlstate, message, ...}}`` and are raised
again as the same `RisingSparkError` class on the caller's side.

>>> from risingspark.types import INT8, Field
>>> loads(dumps((Field("id", INT8), {1: b"x"})))
(Field(name='id', type=DataType(name=<TypeName.BIGINT: 'bigint'>, precision=None, scale=None), hidden=False), {1: b'x'})
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import importlib
import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from risingspark.errors import RisingSparkError, ServiceUnavailable

logger = logging.getLogger(__name__)

# Packages whose dataclasses and enums may be named in a message.
_TRUSTED_PACKAGES = ("risingspark", "meta", "compute", "compactor", "frontend")
CONTENT_TYPE = "application/json"


def encode(v: Any) -> Any:
    """A JSON-ready form of `v` (see the module docstring)."""
    if isinstance(v, enum.Enum):  # first: a StrEnum or IntEnum is also a str or an int
        return {"$enum": _class_name(type(v)), "value": encode(v.value)}
    if v is None or isinstance(v, bool | int | str | float):
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"$dc": _class_name(type(v)),
                "fields": {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, tuple):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in v):
            return {k: encode(x) for k, x in v.items()}
        return {"$dict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, frozenset | set):
        return {"$set": [encode(x) for x in v]}
    if isinstance(v, dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"$time": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"$timedelta": [v.days, v.seconds, v.microseconds]}
    if isinstance(v, decimal.Decimal):
        return {"$decimal": str(v)}
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, uuid.UUID):
        return {"$uuid": str(v)}
    if hasattr(v, "item") and callable(v.item):  # numpy scalars
        return encode(v.item())
    raise TypeError(f"cannot send a {type(v).__name__} between services")


def decode(v: Any) -> Any:
    """The value `encode` was given."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1:
        ((tag, body),) = v.items()
        if tag == "$tuple":
            return tuple(decode(x) for x in body)
        if tag == "$dict":
            return {decode(k): decode(x) for k, x in body}
        if tag == "$set":
            return frozenset(decode(x) for x in body)
        if tag == "$datetime":
            return dt.datetime.fromisoformat(body)
        if tag == "$date":
            return dt.date.fromisoformat(body)
        if tag == "$time":
            return dt.time.fromisoformat(body)
        if tag == "$timedelta":
            return dt.timedelta(days=body[0], seconds=body[1], microseconds=body[2])
        if tag == "$decimal":
            return decimal.Decimal(body)
        if tag == "$bytes":
            return base64.b64decode(body)
        if tag == "$uuid":
            return uuid.UUID(body)
    if "$dc" in v:
        dc: Any = _resolve(v["$dc"])
        if not (isinstance(dc, type) and dataclasses.is_dataclass(dc)):
            raise TypeError(f"{v['$dc']} is not a dataclass")
        return dc(**{k: decode(x) for k, x in v["fields"].items()})
    if "$enum" in v:
        cls = _resolve(v["$enum"])
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise TypeError(f"{v['$enum']} is not an enum")
        return cls(decode(v["value"]))
    return {k: decode(x) for k, x in v.items()}


def dumps(v: Any) -> bytes:
    return json.dumps(encode(v), separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    return decode(json.loads(data))


def error_body(e: RisingSparkError) -> bytes:
    return json.dumps({"$error": e.to_json()}).encode()


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(name: str) -> Any:
    module, _, qualname = name.partition(":")
    if module.split(".")[0] not in _TRUSTED_PACKAGES:
        raise TypeError(f"{name} is not a RisingSpark type")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class RpcClient:
    """Calls one service, reachable at one of several addresses (a meta and its standbys).

    A call that could not connect is retried on the next address, for up to `retry_s` in all (a
    standby meta takes over within seconds); a call that reached the service is never retried, since
    it may have taken effect. Errors the service raised are raised again here with their SQLSTATE.
    """

    def __init__(self, addresses: str | Sequence[str], *, service: str = "meta", retry_s: float = 60.0,
                 timeout_s: float | None = 60.0) -> None:
        import httpx

        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.split(",") if a.strip()]
        if not addresses:
            raise ValueError(f"no {service} address given")
        self.addresses = [a if "://" in a else f"http://{a}" for a in addresses]
        self.service = service
        self.retry_s = retry_s
        self._current = 0
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=5.0))

    @property
    def address(self) -> str:
        return self.addresses[self._current]

    def call(self, method: str, *args: Any, timeout_s: float | None = -1.0, retry_s: float | None = None) -> Any:
        """Call `method`; `timeout_s` None waits as long as it takes (-1: the client's default)."""
        import httpx

        body = dumps(list(args))
        deadline = time.monotonic() + (self.retry_s if retry_s is None else retry_s)
        kwargs: dict[str, Any] = {} if timeout_s == -1.0 else {"timeout": httpx.Timeout(timeout_s, connect=5.0)}
        while True:
            address = self.addresses[self._current]
            try:
                resp = self._http.post(f"{address}/rpc/{method}", content=body,
                                       headers={"content-type": CONTENT_TYPE}, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                if time.monotonic() >= deadline:
                    raise ServiceUnavailable(f"{self.service} is unreachable at {', '.join(self.addresses)}: {e}") from e
                self._current = (self._current + 1) % len(self.addresses)
                time.sleep(0.2 if self._current else 0.5)
                continue
            except httpx.HTTPError as e:
                raise ServiceUnavailable(f"lost the connection to {self.service} at {address} during "
                                         f"{method}: {e}") from e
            if resp.status_code == 503 and time.monotonic() < deadline:  # a standby, not yet active
                self._current = (self._current + 1) % len(self.addresses)
                time.sleep(0.2)
                continue
            return _result(resp, self.service, method)

    def close(self) -> None:
        self._http.close()


def _result(resp: Any, service: str, method: str) -> Any:
    try:
        payload = json.loads(resp.content)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "$error" in payload:
        raise RisingSparkError.from_json(payload["$error"])
    if resp.status_code != 200:
        raise ServiceUnavailable(f"{service} answered {method} with HTTP {resp.status_code}: "
                                 f"{resp.text[:300]}")
    return decode(payload)


def mount_rpc(app: Any, methods: dict[str, Any]) -> None:
    """Serve ``POST /rpc/<method>`` on a FastAPI `app`: each method runs on the thread pool with the
    decoded arguments; its result (or its error) goes back encoded."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response

    from risingspark.errors import InternalError

    async def _rpc(request: Request) -> Response:
        method = request.path_params["method"]
        fn = methods.get(method)
        if fn is None:
            return Response(error_body(InternalError(f"unknown method {method}")), 404, media_type=CONTENT_TYPE)
        try:
            args = loads(await request.body())
            result = await run_in_threadpool(fn, *args)
            return Response(dumps(result), media_type=CONTENT_TYPE)
        except RisingSparkError as e:
            return Response(error_body(e), 400, media_type=CONTENT_TYPE)
        except Exception as e:  # noqa: BLE001 - reported to the caller, logged here with its traceback
            logger.exception("%s failed", method)
            return Response(error_body(InternalError(f"{method} failed: {type(e).__name__}: {e}")), 500,
                            media_type=CONTENT_TYPE)

    app.add_route("/rpc/{method}", _rpc, methods=["POST"], include_in_schema=False)
