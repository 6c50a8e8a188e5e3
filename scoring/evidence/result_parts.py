"""The parts of result.json whose shape another module owns (the verifier's result, WER, the
latency split, the scripted caller's report and truth, device calibration, the settings), as
models: the keys every reader relies on typed, any other key kept as given.

An ``Open`` part is written with exactly the keys it was built or read with, in the order
declared here (the producers' own order) and then any others: a key the producer left out
stays out, so a document reads and writes back the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from turnscope.scoring.evidence.documents import Document, Number


class Open(Document):
    """A part another module owns the shape of: known keys typed, unknown ones kept."""

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.model_extra or {})
        return {k: v for k, v in handler(self).items() if k in given}


# --- the verifier (scoring/verifier.py: score_voice_episode) ----------------------------------


class VerifierVerdict(Open):
    scalar: Number = 0
    components: dict[str, Number] = Field(default_factory=dict)  # latency, turn_taking, ...
    pass_fail: dict[str, bool] = Field(default_factory=dict)  # voice, and each floor
    explanation: str = ""


class VerifierRecord(Open):
    """The verifier's result as it returns it: the verdict and its raw counts."""

    result: VerifierVerdict = Field(default_factory=VerifierVerdict)
    raw: dict[str, Any] = Field(default_factory=dict)  # modality, turns, max_latency_ms, ...


# --- WER (scoring/wer.py) ---------------------------------------------------------------------


class WerScoreRecord(Open):
    wer: Number | None = None  # None: no reference words
    hits: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    reference_words: int = 0
    hypothesis_words: int = 0
    alignment: list[dict[str, Any]] = Field(default_factory=list)  # structured output only


class WerRecord(Open):
    normaliser: str = ""
    overall: WerScoreRecord = Field(default_factory=WerScoreRecord)
    per_channel: dict[str, WerScoreRecord] = Field(default_factory=dict)


# --- the latency split (scoring/latency.py: Breakdown) ----------------------------------------


class ReplySplitRecord(Open):
    caller_turn: int = 0
    agent_turn: int = 0
    latency_ms: Number = 0
    endpointing_ms: Number | None = None
    processing_ms: Number | None = None
    delivery_ms: Number | None = None
    decided_at_ms: Number | None = None
    started_at_ms: Number | None = None
    ttfb_ms: list[Number] = Field(default_factory=list)
    estimated: list[str] = Field(default_factory=list)
    missing: str | None = None  # why this reply has no split
    hops: list[dict[str, Any]] = Field(default_factory=list)  # {from, to, ms}
    unaccounted_ms: Number | None = None


class BreakdownRecord(Open):
    """Each reply's latency split by the agent's own events, and what it rests on."""

    source: str | None = None  # rtvi | trace | ...
    reliable: bool = True
    reasons: list[str] = Field(default_factory=list)
    one_way_ms: Number | None = None
    uncertainty_ms: Number | None = None
    note: str = ""
    replies: list[ReplySplitRecord] = Field(default_factory=list)


# --- a scripted call (actors/caller/caller_report.py, capture/device/calibration.py) ----------


class SentRecord(Open):
    """When a clip really went out (capture/player.py: SendRecord)."""

    label: str = ""
    start_ms: Number = 0
    end_ms: Number | None = None
    stopped_early: bool = False


class Planned(Open):
    """The script's barge-ins (or backchannels): how many it has and how many the caller said
    as one, into the agent's speech as its ear heard it then. Whether agent speech lay under
    them in the call as assembled is the verdict's: result.json's ``exercise`` (one said into
    an agent's pause between sentences counts here, not there)."""

    planned: int = 0
    exercised: int = 0


class CallerConditions(Open):
    """What the caller's line did to its speech (actors/caller/acoustics.py ``record``): enough
    to make the same caller again. Line keys are script indices.

    - ``call``: ``caller.acoustics`` as given (``seed`` included); ``lines``: each line's own
      ``acoustics`` keys, over the call's.
    - ``seed``: the seed every noise, room and loss followed (a line's noise: with its text).
    - ``codec_missing``: codecs this FFmpeg lacks (the band alone stood in for them).
    - ``packets``: the 20 ms packets sent and lost.
    - ``snr_db_sent``: the bed's SNR under the caller's lines as both went out, after the
      telephone line (``snr_db`` is at the microphone, before it).
    - ``dysfluency``: the settings the caller stumbled by, ``caller.dysfluency`` under
      ``call`` and under ``lines`` a line's own (whole: it replaces the call's, seed included).
    - ``spoken_texts``: the lines dysfluency changed, as the caller said them.
    """

    call: dict[str, Any] = Field(default_factory=dict)
    lines: dict[str, dict[str, Any]] = Field(default_factory=dict)
    seed: int | None = None
    codec_missing: list[str] = Field(default_factory=list)
    packets: dict[str, int] = Field(default_factory=dict)  # sent, lost
    snr_db_sent: Number | None = None
    dysfluency: dict[str, Any] = Field(default_factory=dict)  # call, lines
    spoken_texts: dict[str, str] = Field(default_factory=dict)


class ScriptReport(Open):
    """What the scripted caller did, line by line; a reacting or LLM caller adds its own keys."""

    finished: str | None = None
    timed_out: bool = False
    greeting: dict[str, Any] = Field(default_factory=dict)  # expected, heard
    lines: list[dict[str, Any]] = Field(default_factory=list)  # each line's record
    spoken: int = 0
    not_spoken: list[int] = Field(default_factory=list)
    barge_ins: Planned = Field(default_factory=Planned)
    backchannels: Planned = Field(default_factory=Planned)
    unanswered_lines: list[int] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    acoustics: CallerConditions | None = None  # a caller with acoustics or dysfluencies


class CallerTruth(Open):
    """When each caller line really went out (the caller channel's ground truth)."""

    utterances: list[SentRecord] = Field(default_factory=list)
    trace: list[dict[str, Any]] = Field(default_factory=list)  # the script's line records
    finished: str | None = None


class CalibrationRecord(Open):
    """Sound devices: the loopback measurement (``applied``), or why there is none."""

    applied: bool = False
    reason: str | None = None


# --- the settings (configs/settings/default.yaml) ---------------------------------------------


class SettingsRecord(Open):
    """The run's settings, section by section as ``--settings`` takes them."""

    audio: dict[str, Any] = Field(default_factory=dict)
    vad: dict[str, Any] = Field(default_factory=dict)
    refine: dict[str, Any] = Field(default_factory=dict)
    confirm: dict[str, Any] = Field(default_factory=dict)
    asr: dict[str, Any] = Field(default_factory=dict)
    assembly: dict[str, Any] = Field(default_factory=dict)
