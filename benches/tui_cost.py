#!/usr/bin/env python3
"""What the TUI costs, measured from outside.

Runs the same sweep twice with the release binary:
  1. headless: `scaling-lab sweep PRESET` (stdout discarded);
  2. through the TUI in a pseudo-terminal of COLSxROWS (default 120x40): start on Setup with
     PRESET, press Enter, wait (pressing nothing) until the run log's summary line is written,
     then `q`.
For both it prints the whole-process wall and CPU time (user+sys of the process and all its
threads, from wait4). For the TUI run it also samples every thread's CPU time
(/proc/PID/task/*/stat) every 0.25 s while the sweep runs, up to the last sample before the run log's
summary line was written (the log's modification time), and attributes it by thread name:
  - UI: the main thread (it runs the UI loop), tokio's `tui` threads, `tui-analysis` (the
    analysis worker) and `tui-event-bridge`;
  - engine: everything else (`sweep-coordinator`, `trial-*` and their workers' pools) — the same
    threads the headless run has.
The UI figure is what the screen costs while the user waits on a running sweep, as a % of one
core. A thread that exits keeps its last sample, so it loses at most its last 0.25 s (the event
bridge ends with the sweep). What the UI threads do in the 3 s after the sweep ended (join it,
build its report, read the runs list again) is printed apart: it happens once per sweep.

Usage: python3 benches/tui_cost.py [--preset digits-mlp-momentum] [--size 120x40]
                                   [--trials N] [--bin target/release/scaling-lab]
--trials N runs both with the preset's trials per batch size set to N (a copy of presets/ with that
one line changed, through SCALING_LAB_PRESETS_DIR): a longer sweep, e.g. 48 for about a minute.
Build first: cargo build --release. Quote the figures with the load average it prints: on a
shared machine other processes slow both runs.
"""

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

CLK = os.sysconf("SC_CLK_TCK")


