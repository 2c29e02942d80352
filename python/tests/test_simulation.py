"""Simulation: forge's solver from Python; arrays, determinism, metrics, errors, Ctrl-C."""

import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import forge_flocks as ff
from conftest import PYTHON


def test_arrays_dtype_shape_read_only(small_scene):
    sim = ff.Simulation(small_scene, seed=7, threads=1)
    for a in (sim.positions, sim.velocities):
        assert a.dtype == np.float32
        assert a.shape == (1500, 2)
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 1.0
        # The base (the solver's component-major layout) is read-only too.
        with pytest.raises(ValueError):
            a.base[0, 0] = 1.0
    assert sim.step_index == 0 and sim.time == 0.0


def test_step_advances(small_scene):
    sim = ff.Simulation(small_scene, seed=7, threads=2)
    p0 = sim.positions.copy()
    sim.step()
    sim.step(4)
    assert sim.step_index == 5
    assert sim.time == pytest.approx(5 * 0.05)
    assert not np.array_equal(p0, sim.positions)
    assert np.all(np.isfinite(sim.positions))


def test_threads_do_not_change_the_result(small_scene):
    a = ff.Simulation(small_scene, seed=11, threads=1)
    b = ff.Simulation(small_scene, seed=11, threads=2)
    a.step(10)
    b.step(10)
    assert np.array_equal(a.positions, b.positions)
    assert np.array_equal(a.velocities, b.velocities)


def test_same_state_as_the_clis_recording(small_scene, cli_recording):
    # cli_recording: seed 7, warm-up 5, 20 steps, a frame every step: frame k is step 5 + k.
    rec = ff.Recording(cli_recording)
    sim = ff.Simulation(small_scene, seed=7)
    sim.step(5)
    assert np.array_equal(sim.positions, rec[0].positions)
    sim.step(12)
    f = rec[12]
    assert f.step == 17 == sim.step_index
    assert np.array_equal(sim.positions, f.positions)
    assert np.array_equal(sim.velocities, f.velocities)
    m, mr = sim.metrics(), f.metrics()
    assert m == mr
    assert set(m) >= {"polarization", "mean_speed", "nn_distance", "pairwise_distance"}
    assert 0.0 <= m["polarization"] <= 1.0


def test_seed_changes_the_state(small_scene):
    a = ff.Simulation(small_scene, seed=1)
    b = ff.Simulation(small_scene, seed=2)
    assert a.seed == 1 and not np.array_equal(a.positions, b.positions)


def test_argument_errors(small_scene):
    with pytest.raises(ValueError, match="backend"):
        ff.Simulation(small_scene, backend="gpu")
    with pytest.raises(TypeError, match="^backend: expected"):
        ff.Simulation(small_scene, backend=None)
    with pytest.raises(ValueError, match="threads"):
        ff.Simulation(small_scene, threads=0)
    with pytest.raises(ff.SceneError):
        ff.Simulation(dict(small_scene, dim=4))


@pytest.mark.parametrize(
    "kwargs, kind, words",
    [
        (dict(seed=-1), ValueError, "seed: must be a whole number in 0..=18446744073709551615, got -1"),
        (dict(seed=2**64), ValueError, "seed: must be a whole number in 0..="),
        (dict(seed="7"), TypeError, "seed: must be a whole number"),
        (dict(seed=True), TypeError, "seed: must be a whole number"),
        (dict(threads=-1), ValueError, "threads: must be a whole number in 1..="),
        (dict(threads=2.0), TypeError, "threads: must be a whole number"),
    ],
)
def test_conversion_errors_name_the_argument(small_scene, kwargs, kind, words):
    with pytest.raises(kind) as e:
        ff.Simulation(small_scene, **kwargs)
    assert str(e.value).startswith(words), str(e.value)


def test_numpy_integers_are_arguments_like_ints(small_scene):
    a = ff.Simulation(small_scene, seed=np.uint64(7), threads=np.int32(1))
    b = ff.Simulation(small_scene, seed=7, threads=1)
    a.step(np.int64(3))
    b.step(3)
    assert np.array_equal(a.positions, b.positions)
    with pytest.raises(ValueError, match="^n: must be a whole number in 0..="):
        a.step(-5)


def test_non_finite_scene_values_name_their_key(small_scene):
    scene = json.loads(json.dumps(small_scene))
    scene["boids"]["w_ali"] = float("nan")
    with pytest.raises(ff.SceneError, match="boids.w_ali: must be a finite number, got nan"):
        ff.Simulation(scene)
    scene["boids"]["w_ali"] = np.float32(2.2)
    ff.Simulation(scene, threads=1)


def test_cuda_missing_is_an_error_not_a_crash(small_scene):
    try:
        sim = ff.Simulation(small_scene, backend="cuda")
    except ff.ForgeError as e:
        assert "CUDA" in str(e) or "cuda" in str(e)
    else:
        assert sim.is_cuda


