"""An embedded Kubernetes API server for tests, demos and users (envtest without binaries)."""

from .environment import Environment
from .errors import StatusError
from .server import ApiServer
from .storage import Storage

__all__ = ["ApiServer", "Environment", "StatusError", "Storage"]
