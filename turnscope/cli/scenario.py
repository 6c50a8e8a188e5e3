"""`turnscope scenario from-recording`: a recorded call's caller as a scenario (thin: the work is
turnscope/redrive.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.console import fail_line, say, warn_line
from turnscope.cli.exit_codes import ExitCode

scenario_app = typer.Typer(
    name="scenario",
    help="Make and check scenarios: from-recording re-drives a recorded call's real caller; "
    "check loads scenario files as a call does and shows when each line is said.",
    short_help="Make and check scenarios (from-recording, check).",
    no_args_is_help=True,
)


@scenario_app.command(
    "from-recording", short_help="A scenario whose caller lines are a recorded call's caller."
)
def from_recording(
    call: Path = typer.Argument(
        ..., help="The recorded call: a two-channel file, or a turnscope bundle folder."
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Folder for scenario.yaml, its clips and the replay."
    ),
    caller_channel: str = typer.Option(
        "left", "--caller-channel", help="The recording's caller channel: left or right."
    ),
    reference: Path | None = typer.Option(
        None, "--reference", help="Reference JSON with turns: the caller's words per turn."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a scenario already in -o."),
) -> int:
    """Write a scenario whose caller lines are CALL's caller turns (their own audio, spoken
    with the gaps and barge-ins of the recording); call an agent with it (turnscope call URL
    --scenario FOLDER/scenario.yaml) and its report sets the new call beside the recorded one."""
    from turnscope.redrive import scenario_from_recording

    made = scenario_from_recording(
        call, outdir=output, caller_channel=caller_channel, reference=reference, force=force
    )
    b = made.built
    say(
        f"{made.caller_turns} caller turns, {made.agent_turns} agent turns: {b.lines} caller "
        f"lines ({b.barge_ins} barge-ins, {b.backchannels} backchannels)",
        markup=False,
    )
    for note in b.notes:
        say(f"note: {note}", markup=False)
    for why in made.degraded:  # a partial call makes a partial scenario: said, not refused
        warn_line(f"{call}: degraded evidence: {why}; the scenario re-drives what it captured")
    say(f"the recorded call's bundle: {made.bundle}", markup=False)
    say(f"wrote {b.scenario}", markup=False)
    say(f"re-drive it: turnscope call URL --scenario {b.scenario}", markup=False)
    return 0


@scenario_app.command("check", short_help="Check scenario files without placing a call.")
def check(
    scenarios: list[Path] = typer.Argument(..., help="Scenario YAML files (or shipped names)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="One line per file, no lines."),
) -> int:
    """Load each scenario as a call loads it (every key, voice, clip and suite task) and show
    how the caller goes through it: each line and the moment it is said. Exit 2 when any file
    is not a valid scenario (each one named, with its problem, on one line)."""
    from turnscope.cli.scenario_view import show_check
    from turnscope.errors import InputError
    from turnscope.use_cases.scenario_check import check_scenario

    bad = 0
    for file in scenarios:
        try:
            checked = check_scenario(file)
        except InputError as exc:
            fail_line(str(exc))
            bad += 1
            continue
        show_check(checked, lines=not quiet)
    good = len(scenarios) - bad
    say(f"{good} of {len(scenarios)} scenario{'s' if len(scenarios) > 1 else ''} valid",
        markup=False)  # fmt: skip
    return ExitCode.BAD_INPUT if bad else ExitCode.PASSED


def register(app: typer.Typer) -> None:
    app.add_typer(scenario_app, name="scenario")
