"""still and render: forge's renderer (lavapipe where there is no GPU), the look as keywords."""

import shutil

import numpy as np
import pytest

import forge_flocks as ff
from conftest import decode_png, forge

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
        ff.still(cli_recording, 0, size=[321, 180])
    with pytest.raises(ff.LookError, match="colormap"):
        ff.still(cli_recording, 0, colormap="no-such-map")
    with pytest.raises(ValueError):
        ff.still(cli_recording, 0, size="big")


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
    import signal
    import subprocess
    import textwrap
    import time

    from conftest import PYTHON

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
    p = subprocess.Popen([PYTHON, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    msg, _ = p.communicate(timeout=60)
    assert p.returncode == 0, msg
    assert "interrupted by SIGINT" in msg
    assert sorted(x.name for x in tmp_path.iterdir()) == ["long.bfs"]
