"""Protobuf request bodies, as kube-apiserver reads them (``application/vnd.kubernetes.protobuf``).

kubectl 1.32+ posts SelfSubjectAccessReview and SelfSubjectReview as protobuf (it asks for
``application/vnd.kubernetes.protobuf,application/json`` back, so JSON answers are fine). The
wire form is apimachinery's protobuf serializer: the 4 magic bytes ``k8s\\0`` then a
``runtime.Unknown`` message (1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding,
4: contentType) whose ``raw`` is the object's own generated message.

The stand-in decodes the kinds kubectl posts (SelfSubjectAccessReview, SelfSubjectReview,
SelfSubjectRulesReview) into their JSON form; any other protobuf body gets the answer a
server gives for a body it cannot decode: 415 UnsupportedMediaType naming the media types it
accepts. Field numbers are those of ``k8s.io/api/authorization/v1/generated.proto`` and
``k8s.io/api/authentication/v1/generated.proto``.
"""

from __future__ import annotations

from typing import Any

from gpunode_sandbox.kubesim.statuses import ApiError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
#: what the stand-in can read in a body, named as the API server names them in a 415
ACCEPTED = ("application/json", "application/yaml")

Fields = dict[int, list[int | bytes]]


def unsupported_media_type() -> ApiError:
    return ApiError(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(ACCEPTED),
        reason="UnsupportedMediaType",
    )


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def parse_fields(buf: bytes) -> Fields:
    """Protocol buffers wire format -> ``field number -> values`` (varints and byte strings;
    fixed32/64 kept as raw bytes). Raises ValueError on a malformed message."""
    out: Fields = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            if i + size > len(buf):
                raise ValueError("truncated field")
            value, i = buf[i : i + size], i + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, i = buf[i : i + width], i + width
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _msg(fields: Fields, number: int) -> Fields:
    values = [v for v in fields.get(number, []) if isinstance(v, bytes)]
    return parse_fields(values[-1]) if values else {}


def _str(fields: Fields, number: int) -> str:
    values = [v for v in fields.get(number, []) if isinstance(v, bytes)]
    return values[-1].decode() if values else ""


def _strs(fields: Fields, number: int) -> list[str]:
    return [v.decode() for v in fields.get(number, []) if isinstance(v, bytes)]


def _resource_attributes(f: Fields) -> dict[str, str]:
    names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
    out = {key: _str(f, n) for n, key in enumerate(names, start=1)}
    return {k: v for k, v in out.items() if v}


def _non_resource_attributes(f: Fields) -> dict[str, str]:
    return {k: v for k, v in (("path", _str(f, 1)), ("verb", _str(f, 2))) if v}


def _object_meta(f: Fields) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for number, key in ((1, "name"), (2, "generateName"), (3, "namespace")):
        if value := _str(f, number):
            meta[key] = value
    return meta


def _ssar(raw: Fields) -> dict[str, Any]:
    spec = _msg(raw, 2)
    out: dict[str, Any] = {}
    if 1 in spec:
        out["resourceAttributes"] = _resource_attributes(_msg(spec, 1))
    if 2 in spec:
        out["nonResourceAttributes"] = _non_resource_attributes(_msg(spec, 2))
    return {"metadata": _object_meta(_msg(raw, 1)), "spec": out}


def _ssrr(raw: Fields) -> dict[str, Any]:
    spec = _msg(raw, 2)
    return {"metadata": _object_meta(_msg(raw, 1)), "spec": {"namespace": _str(spec, 1)}}


def _ssr(raw: Fields) -> dict[str, Any]:
    return {"metadata": _object_meta(_msg(raw, 1))}


DECODERS = {
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _ssar,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): _ssrr,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): _ssr,
}


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body -> the object's JSON form; a 415 for kinds the stand-in does
    not decode, a 400 for a body that is not a protobuf envelope."""
    if not body.startswith(MAGIC):
        raise ApiError(
            400,
            "provided data does not appear to be a protobuf message, expected prefix "
            "[107 56 115 0]",
        )
    try:
        unknown = parse_fields(body[len(MAGIC) :])
        type_meta = _msg(unknown, 1)
        api_version, kind = _str(type_meta, 1), _str(type_meta, 2)
        decoder = DECODERS.get((api_version, kind))
        if decoder is None:
            raise unsupported_media_type()
        raw = [v for v in unknown.get(2, []) if isinstance(v, bytes)]
        obj = decoder(parse_fields(raw[-1] if raw else b""))
    except ValueError as exc:
        raise ApiError(400, f"unable to decode the protobuf body: {exc}") from exc
    return {"kind": kind, "apiVersion": api_version, **obj}
