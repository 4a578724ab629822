"""Payload digests: SHA-256 of a message's canonical CDR bytes, the first 8 bytes read little-endian.

rclpy's `serialize_message` (like rmw's `rmw_serialize` under r2r) leaves CDR alignment padding uninitialised,
so two serializations of one message may differ in their padding bytes. The digest is therefore defined over
the canonical form: the same CDR (encapsulation header included, options zero) with every padding byte zero.
`rosbags` writes exactly that form; rclpy's bytes are decoded with it and encoded again.

Types the `rosbags` Jazzy type store does not know (a user's own interface package) are registered on first
use from the `.msg` files their package installs (`share/<package>/msg/<Type>.msg`, found through the ament
index, as `ros2 interface show` finds them).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from rclpy.serialization import serialize_message
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

#: How many bytes of the SHA-256 a digest keeps.
DIGEST_BYTES = 8

#: Deepest chain of nested message types registered from `.msg` files (a guard against a cyclic definition).
MAX_TYPE_DEPTH = 32

_TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
_LOCK = threading.Lock()
_PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
               "int64", "uint64", "string", "wstring"}


class UnknownType(LookupError):
    """A message type whose definition could be found neither in the type store nor in the ament index."""


def digest(payload: bytes) -> int:
    """The digest of serialized bytes: the first 8 bytes of their SHA-256 as a little-endian integer.

    Only hashes what it is given: pass a message's canonical CDR (`canonical_cdr`), not rclpy's raw bytes."""
    return int.from_bytes(hashlib.sha256(payload).digest()[:DIGEST_BYTES], "little")


def type_name(msg_or_class) -> str:
    """The ROS type name (`geometry_msgs/msg/Twist`) of an rclpy message or message class."""
    cls = msg_or_class if isinstance(msg_or_class, type) else type(msg_or_class)
    package = cls.__module__.split(".")[0]
    return f"{package}/msg/{cls.__name__}"


def canonical_cdr(msg) -> bytes:
    """The CDR bytes of the rclpy message `msg` with every alignment padding byte zero (and the encapsulation
    options zero): the bytes its payload digest is computed from, the same as the Rust library's."""
    return canonicalize(serialize_message(msg), type_name(msg))


def canonicalize(raw: bytes, typename: str) -> bytes:
    """The canonical form of the CDR bytes `raw` of a message of type `typename`: its fields decoded and encoded
    again with zero padding, ending with the last field. rmw may report more bytes than the fields take (its
    size estimate: `std_msgs/UInt8` is 5 bytes reported as 8), and DDS pads payloads to a multiple of 4: those
    trailing bytes are not part of the message, as in the Rust library and in `lockstep_bag`."""
    _ensure_registered(typename)
    if len(raw) < 4 or raw[0] != 0 or raw[1] not in (0, 1):
        raise ValueError(f"{typename}: not CDR (encapsulation {bytes(raw[:4]).hex()})")
    msgdef = _TYPESTORE.get_msgdef(typename)
    decode = msgdef.deserialize_cdr_le if raw[1] else msgdef.deserialize_cdr_be
    decoded, end = decode(memoryview(raw)[4:], 0, msgdef.cls, _TYPESTORE)
    if 4 + end > len(raw):
        raise ValueError(f"{typename}: {len(raw)} bytes, fewer than its fields take")
    return bytes(_TYPESTORE.serialize_cdr(decoded, typename, little_endian=bool(raw[1])))


def message_digest(msg) -> int:
    """`digest(canonical_cdr(msg))`."""
    return digest(canonical_cdr(msg))


def _ensure_registered(typename: str) -> None:
    if typename in _TYPESTORE.fielddefs:
        return
    with _LOCK:
        _register(typename, 0, set())


def _register(typename: str, depth: int, seen: set) -> None:
    if typename in _TYPESTORE.fielddefs or typename in seen:
        return
    if depth > MAX_TYPE_DEPTH:
        raise UnknownType(f"{typename}: nested deeper than {MAX_TYPE_DEPTH} message types")
    seen.add(typename)
    text = _msg_definition(typename)
    for dependency in _nested_types(text, typename.split("/")[0]):
        _register(dependency, depth + 1, seen)
    _TYPESTORE.register(get_types_from_msg(text, typename))


def _msg_definition(typename: str) -> str:
    parts = typename.split("/")
    if len(parts) != 3 or parts[1] != "msg":
        raise UnknownType(f"{typename}: not a message type name (package/msg/Type)")
    package, _, name = parts
    try:
        from ament_index_python.packages import get_package_share_directory
        share = Path(get_package_share_directory(package))
    except (ImportError, LookupError, ValueError) as e:  # PackageNotFoundError is a KeyError
        raise UnknownType(f"{typename}: package {package} is not in the ament index ({e})") from None
    path = share / "msg" / f"{name}.msg"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise UnknownType(f"{typename}: cannot read its definition {path}: {e.strerror}") from None


def _nested_types(text: str, package: str) -> list[str]:
    """The message types the fields of a `.msg` definition use (constants and primitives left out)."""
    out = []
    for line in text.splitlines():
        tokens = line.split("#", 1)[0].split()
        if len(tokens) < 2:
            continue
        base = tokens[0].split("[", 1)[0].split("<=", 1)[0]
        if base in _PRIMITIVES:
            continue
        if "/" in base:
            dep_package, name = base.split("/", 1)
        else:
            dep_package, name = ("std_msgs", base) if base == "Header" else (package, base)
        out.append(f"{dep_package}/msg/{name}")
    return out
