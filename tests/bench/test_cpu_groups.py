"""The CPU accounting of ``bench/cpu_groups.py`` on real processes: a server's short-lived children are counted
after it reaps them, without what they used before the window; a session's processes under their part."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from bench.cpu_groups import CpuGroups

BURN = "def burn(s):\n    t = time.process_time()\n    while time.process_time() - t < s:\n        pass\n"

# A "server" with one child already running (0.4 s used before the window); on "go" it forks two children that
# burn 0.3 s each, lets the first child burn 0.2 s more, reaps all three and says "done".
SERVER = "import os, sys, time\n" + BURN + textwrap.dedent("""
    r, w = os.pipe()
    old = os.fork()
    if old == 0:
        burn(0.4)
        print("ready", flush=True)
        os.read(r, 1)
        burn(0.2)
        os._exit(0)
    sys.stdin.readline()
    kids = [old]
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            burn(0.3)
            os._exit(0)
        kids.append(pid)
    os.write(w, b"x")
    for pid in kids:
        os.waitpid(pid, 0)
    print("done", flush=True)
    sys.stdin.readline()
""")


def test_a_server_counts_its_reaped_children_within_the_window_only():
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        with CpuGroups(servers={"server": server.pid}) as cpu:
            server.stdin.write("go\n")
            server.stdin.flush()
            assert server.stdout.readline().strip() == "done"
        used = cpu.result()["parts_s"]["server"]
        # 0.3 + 0.3 + 0.2 inside the window (plus forks); the first child's 0.4 s before it must not count.
        assert 0.75 <= used <= 1.1, used
    finally:
        server.kill()
        server.wait()


def test_a_session_is_sampled_under_its_part_and_the_machine_is_at_least_as_busy():
    burner = "import time\n" + BURN + "burn(0.6)\n"
    with CpuGroups() as cpu:
        proc = subprocess.Popen([sys.executable, "-c", burner], start_new_session=True)
        cpu.add_session("burner", proc.pid)
        proc.wait()
    result = cpu.result()
    # At most one sampling interval is lost at the end of a process (and its interpreter start-up is counted).
    assert 0.35 <= result["parts_s"]["burner"] <= 1.5, result
    assert result["machine_busy_s"] >= result["parts_s"]["burner"] - 0.05
    ours = result["parts_s"]["burner"] + result["harness_s"]
    assert abs(result["not_ours_s"] - (result["machine_busy_s"] - ours)) < 0.05, result
