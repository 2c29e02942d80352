#!/usr/bin/env python3
"""Measures what a film-maker sees in forge's default look: a still and a 60-frame clip of
every built-in scene and of four scenes a new user would write, rendered at 720p (or the
size a scene asks for) with no other look flag, and prints one table row per case (Markdown).

  glow   the largest connected region above 230/255 (luma), % of the frame (target < 1),
         and the share of clipped pixels, luma >= 250 (target < 0.5%);
  lit    pixels above 50/255 (target 8..60%);
  first  the clip's first frame against its mean luma (target within 15%);
  shim   pixels changing by more than 8 codes between consecutive frames, mean over the
         clip, where agents move under a pixel a frame (target < 2%; '-' where they move
         faster, with the rate in brackets);
  spread the default colour quantity's 5th..95th percentile agent, share of the colour
         map (target >= 40%; '-' for a fixed colour and for species' own colours);
  ink    for the ink style: the share of changed pixels darker than the sky (target 100%),
         and the longest run of one 8-bit colour down the sky (target <= 6 px).
  solid  "a blob with no individuals in it": the share of the agents' marks (pixels more than
         20 codes from the bare background, the still with exposure 0) lying where a 9x9 px
         window is marked throughout and its marks vary by under 4% (target < 20%).
  static "static": pixels whose luma changes by more than 8 codes from frame to frame (% of the
         frame, mean over the clip) times how little structure larger than 32 px the marks
         hold (1 - their coefficient of variation in 32x32 px windows, floored at 0); a
         picture of even texture that churns frame to frame scores high (target < 15).

Usage: scripts/film-check.py [FORGE] [--only NAME,...] [--keep DIR]
Needs numpy and scipy (pip install numpy scipy) and ffmpeg; renders on whatever adapter
forge finds (Mesa's lavapipe without a GPU). Takes about 10 minutes on 2 cores.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import ndimage

USER_SCENES = {
    "user-boidforge": {"name": "user-boidforge", "preset": "boidforge", "agents": 5000},
    "user-cuplan": {"name": "user-cuplan", "preset": "cuplan", "agents": 3000},
    "user-vicsek": {"name": "user-vicsek", "preset": "vicsek1995", "agents": 4000},
    "user-3d": {"name": "user-3d", "model": "boids", "dim": 3, "agents": 20000},
}
SIZE = "1280x720"
DEFAULT_SIZE = [1920, 1080]
GRID_LONG_SIDE = 160
CLIP = 60


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def frames_of(png_dir):
    """Every PNG of a folder, in order, as H x W x 3 uint8 arrays."""
    names = sorted(n for n in os.listdir(png_dir) if n.endswith(".png"))
    return [frames_of_one(os.path.join(png_dir, n)) for n in names]


def luma(img):
    return img.astype(np.float64) @ np.array([0.2126, 0.7152, 0.0722])


def quantity(look, npz, header):
    """Each agent's value of the look's colour quantity in the exported frame, and the share
    of the map its 5th..95th percentile spans (None for a fixed colour)."""
    mode = look["color"]
    if mode.startswith("fixed") or mode == "species":
        return None
    d = np.load(npz)
    vel = d["vel"][0].astype(np.float64)
    if mode == "speed":
        q = np.linalg.norm(vel, axis=1)
    elif mode in ("heading", "relative-heading"):
        ang = np.degrees(np.arctan2(vel[:, 1], vel[:, 0]))
        mean = np.degrees(np.arctan2(np.sin(np.radians(ang)).sum(), np.cos(np.radians(ang)).sum()))
        q = (ang - mean + 180.0) % 360.0 - 180.0
        if mode == "heading":
            lo, hi = np.percentile(q, [5, 95])
            return (hi - lo) / 360.0
    elif mode == "density":
        q = density_2d(d["pos"][0].astype(np.float64), header)
        if q is None:
            return float("nan")
    a, b = look["range"]
    lo, hi = np.clip(np.percentile(q, [5, 95]), a, b)
    return (hi - lo) / (b - a)


def density_2d(pos, header):
    """Each agent's local density as the renderer computes it (render/density.rs): counts
    on a grid of 160 cells along the world's longer side, a 5-tap binomial blur (wrapping in
    a periodic world), read bilinearly between cell centres. None for 3D."""
    if header["dim"] != 2:
        return None
    world = np.array(header["world"][:2], np.float64)
    long = GRID_LONG_SIDE
    g = (np.maximum(1, np.round(long * world / world.max()))).astype(int)
    g[np.argmax(world)] = long
    c = np.floor(pos / world * g).astype(int)
    ok = np.all((c >= 0) & (c < g), axis=1)
    counts = np.zeros((g[1], g[0]))
    np.add.at(counts, (c[ok, 1], c[ok, 0]), 1.0)
    wrap = header.get("boundary") == "wrap"
    w = [0.0625, 0.25, 0.375, 0.25, 0.0625]

    def blur(a, axis):
        out = np.zeros_like(a)
        n = a.shape[axis]
        for k, wk in zip(range(-2, 3), w):
            idx = np.arange(n) + k
            idx = idx % n if wrap else np.clip(idx, 0, n - 1)
            out += wk * np.take(a, idx, axis=axis)
        return out

    field = blur(blur(counts, 1), 0)
    f = pos / world * g - 0.5
    b = np.floor(f).astype(int)
    t = f - b

    def at(x, y):
        if wrap:
            x, y = x % g[0], y % g[1]
        else:
            x, y = np.clip(x, 0, g[0] - 1), np.clip(y, 0, g[1] - 1)
        return field[y, x]

    x, y = b[:, 0], b[:, 1]
    top = at(x, y) * (1 - t[:, 0]) + at(x + 1, y) * t[:, 0]
    bottom = at(x, y + 1) * (1 - t[:, 0]) + at(x + 1, y + 1) * t[:, 0]
    return top * (1 - t[:, 1]) + bottom * t[:, 1]


def px_per_frame(header, npz, look):
    """The agents' median motion on screen, pixels per video frame, between the exported
    frame and the next: 2D through the --fit scale; 3D through the camera the renderer places
    (render/camera.rs: the flock's centre and twice its RMS radius filling the narrower field
    of view, 25 degrees up, the orbit turning orbit_speed degrees a second of video), so that
    the camera's own motion counts as the agents' motion on screen."""
    d = np.load(npz)
    pos, vel = d["pos"].astype(np.float64), d["vel"].astype(np.float64)
    world = header["world"]
    w, h = look["size"]
    frame_dt = header["dt"] * header["record_every"]
    if header["dim"] != 3 or look.get("camera") == "top" or len(pos) < 2:
        speed = np.median(np.linalg.norm(vel[0], axis=1))
        return speed * frame_dt * min(w / world[0], h / world[1])
    centre = pos[0].mean(axis=0)
    radius = 2.0 * np.sqrt(np.mean(np.sum((pos[0] - centre) ** 2, axis=1)))
    half_y = np.radians(look.get("fov", 45.0)) / 2.0
    aspect = w / h
    half_x = np.arctan(np.tan(half_y) * aspect)
    dist = radius / np.sin(min(half_y, half_x))
    speed = look.get("orbit_speed", 18.0) if look.get("camera") == "orbit" else 0.0
    k = int(d["frame"][0])

    def pixels(p, frame):
        az, el = np.radians(-90.0 + speed * frame / look["fps"]), np.radians(25.0)
        eye = centre + dist * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az),
                                        np.sin(el)])
        f = (centre - eye) / np.linalg.norm(centre - eye)
        right = np.cross(f, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, f)
        rel = p - eye
        z = rel @ f
        x = w / 2 * (1 + (rel @ right) / (z * np.tan(half_y) * aspect))
        y = h / 2 * (1 - (rel @ up) / (z * np.tan(half_y)))
        return np.stack([x, y], axis=1)

    moved = pixels(pos[1], k + 1) - pixels(pos[0], k)
    return float(np.median(np.linalg.norm(moved, axis=1)))


def measure(forge, work, name, scene_arg):
    bfs = os.path.join(work, name + ".bfs")
    if not os.path.exists(bfs):
        run(forge, "simulate", scene_arg, "-o", bfs, "-q", "--force")
    header = json.loads(run(forge, "info", bfs, "--json").stdout)
    n = header["frames"]
    k = n // 2
    a = max(0, min(k, n - CLIP))
    # 720p, or the size the scene itself asks for.
    own = json.loads(run(forge, "still", bfs, "--frame", str(k), "--print-look").stdout)
    size = SIZE if own["size"] == DEFAULT_SIZE else "x".join(map(str, own["size"]))
    look = json.loads(run(forge, "still", bfs, "--frame", str(k), "--size", size,
                          "--print-look").stdout)
    clip = os.path.join(work, name + "-clip")
    run(forge, "render", bfs, "--size", size, "--frames", f"{a}..{min(n, a + CLIP)}",
        "--png", clip, "-q", "--force")
    imgs = frames_of(clip)
    npz = os.path.join(work, name + ".npz")
    run(forge, "export", bfs, "--frames", f"{k}..{min(n, k + 2)}", "-o", npz, "--no-metrics",
        "-q", "--force")
    still = imgs[min(k - a, len(imgs) - 1)]
    y = luma(still)
    row = {"case": name, "style": look["style"], "color": look["color"]}
    if look["style"] == "glow":
        labels, count = ndimage.label(y > 230, structure=np.ones((3, 3)))
        sizes = np.bincount(labels.ravel())[1:] if count else np.array([0])
        row["glow"] = f"{100 * sizes.max() / y.size:.2f} / {100 * np.mean(y >= 250):.2f}"
    else:
        row["glow"] = "-"
    row["lit"] = f"{100 * np.mean(y > 50):.1f}"
    means = [luma(i).mean() for i in imgs]
    row["first"] = f"{100 * abs(means[0] - np.mean(means)) / max(np.mean(means), 1e-9):.1f}"
    rate = px_per_frame(header, npz, look)
    changes = [np.mean(np.abs(imgs[i + 1].astype(int) - imgs[i].astype(int)).max(axis=2) > 8)
               for i in range(len(imgs) - 1)]
    shim = 100 * float(np.mean(changes)) if changes else 0.0
    row["shim"] = f"{shim:.2f}" if rate < 1.0 else f"- ({rate:.1f} px/f)"
    q = quantity(look, npz, header)
    row["spread"] = "-" if q is None else f"{100 * q:.0f}"
    sky_png = os.path.join(work, name + "-sky.png")
    run(forge, "still", bfs, "--frame", str(k), "--size", size, "--exposure", "0",
        "-o", sky_png, "-q", "--force")
    sky = frames_of_one(sky_png)
    ys = luma(sky)
    marks = np.abs(y - ys)
    row["solid"] = f"{solid(marks):.1f}"
    row["static"] = f"{static(imgs, marks):.1f}"
    if look["style"] == "ink":
        changed = np.abs(y - ys) > 3
        darker = np.mean((y < ys)[changed]) if changed.any() else 1.0
        runs = longest_run(sky)
        row["ink"] = f"{100 * darker:.1f}% / {runs} px"
    else:
        row["ink"] = "-"
    return row


def solid(marks, win=9, marked=20.0, flat=0.04):
    """The share of marked pixels (% of them) inside flat, fully marked 9x9 windows."""
    on = marks > marked
    if not on.any():
        return 0.0
    m = ndimage.uniform_filter(marks, win)
    sd = np.sqrt(np.maximum(ndimage.uniform_filter(marks * marks, win) - m * m, 0.0))
    full = ndimage.minimum_filter(marks, win) > marked
    return 100.0 * np.sum(full & (sd < flat * m)) / np.sum(on)


def static(imgs, marks, scale=32):
    """Change without structure: the clip's mean share of pixels changing by more than 8
    codes a frame (%), times 1 - the marks' coefficient of variation at `scale` px."""
    changes = [np.mean(np.abs(luma(imgs[i + 1]) - luma(imgs[i])) > 8)
               for i in range(len(imgs) - 1)]
    if not changes:
        return 0.0
    b = ndimage.uniform_filter(marks, scale)
    cv = b.std() / max(b.mean(), 1e-9)
    return 100.0 * float(np.mean(changes)) * max(0.0, 1.0 - cv)


