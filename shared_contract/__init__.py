"""The signature <-> tensor mapping shared by the logging side and the runtime.

Standard library only. ``contract.py`` is vendored verbatim into every generated
``1/model.py``; see that module for the data model.
"""

from .contract import (
    BATCHING_MAPPING_VERSION,
    BYTES_TYPE,
    CONTRACT_PARAMETER,
    MAPPING_VERSION,
    NUMPY_TO_TRITON,
    TRITON_TO_NUMPY,
    Contract,
    ContractError,
    FieldMapping,
    MlflowTritonError,
    StructureMapping,
    contract_from_model_config,
    wire_datatype,
)

__all__ = [
    "BATCHING_MAPPING_VERSION",
    "BYTES_TYPE",
    "CONTRACT_PARAMETER",
    "MAPPING_VERSION",
    "NUMPY_TO_TRITON",
    "TRITON_TO_NUMPY",
    "Contract",
    "ContractError",
    "FieldMapping",
    "MlflowTritonError",
    "StructureMapping",
    "contract_from_model_config",
    "wire_datatype",
]
