"Training backends: the `Backend` contract every backend subclasses, its `History`, and the registry that names them"
from .base import Backend, History
from .registry import register_backend, get_backend, backend_names, backend_class
from .base import pick_backend
