"""The MLflow <-> Triton tensor mapping ("mlflow_contract").

Standard library only: this file is copied verbatim into every generated
``1/model.py``, where this package is not installed.

The contract says how the tensors declared in ``config.pbtxt`` are put together
into the model's MLflow input and taken apart from its prediction:

* ``columns``: a DataFrame; one rank-one tensor per column.
* ``tensor``: a single ndarray; one tensor, named (the signature's tensor name)
  or unnamed.
* ``tensors``: a dict of named ndarrays; one tensor per key.

Each field links an original MLflow name to a Triton tensor name. Datatypes and
shapes are deliberately absent: they live in the config's ``input``/``output``
entries, linked by tensor name, so there is a single source of truth.

Mapping versions: 1 names fields with strings (or null); 2 also allows integer
names (DataFrame column labels such as ``0``, kept as JSON integers so the
rebuilt frame's columns compare equal to the original ones). A reader accepts
every version in ``SUPPORTED_MAPPING_VERSIONS`` and reads names by the rules of
the newest (version 1 writers never wrote an integer name); writers emit
``MAPPING_VERSION``. Version 3 adds ``max_batch_size`` (dynamic batching: the
batch axis is implicit in the config's dims, and ``execute`` joins the rows of
its requests); writers emit it only for a batched model, so unbatched contracts
stay version 2, byte for byte. Version 4 adds two column adapters, for ``columns``
inputs only: a field's ``missing`` names a companion BOOL tensor of the same
length (``true`` marks a row whose value is missing: the value sent there is
ignored and the column holds its missing value, NaN, NaT or None), and content
``datetime`` marks an INT64 tensor of nanoseconds since the epoch that becomes a
``datetime64[ns]`` column (INT64 -2**63 is NaT, as in numpy). Writers emit
version 4 only for a contract that uses one of them (``max_batch_size`` is then
always written, 0 for unbatched models); readers refuse ``missing`` and
``datetime`` in older versions. Version 5 adds nested values and scalars: content
``json`` (``columns`` only) marks a BYTES tensor holding one row's value per element
as UTF-8 JSON text, with ``type`` the column's MLflow type as MLflow writes it
(``{"type": "array", "items": {"type": "float"}}``: Array, Object or Map); and
``scalar`` (``tensor`` only) marks a one-element tensor that is a 0-d value on the
MLflow side; and ``optional`` (``columns`` inputs only) marks a column a request may
leave out (the config declares its tensors ``optional: true``; without them the
model gets no such column, as when a JSON request to MLflow's scoring server leaves
the field out). Writers emit version 5 only for a contract that uses one of them.
Version 6 adds ``protocol``: ``"tensors"`` (the typed mapping above) or ``"mlflow"``
(MLflow's serving protocol: the model takes the body ``mlflow models serve`` accepts at
``/invocations`` in one BYTES tensor ``request``, its content type in an optional BYTES
tensor ``content_type``, and answers the body MLflow's server returns in one BYTES
tensor ``response``; both sides are ``tensors`` structures of exactly those text
fields, unbatched). Writers emit version 6 only for an ``mlflow`` contract; readers
take a version 6 contract without ``protocol`` as an error.
"""

import dataclasses
import json

MAPPING_VERSION = 2
BATCHING_MAPPING_VERSION = 3
COLUMN_ADAPTERS_MAPPING_VERSION = 4
NESTED_MAPPING_VERSION = 5
PROTOCOL_MAPPING_VERSION = 6
SUPPORTED_MAPPING_VERSIONS = (1, 2, 3, 4, 5, 6)
CONTRACT_PARAMETER = "mlflow_contract"

STRUCTURES = ("columns", "tensor", "tensors")
CONTENTS = ("text", "binary", "datetime", "json")
DATETIME_CONTENT = "datetime"
JSON_CONTENT = "json"
# The ``type`` of a JSON field: MLflow's nested types (their ``to_dict()["type"]``).
NESTED_TYPES = ("array", "object", "map")

# What the model speaks: the typed tensor mapping, or MLflow's serving protocol (version 6).
TENSORS_PROTOCOL = "tensors"
MLFLOW_PROTOCOL = "mlflow"
PROTOCOLS = (TENSORS_PROTOCOL, MLFLOW_PROTOCOL)
# What the logging side is asked for by default: one of PROTOCOLS, chosen per model (never written in a contract).
AUTO_PROTOCOL = "auto"
# The tensors of an ``mlflow`` contract: the request body, its content type (optional) and the response body.
REQUEST_TENSOR, CONTENT_TYPE_TENSOR, RESPONSE_TENSOR = "request", "content_type", "response"

