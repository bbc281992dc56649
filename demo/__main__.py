"""Run the llmscaler demo: ``python -m demo [--duration S] [--plot PNG] [--plain] [--cluster C]``.

The story: an embedded API server with its workload simulator plays a cluster (or, with
``--cluster controlplane``, the real kube-apiserver, controllers, scheduler and kwok built by
``make controlplane``); a Deployment of
simulated vLLM pods (a few seconds of cold start each) serves a load that bursts and falls away;
an exporter publishes per-pod vLLM metrics derived from that load; a real Prometheus scrapes them
when one is installed (else a small built-in query endpoint answers the demo's queries); the
sample LLMScaler from config/samples/ (sped up for a one-minute story) drives the fleet; and the
real manager process does the scaling. Everything binds to 127.0.0.1 and is torn down at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from demo.model import LoadCurve, next_warmth, pod_metrics
from demo.view import DemoView, Frame

ROOT = Path(__file__).resolve().parent.parent
CRD = ROOT / "config" / "crd" / "bases" / "autoscaling.modelsphere.dev_llmscalers.yaml"
SAMPLE = ROOT / "config" / "samples" / "autoscaling_v1alpha1_llmscaler.yaml"
NAMESPACE = "demo"
APP = "vllm-demo"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=60.0, help="story length in seconds (>= 20)")
    p.add_argument("--plot", default=None, help="write a PNG of replicas against load here")
    p.add_argument("--plain", action="store_true", help="plain log lines even on a TTY")
    p.add_argument(
        "--cluster",
        choices=("embedded", "controlplane"),
        default="embedded",
        help="embedded: the project's own API server (default, needs only Python); "
        "controlplane: the real Kubernetes control plane (make controlplane builds it)",
    )
    p.add_argument(
        "--no-prometheus",
        action="store_true",
        help="use the built-in query endpoint even when a Prometheus binary is installed",
    )
    ns = p.parse_args(argv)
    if ns.duration < 20:
        p.error("--duration must be at least 20 seconds (a scale-up and a scale-down must fit)")
    return ns


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": APP, "namespace": NAMESPACE, "labels": {"app": APP}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": APP}},
            "template": {
                "metadata": {"labels": {"app": APP}},
                "spec": {
                    "terminationGracePeriodSeconds": 30,
                    "containers": [
                        {
                            "name": "vllm",
                            "image": "vllm/vllm-openai:latest",
                            "args": ["--model", "facebook/opt-125m", "--shutdown-timeout", "10"],
                            "ports": [{"name": "http", "containerPort": 8000}],
                        }
                    ],
                },
            },
        },
    }


def scaler_from_sample(server_address: str, duration: float) -> dict[str, Any]:
    """The committed sample, re-pointed at the demo's namespace and sped up for a short story."""
    obj: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    selector = f'namespace="{NAMESPACE}", app="{APP}"'
    obj["metadata"] = {"name": "vllm-demo-scaler", "namespace": NAMESPACE}
    spec = obj["spec"]
    spec["targetRef"]["name"] = APP
    spec["serverAddress"] = server_address
    spec["minReplicas"] = 1
    spec["maxReplicas"] = 6
    spec["syncPeriodSeconds"] = 2
    spec["retryPeriodSeconds"] = 2
    spec["metrics"] = [
        {
            "name": "kv-cache",
            "query": f"avg(vllm:kv_cache_usage_perc{{{selector}}})",
            "target": "0.6",
        }
    ]
    spec["scaleDown"] = {
        "stabilizationWindowSeconds": max(4, int(duration * 0.1)),
        "maxStepReplicas": 1,
        "behavior": "CacheAware",
        "deletionCostQuery": f"vllm:kv_cache_usage_perc{{{selector}}} * 100",
    }
    return obj


