"""Label selectors for predicates: the framework's one implementation, in the cache package.

Kept as a module so ``llmscaler_runtime.controller.selectors`` imports keep working; the names
are the very objects of :mod:`llmscaler_runtime.cache.selector`, so a selector parsed for a
predicate and one used for a cached list are interchangeable.
"""

from __future__ import annotations

from llmscaler_runtime.cache.selector import LabelSelector, Requirement, parse_selector

__all__ = ["LabelSelector", "Requirement", "parse_selector"]