def test_ctrl_c_interrupts_a_long_step(small_scene, tmp_path):
    script = textwrap.dedent(f"""
        import sys, time, forge_flocks as ff
        sim = ff.Simulation({small_scene!r}, threads=1)
        print("ready", flush=True)
        t = time.monotonic()
        try:
            sim.step(10**9)
        except KeyboardInterrupt:
            print("interrupted", sim.step_index, time.monotonic() - t, flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    p = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    took = time.monotonic() - sent
    assert p.returncode == 0, out
    word, steps, _ = out.split()
    assert word == "interrupted" and int(steps) > 0
    assert took < 5, took


def test_fork_after_a_threaded_simulation_stepped(small_scene, tmp_path):
    # The child has the Simulation but not its solver's threads: its steps run on its own
    # thread and give the parent's state, and it exits cleanly.
    child_state = tmp_path / "child.npy"
    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        import forge_flocks as ff
        sim = ff.Simulation({small_scene!r}, threads=2)
        sim.step(5)
        pid = os.fork()
        if pid == 0:
            sim.step(5)
            np.save({str(child_state)!r}, sim.positions)
            sys.exit(0)
        import signal, time
        deadline = time.monotonic() + 30
        while (w := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if w[0] == 0:
            os.kill(pid, signal.SIGKILL)
            print("child hung", flush=True)
            sys.exit(1)
        print("child", os.waitstatus_to_exitcode(w[1]), flush=True)
        sim.step(5)
        same = np.array_equal(np.load({str(child_state)!r}), sim.positions)
        print("same" if same else "different", flush=True)
    """)
    r = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.split() == ["child", "0", "same"], (r.stdout, r.stderr)
    assert "panicked" not in r.stderr, r.stderr


def test_set_is_a_key_that_record_reproduces(small_scene, tmp_path):
    # Tuned while it runs: the recording of the keyed scene passes through the same states.
    sim = ff.Simulation(small_scene, seed=3, threads=2)
    sim.step(4)
    sim.set("boids.w_ali", 0.0)
    sim.set("boids.noise", 1.5)
    sim.step(3)
    sim.set("boids.w_ali", 2.0)
    sim.step(5)
    assert sim.step_index == 12
    assert sim.timeline == [
        {"step": 4, "interpolation": "step", "set": {"boids.noise": 1.5, "boids.w_ali": 0.0}, "live": True},
        {"step": 7, "interpolation": "step", "set": {"boids.w_ali": 2.0}, "live": True},
    ]
    out = tmp_path / "keyed.bfs"
    # The scene's warm-up is 5 steps: its frame 7 is step 12.
    sim.record(out, steps=7, every=1)
    rec = ff.Recording(out)
    f = rec[7]
    assert f.step == 12 and len(rec) == 8
    assert np.array_equal(sim.positions, f.positions)
    assert np.array_equal(sim.velocities, f.velocities)
    assert [k["step"] for k in json.loads(json.dumps(rec.scene))["timeline"]] == [4, 7]
    # The keys changed the run: without them it is another one.
    plain = ff.Simulation(small_scene, seed=3)
    plain.step(12)
    assert not np.array_equal(plain.positions, sim.positions)


def test_set_inside_a_ramp_changes_only_the_steps_after_it(small_scene, tmp_path):
    # The scene ramps w_ali from 2.2 to 6 over steps 0..30; set at step 12, the steps before
    # keep their ramp (the recording passes through the states this object stepped through),
    # and from step 12 the ramp goes on from the value set.
    scene = dict(small_scene, timeline=[{"step": 30, "set": {"boids.w_ali": 6.0}, "interpolation": "linear"}])
    sim = ff.Simulation(scene, seed=3, threads=2)
    sim.step(12)
    before = sim.positions.copy()
    sim.set("boids.w_ali", 0.5)
    sim.step(6)
    out = tmp_path / "ramp.bfs"
    sim.record(out, steps=13, every=1)
    rec = ff.Recording(out)
    # The scene's warm-up is 5 steps: frame k is step 5 + k.
    assert rec[7].step == 12 and np.array_equal(before, rec[7].positions)
    assert np.array_equal(sim.positions, rec[13].positions)
    # The set changed the run from step 12 on.
    plain = ff.Simulation(scene, seed=3, threads=2)
    plain.step(18)
    assert not np.array_equal(plain.positions, sim.positions)


def test_a_presence_set_back_at_its_step_leaves_no_event(tmp_path):
    scene = {
        "model": "boids", "dim": 2, "steps": 10, "warmup": 0, "dt": 0.05, "seed": 2,
        "world": {"size": [300, 200], "boundary": "wrap"},
        "boids": {"v_min": 40, "v_max": 100},
        "species": [
            {"name": "sparrow", "agents": 200},
            {"name": "hawk", "agents": 3, "role": "predator",
             "boids": {"chase_radius": 120, "w_chase": 200}},
        ],
    }
    sim = ff.Simulation(scene, seed=2, threads=1)
    sim.step(4)
    sim.set("species[1].present", 0)
    sim.set("species[1].present", 1)
    assert sim.timeline == []
    sim.step(3)
    assert sim.present.all()
    out = tmp_path / "back.bfs"
    sim.record(out, steps=7, every=1)
    rec = ff.Recording(out)
    assert all(f.present.all() for f in rec)
    assert np.array_equal(sim.positions, rec[7].positions)


