"""Recording from Python writes forge simulate's bytes; the CLI's output rules hold."""

import hashlib
import json
import signal
import textwrap

import pytest

import forge_flocks as ff
from conftest import ROOT, forge, signal_when_ready


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_record_is_byte_identical_to_the_cli(tmp_path, small_file, cli_recording):
    out = tmp_path / "py.bfs"
    ff.Simulation(small_file, seed=7).record(out, steps=20)
    assert out.read_bytes() == cli_recording.read_bytes()


def test_builtin_scene_byte_identical(tmp_path):
    cli, py = tmp_path / "cli.bfs", tmp_path / "py.bfs"
    forge("simulate", "vicsek", "--seed", 5, "--steps", 15, "--agents", 1000, "-o", cli, "-q")
    # --agents has no Python keyword: the built-in's file (scenes/vicsek.json, embedded in the
    # binary) with 1000 agents, as a dict.
    scene = json.loads((ROOT / "scenes" / "vicsek.json").read_text())
    scene["agents"] = 1000
    ff.simulate(scene, py, steps=15, seed=5, threads=1)
    assert ff.Recording(py).scene == ff.Recording(cli).scene
    assert sha(py) == sha(cli)


def test_every_is_the_scenes_record_every(tmp_path, small_scene):
    f = tmp_path / "every.json"
    f.write_text(json.dumps(dict(small_scene, record_every=4)))
    cli, py = tmp_path / "cli.bfs", tmp_path / "py.bfs"
    forge("simulate", f, "--steps", 16, "-o", cli, "-q")
    ff.simulate(small_scene, py, steps=16, every=4)
    assert sha(py) == sha(cli)
    assert len(ff.Recording(py)) == 5


def test_existing_output_needs_force(tmp_path, small_scene):
    out = tmp_path / "x.bfs"
    out.write_bytes(b"keep me")
    with pytest.raises(ff.ForgeError, match="x.bfs"):
        ff.simulate(small_scene, out, steps=2)
    assert out.read_bytes() == b"keep me"
    ff.simulate(small_scene, out, steps=2, force=True)
    assert len(ff.Recording(out)) == 3


