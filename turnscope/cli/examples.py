"""Each command's examples, the command lines its ``--help`` ends with, and the CI recipe that
`bench` and `gate` share."""

from __future__ import annotations

CI_EPILOG = (
    "In CI, bench and gate in one job: `turnscope bench SUITE -o out/bench.json --no-fail` "
    "records failing tasks without failing the step, then `turnscope gate "
    "out/bench.scorecard.json --baseline BASELINE --junit out/junit.xml` fails the job naming "
    "the failing tasks, and writes junit.xml either way."
)

_DEMO = "runs/demo"  # where the examples' demo run is written, for the commands that read one
_URL = "http://127.0.0.1:7860/api/offer"

# Each command's examples: command lines that work from the repository's root (an agent on
# _URL for call and load; the bundle the demo example writes for those that read one).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "demo": (
        "turnscope demo",
        f"turnscope demo -o {_DEMO} --force",
        "turnscope demo --scenario barge-ins",
    ),
    "call": (
        f"turnscope call {_URL} --scenario refund-call",
        f"turnscope call {_URL} --scenario refund-call --agent-trace bot-events.jsonl",
        "turnscope call ws://127.0.0.1:8765/ws --transport twilio --scenario refund-call",
        "turnscope call --device --caller-out 3 --agent-in 4 --scenario refund-call",
    ),
    "agent": (
        "turnscope agent --port 7860 --scenario refund-call",
        "turnscope agent --port 7860 --latency-ms 1500 --ignore-barge-ins",
    ),
    "replay": (
        "turnscope replay recordings/refund-call.wav",
        "turnscope replay recordings/refund-call.wav --reference "
        "recordings/refund-call.reference.json",
        "turnscope replay --caller caller.mp3 --agent agent.mp3 --max-latency-ms 1500",
        "turnscope replay call.flac --caller-channel right --model PATH/TO/small.en",
    ),
    "bench": (
        "turnscope bench voice_starter --use-reference",
        "turnscope bench configs/suites/voice_regression.json -o out/bench.json -j 2",
        "turnscope bench my-suite.json --agent http://127.0.0.1:7860/api/offer",
    ),
    "load": (
        f"turnscope load {_URL} --scenario refund-call -n 10 --rate 2/s",
        f"turnscope load {_URL} --scenario quick-exchange -n 4 --duration 60 -o runs/load",
        f"turnscope load {_URL} --scenario order-status-llm -n 4 "
        "--caller-llm http://127.0.0.1:8080/v1",
    ),
    "score": (
        f"turnscope score {_DEMO}/transcript.json",
        f"turnscope score {_DEMO}/transcript.json --max-latency-ms 800 --require refund --json",
    ),
    "scenario from-recording": (
        "turnscope scenario from-recording recordings/refund-call.wav -o /tmp/redrive",
        "turnscope scenario from-recording recordings/refund-call.wav -o /tmp/redrive --force "
        "--reference recordings/refund-call.reference.json",
        f"turnscope scenario from-recording {_DEMO} -o /tmp/redrive-demo",
    ),
    "scenario check": (
        "turnscope scenario check refund-call",
        "turnscope scenario check configs/scenarios/*.yaml -q",
    ),
    "synth": (
        "turnscope synth refund-call -o /tmp/refund-call",
        "turnscope synth configs/scenarios/barge-ins.yaml -o /tmp/b --snr-db 10 --telephone",
    ),
    "validate": (
        f"turnscope validate {_DEMO}",
        f"turnscope validate {_DEMO}/voice_artifact_manifest.json",
        "turnscope validate runs/load",
    ),
    "gate": (
        "turnscope gate out/bench.scorecard.json --baseline "
        "configs/baselines/voice_regression.scorecard.json --junit out/junit.xml",
        "turnscope gate out/bench.json --floor latency=0.8",
        "turnscope gate out/bench.scorecard.json --baseline base.json --update-baseline",
        "turnscope gate out/bench.scorecard.json --baseline base.json --update-baseline "
        "--keep-worst",
    ),
    "doctor": ("turnscope doctor", "turnscope doctor --all --json"),
    "report": (f"turnscope report {_DEMO}", "turnscope report runs/load"),
    "open": (
        f"turnscope open {_DEMO}",
        f"turnscope open {_DEMO} --print",
        "turnscope open runs/load",
        "turnscope open",
    ),
    "devices": ("turnscope devices", "turnscope devices --json"),
    "calibrate": (
        "turnscope calibrate --out 3 --in 4",
        "turnscope calibrate --out 3 --in 4 --channel 1 --json",
    ),
    "fixture add": (
        f"turnscope fixture add {_DEMO} --suite my-suite.json --tags conversational",
        f"turnscope fixture add {_DEMO} --suite my-suite.json --tags acoustic --id noisy-refund",
    ),
    "suite init": (
        "turnscope suite init my-suite",
        "turnscope suite init suites/my-suite.json --force",
    ),
}

# The command groups' examples (the root's --help and each group's): the commands to try first.
GROUP_EXAMPLES: dict[str, tuple[str, ...]] = {
    "turnscope": (
        "turnscope demo",
        f"turnscope call {_URL} --scenario refund-call",
        "turnscope replay recordings/refund-call.wav",
        "turnscope bench voice_starter --use-reference",
    ),
    "scenario": (
        "turnscope scenario check refund-call",
        "turnscope scenario from-recording recordings/refund-call.wav -o /tmp/redrive",
        f"turnscope call {_URL} --scenario /tmp/redrive/scenario.yaml",
    ),
    "fixture": (
        "turnscope suite init my-suite",
        f"turnscope fixture add {_DEMO} --suite my-suite.json --tags conversational",
    ),
    "suite": (
        "turnscope suite init my-suite",
        "turnscope bench my-suite.json --use-reference",
    ),
}
GROUP_NOTE = "Every command's --help lists its options and ends with its own examples."
