"""Training backends: the `Backend` contract every backend subclasses and the registry that names them.

What a backend written outside tpututor needs is importable from here: `Backend` (the contract, its capabilities
and hooks, read in one place), `register_backend`, the task heads it declares (`Head`, `declare_heads`,
`HEAD_KINDS`), and the opening and epoch loop every fit shares (`prepare_fit`, `FitStart`, `EpochLoop`,
`History`, from `tpututor.loop`, below the backends). The built-in backends live beside this module: `bow`,
`keras`, `torch`, `xla`, `tf`, and the torch core that `torch` and `xla` share (`pytorch`)."""
from ..tasks import Head, declare_heads, HEAD_KINDS
from .base import Backend, check_backend, CAPABILITIES, HOOKS
from ..loop import History, EpochLoop, FitStart, prepare_fit
from .registry import register_backend, get_backend, backend_names, backend_class
from .base import pick_backend

__all__ = ['Backend', 'History', 'EpochLoop', 'FitStart', 'prepare_fit', 'check_backend', 'CAPABILITIES', 'HOOKS',
           'Head', 'declare_heads', 'HEAD_KINDS', 'register_backend', 'get_backend', 'backend_names',
           'backend_class', 'pick_backend']
