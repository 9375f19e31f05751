"""The signature <-> tensor mapping shared by the logging side and the runtime.

Standard library only. ``contract.py`` is vendored verbatim into every generated
``1/model.py``; see that module for the data model.
"""

from .contract import (
    BATCHING_MAPPING_VERSION,
    BYTES_TYPE,
    COLUMN_ADAPTERS_MAPPING_VERSION,
    CONTRACT_PARAMETER,
    DATETIME_CONTENT,
    JSON_CONTENT,
    MAPPING_VERSION,
    NESTED_MAPPING_VERSION,
    NUMPY_TO_TRITON,
    TRITON_TO_NUMPY,
    Contract,
    ContractError,
    FieldMapping,
    MlflowTritonError,
    StructureMapping,
    contract_from_model_config,
    wire_datatype,
    writer_version,
)

__all__ = [
    "BATCHING_MAPPING_VERSION",
    "BYTES_TYPE",
    "COLUMN_ADAPTERS_MAPPING_VERSION",
    "CONTRACT_PARAMETER",
    "DATETIME_CONTENT",
    "JSON_CONTENT",
    "MAPPING_VERSION",
    "NESTED_MAPPING_VERSION",
    "NUMPY_TO_TRITON",
    "TRITON_TO_NUMPY",
    "Contract",
    "ContractError",
    "FieldMapping",
    "MlflowTritonError",
    "StructureMapping",
    "contract_from_model_config",
    "wire_datatype",
    "writer_version",
]
