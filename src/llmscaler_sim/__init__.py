"""What-if simulation: run the real llmscaler pipeline over a load trace on a virtual clock.

``llmscaler-sim`` (see :mod:`llmscaler_sim.cli`) is the command; the library API is
:func:`simulate` over a :class:`Variant`, a :class:`Trace` and a :class:`FleetModel`, and
:func:`figures` for what came of it. The scaler's decision code is the project's own
(``llmscaler_runtime.scaling.LLMScalerReconciler`` with its default steps); only the cluster,
Prometheus and the clock are simulated (see :mod:`llmscaler_sim.run` and
:mod:`llmscaler_sim.fleet` for what they assume).
"""

from llmscaler_sim.fleet import ColdStart, Fleet, FleetModel
from llmscaler_sim.history import HistoryQuery, demand_from_history
from llmscaler_sim.report import (
    Figures,
    Slo,
    figures,
    render_json,
    render_svg,
    render_table,
    write_json,
    write_svg,
)
from llmscaler_sim.run import Decision, RunResult, simulate, simulate_all
from llmscaler_sim.trace import Trace, TraceError, generate, load_trace
from llmscaler_sim.variants import BASELINES, Variant, VariantError, build_variants, load_scaler

__all__ = [
    "BASELINES",
    "ColdStart",
    "Decision",
    "Figures",
    "Fleet",
    "FleetModel",
    "HistoryQuery",
    "RunResult",
    "Slo",
    "Trace",
    "TraceError",
    "Variant",
    "VariantError",
    "build_variants",
    "demand_from_history",
    "figures",
    "generate",
    "load_scaler",
    "load_trace",
    "render_json",
    "render_svg",
    "render_table",
    "simulate",
    "simulate_all",
    "write_json",
    "write_svg",
]
