"""CLI manners (issue 30.7): --version, examples and option groups in every --help, help text on
every option, the run's last line naming report.html, `turnscope open` in a browser, the ASR
model named, and no decoder noise on stderr."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT

RECORDING = ROOT / "recordings" / "refund-call.wav"
REFERENCE = ROOT / "recordings" / "refund-call.reference.json"


def commands():
    """Every leaf command of the CLI as (path, click command)."""
    import typer

    from turnscope.cli.main import app

    found = []

    def visit(cmd, path):
        ctx = cmd.context_class(cmd, info_name=" ".join(path))
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                visit(cmd.get_command(ctx, name), [*path, name])
        else:
            found.append((" ".join(path[1:]), cmd))

    visit(typer.main.get_command(app), ["turnscope"])
    return found


def test_version_long_and_short(cli, run_exe):
    from turnscope import __version__

    for flag in ("--version", "-V"):
        code, out, err = cli(flag)
        assert code == 0 and out.strip() == f"turnscope {__version__}" and not err
    proc = run_exe("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"turnscope {__version__}"


def test_every_option_of_every_command_has_help():
    missing = [
        f"turnscope {name} {'/'.join(p.opts)}"
        for name, cmd in commands()
        for p in cmd.params
        if p.param_type_name == "option" and not (p.help or "").strip()
    ]
    assert not missing, "options with no help text: " + ", ".join(missing)


def test_a_required_argument_or_option_left_out_is_one_line_with_a_command_line_that_gives_it(
    cli,
):
    """Every required parameter of every command, left out (those before it given): one line
    naming it and what it is, an example of the command's own --help that gives it, and where
    every option is listed; exit 2 (it was click's bare "Missing option '--out'.")."""
    seen = 0
    for name, cmd in commands():
        given: list[str] = []
        for p in (p for p in cmd.params if p.required):
            code, out, err = cli(*name.split(), *given)
            shown = p.metavar.upper() if p.param_type_name == "argument" and p.metavar else None
            typed = shown or (p.name.upper() if p.param_type_name == "argument" else p.opts[0])
            assert code == 2 and not out and len(err.strip().splitlines()) == 1, (name, err)
            assert err.startswith(f"turnscope: error: {name} needs {typed}"), (name, err)
            example = err.split("e.g. `")[1].split("`")[0]
            assert example.startswith(f"turnscope {name}"), (name, err)
            assert p.param_type_name == "argument" or set(p.opts) & set(example.split()), err
            assert f"`turnscope {name} --help` lists every option" in err, err
            given += ["1"] if p.param_type_name == "argument" else [p.opts[0], "1"]
            seen += 1
    assert seen >= 15, seen  # suite, url, --scenario, --calls, --out, --in, ...


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bench", "x", "--runs"], "bench: option '--runs' requires an argument; `turnscope bench"),
        (
            ["score", "a", "b"],
            "score: got unexpected extra argument(s) (b); `turnscope score --help",
        ),
        (["fixture", "nosuch"], "fixture: no such command 'nosuch'; its commands: add;"),
        (["nosuch"], "no such command 'nosuch'; its commands: demo, call, agent,"),
        (["call", "--devices"], "call: no such option: --devices (Possible options: "),
    ],
)
def test_a_usage_error_is_one_line_naming_the_fix(cli, args, needle):
    code, out, err = cli(*args)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"turnscope: error: {needle}"), err


def test_every_command_has_examples_that_name_itself(cli):
    names = [name for name, _ in commands()]
    assert {"suite init", "fixture add", "open", "call", "replay"} <= set(names)
    for name in names:
        code, out, _ = cli(*name.split(), "--help")
        assert code == 0, name
        block = out.split("Examples (from the repository's root):\n", 1)
        assert len(block) == 2, f"turnscope {name} --help has no examples"
        lines = [x.strip() for x in block[1].splitlines() if x.strip().startswith("turnscope ")]
        assert 1 <= len(lines) <= 4, (name, lines)
        assert all(x.startswith(f"turnscope {name}") for x in lines), (name, lines)


def test_example_command_lines_parse(cli):
    """Each example is a valid command line: its options exist and take what is given
    (checked with click's own parser, so nothing runs)."""
    from turnscope.cli.help import EXAMPLES

    found = dict(commands())
    for name, lines in EXAMPLES.items():
        cmd = found[name]
        for line in lines:
            args = shlex.split(line)[1 + len(name.split()) :]
            ctx = cmd.make_context(f"turnscope {name}", list(args))
            assert not ctx.args, (line, ctx.args)  # nothing left over: every word was taken


