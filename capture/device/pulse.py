"""Virtual sound devices: a headless PulseAudio with null sinks, exposed to PortAudio via ALSA.

    python -m turnscope.capture.device.pulse start|stop|env|status [--dir DIR]

``start`` is idempotent: a server already answering on DIR's socket is reused (missing sinks are
added), never started twice. ``stop`` stops only a server that ``start`` started (it leaves an
owner file with the pid). Each sink NAME_sink becomes two ALSA PCMs, NAME_out (play into it) and
NAME_in (its monitor: what was played, bit-exact), written to DIR/asoundrc with the server's
socket in every PCM, so nothing else on the machine (a desktop PulseAudio, the ``default`` PCM)
is touched. PortAudio sees them when ALSA_CONFIG_PATH lists that file after alsa.conf.

With ``mixer`` there is also a 2-channel "mixer" for ``--stereo-in``: mix_left_out and
mix_right_out each play into one side of mix_in (and have their own _in monitors).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from turnscope.errors import EnvironmentProblem

SINKS = ("caller", "agent")
MIXER_SIDES = {"mix_left": "front-left", "mix_right": "front-right"}
RATE = 48000
ALSA_CONF = Path("/usr/share/alsa/alsa.conf")
SETUP_HINT = "apt-get install -y pulseaudio libasound2-plugins, or ./scripts/setup.sh --dev"


def default_dir() -> Path:
    return Path(os.environ.get("TURNSCOPE_PULSE_DIR") or f"/tmp/turnscope-pulse-{os.getuid()}")


@dataclass
class VirtualDevices:
    """A running headless server: where it listens and the ALSA file naming its PCMs."""

    directory: Path
    sinks: tuple[str, ...]
    started: bool  # True when this call started the server (so it may stop it)

    @property
    def socket(self) -> Path:
        return self.directory / "native"

    @property
    def asoundrc(self) -> Path:
        return self.directory / "asoundrc"

    def env(self) -> dict[str, str]:
        return environment(self.directory)


def environment(directory: Path | None = None) -> dict[str, str]:
    """The variables that expose the virtual devices to PortAudio (and to pactl)."""
    d = directory or default_dir()
    return {
        "ALSA_CONFIG_PATH": f"{ALSA_CONF}:{d / 'asoundrc'}",
        "PULSE_SERVER": f"unix:{d / 'native'}",
    }


def answering(directory: Path) -> bool:
    """True when a server accepts connections on DIR's socket (a stale socket file is not)."""
    path = directory / "native"
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def _pactl(directory: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["pactl", "-s", f"unix:{directory / 'native'}", *args],
        capture_output=True,
        text=True,
        timeout=10,
    )


def _modules(sinks: Sequence[str], mixer: bool) -> dict[str, str]:
    """sink name -> the module (and arguments) that makes it."""
    modules = {
        f"{name}_sink": f"module-null-sink sink_name={name}_sink rate={RATE} channels=1"
        for name in sinks
    }
    if mixer:
        modules["mix_sink"] = (
            f"module-null-sink sink_name=mix_sink rate={RATE} channels=2 "
            "channel_map=front-left,front-right"
        )
        for name, side in MIXER_SIDES.items():
            modules[f"{name}_sink"] = (
                f"module-remap-sink sink_name={name}_sink master=mix_sink channels=1 "
                f"master_channel_map={side} channel_map=mono remix=no"
            )
    return modules


def _write_asoundrc(directory: Path, sinks: Sequence[str], mixer: bool) -> None:
    server = f"unix:{directory / 'native'}"
    lines = ["# turnscope virtual devices (capture/device_pulse.py); do not edit"]
    names = [*sinks, *(MIXER_SIDES if mixer else ())]
    for name in names:
        lines.append(f'pcm.{name}_out {{ type pulse; server "{server}"; device "{name}_sink" }}')
        lines.append(
            f'pcm.{name}_in {{ type pulse; server "{server}"; device "{name}_sink.monitor" }}'
        )
    if mixer:
        lines.append(f'pcm.mix_in {{ type pulse; server "{server}"; device "mix_sink.monitor" }}')
    tmp = directory / "asoundrc.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(directory / "asoundrc")


