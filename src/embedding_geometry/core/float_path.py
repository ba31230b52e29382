"""The float path: which arithmetic a forward pass takes, and the perturbations that measure it.

The same weights and the same texts give float32 hidden states that differ in their last bits
when the arithmetic differs: another CPU (its vector width picks other BLAS kernels), another
number of threads (sums split and added in another order), oneDNN on or off, another batch
(other padding, other matrix shapes). None of this is an error, but it moves every number the
book computes by a little, and a count past a
threshold by a whole unit now and then. The book's reproducibility contract (book/methods.md,
"Same results on any machine") states how far; its tolerances are *measured* by building the
book again over perturbed paths (``make tolerances``), never guessed.

A perturbation is set for a whole build through the environment::

    EMBEDDING_GEOMETRY_FLOAT_PATH="threads=1,onednn=off,batch_size=7"

=============  ===============================================================================
``threads=N``  torch runs on N threads (``torch.set_num_threads``)
``onednn=off`` torch's oneDNN (MKLDNN) kernels are not used
``batch_size=N``  every forward pass of extraction and streaming runs N texts at a time,
               whatever the chapter's ``batch_size`` (training batches are left alone: they
               are part of the experiment, not of its arithmetic)
``isa=avx2``   torch's own kernels, MKL and oneDNN limited to AVX2 instructions: the kernels a CPU
               without AVX-512 runs (another CPU's arithmetic on this one; :func:`environment`)
=============  ===============================================================================

The empty string (the default) is the book's own path. A perturbed path is part of the
activation cache's key, so a perturbed build never reads the default path's cached states.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ParameterError

VARIABLE = "EMBEDDING_GEOMETRY_FLOAT_PATH"

ISA = {"avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2"}}
"""The instruction sets ``isa=`` can limit the arithmetic to, as the environment variables that
torch (its vectorised kernels), MKL (its matrix products) and oneDNN read as they start."""


@dataclass(frozen=True)
class FloatPath:
    """One float path; every field at its default is the book's own path."""

    threads: int | None = None
    onednn: bool = True
    batch_size: int | None = None
    isa: str | None = None

    @property
    def spec(self) -> str:
        """The path as the environment variable writes it ("" for the default)."""
        parts = [f"threads={self.threads}" if self.threads else "", "" if self.onednn else "onednn=off",
                 f"batch_size={self.batch_size}" if self.batch_size else "",
                 f"isa={self.isa}" if self.isa else ""]
        return ",".join(part for part in parts if part)

    def forward_batch(self, requested: int) -> int:
        """The batch a forward pass runs: ``batch_size`` when perturbed, else ``requested``."""
        return self.batch_size or requested


def parse(spec: str) -> FloatPath:
    """``"threads=1,onednn=off"`` → :class:`FloatPath`; a bad item raises a one-line
    :class:`ParameterError` naming the variable and what it expects."""
    fields: dict = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, value = item.partition("=")
        if name in ("threads", "batch_size") and value.isdigit() and int(value) >= 1:
            fields[name] = int(value)
        elif (name, value) == ("onednn", "off"):
            fields["onednn"] = False
        elif name == "isa" and value in ISA:
            fields["isa"] = value
        else:
            raise ParameterError(VARIABLE, "comma-separated items among threads=N, onednn=off, batch_size=N "
                                           f"(N ≥ 1), isa={'|'.join(ISA)}", item)
    return FloatPath(**fields)


def current() -> FloatPath:
    """The float path this process runs (from ``$EMBEDDING_GEOMETRY_FLOAT_PATH``)."""
    return parse(os.environ.get(VARIABLE, ""))


def environment(path: FloatPath | None = None) -> dict[str, str]:
    """The environment variables ``path`` (default: :func:`current`) needs set before torch, MKL
    and oneDNN start in a process — its ``isa`` limit —, for the build to pass to the chapters'
    kernels (``python -m embedding_geometry build`` sets them for itself and its children)."""
    path = path or current()
    return dict(ISA[path.isa]) if path.isa else {}


def apply(path: FloatPath | None = None) -> FloatPath:
    """Set torch's threads and oneDNN switch as ``path`` (default: :func:`current`) asks; a
    default field leaves torch's own setting alone. Returns the path."""
    import torch

    path = path or current()
    if path.threads:
        torch.set_num_threads(path.threads)
    if not path.onednn:
        torch.backends.mkldnn.enabled = False
    return path