# Triton config datatype -> numpy dtype name. The one table both directions
# are derived from; TYPE_STRING is Triton's BYTES (numpy object arrays).
TRITON_TO_NUMPY = {
    "TYPE_BOOL": "bool",
    "TYPE_UINT8": "uint8",
    "TYPE_UINT16": "uint16",
    "TYPE_UINT32": "uint32",
    "TYPE_UINT64": "uint64",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
    "TYPE_STRING": "object",
}
NUMPY_TO_TRITON = {numpy_name: triton for triton, numpy_name in TRITON_TO_NUMPY.items()}
BYTES_TYPE = "TYPE_STRING"


def wire_datatype(config_datatype):
    """``TYPE_FP32`` -> ``FP32``; ``TYPE_STRING`` -> ``BYTES`` (the v2 protocol names)."""
    if config_datatype == BYTES_TYPE:
        return "BYTES"
    return config_datatype[len("TYPE_") :]


class MlflowTritonError(Exception):
    """Root of every error raised by mlflow-triton."""


class ContractError(MlflowTritonError, ValueError):
    """The mapping is malformed or does not match the Triton configuration."""


@dataclasses.dataclass(frozen=True)
class FieldMapping:
    """One MLflow field (column, tensor or dict key) and its Triton tensor.

    ``name`` is the original MLflow name exactly as the signature spells it: a
    string, an integer (a DataFrame column label such as ``0``), or ``None`` for
    an unnamed column or tensor. ``content`` is ``"text"`` (UTF-8 ``str``) or
    ``"binary"`` (``bytes``) for BYTES tensors, ``"datetime"`` for an INT64
    tensor of nanoseconds since the epoch, ``"json"`` for a BYTES tensor of JSON
    texts (version 5, with ``type``, the MLflow type), and ``None`` otherwise.
    ``missing`` (version 4, columns only) names the BOOL tensor that marks missing
    rows; ``scalar`` (version 5) marks a one-element tensor that is a 0-d value;
    ``optional`` (version 5, input columns only) marks a column a request may omit.
    """

    name: str | int | None
    tensor: str
    content: str | None = None
    missing: str | None = None
    type: dict | None = None
    scalar: bool = False
    optional: bool = False

    def __post_init__(self):
        # type() rather than isinstance: a bool is not a column label here, and JSON would not keep it an int.
        if self.name is not None and not isinstance(self.name, str) and type(self.name) is not int:
            raise ContractError(f"Field name must be a string, an integer or null, got {self.name!r}")
        if not isinstance(self.tensor, str) or not self.tensor:
            raise ContractError(f"Field {self.name!r}: tensor name must be a non-empty string")
        if self.missing is not None and (not isinstance(self.missing, str) or not self.missing):
            raise ContractError(f"Field {self.name!r}: 'missing' must be a non-empty tensor name or absent")
        for what, value in (("name", self.name), ("tensor name", self.tensor), ("missing", self.missing)):
            if isinstance(value, str) and not _is_unicode_text(value):
                raise ContractError(
                    f"Field {self.name!r}: {what} {value!r} contains surrogate code points, which "
                    "JSON cannot store faithfully; use valid Unicode text"
                )
        if self.content is not None and self.content not in CONTENTS:
            raise ContractError(
                f"Field {self.name!r}: content {self.content!r} is not supported; "
                f"supported: {', '.join(CONTENTS)} or null"
            )
        is_nested = isinstance(self.type, dict) and self.type.get("type") in NESTED_TYPES
        if (self.content == JSON_CONTENT) != is_nested or (self.type is not None and not is_nested):
            raise ContractError(
                f"Field {self.name!r}: content 'json' goes with a 'type' whose \"type\" is one of "
                f"{', '.join(NESTED_TYPES)}, and a 'type' only with content 'json'"
            )
        for flag in ("scalar", "optional"):
            if getattr(self, flag) is not True and getattr(self, flag) is not False:
                raise ContractError(
                    f"Field {self.name!r}: {flag!r} must be true or absent, got {getattr(self, flag)!r}"
                )
        if self.missing is not None and self.content == JSON_CONTENT:
            raise ContractError(f"Field {self.name!r}: a JSON field marks a missing row as null, not with 'missing'")

    def to_dict(self):
        data = {"name": self.name, "tensor": self.tensor, "content": self.content}
        if self.missing is not None:
            data["missing"] = self.missing
        if self.type is not None:
            data["type"] = self.type
        if self.scalar:
            data["scalar"] = True
        if self.optional:
            data["optional"] = True
        return data

    @classmethod
    def from_dict(cls, data):
        _require_keys(data, ("name", "tensor", "content"), "field", optional=("missing", "type", "scalar", "optional"))
        return cls(
            name=data["name"],
            tensor=data["tensor"],
            content=data["content"],
            missing=data.get("missing"),
            type=data.get("type"),
            scalar=data.get("scalar", False),
            optional=data.get("optional", False),
        )

    @property
    def uses_column_adapters(self):
        return self.missing is not None or self.content == DATETIME_CONTENT

    @property
    def uses_version_5(self):
        """A JSON field, a scalar or an optional field: mapping version 5."""
        return self.content == JSON_CONTENT or self.scalar or self.optional