def start(
    directory: Path | None = None, sinks: Sequence[str] = SINKS, *, mixer: bool = True
) -> VirtualDevices:
    """Start the server with one null sink per name and the mixer (or reuse the one already
    running, adding what it lacks)."""
    d = directory or default_dir()
    if not shutil.which("pulseaudio") or not shutil.which("pactl"):
        raise EnvironmentProblem(f"PulseAudio is not installed ({SETUP_HINT})")
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    started = False
    modules = _modules(sinks, mixer)
    if answering(d):
        listed = _pactl(d, "list", "short", "sinks").stdout.split()
        for sink, module in modules.items():  # in order: the mixer's master comes first
            if sink not in listed:
                _pactl(d, "load-module", *module.split())
    else:
        for stale in ("native", "pid"):
            with contextlib.suppress(FileNotFoundError):
                (d / stale).unlink()
        cmd = [
            "pulseaudio",
            "--daemonize=yes",
            "-n",  # no default.pa: nothing but what we load (no suspend-on-idle, no hardware)
            "--exit-idle-time=-1",
            "--use-pid-file=yes",
            "--realtime=yes",
            "--high-priority=yes",
            f"--log-target=file:{d / 'pulse.log'}",
            f"--load=module-native-protocol-unix socket={d / 'native'} auth-anonymous=1",
            *(f"--load={module}" for module in modules.values()),
        ]
        env = {**os.environ, "PULSE_RUNTIME_PATH": str(d), "PULSE_STATE_PATH": str(d / "state")}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30)
        deadline = time.monotonic() + 5
        while not answering(d) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not answering(d):
            err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise EnvironmentProblem(
                f"headless PulseAudio did not start in {d} ({err}; log: {d / 'pulse.log'})"
            )
        pid = (d / "pid").read_text().strip() if (d / "pid").exists() else ""
        (d / "owner").write_text(pid + "\n")
        started = True
    _write_asoundrc(d, sinks, mixer)
    return VirtualDevices(d, tuple(sinks), started)


def _pid(directory: Path) -> int | None:
    try:
        return int((directory / "pid").read_text().strip())
    except (OSError, ValueError):
        return None


def stop(directory: Path | None = None) -> bool:
    """Stop the server if ``start`` started it; False (and nothing done) otherwise."""
    d = directory or default_dir()
    owner = d / "owner"
    pid = _pid(d)
    if not owner.exists() or pid is None or owner.read_text().strip() != str(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while answering(d) and time.monotonic() < deadline:
        time.sleep(0.05)
    owner.unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    directory = None
    if "--dir" in args:
        i = args.index("--dir")
        directory = Path(args[i + 1])
        del args[i : i + 2]
    command = args[0] if args else "status"
    d = directory or default_dir()
    try:
        if command == "start":
            devices = start(d)
            state = "started" if devices.started else "already running"
            names = ", ".join(f"{n}_out/{n}_in" for n in devices.sinks)
            print(
                f"virtual sound devices {state} in {d}: {names}; "
                "mix_in (2 channels) hears mix_left_out (left) and mix_right_out (right)"
            )
        elif command == "stop":
            print("stopped" if stop(d) else "nothing to stop (not started by turnscope)")
        elif command == "env":
            for key, value in environment(d).items():
                print(f"export {key}={value}")
        elif command == "status":
            print("running" if answering(d) else "not running")
            return 0 if answering(d) else 1
        else:
            print("usage: device_pulse start|stop|env|status [--dir DIR]", file=sys.stderr)
            return 2
    except EnvironmentProblem as exc:
        print(f"turnscope: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
