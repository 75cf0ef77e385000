"""Every checkable claim, one registered Theorem per claim, one module per paper.

Importing this package imports the family modules, which register their claims.
``THEOREMS`` lists the public names; a test checks that they, the registry and
``verify.py list`` are the same set.
"""

from theorems.core import Outcome, Parameter, ParameterError, Run, Theorem
from theorems.registry import REGISTRY, UnknownTheorem, get
from theorems.features_are_fate import double_descent, min_norm_bias
from theorems.shachaf import finetune_linear_regression
from theorems.features_are_fate_transfer import (finetune, linear_transfer_risk, pretraining_recovery,
                                                ridge_optimal_lambda, ridge_transfer_risk, sparsification,
                                                transferability_linear)
from theorems.shachaf_depth import aligned_tasks, depth_rescaling, frozen_layers
from theorems.shachaf_bounds import gaussian_depth_bound
from theorems.shachaf_covariance import covariance_bound
from theorems.relu_kernels import arccos_kernel, ntk_gram_claim, rkhs_projection
from theorems.ptft import ptft_penalty, ptft_penalty_shape
from theorems.features_are_fate_distances import dudley_distance, kl_divergence_claim
from theorems.ntk_transfer import ntk_finetune_bound, transfer_gradient_norm, transfer_weight_distance
from theorems.relu_training import ptft_sample_efficiency, relu_transfer
from theorems.universality import universality

THEOREMS = ["double_descent", "min_norm_bias", "finetune_linear_regression", "pretraining_recovery", "sparsification",
            "linear_transfer_risk", "transferability_linear", "ridge_transfer_risk", "ridge_optimal_lambda", "finetune",
            "depth_rescaling", "aligned_tasks", "frozen_layers", "gaussian_depth_bound", "covariance_bound",
            "arccos_kernel", "ntk_gram_claim", "rkhs_projection", "ptft_penalty", "ptft_penalty_shape",
            "kl_divergence_claim", "dudley_distance",
            "transfer_gradient_norm", "transfer_weight_distance", "ntk_finetune_bound",
            "relu_transfer", "ptft_sample_efficiency", "universality"]

__all__ = ["REGISTRY", "THEOREMS", "Outcome", "Parameter", "ParameterError", "Run", "Theorem",
           "UnknownTheorem", "get", *THEOREMS]