@dataclasses.dataclass(frozen=True)
class StructureMapping:
    """How one side (inputs or outputs) is assembled from its fields."""

    structure: str
    fields: tuple[FieldMapping, ...]

    def __post_init__(self):
        if self.structure not in STRUCTURES:
            raise ContractError(f"Structure {self.structure!r} is not supported; supported: {', '.join(STRUCTURES)}")
        object.__setattr__(self, "fields", tuple(self.fields))
        if not self.fields:
            raise ContractError(f"Structure {self.structure!r} needs at least one field")
        if self.structure == "tensor" and len(self.fields) != 1:
            raise ContractError(f"Structure 'tensor' maps exactly one tensor, got {len(self.fields)}")
        if self.structure == "tensors":
            unnamed = [f.tensor for f in self.fields if f.name is None]
            if unnamed:
                raise ContractError(f"Structure 'tensors' needs a name for every field; unnamed: {', '.join(unnamed)}")
        adapted = [f.tensor for f in self.fields if f.uses_column_adapters or f.content == JSON_CONTENT]
        if adapted and self.structure != "columns":
            raise ContractError(
                f"Structure {self.structure!r}: missing-value masks, datetime and json content are for 'columns' "
                f"only; used by: {', '.join(adapted)}"
            )
        scalars = [f.tensor for f in self.fields if f.scalar]
        if scalars and self.structure != "tensor":
            raise ContractError(f"Structure {self.structure!r}: 'scalar' is for 'tensor' only; used by: {scalars[0]}")
        optional = [f.tensor for f in self.fields if f.optional]
        if optional and self.structure == "tensor":
            raise ContractError(
                f"Structure {self.structure!r}: 'optional' is for 'columns' (and the mlflow protocol's 'tensors') "
                f"only; used by: {optional[0]}"
            )
        _reject_duplicates(list(self.tensor_names), "tensor name")
        _reject_duplicates([f.name for f in self.fields if f.name is not None], "field name")

    @property
    def tensor_names(self):
        """Every tensor of this side: the fields' tensors, then their missing-value masks."""
        return tuple(f.tensor for f in self.fields) + tuple(f.missing for f in self.fields if f.missing is not None)

    def to_dict(self):
        return {"structure": self.structure, "fields": [f.to_dict() for f in self.fields]}

    @classmethod
    def from_dict(cls, data):
        _require_keys(data, ("structure", "fields"), "structure")
        if not isinstance(data["fields"], list):
            raise ContractError("Structure 'fields' must be a list")
        return cls(
            structure=data["structure"],
            fields=tuple(FieldMapping.from_dict(f) for f in data["fields"]),
        )