def test_threads_writing_one_output_exclude_each_other(tmp_path, small_scene):
    # The output's lock excludes the threads of one process as it excludes processes: of four
    # calls writing one path without force, one writes it and the others are refused.
    import threading

    out = tmp_path / "one.bfs"
    results = []
    start = threading.Barrier(4)

    def run():
        start.wait()
        try:
            ff.simulate(small_scene, out, steps=400, threads=1)
            results.append("ok")
        except ff.ForgeError as e:
            results.append(str(e))

    workers = [threading.Thread(target=run) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results.count("ok") == 1, results
    for r in results:
        assert r == "ok" or "one.bfs" in r, results
    assert len(ff.Recording(out)) == 401


def test_bad_arguments(tmp_path, small_scene):
    with pytest.raises(ValueError, match="every"):
        ff.simulate(small_scene, tmp_path / "a.bfs", every=0)
    with pytest.raises(ValueError, match="^every: must be a whole number in 1..=4294967295"):
        ff.simulate(small_scene, tmp_path / "a.bfs", every=2**32)
    with pytest.raises(ValueError, match="^steps: must be a whole number in 0..="):
        ff.simulate(small_scene, tmp_path / "a.bfs", steps=-5)
    with pytest.raises(ValueError, match="^seed: must be a whole number in 0..="):
        ff.simulate(small_scene, tmp_path / "a.bfs", seed=-1)
    with pytest.raises(ValueError, match="^steps: must be at most"):
        ff.simulate(small_scene, tmp_path / "a.bfs", steps=1 << 50)
    assert not (tmp_path / "a.bfs").exists()


def test_ctrl_c_stops_its_own_call_only(tmp_path, small_scene):
    # Ctrl-C reaches the main thread's simulate(); another thread's simulate() runs on and
    # finishes its recording.
    long, other = tmp_path / "long.bfs", tmp_path / "other.bfs"
    script = textwrap.dedent(f"""
        import sys, threading, forge_flocks as ff
        done = []
        def worker():
            ff.simulate({small_scene!r}, {str(other)!r}, steps=8000, threads=1)
            done.append("finished")
        t = threading.Thread(target=worker)
        t.start()
        print("ready", flush=True)
        try:
            ff.simulate({small_scene!r}, {str(long)!r}, steps=10**7, threads=1)
        except KeyboardInterrupt:
            print("main interrupted", flush=True)
        t.join()
        print(done, flush=True)
    """)
    code, out = signal_when_ready(script, signal.SIGINT, after=0.5, timeout=120)
    assert code == 0, out
    assert "main interrupted" in out and "['finished']" in out, out
    assert len(ff.Recording(other)) == 8001
    assert not long.exists()


def test_ctrl_c_keeps_complete_frames_not_the_final_name(tmp_path, small_scene):
    out = tmp_path / "long.bfs"
    script = textwrap.dedent(f"""
        import sys, forge_flocks as ff
        print("ready", flush=True)
        try:
            ff.simulate({small_scene!r}, {str(out)!r}, steps=10**7, threads=1)
        except KeyboardInterrupt as e:
            print(e, flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    code, msg = signal_when_ready(script, signal.SIGINT, after=1.5, timeout=30)
    assert code == 0, msg
    assert "interrupted by SIGINT" in msg
    assert not out.exists()
    kept = list(tmp_path.glob("long.*.partial"))
    assert len(kept) == 1 and str(kept[0]) in msg
    assert len(ff.Recording(kept[0])) > 0


def test_sigterm_leaves_no_partial_and_ends_the_process(tmp_path, small_scene):
    # Python dies of SIGTERM (its default); forge stops the run and removes its temporary
    # file first (no one would be told where it was kept), and the process still ends by that
    # signal.
    out = tmp_path / "long.bfs"
    script = textwrap.dedent(f"""
        import forge_flocks as ff
        print("ready", flush=True)
        ff.simulate({small_scene!r}, {str(out)!r}, steps=10**7, threads=1)
        print("finished", flush=True)
    """)
    code, msg = signal_when_ready(script, signal.SIGTERM, after=1.5, timeout=30)
    assert code == -signal.SIGTERM, (code, msg)
    assert "finished" not in msg
    assert list(tmp_path.iterdir()) == []


def test_a_sigterm_handler_of_the_programs_own_is_honoured(tmp_path, small_scene):
    # A program that handles SIGTERM itself gets its handler's exception, and the run stops as
    # for Ctrl-C, keeping its complete frames.
    out = tmp_path / "long.bfs"
    script = textwrap.dedent(f"""
        import signal, sys, forge_flocks as ff
        def handler(sig, frame):
            raise SystemExit(7)
        signal.signal(signal.SIGTERM, handler)
        print("ready", flush=True)
        ff.simulate({small_scene!r}, {str(out)!r}, steps=10**7, threads=1)
        sys.exit(3)
    """)
    code, _ = signal_when_ready(script, signal.SIGTERM, after=1.5, timeout=30)
    assert code == 7
    assert not out.exists()
    kept = list(tmp_path.glob("long.*.partial"))
    assert len(kept) == 1 and len(ff.Recording(kept[0])) > 0


def test_dict_scene_named_like_a_file_is_not_that_file(tmp_path, small_scene, monkeypatch):
    # A dict has no scene file, whatever its name: writing over a file of that name with
    # force=True is allowed, as for any output.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o.bfs").write_bytes(b"old")
    ff.simulate(dict(small_scene, name="o.bfs"), "o.bfs", steps=3, force=True)
    assert len(ff.Recording(tmp_path / "o.bfs")) == 4
    # A scene file is still an input that no output may replace.
    (tmp_path / "s.json").write_text(json.dumps(small_scene))
    with pytest.raises(ff.ForgeError, match="scene file"):
        ff.simulate("s.json", "s.json", steps=3, force=True)
