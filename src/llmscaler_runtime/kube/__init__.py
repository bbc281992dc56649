"""Kubernetes access on plain dicts: config loading, client, discovery, typed errors.

Objects are the JSON the API server sends, as dicts. Objects handed out by caches are shared
between readers: never mutate them; take a private copy with :func:`deep_copy` first.
"""

from .client import APPLY_CONTENT_TYPE, Client, PatchType, WatchStream
from .config import ConfigError, in_cluster_namespace, load_config
from .copy import deep_copy
from .errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
    Unauthorized,
    error_from_response,
)
from .mapper import GVK, NoKindMatch, ResourceInfo, RESTMapper, split_api_version
from .times import rfc3339

__all__ = [
    "APPLY_CONTENT_TYPE",
    "GVK",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Client",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NoKindMatch",
    "NotFound",
    "PatchType",
    "RESTMapper",
    "ResourceInfo",
    "ServerTimeout",
    "ServiceUnavailable",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WatchStream",
    "deep_copy",
    "error_from_response",
    "in_cluster_namespace",
    "load_config",
    "rfc3339",
    "split_api_version",
]