@dataclasses.dataclass(frozen=True)
class Contract:
    """The complete mapping stored as ``parameters.mlflow_contract`` in config.pbtxt."""

    flavor: str
    inputs: StructureMapping
    outputs: StructureMapping
    version: int = MAPPING_VERSION
    max_batch_size: int = 0
    protocol: str = TENSORS_PROTOCOL

    def __post_init__(self):
        if not _is_supported_version(self.version):
            raise ContractError(
                f"Mapping version {self.version!r} is not supported; "
                f"supported: {', '.join(map(str, SUPPORTED_MAPPING_VERSIONS))}"
            )
        if self.protocol not in PROTOCOLS:
            raise ContractError(
                f"Contract 'protocol' {self.protocol!r} is not supported; supported: {', '.join(PROTOCOLS)}"
            )
        if self.protocol == MLFLOW_PROTOCOL:
            _check_mlflow_protocol(self)
        elif any(f.optional for f in self.inputs.fields) and self.inputs.structure != "columns":
            raise ContractError("'optional' marks 'columns' input fields only (or the mlflow protocol's content type)")
        if type(self.max_batch_size) is not int or self.max_batch_size < 0:
            raise ContractError(f"Contract 'max_batch_size' must be an integer >= 0, got {self.max_batch_size!r}")
        adapted = [f.tensor for f in self.inputs.fields + self.outputs.fields if f.uses_column_adapters]
        if adapted and self.version < COLUMN_ADAPTERS_MAPPING_VERSION:
            raise ContractError(
                f"Mapping version {self.version}: missing-value masks and datetime content need version "
                f"{COLUMN_ADAPTERS_MAPPING_VERSION}; used by: {', '.join(adapted)}"
            )
        nested = [f.tensor for f in self.inputs.fields + self.outputs.fields if f.uses_version_5]
        if nested and self.version < NESTED_MAPPING_VERSION:
            raise ContractError(
                f"Mapping version {self.version}: json content, scalars and optional fields need version "
                f"{NESTED_MAPPING_VERSION}; used by: {', '.join(nested)}"
            )
        omittable = [f.tensor for f in self.outputs.fields if f.optional]
        if omittable:
            raise ContractError(f"'optional' marks input fields only; output: {omittable[0]}")
        if self.version < COLUMN_ADAPTERS_MAPPING_VERSION and (self.max_batch_size > 0) != (
            self.version >= BATCHING_MAPPING_VERSION
        ):
            raise ContractError(
                f"Mapping version {self.version} with max_batch_size {self.max_batch_size}: batched contracts "
                f"(max_batch_size > 0) are version {BATCHING_MAPPING_VERSION}, unbatched ones older"
            )
        if not isinstance(self.flavor, str) or not self.flavor or not _is_unicode_text(self.flavor):
            raise ContractError("Contract 'flavor' must be a non-empty string of valid Unicode text")
        _reject_duplicates(list(self.inputs.tensor_names) + list(self.outputs.tensor_names), "tensor name")

    def to_dict(self):
        data = {
            "version": self.version,
            "flavor": self.flavor,
            "inputs": self.inputs.to_dict(),
            "outputs": self.outputs.to_dict(),
        }
        if self.version >= BATCHING_MAPPING_VERSION:
            data["max_batch_size"] = self.max_batch_size
        if self.version >= PROTOCOL_MAPPING_VERSION:
            data["protocol"] = self.protocol
        return data

    @classmethod
    def from_dict(cls, data):
        if not isinstance(data, dict):
            raise ContractError(f"Contract must be a JSON object, got {type(data).__name__}")
        if "version" not in data:
            raise ContractError("Contract has no 'version'")
        if not _is_supported_version(data["version"]):
            raise ContractError(
                f"Mapping version {data['version']!r} is not supported; "
                f"supported: {', '.join(map(str, SUPPORTED_MAPPING_VERSIONS))}"
            )
        keys = ("version", "flavor", "inputs", "outputs")
        if data["version"] >= BATCHING_MAPPING_VERSION:
            keys += ("max_batch_size",)
        if data["version"] >= PROTOCOL_MAPPING_VERSION:
            keys += ("protocol",)
        _require_keys(data, keys, "contract")
        return cls(
            version=data["version"],
            flavor=data["flavor"],
            inputs=StructureMapping.from_dict(data["inputs"]),
            outputs=StructureMapping.from_dict(data["outputs"]),
            max_batch_size=data.get("max_batch_size", 0),
            protocol=data.get("protocol", TENSORS_PROTOCOL),
        )

    def to_json(self):
        """Compact, key-sorted JSON; ``ensure_ascii`` keeps config.pbtxt plain ASCII."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text):
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as error:
            raise ContractError(f"Parameter '{CONTRACT_PARAMETER}' is not valid JSON: {error}") from None
        return cls.from_dict(data)

    def check_tensors(self, input_names, output_names):
        """Fail unless the config's tensors and the mapping's tensors are the same sets."""
        for side, mapping, declared in (
            ("input", self.inputs, input_names),
            ("output", self.outputs, output_names),
        ):
            declared = list(declared)
            _reject_duplicates(declared, f"config {side} name")
            unmapped = [name for name in declared if name not in mapping.tensor_names]
            if unmapped:
                raise ContractError(
                    f"Config {side} tensor(s) {', '.join(unmapped)} have no entry in "
                    f"'{CONTRACT_PARAMETER}'; mapped: {', '.join(mapping.tensor_names)}"
                )
            missing = [name for name in mapping.tensor_names if name not in declared]
            if missing:
                raise ContractError(
                    f"'{CONTRACT_PARAMETER}' maps {side} tensor(s) {', '.join(missing)} that the "
                    f"config does not declare; declared: {', '.join(declared) or 'none'}"
                )


def mlflow_protocol_contract(flavor):
    """The contract of a model that speaks MLflow's serving protocol (version 6): body in, body out."""
    return Contract(
        flavor=flavor,
        inputs=_mlflow_protocol_sides()[0],
        outputs=_mlflow_protocol_sides()[1],
        version=PROTOCOL_MAPPING_VERSION,
        protocol=MLFLOW_PROTOCOL,
    )


