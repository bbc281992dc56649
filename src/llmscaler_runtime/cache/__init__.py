"""Informers and caches: list+watch into memory, index it, notify handlers.

Objects handed out by stores, informers and the InformerCache are shared between all readers.
Never mutate them; copy with :func:`llmscaler_runtime.kube.deep_copy` first.
"""

from .backoff import Backoff
from .informer import FuncHandler, ResourceEventHandler, SharedInformer
from .reader import CacheNotStarted, CacheNotSynced, InformerCache
from .reflector import ListerWatcher, Reflector, ReflectorSink
from .selector import LabelSelector, Requirement, format_selector, parse_selector
from .store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexFunc,
    Store,
    namespace_index,
    object_key,
)
from .transform import strip_managed_fields

__all__ = [
    "NAMESPACE_INDEX",
    "Backoff",
    "CacheNotStarted",
    "CacheNotSynced",
    "DeletedFinalStateUnknown",
    "FuncHandler",
    "IndexFunc",
    "InformerCache",
    "LabelSelector",
    "ListerWatcher",
    "Reflector",
    "ReflectorSink",
    "Requirement",
    "ResourceEventHandler",
    "SharedInformer",
    "Store",
    "format_selector",
    "namespace_index",
    "object_key",
    "parse_selector",
    "strip_managed_fields",
]