class Story:
    """Owns every process and server of the demo, and tears them down in reverse order."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stop = threading.Event()
        self.tmp = tempfile.TemporaryDirectory(prefix="llmscaler-demo-")
        self.cleanups: list[Any] = []
        self.frames: list[Frame] = []
        self.metric_source = ""
        self.cluster_description = ""

    # -- setup -------------------------------------------------------------------------------
    def start(self) -> None:
        from llmscaler_runtime.testkit.vllm_exporter import VllmMetricsExporter

        self.env = self._start_cluster()
        self.kube = self.env.client()
        self.cleanups.append(self.kube.close)
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        self.kube.create(deployment(1))

        self.exporter = VllmMetricsExporter()
        self.exporter.start()
        self.cleanups.append(self.exporter.stop)

        self.server_address = self._start_metric_source()
        self.kube.create(scaler_from_sample(self.server_address, self.args.duration))

        log_path = Path(self.tmp.name) / "manager.log"
        self.manager_log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in teardown
        self.manager = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llmscaler_manager",
                "--kubeconfig",
                self.env.kubeconfig_path,
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ],
            stdout=self.manager_log,
            stderr=subprocess.STDOUT,
        )
        self.cleanups.append(self._stop_manager)

    def _start_cluster(self) -> Any:
        """The embedded server or the real control plane, both with pods that take 3 s to load."""
        if self.args.cluster == "controlplane":
            from llmscaler_runtime.envtest.controlplane import ControlPlane

            plane = ControlPlane([str(CRD)], workloads=True, pod_ready_seconds=3.0)
            self.cleanups.append(plane.stop)
            plane.start()
            self.cluster_description = (
                f"the real control plane (kube-apiserver {plane.url}, controllers, kwok)"
            )
            return plane
        from llmscaler_runtime.envtest import Environment

        env = Environment(crd_paths=[str(CRD)], simulate_workloads=True, pod_startup_seconds=3.0)
        self.cleanups.append(env.stop)
        env.start()
        self.cluster_description = f"the embedded API server at {env.url}"
        return env

    def _start_metric_source(self) -> str:
        from llmscaler_runtime.testkit.prometheus import PrometheusServer, find_prometheus_binary

        binary = None if self.args.no_prometheus else find_prometheus_binary()
        if binary:
            prom = PrometheusServer(
                scrape_targets=[self.exporter.target], scrape_interval="1s", binary=binary
            )
            prom.start()
            prom.wait_ready(timeout=30)
            self.cleanups.append(prom.stop)
            self.metric_source = f"real Prometheus ({binary}) at {prom.url}"
            return str(prom.url)
        from llmscaler_runtime.testkit.promql_lite import PromqlLiteServer

        lite = PromqlLiteServer(self.exporter.samples)
        lite.start()
        self.cleanups.append(lite.stop)
        self.metric_source = f"built-in query endpoint at {lite.url} (no Prometheus binary found)"
        return str(lite.url)

    def _stop_manager(self) -> None:
        if self.manager.poll() is None:
            self.manager.send_signal(signal.SIGTERM)
            try:
                self.manager.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.manager.kill()
        self.manager_log.close()

    def teardown(self) -> None:
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as exc:  # teardown must go on: report and continue
                print(f"demo: cleanup step failed: {exc}", file=sys.stderr)
        self.tmp.cleanup()

    # -- the story loop ----------------------------------------------------------------------
    def run(self, view: DemoView) -> None:
        curve = LoadCurve(duration=self.args.duration)
        warmth: dict[str, float] = {}
        t0 = time.monotonic()
        last = t0
        seen_events: set[str] = set()
        while not self.stop.is_set():
            now = time.monotonic()
            t = now - t0
            if t >= self.args.duration:
                break
            if self.manager.poll() is not None:
                raise RuntimeError(
                    f"the manager exited with code {self.manager.returncode}; see its log above"
                )
            dt, last = now - last, now
            pods = self.kube.list("v1", "Pod", NAMESPACE, label_selector=f"app={APP}")["items"]
            ready = sorted(
                p["metadata"]["name"]
                for p in pods
                if not p["metadata"].get("deletionTimestamp") and _is_ready(p)
            )
            load = curve.at(t)
            metrics = pod_metrics(load, ready, warmth)
            for name in list(warmth):
                if name not in metrics:
                    del warmth[name]
                    self.exporter.remove_pod(NAMESPACE, name)
            for name, m in metrics.items():
                warmth[name] = next_warmth(warmth.get(name, 0.0), m.kv_cache_usage, dt)
                self.exporter.set_pod(
                    NAMESPACE, APP, name, kv=m.kv_cache_usage, waiting=m.waiting, running=m.running
                )
            frame = self._frame(t, load, pods, metrics, seen_events)
            self.frames.append(frame)
            view.update(frame)
            self.stop.wait(1.0)

    def _frame(
        self, t: float, load: float, pods: list[dict], metrics: dict, seen: set[str]
    ) -> Frame:
        dep = self.kube.get("apps/v1", "Deployment", APP, NAMESPACE)
        scaler = self.kube.get(
            "autoscaling.modelsphere.dev/v1alpha1", "LLMScaler", "vllm-demo-scaler", NAMESPACE
        )
        events = self.kube.list("v1", "Event", NAMESPACE)["items"]
        new_events = []
        for ev in sorted(events, key=lambda e: e.get("lastTimestamp") or ""):
            key = f"{ev['metadata']['name']}/{ev.get('count', 1)}"
            if key not in seen:
                seen.add(key)
                new_events.append(
                    f"{ev.get('type', '')} {ev.get('reason', '')}: {ev.get('message', '')}"
                )
        costs = {
            p["metadata"]["name"]: p["metadata"]
            .get("annotations", {})
            .get("controller.kubernetes.io/pod-deletion-cost")
            for p in pods
        }
        kv_values = [m.kv_cache_usage for m in metrics.values()]
        status = scaler.get("status", {})
        return Frame(
            t=t,
            load=load,
            avg_kv=sum(kv_values) / len(kv_values) if kv_values else 0.0,
            spec_replicas=int(dep["spec"].get("replicas", 0)),
            ready_replicas=int(dep.get("status", {}).get("readyReplicas", 0) or 0),
            desired_replicas=status.get("desiredReplicas"),
            pods={
                p["metadata"]["name"]: (
                    "terminating"
                    if p["metadata"].get("deletionTimestamp")
                    else ("ready" if _is_ready(p) else "starting")
                )
                for p in pods
            },
            kv_by_pod={k: v.kv_cache_usage for k, v in metrics.items()},
            deletion_costs={k: v for k, v in costs.items() if v is not None},
            conditions={
                c["type"]: f"{c['status']} ({c.get('reason', '')})"
                for c in status.get("conditions", [])
            },
            new_events=new_events,
        )


def _is_ready(pod: dict) -> bool:
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def write_plot(frames: list[Frame], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax1 = plt.subplots(figsize=(9, 4.5))
    ts = [f.t for f in frames]
    ax1.plot(ts, [f.load for f in frames], color="tab:gray", label="load (concurrent requests)")
    ax1.set_xlabel("seconds")
    ax1.set_ylabel("load")
    ax2 = ax1.twinx()
    ax2.step(
        ts, [f.spec_replicas for f in frames], where="post", color="tab:blue", label="spec.replicas"
    )
    ax2.step(ts, [f.ready_replicas for f in frames], where="post", color="tab:green", label="ready")
    ax2.set_ylabel("replicas")
    ax2.set_ylim(bottom=0)
    lines = ax1.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    labels = ax1.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
    ax1.legend(lines, labels, loc="upper right")
    ax1.set_title("llmscaler demo: replicas against load")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    story = Story(args)
    interactive = sys.stdout.isatty() and not args.plain and os.environ.get("TERM") != "dumb"
    view = DemoView(interactive=interactive)

    def _on_signal(signum: int, _frame: object) -> None:
        story.stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    code = 0
    try:
        print(
            f"demo: starting the {args.cluster} cluster, metric source and manager ...", flush=True
        )
        story.start()
        print(f"demo: cluster is {story.cluster_description}", flush=True)
        print(f"demo: metrics come from {story.metric_source}", flush=True)
        with view:
            story.run(view)
    except KeyboardInterrupt:
        print("\ndemo: interrupted, cleaning up", flush=True)
        code = 130
    except Exception as exc:
        print(f"demo: failed: {exc}", file=sys.stderr)
        code = 1
    finally:
        story.teardown()
    if story.frames:
        view.summary(story.frames, story.metric_source)
        if args.plot:
            write_plot(story.frames, args.plot)
            print(f"demo: wrote {args.plot}")
    return code


if __name__ == "__main__":
    sys.exit(main())
