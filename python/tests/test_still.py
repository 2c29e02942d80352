"""still and render: forge's renderer (lavapipe where there is no GPU), the look as keywords."""

import os
import shutil
import signal
import subprocess
import textwrap

import numpy as np
import pytest

import forge_flocks as ff
from conftest import PYTHON, decode_png, forge, signal_when_ready

LOOK = {"size": [320, 180], "exposure": 2.0, "point_size": 1.5}


def test_still_matches_forge_still(tmp_path, cli_recording):
    img = ff.still(cli_recording, 5, **LOOK)
    assert isinstance(img, np.ndarray) and isinstance(img, ff.Image)
    assert img.shape == (180, 320, 3) and img.dtype == np.uint8
    png = tmp_path / "cli.png"
    forge("still", cli_recording, "--frame", 5, "--size", "320x180", "--exposure", 2.0,
          "--point-size", 1.5, "-o", png, "-q")
    cli = decode_png(png.read_bytes())[..., :3]
    assert np.array_equal(np.asarray(img), cli)
    assert img.max() > img.min()  # something was drawn


def test_alpha_and_plates(tmp_path, cli_recording):
    # A still with alpha is RGBA: the background transparent, the agents opaque-ish.
    img = ff.still(cli_recording, 5, alpha=True, **LOOK)
    assert img.shape == (180, 320, 4) and img.dtype == np.uint8
    a = np.asarray(img)[..., 3]
    assert a.min() == 0 and a.max() > 0
    png = tmp_path / "cli.png"
    forge("still", cli_recording, "--frame", 5, "--size", "320x180", "--exposure", 2.0,
          "--point-size", 1.5, "--alpha", "-o", png, "-q")
    assert np.array_equal(np.asarray(img), decode_png(png.read_bytes()))
    assert decode_png(img._repr_png_()).shape == (180, 320, 4)
    # A video with alpha is ProRes 4444 in a .mov, as forge render --alpha makes it.
    frames, w, h = ff.render(cli_recording, tmp_path / "a.mov", frames=(0, 3), alpha=True, size=[64, 36])
    assert (frames, w, h) == (3, 64, 36) and (tmp_path / "a.mov").stat().st_size > 0
    with pytest.raises(ff.ForgeError, match=r"--alpha: a video with alpha is ProRes 4444, which is written into a \.mov file"):
        ff.render(cli_recording, tmp_path / "a.mp4", frames=(0, 3), alpha=True, size=[64, 36])
    assert not (tmp_path / "a.mp4").exists()
    # A picture behind the flock given as a pathlib.Path.
    plate = tmp_path / "plate.png"
    forge("still", cli_recording, "--frame", 0, "--size", "64x36", "-o", plate, "-q")
    with_path = ff.still(cli_recording, 5, background_image=plate, size=[64, 36])
    with_str = ff.still(cli_recording, 5, background_image=str(plate), size=[64, 36])
    assert np.array_equal(with_path, with_str)


def test_encode_png_names_its_argument():
    with pytest.raises(TypeError, match=r"^image: must be an \(H, W, 3\) or \(H, W, 4\) uint8 NumPy array, got NoneType"):
        ff.encode_png(None)
    with pytest.raises(TypeError, match=r"^image: .*float64"):
        ff.encode_png(np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match=r"^image: expected shape"):
        ff.encode_png(np.zeros((2, 2, 2), dtype=np.uint8))


def test_negative_frame_and_recording_object(cli_recording):
    rec = ff.Recording(cli_recording)
    a = ff.still(rec, -1, **LOOK)
    b = ff.still(cli_recording, 20, **LOOK)
    assert np.array_equal(a, b)
    with pytest.raises(IndexError):
        ff.still(rec, -22, **LOOK)


def test_repr_png_round_trips(cli_recording):
    img = ff.still(cli_recording, 0, **LOOK)
    png = img._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(decode_png(png), np.asarray(img))


def test_look_errors_name_the_key(cli_recording):
    with pytest.raises(ff.LookError, match="sizee"):
        ff.still(cli_recording, 0, sizee=[320, 180])
    with pytest.raises(ff.LookError, match="size"):
        ff.still(cli_recording, 0, size=[0, 180])
    with pytest.raises(ff.LookError, match="colormap"):
        ff.still(cli_recording, 0, colormap="no-such-map")
    with pytest.raises(ValueError):
        ff.still(cli_recording, 0, size="big")


def test_a_still_takes_any_size(cli_recording):
    # Only a video's size must be even.
    img = np.asarray(ff.still(cli_recording, 0, **dict(LOOK, size=[321, 181])))
    assert img.shape[:2] == (181, 321) and img.max() > 0


def test_frame_past_the_end(cli_recording):
    # One exception for one kind of mistake: a frame the recording does not have, either end.
    for frame in (99, 10**6, -22, -1000):
        with pytest.raises(IndexError, match=f"frame {frame} is out of range"):
            ff.still(cli_recording, frame, **LOOK)
    with pytest.raises(TypeError, match="^frame: must be a whole number"):
        ff.still(cli_recording, "1", **LOOK)


