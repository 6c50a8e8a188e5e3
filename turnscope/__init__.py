"""turnscope: test voice agents the way their callers meet them.

The public API (everything else is internal and may move)::

    import turnscope

    run = turnscope.replay("call.wav", reference="call.reference.json")
    print(run.outcome.passed, run.outcome.verifier["result"]["components"], run.outdir)

- ``replay``, ``call``: the two run paths (a recording; a live agent with a scripted caller);
- ``run_pipeline``, ``Source``, ``SourceInfo``, ``PcmFrame``, ``Sink``: the one pipeline and
  its interfaces, for a transport or an observer of your own;
- ``load_settings``, ``Settings``: every knob of the pipeline;
- ``score_voice_episode``, ``verifier_facts``: the temporal verifier and the pairs it scores;
- ``run_bench``: a voice suite against a ``{task_id: dialogue}`` submission;
- ``load_scenario``: a scripted call;
- ``register_transport``, ``TransportSpec``: a way to call an agent of your own (a folder under
  ``capture/`` and this registration; ``call(..., transport=NAME)`` then takes it);
- ``TurnscopeError`` and its kinds (``InputError``, ``CallSetupError``, ...): what can go wrong;
- what the CLI's commands do, each returning a typed result: ``run_suite`` and ``score_suite``
  (bench), ``load_test`` (load, with a ``LoadPlan``), ``add_fixture`` (fixture add),
  ``check_gate`` and ``pin_baseline`` (gate), ``calibrate_loopback`` (calibrate), ``demo`` and
  ``call_summary`` (a placed call's closing lines), ``scenario_from_recording`` (scenario
  from-recording: a recorded caller re-driven against today's agent).

Names are imported when first used, so ``import turnscope`` (and the CLI) stays light.
"""

from __future__ import annotations

# Nothing is imported here at run time: the console script imports this package before its
# Ctrl-C guard (turnscope/cli/entry.py) can run, so the less it does the smaller that window.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# The CLI's use cases, each returning a typed result (turnscope.api).
_USE_CASES = (
    "run_suite", "SuiteRun", "SuiteProgress", "score_suite", "SuiteScore", "load_test", "LoadRun",
    "LoadObserver", "LoadPlan", "add_fixture", "AddedFixture", "check_gate", "pin_baseline",
    "GateRun", "calibrate_loopback", "LoopbackCalibration", "demo", "CallRun", "call_summary",
    "CallSummary",
)  # fmt: skip
_EXPORTS = {
    "replay": "turnscope.api",
    "call": "turnscope.api",
    "RunOutput": "turnscope.runner",
    "run_pipeline": "turnscope.pipeline",
    "Sink": "turnscope.pipeline",
    "PipelineResult": "turnscope.pipeline",
    "Source": "turnscope.capture.source",
    "SourceInfo": "turnscope.capture.source",
    "PcmFrame": "turnscope.capture.frames",
    "load_settings": "turnscope.asr.settings",
    "Settings": "turnscope.asr.settings",
    "score_voice_episode": "turnscope.scoring.verifier",
    "verifier_facts": "turnscope.scoring.verifier",
    "run_bench": "turnscope.scoring.suites.bench",
    "load_scenario": "turnscope.actors.caller.scenario_file",
    "register_transport": "turnscope.transports",
    "TransportSpec": "turnscope.capture.transport",
    "TurnscopeError": "turnscope.errors",
    "InputError": "turnscope.errors",
    "OutputError": "turnscope.errors",
    "CallSetupError": "turnscope.errors",
    "EnvironmentProblem": "turnscope.errors",
    "BenchError": "turnscope.errors",
    "scenario_from_recording": "turnscope.redrive",
    "Redrive": "turnscope.redrive",
    **dict.fromkeys(_USE_CASES, "turnscope.api"),
}
_RENAMED = {"register_transport": "register"}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'turnscope' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), _RENAMED.get(name, name))


def __dir__() -> list[str]:
    return sorted(__all__)