def thread_times(pid):
    """{tid: (name, cpu seconds)} of every live thread of pid."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        name = s[s.index("(") + 1 : s.rindex(")")]
        fields = s[s.rindex(")") + 2 :].split()
        # fields[0] is field 3 (state): utime is field 14, stime field 15
        out[tid] = (name, (int(fields[11]) + int(fields[12])) / CLK)
    return out


def process_cpu(pid):
    """CPU seconds of the whole process so far (exited threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def is_ui(tid, name, pid):
    return tid == str(pid) or name == "tui" or name.startswith("tui-")


def summary_mtime(runs_dir):
    """When the run log's summary line was written (the log's modification time)."""
    return max(os.path.getmtime(os.path.join(runs_dir, f)) for f in os.listdir(runs_dir) if f.endswith(".jsonl"))


def summary_written(runs_dir):
    for f in os.listdir(runs_dir):
        if f.endswith(".jsonl"):
            with open(os.path.join(runs_dir, f), "rb") as fh:
                fh.seek(max(0, os.path.getsize(fh.name) - 65536))
                if b'"type":"summary"' in fh.read():
                    return True
    return False


def headless(bin_, preset, runs_dir):
    t0 = time.monotonic()
    p = subprocess.Popen(
        [bin_, "sweep", preset, "--runs-dir", runs_dir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit(f"headless sweep failed: status {status}")
    return wall, ru.ru_utime + ru.ru_stime


def drain(fd, buf, timeout):
    """Reads what the TUI wrote for up to `timeout` seconds (it must never block on the pty)."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return buf
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return buf
            if not chunk:
                return buf
            buf = (buf + chunk)[-200000:]


def through_tui(bin_, preset, runs_dir, cols, rows):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.execv(bin_, [bin_, "--runs-dir", runs_dir, "--preset", preset])
    buf = b""
    deadline = time.monotonic() + 120
    while b"Study" not in buf:
        buf = drain(fd, buf, 0.2)
        if time.monotonic() > deadline:
            sys.exit("the TUI did not show Setup within 120 s")
    drain(fd, b"", 1.0)
    setup_cpu = process_cpu(pid)
    before = thread_times(pid)
    os.write(fd, b"\r")
    t0 = time.monotonic()
    # every thread's CPU as last seen (a thread that exited keeps its last sample), sampled every
    # 0.25 s with the wall clock, so that the window can end at the summary line's write: what the
    # TUI does after the sweep (its report, the runs list read again) is counted apart, once
    last = dict(before)
    samples = [(time.time(), time.monotonic(), dict(last))]
    while not summary_written(runs_dir):
        drain(fd, b"", 0.25)
        last.update(thread_times(pid))
        samples.append((time.time(), time.monotonic(), dict(last)))
        if time.monotonic() - t0 > 3600:
            sys.exit("the sweep did not end within an hour")
    ended = summary_mtime(runs_dir)
    at_end = [x for x in samples if x[0] <= ended] or samples[:1]
    _, mono_end, during = at_end[-1]
    sweep_wall = mono_end - t0
    sweep_cpu = process_cpu(pid) - setup_cpu

    def ui_cpu(snapshot):
        out = {}
        for t, (n, c) in snapshot.items():
            if is_ui(t, n, pid):
                key = "main (UI loop)" if t == str(pid) else n
                out[key] = out.get(key, 0) + c - before.get(t, (n, 0))[1]
        return out

    threads = ui_cpu(during)
    # the end of the sweep (report, runs list), then the finished sweep on screen, nothing pressed
    drain(fd, b"", 3.0)
    after = dict(last)
    after.update(thread_times(pid))
    end_ui = sum(ui_cpu(after).values()) - sum(threads.values())
    idle0 = process_cpu(pid)
    drain(fd, b"", 10.0)
    idle = process_cpu(pid) - idle0
    os.write(fd, b"q")
    t_quit = time.monotonic()
    while True:
        drain(fd, b"", 0.2)
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t_quit > 60:
            os.kill(pid, 9)
            sys.exit("the TUI did not quit within 60 s of q")
    os.close(fd)
    return {
        "sweep_wall": sweep_wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "setup_cpu": setup_cpu,
        "sweep_cpu": sweep_cpu,
        "ui": sum(threads.values()),
        "ui_threads": threads,
        "end_ui": end_ui,
        "idle_10s": idle,
        "status": status,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="digits-mlp-momentum")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--bin", default="target/release/scaling-lab")
    ap.add_argument("--trials", type=int, help="trials per batch size (default: the preset's)")
    a = ap.parse_args()
    cols, rows = (int(x) for x in a.size.split("x"))
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2, \
            tempfile.TemporaryDirectory() as presets:
        if a.trials:
            src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "presets")
            shutil.copytree(src, presets, dirs_exist_ok=True)
            path = os.path.join(presets, f"{a.preset}.toml")
            text, n = re.subn(
                r"(?m)^trials_per_batch = \d+", f"trials_per_batch = {a.trials}", open(path).read()
            )
            if n != 1:
                sys.exit(f"{path}: no trials_per_batch line")
            open(path, "w").write(text)
            os.environ["SCALING_LAB_PRESETS_DIR"] = presets
            print(f"{a.preset} with trials_per_batch = {a.trials}")
        hw, hc = headless(a.bin, a.preset, d1)
        print(f"headless  {a.preset}: wall {hw:6.1f} s, CPU {hc:6.1f} s (whole process)")
        t = through_tui(a.bin, a.preset, d2, cols, rows)
    print(
        f"TUI {cols}x{rows} {a.preset}: sweep wall {t['sweep_wall']:6.1f} s (Enter to summary), "
        f"CPU {t['cpu']:6.1f} s (whole process: Setup {t['setup_cpu']:.1f} s, sweep "
        f"{t['sweep_cpu']:.1f} s, then 13 s on the finished sweep and quitting)"
    )
    d = t["cpu"] - hc
    print(f"  TUI - headless, whole process: {d:+.1f} CPU-s ({d / hc * 100:+.1f} %)")
    d = t["sweep_cpu"] - hc
    print(f"  TUI sweep phase - headless:    {d:+.1f} CPU-s ({d / hc * 100:+.1f} %)")
    print(
        f"  UI threads while the sweep ran: {t['ui']:.2f} CPU-s over {t['sweep_wall']:.1f} s = "
        f"{t['ui'] / t['sweep_wall'] * 100:.2f} % of one core"
    )
    for n, c in sorted(t["ui_threads"].items(), key=lambda x: -x[1]):
        print(f"    {n:<18} {c:6.2f} CPU-s")
    print(f"  UI threads at the sweep's end (its report, the runs list; 3 s, once): {t['end_ui']:.2f} CPU-s")
    print(
        f"  idle on the finished sweep: {t['idle_10s']:.2f} CPU-s in 10 s "
        f"({t['idle_10s'] * 10:.2f} % of one core)"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
