"""The machinery of typed request/response headers (``rocketq.protocol.headers`` holds the classes), carried
on the wire as ``extFields`` (str → str).

Each header is a frozen dataclass; ``wire(name)`` records the camelCase wire key in field metadata.
``to_ext`` and ``from_ext`` are the one place where values are converted in each direction:

* out: ints as decimal text, bools as ``"true"``/``"false"``, None omitted (every value a JSON string —
  C++ clients ignore non-string values);
* in: text parsed to the field type; ``"1"`` and ``"true"`` (any case) are true — C++ 1.2.3 sends ``"1"``
  for booleans, and the JSON decoder has already turned C++'s numeric values into text.

An integer field has its Java type's width: ``int32=True`` for Java's ``Integer``/``int``, 64 bits (``Long``)
otherwise; text outside it is refused as Java's ``parseInt``/``parseLong`` refuse it, so no value a Java broker
could not hold is ever stored (a 2^70 offset would poison every later save of its table).

A missing required field raises ``HeaderError`` naming it. Required are the fields without a default and those
declared ``not_null``: Java's ``@CFNotNull`` fields that Java leaves null when absent (a Java broker then fails
on them with SYSTEM_ERROR); their default serves only headers built in process.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, get_type_hints

from rocketq.common.native import compiled_to_run
from rocketq.errors import ProtocolError

T = TypeVar("T", bound="Header")

#: compiled twin of the generated ``from_ext`` (None: not built, or ROCKETQ_NO_EXTENSIONS); see compile_from_ext
_headercodec = compiled_to_run("rocketq.protocol._headercodec_c")


class HeaderError(ProtocolError):
    """A header field is missing or has a value of the wrong type."""


def wire(name: str, default: Any = dataclasses.MISSING, *, not_null: bool = False, int32: bool = False) -> Any:
    """A header field read from and written to the extFields key ``name``; ``not_null``: required on the wire
    even though it has a default (see the module docstring); ``int32``: an int field Java declares ``Integer``
    (or ``int``), so 32 bits wide instead of a ``Long``'s 64."""
    metadata = {"wire": name, "not_null": not_null, "bits": 32 if int32 else 64}
    if default is dataclasses.MISSING:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    attr: str
    key: str
    kind: type
    optional: bool
    required: bool
    #: an int field's width in bits (32: Java's Integer, 64: Long)
    bits: int = 64


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_BOUNDS = {32: (INT32_MIN, INT32_MAX), 64: (INT64_MIN, INT64_MAX)}