@pytest.mark.parametrize("group", [(), ("scenario",), ("fixture",), ("suite",)])
def test_the_root_and_group_helps_end_with_examples_that_parse(cli, group):
    """`turnscope --help` and every command group's (`scenario`, `fixture`, `suite`) show
    examples too, each a valid command line of the command it names."""
    code, out, _ = cli(*group, "--help")
    assert code == 0
    block = out.split("Examples (from the repository's root):\n", 1)
    assert len(block) == 2, out
    lines = [x.strip() for x in block[1].splitlines() if x.strip().startswith("turnscope ")]
    assert 2 <= len(lines) <= 4, lines
    found = dict(commands())
    for line in lines:
        words = shlex.split(line)[1:]
        name = next(n for n in sorted(found, key=len, reverse=True)
                    if words[: len(n.split())] == n.split())  # fmt: skip
        ctx = found[name].make_context(f"turnscope {name}", words[len(name.split()) :])
        assert not ctx.args, (line, ctx.args)


def test_ci_recipe_kept_beside_the_examples(cli):
    for name in ("bench", "gate"):
        _, out, _ = cli(name, "--help")
        assert "Examples (from the repository's root)" in out
        assert "In CI, bench and gate in one job" in out


@pytest.mark.parametrize(
    ("name", "groups"),
    [
        ("call", ["Caller", "Transport", "Sound devices", "ASR", "Output"]),
        ("replay", ["Recording", "Scoring", "ASR", "Output"]),
        ("bench", ["Scoring", "Transport", "Running", "Output"]),
        ("load", ["Caller", "Transport", "ASR", "Output"]),
    ],
)
def test_options_grouped_in_help(cli, name, groups):
    _, out, _ = cli(name, "--help")
    headings = [line[:-1] for line in out.splitlines() if line.endswith(":") and line[:1] != " "]
    assert set(groups) <= set(headings), headings
    # the transport options sit under Transport, not in one list with the device ones
    if name == "call":
        transport = out.split("Transport:\n", 1)[1].split("\n\n", 1)[0]
        assert "--ice-server" in transport and "--caller-out" not in transport


def test_replay_help_documents_the_asr_knobs(cli):
    _, out, _ = cli("replay", "--help")
    for flag in ("--max-latency-ms", "--compute-type", "--beam-size", "--vad-aggressiveness"):
        line = next(x for x in out.splitlines() if x.strip().startswith(flag))
        assert len(line.split(maxsplit=2)) == 3, line  # flag, metavar and its help