def _mlflow_protocol_sides():
    """(inputs, outputs) of every ``mlflow`` contract: the request body and its content type, the response body."""
    inputs = (
        FieldMapping(REQUEST_TENSOR, REQUEST_TENSOR, "text"),
        FieldMapping(CONTENT_TYPE_TENSOR, CONTENT_TYPE_TENSOR, "text", optional=True),
    )
    outputs = (FieldMapping(RESPONSE_TENSOR, RESPONSE_TENSOR, "text"),)
    return StructureMapping("tensors", inputs), StructureMapping("tensors", outputs)


def _check_mlflow_protocol(contract):
    """An ``mlflow`` contract is version 6, unbatched, and maps exactly the protocol's three text tensors."""
    if contract.version < PROTOCOL_MAPPING_VERSION:
        raise ContractError(
            f"Mapping version {contract.version}: protocol {MLFLOW_PROTOCOL!r} needs version {PROTOCOL_MAPPING_VERSION}"
        )
    if contract.max_batch_size != 0:
        raise ContractError(
            f"Protocol {MLFLOW_PROTOCOL!r} answers one body per request: max_batch_size must be 0, "
            f"got {contract.max_batch_size}"
        )
    if (contract.inputs, contract.outputs) != _mlflow_protocol_sides():
        raise ContractError(
            f"Protocol {MLFLOW_PROTOCOL!r} maps exactly the text tensors {REQUEST_TENSOR} and optional "
            f"{CONTENT_TYPE_TENSOR} in, {RESPONSE_TENSOR} out ('tensors' structures)"
        )


def writer_version(inputs, outputs, max_batch_size=0):
    """The mapping version a writer emits: the oldest that can say all of it (see the module docstring)."""
    fields = inputs.fields + outputs.fields
    if any(f.uses_version_5 for f in fields):
        return NESTED_MAPPING_VERSION
    if any(f.uses_column_adapters for f in fields):
        return COLUMN_ADAPTERS_MAPPING_VERSION
    return BATCHING_MAPPING_VERSION if max_batch_size > 0 else MAPPING_VERSION


def contract_from_model_config(model_config):
    """Read and check the contract from Triton's JSON model config (a dict).

    Raises ContractError naming the problem: no parameter, an unsupported
    mapping version, a ``max_batch_size`` other than the contract's (0 before
    version 3), or tensors that the config and the mapping do not both declare.
    """
    parameters = model_config.get("parameters") or {}
    entry = parameters.get(CONTRACT_PARAMETER)
    if not entry or "string_value" not in entry:
        raise ContractError(
            f"Model config has no '{CONTRACT_PARAMETER}' parameter; re-log the model with mlflow-triton"
        )
    contract = Contract.from_json(entry["string_value"])
    max_batch_size = int(model_config.get("max_batch_size", 0) or 0)
    if max_batch_size != contract.max_batch_size:
        if contract.max_batch_size == 0:
            raise ContractError(
                f"max_batch_size must be 0 (shapes carry their own batch dimension), got {max_batch_size}"
            )
        raise ContractError(
            f"max_batch_size must be {contract.max_batch_size} as '{CONTRACT_PARAMETER}' records (the runtime "
            f"joins requests up to that many rows), got {max_batch_size}; re-log the model to change it"
        )
    contract.check_tensors(
        [t["name"] for t in model_config.get("input", [])],
        [t["name"] for t in model_config.get("output", [])],
    )
    return contract


def _is_unicode_text(text):
    # Surrogate code points are not text: JSON writes them as \uXXXX escapes and reads an
    # escaped high+low pair back as one astral character, so the name would change.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_supported_version(version):
    # type() rather than isinstance/``in``: True == 1 and 1.0 == 1 must not pass as version 1.
    return type(version) is int and version in SUPPORTED_MAPPING_VERSIONS


def _require_keys(data, keys, what, optional=()):
    if not isinstance(data, dict):
        raise ContractError(f"A {what} entry must be a JSON object, got {type(data).__name__}")
    missing = [key for key in keys if key not in data]
    if missing:
        raise ContractError(f"A {what} entry lacks {', '.join(missing)}")
    allowed = tuple(keys) + tuple(optional)
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ContractError(f"A {what} entry has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")


def _reject_duplicates(names, what):
    seen = set()
    for name in names:
        if name in seen:
            raise ContractError(f"Duplicate {what} {name!r}")
        seen.add(name)