def test_what_set_takes_a_saved_scene_loads():
    # 1e30 (the largest a scene takes) is stored as the float 1.0000000150474662e30: the
    # timeline holding it loads again.
    scene = {"model": "vicsek", "agents": 100, "steps": 10, "world": {"size": [10, 10]},
             "vicsek": {"v0": 0.5, "r": 1, "noise": 0.4}}
    sim = ff.Simulation(scene, seed=1)
    sim.step(2)
    sim.set("vicsek.v0", 1e30)
    assert sim.timeline[0]["set"]["vicsek.v0"] > 1e30
    again = ff.Simulation(dict(scene, timeline=sim.timeline), seed=1)
    assert again.timeline == sim.timeline
    with pytest.raises(ValueError, match=r"vicsek.v0: is too large: at most 1e30"):
        sim.set("vicsek.v0", 1.1e30)


def test_set_refuses_what_a_scene_file_refuses(small_scene):
    sim = ff.Simulation(small_scene)
    with pytest.raises(ValueError, match=r"boids.r_ali: no boids parameter \"r_ali\" can be keyed"):
        sim.set("boids.r_ali", 3)
    with pytest.raises(ValueError, match=r"vicsek.noise: the scene's model is not vicsek"):
        sim.set("vicsek.noise", 1)
    with pytest.raises(ValueError, match=r"boids.fov: must be in \(0, 360\]"):
        sim.set("boids.fov", 720)
    with pytest.raises(ValueError, match=r"boids.v_min: v_min must be < v_max at every step"):
        sim.set("boids.v_min", 1e6)
    assert sim.timeline == []


def test_a_species_taken_out_is_absent_from_the_recording(tmp_path):
    # `set("species[1].present", 0)` is a `remove` event: the hawks stop where they are, the
    # recording marks them absent from that step, and the metrics leave them out.
    scene = {
        "model": "boids", "dim": 2, "steps": 10, "warmup": 0, "dt": 0.05, "seed": 2,
        "world": {"size": [300, 200], "boundary": "wrap"},
        "boids": {"r_sep": 8, "r_ali": 25, "r_coh": 25, "w_sep": 100, "w_ali": 2, "w_coh": 1,
                  "max_force": 150, "v_min": 40, "v_max": 100},
        "species": [
            {"name": "sparrow", "agents": 400, "boids": {"w_flee": 300, "flee_radius": 50}},
            {"name": "hawk", "agents": 3, "role": "predator",
             "boids": {"chase_radius": 120, "w_chase": 200}},
        ],
    }
    sim = ff.Simulation(scene, seed=2, threads=1)
    with pytest.raises(ValueError, match=r"species\[1\].present: species\[1\] is already there at step 0"):
        sim.set("species[1].present", 1)
    sim.step(4)
    assert sim.present.all() and sim.present.shape == (403,)
    sim.set("species[1].present", 0)
    sim.step(6)
    assert sim.present[:400].all() and not sim.present[400:].any()
    assert not sim.present.flags.writeable
    assert sim.timeline == [{"step": 4, "interpolation": "step", "set": {"species[1].present": 0.0}, "live": True}]
    # The sparrows too would leave the world empty: refused, the timeline as it was.
    with pytest.raises(ValueError, match=r"species\[0\].present: takes species\[0\] out at step 10, "
                       r"and no species is left in the world"):
        sim.set("species[0].present", 0)
    assert len(sim.timeline) == 1
    out = tmp_path / "hawks.bfs"
    sim.record(out, steps=10, every=1)
    rec = ff.Recording(out)
    assert np.array_equal(sim.positions, rec[10].positions)
    assert rec[3].present.all() and not rec[3].present.flags.writeable
    for f in rec[4:]:
        assert f.present[:400].all() and not f.present[400:].any(), f
    assert np.array_equal(rec[4].positions[400:], rec[10].positions[400:])
    assert not np.array_equal(rec[3].positions[400:], rec[4].positions[400:])
    v = rec[10].velocities[:400].astype(np.float64)
    order = np.linalg.norm((v / np.linalg.norm(v, axis=1)[:, None]).sum(axis=0)) / 400
    assert rec[10].metrics()["polarization"] == pytest.approx(order, rel=1e-9)
    assert rec.metrics()["polarization"][10] == pytest.approx(order, rel=1e-9)
    assert sim.metrics()["polarization"] == pytest.approx(order, rel=1e-9)