# --- a run's closing lines, and opening its report --------------------------------------------


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """A real replay of the shipped recording, as an mp3 (stderr kept apart)."""
    import subprocess

    from tests.conftest import turnscope_exe

    folder = tmp_path_factory.mktemp("mp3")
    mp3 = folder / "call.mp3"
    write_mp3(mp3, *sf.read(RECORDING, dtype="int16"))
    out = folder / "run"
    proc = subprocess.run(
        [*turnscope_exe(), "replay", str(mp3), "--reference", str(REFERENCE), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )
    return proc, out


def write_mp3(path: Path, data: np.ndarray, rate: int) -> None:
    """An mp3 by FFmpeg's LAME (PyAV): the kind of file libmpg123 complained about."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mp3", rate=rate, layout="stereo")
        for i in range(0, len(data), 1152):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(data[i : i + 1152].T), format="s16p", layout="stereo"
            )
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def test_mp3_replay_keeps_decoder_noise_off_stderr(replayed):
    proc, _ = replayed
    assert proc.returncode in (0, 1), proc.stderr
    noise = [line for line in proc.stderr.splitlines() if not line.startswith("turnscope: ")]
    assert not noise, noise  # libmpg123 printed "[src/libmpg123/layer3.c:...] error: ..."
    assert "mpg123" not in proc.stderr


def test_replay_ends_naming_the_model_and_report(replayed):
    proc, out = replayed
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"report: {out / 'report.html'}"
    assert (out / "report.html").is_file()
    assert lines[-2].startswith("ASR tiny.en (bundled") and "--model PATH" in lines[-2]


def test_open_starts_the_browser_named_by_BROWSER(replayed, tmp_path, run_exe):
    _, run = replayed
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> "{seen}"\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "BROWSER": str(browser)}
    proc = run_exe("open", str(run), env=env)
    page = (run / "report.html").resolve()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(page)
    assert seen.read_text().split() == [page.as_uri()]
    proc = run_exe("open", str(run), "--print", env=env)  # --print: the path, no browser
    assert proc.returncode == 0 and proc.stdout.strip() == str(page)
    assert seen.read_text().split() == [page.as_uri()]


def test_open_without_a_browser_prints_the_path(replayed, run_exe):
    """Off a terminal (a script, CI) and with no BROWSER: the path only."""
    _, run = replayed
    env = {k: v for k, v in os.environ.items() if k != "BROWSER"}
    proc = run_exe("open", str(run), env=env)
    assert proc.returncode == 0 and not proc.stderr
    assert proc.stdout.strip() == str((run / "report.html").resolve())


def test_open_without_a_folder_takes_the_newest_run(replayed, tmp_path, run_exe):
    import shutil

    _, run = replayed
    proc = run_exe("open", cwd=tmp_path)
    assert proc.returncode == 2 and "no run with a page (report.html" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    shutil.copytree(run, tmp_path / "runs" / "replay-1")
    proc = run_exe("open", "--print", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "runs" / "replay-1" / "report.html")


def test_open_finds_a_bench_runs_scorecard_page_and_says_a_folder_with_none_in_one_line(
    tmp_path, cli
):
    code, out, _ = cli("bench", "voice_starter", "--use-reference", "-o", str(tmp_path / "b.json"))
    assert code == 0, out
    page = str((tmp_path / "b.scorecard.html").resolve())
    for given in (tmp_path, tmp_path / "b.scorecard.json", tmp_path / "b.scorecard.html"):
        code, out, _ = cli("open", str(given), "--print")
        assert code == 0 and out.strip() == page, (given, out)
    # report writes a bench run's page again from its scorecard (it said "not a bundle")
    (tmp_path / "b.scorecard.html").unlink()
    code, out, err = cli("report", str(tmp_path))
    assert code == 0 and out.strip() == str(tmp_path / "b.scorecard.html"), (out, err)
    assert "Scorecard: voice_starter" in (tmp_path / "b.scorecard.html").read_text()
    code, out, _ = cli("bench", "voice_starter", "--use-reference", "-o", str(tmp_path / "c.json"))
    assert code == 0, out
    code, _, err = cli("open", str(tmp_path), "--print")  # two runs' pages: which is meant?
    assert code == 2 and "holds 2 scorecard pages (b.scorecard.html, c.scorecard.html)" in err
    (tmp_path / "empty").mkdir()
    code, _, err = cli("open", str(tmp_path / "empty"), "--print")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a run's folder" in err
    assert "replay, call, demo, load or bench" in err


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_open_on_a_terminal(replayed, tmp_path, monkeypatch):
    """On a terminal with no display (ssh, a container) no console browser takes it over: the
    path is printed; with BROWSER set, that browser gets the page."""
    from tests.conftest import turnscope_exe
    from tests.pty_run import run_in_pty

    _, run = replayed
    page = (run / "report.html").resolve()
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    shown = run_in_pty([*turnscope_exe(), "open", str(run)], cwd=tmp_path, deadline_s=60)
    assert shown.code == 0 and str(page) in shown.screen.replace("\n", "")
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> "{seen}"\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    shown = run_in_pty(
        [*turnscope_exe(), "open", str(run)],
        cwd=tmp_path,
        env={"BROWSER": str(browser), "DISPLAY": ":0"},
        deadline_s=60,
    )
    assert shown.code == 0 and seen.read_text().split() == [page.as_uri()]


@pytest.mark.parametrize("group", [(), ("scenario",), ("fixture",), ("suite",)])
def test_every_command_is_said_whole_in_an_80_column_help(group):
    """The command lists a person reads first: no summary cut off with "..." at 80 columns."""
    import subprocess

    from tests.conftest import turnscope_exe

    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    out = subprocess.run([*turnscope_exe(), *group, "--help"], capture_output=True, text=True,
                         env=env, check=True).stdout  # fmt: skip
    listed = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed and all(len(x) <= 80 and not x.endswith("...") for x in listed), listed
