"""A different scaler built on llmscaler_runtime: size Deployments from an annotation.

It exists to show the library on its own, away from the LLMScaler pipeline: a reconciler is a
class with ``reconcile(request) -> Result``; the Builder wires it to informers of a Manager,
which brings the cache, the workqueue, leader election, probes and metrics. The whole thing runs
against the embedded API server in ``test/integration/test_example_scaler.py``.

Run it against any cluster:  ``python -m examples.annotation_scaler --kubeconfig PATH``
then ``kubectl annotate deployment web example.dev/replicas=3``.
"""

from __future__ import annotations

import argparse
from typing import Any

from llmscaler_runtime.controller import (
    AnnotationChangedPredicate,
    Builder,
    Controller,
    GenerationChangedPredicate,
    Request,
    Result,
    or_,
)
from llmscaler_runtime.events import EventRecorder
from llmscaler_runtime.kube import Client
from llmscaler_runtime.manager import Manager

ANNOTATION = "example.dev/replicas"
FIELD_MANAGER = "annotation-scaler"


class AnnotationScaler:
    """Keeps spec.replicas equal to the Deployment's ``example.dev/replicas`` annotation."""

    def __init__(self, client: Client, cache: Any, recorder: EventRecorder) -> None:
        self.client, self.cache, self.recorder = client, cache, recorder

    def reconcile(self, request: Request) -> Result:
        # Read from the shared cache (never mutate what it hands out); write through the client.
        dep = self.cache.get("apps/v1", "Deployment", request.name, request.namespace)
        if dep is None:
            return Result()  # deleted: nothing to do
        wanted = (dep["metadata"].get("annotations") or {}).get(ANNOTATION)
        if wanted is None:
            return Result()
        if not wanted.isdigit():
            # A person must fix this; retrying would not help, so report it and stop.
            self.recorder.event(dep, "Warning", "BadAnnotation", f"{ANNOTATION}={wanted!r}")
            return Result()
        if dep["spec"].get("replicas") == int(wanted):
            return Result()  # steady state costs no API write
        # Server-side apply of spec.replicas alone: this field manager owns that field only.
        self.client.apply(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": request.name, "namespace": request.namespace},
                "spec": {"replicas": int(wanted)},
            },
            field_manager=FIELD_MANAGER,
        )
        return Result()


def setup(manager: Manager) -> Controller:
    """Register the controller: reconcile a Deployment when its spec or annotations change."""
    scaler = AnnotationScaler(manager.client, manager.cache, manager.event_recorder(FIELD_MANAGER))
    return (
        Builder(manager)
        .named("annotation-scaler")
        .for_(
            "apps/v1",
            "Deployment",
            predicates=[or_(GenerationChangedPredicate(), AnnotationChangedPredicate())],
        )
        .complete(scaler)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.annotation_scaler")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--namespace", default=None, help="watch one namespace (default: all)")
    args = parser.parse_args(argv)
    manager = Manager(
        Client.from_kubeconfig(args.kubeconfig),
        namespace=args.namespace,
        metrics_bind_address=":8080",
        health_probe_bind_address=":8081",
    )
    setup(manager)
    return manager.run()  # until SIGTERM/SIGINT


if __name__ == "__main__":
    raise SystemExit(main())