def test_look_values_of_numpy_type_and_non_finite_ones(cli_recording):
    # NumPy scalars are numbers like Python's; NaN or infinity is refused naming its key.
    a = ff.still(cli_recording, 0, **dict(LOOK, trails=np.float32(0.0)))
    assert np.array_equal(a, ff.still(cli_recording, 0, **LOOK))
    for bad in (float("nan"), float("inf"), np.float32("nan")):
        with pytest.raises(ff.LookError, match="exposure: must be a finite number"):
            ff.still(cli_recording, 0, **dict(LOOK, exposure=bad))


def test_render_frames_are_named_in_errors(tmp_path, cli_recording):
    for frames, kind in (((-1, None), ValueError), (("a", 2), TypeError), (5, TypeError)):
        with pytest.raises(kind, match="^frames: "):
            ff.render(cli_recording, tmp_path / "x.mp4", frames=frames, **LOOK)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg missing")
def test_render_video(tmp_path, cli_recording):
    out = tmp_path / "clip.mp4"
    frames, w, h = ff.render(cli_recording, out, frames=(0, 6), **LOOK)
    assert (frames, w, h) == (6, 320, 180)
    assert out.stat().st_size > 1000
    info = forge("info", cli_recording, check=True)
    assert info.returncode == 0
    with pytest.raises(ff.ForgeError, match="clip.mp4"):
        ff.render(cli_recording, out, frames=(0, 2), **LOOK)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg missing")
def test_ctrl_c_during_render_leaves_no_output(tmp_path, small_scene):
    rec = tmp_path / "long.bfs"
    ff.simulate(dict(small_scene, agents=300), rec, steps=3000, threads=2)
    out = tmp_path / "long.mp4"
    script = textwrap.dedent(f"""
        import sys, forge_flocks as ff
        print("ready", flush=True)
        try:
            ff.render({str(rec)!r}, {str(out)!r}, size=[320, 180])
        except KeyboardInterrupt as e:
            print("interrupted:", e, flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    code, msg = signal_when_ready(script, signal.SIGINT, after=3, timeout=60)
    assert code == 0, msg
    assert "interrupted by SIGINT" in msg
    assert sorted(x.name for x in tmp_path.iterdir()) == ["long.bfs"]


def _long_recording(tmp_path, small_scene, name="long.bfs"):
    rec = tmp_path / name
    ff.simulate(dict(small_scene, agents=300), rec, steps=3000, threads=2)
    return rec


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg missing")
def test_ctrl_c_in_one_render_does_not_stop_another(tmp_path, small_scene):
    # Ctrl-C reaches the main thread's render(); another thread's render() runs on and
    # finishes its video.
    rec = _long_recording(tmp_path, small_scene)
    mine, other = tmp_path / "mine.mp4", tmp_path / "other.mp4"
    script = textwrap.dedent(f"""
        import threading, forge_flocks as ff
        done = []
        def worker():
            done.append(ff.render({str(rec)!r}, {str(other)!r}, frames=(0, 240), size=[160, 90]))
        t = threading.Thread(target=worker)
        t.start()
        print("ready", flush=True)
        try:
            ff.render({str(rec)!r}, {str(mine)!r}, size=[160, 90])
        except KeyboardInterrupt:
            print("main interrupted", flush=True)
        t.join()
        print(done, flush=True)
    """)
    code, out = signal_when_ready(script, signal.SIGINT, after=2, timeout=300)
    assert code == 0, out
    assert "main interrupted" in out and "[(240, 160, 90)]" in out, out
    assert not mine.exists()
    assert other.stat().st_size > 1000
    assert sorted(x.name for x in tmp_path.iterdir()) == ["long.bfs", "other.mp4"]


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg missing")
def test_sigterm_during_render_leaves_nothing_and_ends_the_process(tmp_path, small_scene):
    # Python dies of SIGTERM (its default); forge stops FFmpeg and removes the unfinished
    # video first, and the process still ends by that signal.
    rec = _long_recording(tmp_path, small_scene)
    out = tmp_path / "long.mp4"
    script = textwrap.dedent(f"""
        import forge_flocks as ff
        print("ready", flush=True)
        ff.render({str(rec)!r}, {str(out)!r}, size=[320, 180])
        print("finished", flush=True)
    """)
    code, msg = signal_when_ready(script, signal.SIGTERM, after=3, timeout=60)
    assert code == -signal.SIGTERM, (code, msg)
    assert "finished" not in msg
    assert sorted(x.name for x in tmp_path.iterdir()) == ["long.bfs"]


def test_no_xdg_runtime_dir_line_on_stderr(tmp_path, cli_recording):
    # cron and containers run without XDG_RUNTIME_DIR: a still renders without a word on
    # stderr.
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NODEVICE_SELECT")}
    script = textwrap.dedent(f"""
        import forge_flocks as ff
        a = ff.still({str(cli_recording)!r}, 0, size=[160, 90])
        ff.render({str(cli_recording)!r}, {str(tmp_path / "v.mp4")!r}, frames=(0, 2), size=[160, 90])
        print(a.shape)
    """)
    r = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(90, 160, 3)"
    assert r.stderr == "", r.stderr
