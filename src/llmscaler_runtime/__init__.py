"""llmscaler_runtime: a controller-runtime-style framework for Kubernetes operators in Python,
and the LLM scaling pipeline built on it.

Packages, one concept each:

- ``kube``        config loading, a dict-based client for any kind, discovery, typed errors
- ``cache``       reflector, store with indexers, shared informers, a cache-backed reader
- ``workqueue``   client-go's workqueue: dedup, delaying, rate limiting
- ``controller``  Request/Result/Reconciler, worker threads, builder, predicates
- ``manager``     runs informers and controllers; leader election, probes, metrics, signals
- ``api``         the LLMScaler API types (autoscaling.modelsphere.dev/v1alpha1)
- ``scaling``     the LLM scaling pipeline: guard, fetch, recommend, pace, victims, write
- ``envtest``     an embedded Kubernetes API server for tests and demos
- ``testkit``     real Prometheus runner, vLLM metrics exporter, fake decision server
"""

__version__ = "0.1.0"