def frames_of_one(path):
    """A PNG as an H x W x 3 uint8 array (its size from the PNG header)."""
    with open(path, "rb") as f:
        head = f.read(24)
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(h, w, 3)


def longest_run(img):
    """The longest run of one 8-bit colour (all three channels equal) down the image's
    columns: a band a viewer sees."""
    best = 0
    for x in range(0, img.shape[1], 97):
        col = img[:, x, :].astype(np.int32)
        change = np.flatnonzero(np.any(np.diff(col, axis=0) != 0, axis=1))
        edges = np.concatenate(([-1], change, [len(col) - 1]))
        best = max(best, int(np.diff(edges).max()))
    return best


def main():
    args = sys.argv[1:]
    forge = "target/release/forge"
    only, keep = None, None
    while args:
        a = args.pop(0)
        if a == "--only":
            only = set(args.pop(0).split(","))
        elif a == "--keep":
            keep = args.pop(0)
        else:
            forge = a
    builtins = [l.split()[0] for l in run(forge, "scenes").stdout.splitlines() if l.strip()]
    cases = [(b, b) for b in builtins] + list(USER_SCENES.items())
    work = keep or tempfile.mkdtemp(prefix="forge-film-")
    os.makedirs(work, exist_ok=True)
    cols = ["case", "style", "color", "glow", "lit", "first", "shim", "spread", "ink", "solid",
            "static"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, scene in cases:
        if only and name not in only:
            continue
        if isinstance(scene, dict):
            path = os.path.join(work, name + ".json")
            with open(path, "w") as f:
                json.dump(scene, f)
            scene = path
        row = measure(forge, work, name, scene)
        print("| " + " | ".join(str(row[c]) for c in cols) + " |", flush=True)


if __name__ == "__main__":
    main()
