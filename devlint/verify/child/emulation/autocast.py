"""CUDA autocast on the emulated device: CUDA's casting policy, computed by the CPU's kernels.

A GPU under ``torch.autocast("cuda")`` casts the arguments of each op by CUDA's lists (ATen's
``autocast_mode.h``; the same lists as torch's own ``testing/_internal/autocast_test_lists.py``):
matrix products and convolutions to the autocast dtype, numerically sensitive ops (exp, log,
softmax, norms, most losses, sums) to float32, mixed-type ops (``addcmul``, ``cat``-like
builders, ``dot``...) to the widest type, and ``binary_cross_entropy`` refused. An op of the
program on the emulated device gets that policy by its name; what it calls inside (a composite such
as ``F.multi_head_attention_forward``) runs under the CPU's own autocast in the same dtype, whose
list of lower-precision ops is CUDA's for the ops that matter there (matmul, linear, conv, bmm,
baddbmm, addmm). The results have a GPU's dtypes; where the CPU has no kernel in that dtype the
run stops as not emulated rather than compute in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .machine import EmulationUnsupportedError

# CUDA casts these to the autocast dtype (float16 or bfloat16).
LOWER_PRECISION = frozenset(
    {"_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d"}
    | {"conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv"}
    | {"chain_matmul", "addbmm", "baddbmm", "bmm", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"}
    | {"linear", "linalg_vecdot", "linalg_multi_dot", "multi_dot", "__matmul__", "__rmatmul__"}
    | {"scaled_dot_product_attention", "_native_multi_head_attention"}
)
# CUDA casts these to float32.
FLOAT32 = frozenset(
    {"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt"}
    | {"sinh", "tan", "pow", "__pow__", "__rpow__", "softplus", "layer_norm", "rms_norm", "group_norm", "norm"}
    | {"frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss"}
    | {"hinge_embedding_loss", "kl_div", "margin_ranking_loss", "triplet_margin_loss", "huber_loss"}
    | {"binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp", "nll_loss"}
    | {"nll_loss2d", "l1_loss", "smooth_l1_loss", "mse_loss", "multilabel_margin_loss", "soft_margin_loss"}
    | {"multi_margin_loss", "cross_entropy", "upsample_linear1d", "upsample_bilinear2d"}
    | {"upsample_trilinear3d", "upsample_bicubic2d"}
    # fp32_set_opt_dtype: float32 unless the call names a dtype
    | {"softmax", "log_softmax", "cumprod", "cumsum", "prod", "sum", "linalg_vector_norm", "linalg_matrix_norm"}
)
# CUDA casts these to the widest floating type among their arguments.
PROMOTE = frozenset(
    {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put"}
    | {"tensordot", "scatter_add"}
)
BANNED = frozenset({"binary_cross_entropy"})
_BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)


def run(name: str, func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``func`` as CUDA autocast runs it (called with true devices, inside the dispatcher)."""
    dtype = torch.get_autocast_dtype("cuda")
    if name in BANNED:
        raise RuntimeError(_BANNED_MESSAGE)
    if name in FLOAT32:
        if kwargs.get("dtype") is None:
            args, kwargs = _cast(args, kwargs, torch.float32)
        return _without_host_autocast(func, args, kwargs)
    if name in PROMOTE:
        widest = _widest(args, kwargs)
        if widest is not None:
            args, kwargs = _cast(args, kwargs, widest)
        return _without_host_autocast(func, args, kwargs)
    if name in LOWER_PRECISION:
        args, kwargs = _cast(args, kwargs, dtype)
    return _with_host_autocast(name, func, args, kwargs, dtype)


def _eligible(value: Any) -> bool:
    """What autocast casts: floating-point tensors other than float64."""
    return isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype is not torch.float64


def _cast(args: tuple, kwargs: dict, dtype: torch.dtype) -> tuple[tuple, dict]:
    def cast(value: Any) -> Any:
        if _eligible(value):
            return value if value.dtype is dtype else value.to(dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(cast(item) for item in value)
        return value

    return tuple(cast(arg) for arg in args), {key: cast(value) for key, value in kwargs.items()}


def _widest(args: tuple, kwargs: dict) -> torch.dtype | None:
    found = [value.dtype for value in (*args, *kwargs.values()) if _eligible(value)]
    if not found:
        return None
    return torch.float32 if torch.float32 in found else found[0]


def _without_host_autocast(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    enabled = torch.is_autocast_enabled("cpu")
    torch.set_autocast_enabled("cpu", False)
    try:
        return func(*args, **kwargs)
    finally:
        torch.set_autocast_enabled("cpu", enabled)


def _with_host_autocast(name: str, func: Callable[..., Any], args: tuple, kwargs: dict, dtype: torch.dtype) -> Any:
    enabled, previous = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
    torch.set_autocast_enabled("cpu", True)
    torch.set_autocast_dtype("cpu", dtype)
    try:
        return func(*args, **kwargs)
    except (RuntimeError, NotImplementedError) as error:
        text = str(error)
        short = {torch.float16: "Half", torch.bfloat16: "BFloat16"}.get(dtype, str(dtype))
        if "not implemented for" in text and short in text or "Low precision dtypes not supported" in text:
            raise EmulationUnsupportedError(f"autocast: {name} in {dtype} (the CPU has no kernel for it)") from error
        raise
    finally:
        torch.set_autocast_dtype("cpu", previous)
        torch.set_autocast_enabled("cpu", enabled)