class Header:
    """Base of header dataclasses: subclasses are ``@dataclass(frozen=True, slots=True, kw_only=True)``.

    ``to_ext``/``from_ext`` are generated per class on first use (straight-line code, one ``dict.get`` and one
    conversion per field, like ``dataclasses`` generates ``__init__``) and installed on the class; the generic
    loops (``generic_to_ext``/``generic_from_ext``) stay as the reference twin the tests compare them with.
    """

    _specs: ClassVar[tuple[_FieldSpec, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

    @classmethod
    def _field_specs(cls) -> tuple[_FieldSpec, ...]:
        cached = cls.__dict__.get("_specs_cache")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        hints = get_type_hints(cls)
        specs = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            hint = hints[f.name]
            optional = False
            args = typing.get_args(hint)
            if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
                non_none = [a for a in args if a is not type(None)]
                optional = len(non_none) < len(args)
                hint = non_none[0]
            required = (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ) or bool(f.metadata.get("not_null"))
            specs.append(
                _FieldSpec(f.name, f.metadata.get("wire", f.name), hint, optional, required, f.metadata.get("bits", 64))
            )
        result = tuple(specs)
        type.__setattr__(cls, "_specs_cache", result)
        return result

    def to_ext(self) -> dict[str, str]:
        # First call on this class: generate, install (shadowing this method), then use.
        return _install_codecs(type(self)).to_ext(self)

    @classmethod
    def from_ext(cls: type[T], ext: dict[str, str]) -> T:
        return typing.cast(T, _install_codecs(cls).from_ext(ext))

    def generic_to_ext(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for spec in self._field_specs():
            value = getattr(self, spec.attr)
            if value is None:
                continue
            if spec.kind is bool:
                out[spec.key] = "true" if value else "false"
            else:
                out[spec.key] = str(value)
        return out

    @classmethod
    def generic_from_ext(cls: type[T], ext: dict[str, str]) -> T:
        kwargs: dict[str, Any] = {}
        for spec in cls._field_specs():
            raw = ext.get(spec.key)
            if raw is None or (raw == "" and spec.kind is not str):
                if spec.required:
                    raise HeaderError(f"the header field {spec.key!r} is missing")
                continue
            kwargs[spec.attr] = _parse(spec, raw)
        return cls(**kwargs)


def _parse(spec: _FieldSpec, raw: str) -> Any:
    if spec.kind is str:
        return raw
    if spec.kind is int:
        value = _parse_int(raw, spec.key)
        low, high = _BOUNDS[spec.bits]
        if not low <= value <= high:
            _out_of_range(raw, spec.key, spec.bits)
        return value
    if spec.kind is bool:
        return raw.strip().lower() in ("true", "1")
    raise HeaderError(f"unsupported header type {spec.kind!r} for {spec.key!r}")


def _parse_int(raw: str, key: str) -> int:
    try:
        return int(raw)
    except ValueError:  # "x", "1.5", "1e3": Java's parseInt/parseLong refuse them too
        raise HeaderError(f"the header field {key!r} is not an integer: {_shown(raw)}") from None


def _out_of_range(raw: str, key: str, bits: int) -> typing.NoReturn:
    """Refuse an integer wider than the field's Java type (Java's parseInt/parseLong: NumberFormatException)."""
    java = "Integer" if bits == 32 else "Long"
    raise HeaderError(f"the header field {key!r} is out of range for a {bits}-bit {java}: {_shown(raw)}")


def _shown(raw: object) -> str:
    """``raw`` for a remark: a client may send megabytes of digits; the remark keeps the start."""
    text = raw if isinstance(raw, str) else str(raw)
    return repr(raw) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


def _parse_bool(raw: str) -> bool:
    return raw.strip().lower() in ("true", "1")


# ------------------------------------------------------------------------------------- generated codecs


def compile_from_ext(
    cls: type[T], keys: dict[str, str] | None = None, *, native: bool = True
) -> typing.Callable[[dict[str, str]], T]:
    """A ``from_ext`` for ``cls`` as straight-line code. ``keys`` renames wire keys (wire key → key to read);
    a renamed field falls back to its plain wire key when the renamed one is absent.

    Same rules as ``generic_from_ext``: absent (or, for non-str fields, empty) means default or HeaderError.
    With ``native`` and the compiled twin built, a slotted class is read by ``_headercodec_c.read_header`` from
    a plan of the same fields (the generated function is its pure twin and its fallback for odd input).
    """
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    # per field: its spec, the key to read first, the error when it is missing (None: optional), its default
    fields = [
        (spec, keys.get(spec.key, spec.key) if keys else spec.key,
         f"the header field {spec.key!r} is missing" if spec.required else None,
         None if spec.required else fields_by_name[spec.attr].default)
        for spec in cls._field_specs()
    ]  # fmt: skip
    ns: dict[str, Any] = {
        "cls": cls, "HeaderError": HeaderError, "_int": _parse_int, "_bool": _parse_bool, "_range": _out_of_range,
    }  # fmt: skip
    lines = ["def from_ext(ext):", "    get = ext.get"]
    args = []
    # A frozen dataclass __init__ sets each field through object.__setattr__ (~0.2 µs a field); with slots and
    # no __post_init__ the instance can be filled through the slot descriptors instead, at a quarter the cost.
    direct = "__slots__" in cls.__dict__ and not hasattr(cls, "__post_init__")
    for i, (spec, read_key, missing_error, default) in enumerate(fields):
        if spec.kind not in (str, int, bool):
            raise TypeError(f"unsupported header type {spec.kind!r}")
        var = f"a{i}"
        lines.append(f"    raw = get({read_key!r})")
        if read_key != spec.key:
            lines.append(f"    if raw is None: raw = get({spec.key!r})")
        missing = "raw is None" if spec.kind is str else "raw is None or raw == ''"
        lines.append(f"    if {missing}:")
        if missing_error is not None:
            lines.append(f"        raise HeaderError({missing_error!r})")
        else:
            ns[f"d{i}"] = default
            lines.append(f"        {var} = d{i}")
        lines.append("    else:")
        if spec.kind is int:  # int() inline; the slow path (floats, errors) in _int
            low, high = _BOUNDS[spec.bits]
            lines += ["        try:", f"            {var} = int(raw)", "        except ValueError:",
                      f"            {var} = _int(raw, {spec.key!r})",
                      f"        if not {low} <= {var} <= {high}:",
                      f"            _range(raw, {spec.key!r}, {spec.bits})"]  # fmt: skip
        elif spec.kind is bool:
            lines.append(f"        {var} = raw == 'true' or (raw != 'false' and _bool(raw))")
        else:
            lines.append(f"        {var} = raw")
        args.append(f"{spec.attr}={var}")
    if direct:
        ns["new"] = object.__new__
        lines.append("    obj = new(cls)")
        for i, (spec, *_) in enumerate(fields):
            ns[f"set{i}"] = cls.__dict__[spec.attr].__set__
            lines.append(f"    set{i}(obj, a{i})")
        lines.append("    return obj")
    else:
        lines.append(f"    return cls({', '.join(args)})")
    exec("\n".join(lines), ns)  # our own generated source, from dataclass fields
    generated: typing.Callable[[dict[str, str]], T] = ns["from_ext"]
    if not (native and direct and _headercodec is not None):
        return generated
    # The same fields as a plan for the compiled reader (see _headercodec_c.c for the entry layout).
    plan = tuple(
        (_headercodec.slot_offset(cls, spec.attr), read_key, spec.key if read_key != spec.key else None,
         _KIND_CODES[spec.kind] if spec.kind is not int or spec.bits == 64 else _KIND_INT32, default,
         missing_error, spec.key)
        for spec, read_key, missing_error, default in fields
    )  # fmt: skip
    return functools.partial(_headercodec.read_header, cls, plan, generated)


_KIND_CODES: dict[type, int] = {str: 0, int: 1, bool: 2}  # int: a 64-bit one
_KIND_INT32 = 3


def compile_to_ext(cls: type[Header], keys: dict[str, str] | None = None) -> typing.Callable[[Header], dict[str, str]]:
    """A ``to_ext`` for ``cls`` as straight-line code; ``keys`` renames the wire keys (e.g. to V2 letters)."""
    specs = cls._field_specs()
    lines = ["def to_ext(self):", "    out = {}"]
    for spec in specs:
        key = keys[spec.key] if keys else spec.key
        lines.append(f"    v = self.{spec.attr}")
        lines.append("    if v is not None:")
        if spec.kind is bool:
            lines.append(f"        out[{key!r}] = 'true' if v else 'false'")
        elif spec.kind is str:
            lines.append(f"        out[{key!r}] = v if v.__class__ is str else str(v)")
        else:
            lines.append(f"        out[{key!r}] = str(v)")
    lines.append("    return out")
    ns: dict[str, Any] = {}
    exec("\n".join(lines), ns)  # our own generated source, from dataclass fields
    return ns["to_ext"]  # type: ignore[no-any-return]


def _install_codecs(cls: type[Header]) -> type[Header]:
    if "_codecs_installed" not in cls.__dict__:
        from_ext = compile_from_ext(cls)
        type.__setattr__(cls, "from_ext", staticmethod(from_ext))
        type.__setattr__(cls, "to_ext", compile_to_ext(cls))
        type.__setattr__(cls, "_codecs_installed", True)
    return cls


if _headercodec is not None:
    _headercodec.configure(HeaderError, _parse_int, _parse_bool, _out_of_range)
