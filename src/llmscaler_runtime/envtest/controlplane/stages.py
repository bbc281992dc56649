"""kwok Stages: how fake nodes and pods move through their lives on the workload tier.

kwok ships no stages in its binary (kwokctl writes them), so the control plane writes these into
kwok's config. They follow kwok's "general" pod lifecycle, reduced to what a Deployment of
single-container LLM servers needs:

* nodes become Ready with a large allocatable and keep a Lease (kwok's heartbeat-with-lease);
* a scheduled pod gets an IP and goes ``Pending`` (containers creating) at once;
* it becomes ``Running`` and Ready after ``pod_ready_seconds``: the model's cold start. A pod
  may override that with the annotation ``pod-ready.stage.kwok.x-k8s.io/delay`` (a Go duration
  such as ``"20s"``), kwok's own convention, so one test can slow one Deployment down;
* a deleted pod disappears after ``pod_delete_seconds`` (annotation
  ``pod-delete.stage.kwok.x-k8s.io/delay`` overrides). kwok's own stage adds a random jitter up
  to the pod's deletionTimestamp (its grace period); ours does not, so tests are repeatable.
"""

from __future__ import annotations

__all__ = ["POD_READY_DELAY_ANNOTATION", "kwok_config"]

POD_READY_DELAY_ANNOTATION = "pod-ready.stage.kwok.x-k8s.io/delay"
POD_DELETE_DELAY_ANNOTATION = "pod-delete.stage.kwok.x-k8s.io/delay"

_CONFIG = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  # kwok's defaults for these are not applied to a config file's options: say them.
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 2
  nodeLeaseParallelism: 2
  nodeLeaseDurationSeconds: 40
  podsOnNodeSyncParallelism: 1
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ NodeName | Quote }}
        type: Hostname
      allocatable: {cpu: "1k", memory: 1Ti, pods: "10k"}
      capacity: {cpu: "1k", memory: 1Ti, pods: "10k"}
      nodeInfo:
        architecture: amd64
        containerRuntimeVersion: kwok
        kernelVersion: kwok
        kubeProxyVersion: kwok
        kubeletVersion: kwok
        operatingSystem: linux
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat-with-lease
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ["True"]
  delay:
    durationMilliseconds: 600000
    jitterDurationMilliseconds: 610000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-create
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.podIP'
      operator: DoesNotExist
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ContainerCreating
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" )
        ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Pending
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Pending]
    - key: '.status.podIP'
      operator: Exists
  delay:
    durationMilliseconds: @READY_MS@
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
    - key: '.metadata.finalizers'
      operator: DoesNotExist
  delay:
    durationMilliseconds: @DELETE_MS@
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'
  next:
    delete: true
"""


def kwok_config(*, pod_ready_seconds: float, pod_delete_seconds: float) -> str:
    """kwok's ``--config`` file: a KwokConfiguration and the Stages above."""
    if pod_ready_seconds < 0 or pod_delete_seconds < 0:
        raise ValueError("pod delays must be >= 0 seconds")
    return _CONFIG.replace("@READY_MS@", str(round(pod_ready_seconds * 1000))).replace(
        "@DELETE_MS@", str(round(pod_delete_seconds * 1000))
    )
