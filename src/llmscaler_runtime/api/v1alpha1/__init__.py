"""``autoscaling.modelsphere.dev/v1alpha1``: the LLMScaler kind.

The types are immutable and parsed strictly (:meth:`LLMScaler.from_dict` raises
:class:`SpecError` listing every problem); the CRD under ``config/crd/bases`` is generated from
the metadata each field carries by ``hack/gen_crd.py``. The modules depend one way:
``_meta`` (the metadata vocabulary) <- ``codec`` (decode/encode by that metadata) <- ``types``
(the API, declared once) <- ``crd`` (the generator).
"""

from .codec import SpecError
from .types import (
    API_VERSION,
    DECISION_TEXT_MAX,
    GROUP,
    KIND,
    LIST_KIND,
    PLURAL,
    RECENT_DECISIONS_MAX,
    SINGULAR,
    TARGET_PATTERN,
    VERSION,
    Condition,
    CustomProvider,
    Fallback,
    FallbackBehavior,
    FrozenMap,
    HeaderSource,
    HeaderValueSource,
    LLMScaler,
    LLMScalerSpec,
    LLMScalerStatus,
    MetricProvider,
    MetricSpec,
    Preemption,
    ScaleDecision,
    ScaleDown,
    ScaleDownBehavior,
    Schedule,
    SecretKeySelector,
    TargetRef,
    Weekday,
    parse_target,
)

__all__ = [
    "API_VERSION",
    "DECISION_TEXT_MAX",
    "GROUP",
    "KIND",
    "LIST_KIND",
    "PLURAL",
    "RECENT_DECISIONS_MAX",
    "SINGULAR",
    "TARGET_PATTERN",
    "VERSION",
    "Condition",
    "CustomProvider",
    "Fallback",
    "FallbackBehavior",
    "FrozenMap",
    "HeaderSource",
    "HeaderValueSource",
    "LLMScaler",
    "LLMScalerSpec",
    "LLMScalerStatus",
    "MetricProvider",
    "MetricSpec",
    "Preemption",
    "ScaleDecision",
    "ScaleDown",
    "ScaleDownBehavior",
    "Schedule",
    "SecretKeySelector",
    "SpecError",
    "TargetRef",
    "Weekday",
    "parse_target",
]
