"""Every checkable claim, one registered Theorem per claim, one module per paper.

Importing this package imports the family modules in ``FAMILIES``, which register their claims;
``THEOREMS`` lists the public names of the claims they define (derived, so adding a claim to a family
module touches nothing here).  A test checks that they, the registry and ``verify.py list`` agree.
"""

import importlib

from theorems.core import Control, Outcome, Parameter, ParameterError, Run, Theorem
from theorems.registry import REGISTRY, UnknownTheorem, get

FAMILIES = ("features_are_fate", "shachaf", "features_are_fate_transfer", "shachaf_depth", "shachaf_bounds",
            "shachaf_covariance", "relu_kernels", "ptft", "features_are_fate_distances", "ntk_transfer",
            "relu_training", "universality")

THEOREMS = []
_seen = set()
for _family in FAMILIES:
    for _name, _value in vars(importlib.import_module(f"theorems.{_family}")).items():
        # a claim is listed under the name its own family gives it, once (another module may import it)
        if isinstance(_value, Theorem) and REGISTRY.get(_value.id) is _value and _value.id not in _seen:
            globals()[_name] = _value
            THEOREMS.append(_name)
            _seen.add(_value.id)

__all__ = ["FAMILIES", "REGISTRY", "THEOREMS", "Control", "Outcome", "Parameter", "ParameterError", "Run", "Theorem",
           "UnknownTheorem", "get", *THEOREMS]
