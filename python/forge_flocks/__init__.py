"""forge in Python: flocking simulations (boids 2D/3D, Vicsek) stepped, recorded, read and
rendered by forge's own code, with the CLI's guarantees.

- :class:`Scene` — a built-in scene's name, a scene file or a dict, validated by forge
  (:class:`SceneError` names the JSON path at fault).
- :class:`Simulation` — forge's solver stepped from Python (the GIL released, Ctrl-C honoured);
  positions and velocities as read-only ``float32`` arrays of shape ``(N, dim)``.
- :func:`simulate` / :meth:`Simulation.record` — ``forge simulate``'s recording, byte for byte.
- :class:`Recording` — a ``.bfs`` file (forge's or BoidForge's BFS1): frames as read-only NumPy
  arrays read from the file it opened.
- :func:`still` / :func:`render` — ``forge still`` / ``forge render`` with the keys of a scene's
  ``render`` section as keyword arguments.

The native module is ``forge_flocks._forge``; this file adds the Python protocols (``len``,
indexing, slicing, iteration, ``_repr_png_``).
"""

from __future__ import annotations

import json
import operator
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

# Where XDG_RUNTIME_DIR is unset (cron, containers, CI), Mesa's Vulkan device-select layer
# tries Wayland while listing GPUs and prints "XDG_RUNTIME_DIR is invalid" to stderr at every
# render. The layer only reorders GPUs, and forge ranks them itself; it is switched off for
# this process in that case, at import, before any thread of forge's starts.
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ.setdefault("NODEVICE_SELECT", "1")

from ._forge import (  # noqa: E402
    FORGE_VERSION,
    ForgeError,
    LookError,
    RecordingError,
    Scene,
    SceneError,
    Simulation,
    encode_png,
)
from ._forge import Reader as _Reader
from ._forge import export as _export
from ._forge import render as _render
from ._forge import simulate as _simulate
from ._forge import still as _still

__all__ = [
    "Scene",
    "Simulation",
    "Recording",
    "Frame",
    "Image",
    "simulate",
    "still",
    "render",
    "SceneError",
    "RecordingError",
    "LookError",
    "ForgeError",
]

__version__ = FORGE_VERSION

PathLike = Union[str, "os.PathLike[str]"]

# The argument checks of the package's own methods: a wrong type is a TypeError and a value out
# of range a ValueError, each naming the argument (as the native functions' checks do).

# forge analyze's limits (forge::analyze::MAX_BINS, MAX_K, MAX_BOOTSTRAP).
_MAX_BINS, _MAX_K, _MAX_BOOTSTRAP = 10_000, 64, 100_000
_U64 = 2**64 - 1


def _kind(v: Any) -> str:
    return type(v).__name__


def _whole(name: str, v: Any, lo: int, hi: int = _U64) -> int:
    """``v`` as a whole number in ``lo..=hi``."""
    want = f"a whole number in {lo}..={hi}"
    if isinstance(v, bool):
        raise TypeError(f"{name}: must be {want}, got bool")
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: must be {want}, got {_kind(v)}") from None
    if not lo <= i <= hi:
        raise ValueError(f"{name}: must be {want}, got {i}")
    return i


def _frame_pair(name: str, v: Any) -> Optional[Tuple[Optional[int], Optional[int]]]:
    """``None`` or ``(a, b)``, either end ``None``."""
    if v is None:
        return None
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise TypeError(f"{name}: must be a pair (start, end) of frame numbers or None, got {_kind(v)}")
    return tuple(None if x is None else _whole(name, x, 0) for x in v)  # type: ignore[return-value]


def _word(name: str, v: Any, words: Tuple[str, ...], none: bool = False) -> Optional[str]:
    """One of ``words`` (or ``None`` where ``none``)."""
    if v is None and none:
        return None
    shown = ", ".join(repr(w) for w in words)
    if not isinstance(v, str):
        raise TypeError(f"{name}: must be one of {shown}, got {_kind(v)}")
    if v not in words:
        raise ValueError(f"{name}: must be one of {shown}, got {v!r}")
    return v


def _distance(name: str, v: Any) -> Optional[float]:
    """``None`` or a finite number above 0."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a distance (a number above 0) or None, got {_kind(v)}")
    x = float(v)
    if not (np.isfinite(x) and x > 0):
        raise ValueError(f"{name}: must be a distance above 0, got {x}")
    return x


def _path(name: str, v: Any) -> str:
    """A path given as ``str`` or ``os.PathLike`` (of ``str``)."""
    try:
        p = os.fspath(v)
    except TypeError:
        raise TypeError(f"{name}: must be a str or an os.PathLike, got {_kind(v)}") from None
    if not isinstance(p, str):
        raise TypeError(f"{name}: must be a str or an os.PathLike of str, got {_kind(p)}")
    return p


def simulate(
    scene: Union[str, "os.PathLike[str]", dict, Scene],
    output: PathLike,
    steps: Optional[int] = None,
    seed: Optional[int] = None,
    every: Optional[int] = None,
    threads: Optional[int] = None,
    backend: str = "auto",
    force: bool = False,
) -> None:
    """Write ``forge simulate``'s recording of ``scene`` to ``output`` (the same bytes: forge's
    own code runs it). ``steps`` and ``seed`` are the CLI's ``--steps`` and ``--seed``; ``every``
    sets the scene's ``record_every``. The output appears under its name only when complete;
    Ctrl-C raises ``KeyboardInterrupt`` and, as the CLI does, keeps the complete frames under
    the temporary ``.partial`` name the message gives."""
    _simulate(scene, os.fspath(output), steps, seed, every, threads, backend, force)


class Frame:
    """One recorded frame: ``index``, ``step``, ``time`` and the arrays ``positions`` and
    ``velocities`` (``float32``, shape ``(N, dim)``, read-only; strided, since they keep the
    file's component-major layout), and ``present`` (``bool``, shape ``(N,)``, read-only):
    whether each agent is in the world at the frame's step (False where the recording's
    timeline removed its species; the arrays keep it where it went, and :meth:`metrics`
    leaves it out)."""

    __slots__ = ("index", "step", "time", "positions", "velocities", "present", "_rec")

    def __init__(
        self,
        rec: "Recording",
        index: int,
        step: int,
        pos: np.ndarray,
        vel: np.ndarray,
        present: np.ndarray,
    ):
        self._rec = rec
        self.index = index
        self.step = step
        self.time = step * rec.header["dt"]
        self.positions = pos
        self.velocities = vel
        self.present = present

    def metrics(self) -> Dict[str, float]:
        """forge's order parameters of this frame (polarization, mean_speed, nn_distance,
        pairwise_distance)."""
        return self._rec._reader.frame_metrics(self.index)

    def __repr__(self) -> str:
        n, dim = self.positions.shape
        return f"Frame({self.index}, step {self.step}, {n} agents, {dim}D)"


class Recording:
    """A recording (``.bfs``, forge's or BoidForge's BFS1), opened and checked by forge's reader.

    ``len(rec)`` is the number of complete frames; ``rec[k]`` (negative ``k`` from the end) is a
    :class:`Frame` whose arrays forge's reader read from the file this ``Recording`` opened (a
    file replaced or cut short since is never read in its place: :class:`RecordingError`);
    ``rec[a:b:c]`` a list of them; iterating yields every frame. Each frame is checked as it is
    taken: its tag and index, with ``verify=True`` (the default) its CRC-32, and that every
    value is a finite number (as ``forge still`` and ``forge render`` check). A damaged file or
    frame raises :class:`RecordingError`.
    """

    def __init__(self, path: PathLike, verify: bool = True):
        self.path = os.fspath(path)
        self.verify = bool(verify)
        self._reader = _Reader(self.path)
        self.header: Dict[str, Any] = self._reader.header()

    def __len__(self) -> int:
        return len(self._reader)

    @property
    def scene(self) -> Optional[dict]:
        """The scene the recording was made from, as a dict (``None`` for BFS1, which stores
        none)."""
        if self.header["format"] != "forge":
            return None
        return json.loads(self.header["scene_json"])

    @property
    def dim(self) -> int:
        return self.header["dim"]

    @property
    def warnings(self) -> List[str]:
        """What the reader found odd but readable (an unfinished recording, …)."""
        return list(self.header["warnings"])

    def metrics(self) -> Dict[str, np.ndarray]:
        """forge's metrics of every frame (``forge info --metrics``), as columns: frame, step,
        polarization, mean_speed, nn_distance, pairwise_distance."""
        return self._reader.metrics()

    def analyze(
        self,
        frames: Optional[Tuple[Optional[int], Optional[int]]] = None,
        every: int = 1,
        bins: int = 100,
        r_max: Optional[float] = None,
        k_max: int = 20,
        field: Optional[str] = None,
        mean: str = "frame",
        method: str = "auto",
        bootstrap: int = 200,
    ) -> Dict[str, Any]:
        """``forge analyze``'s measurements of frames ``frames`` (``(a, b)``, b excluded; either
        may be ``None``; default all), every ``every``-th: the connected velocity (or heading,
        ``field``) correlation ``c`` against ``r`` (each frame's mean velocity removed, or with
        ``mean="frames"`` the mean over the analysed frames) with its ``c_error``, the pair correlation
        ``g``, the integrated correlation ``q``, ``correlation_length`` (the first zero of C)
        and ``susceptibility`` with their errors (a bootstrap over the frames), and the k-th
        neighbour ``anisotropy`` (γ_k and Ballerini's projection), and the flock's shape:
        ``principal_axes``, ``aspect_ratios``, ``thinnest_axis_to_vertical``,
        ``nearest_neighbour`` and ``border_density``. The arrays are NumPy arrays (NaN where a bin holds no pair);
        the rest is as ``forge analyze --json`` prints it, from the same code."""
        a = json.loads(
            self._reader.analyze_json(
                _frame_pair("frames", frames),
                _whole("every", every, 1),
                _whole("bins", bins, 1, _MAX_BINS),
                _distance("r_max", r_max),
                _whole("k_max", k_max, 1, _MAX_K),
                _word("field", field, ("velocity", "heading"), none=True),
                _word("mean", mean, ("frame", "frames")),
                _word("method", method, ("auto", "exact", "grid")),
                _whole("bootstrap", bootstrap, 0, _MAX_BOOTSTRAP),
            )
        )
        nan = float("nan")
        for key in ("r", "c", "c_error", "g", "q"):
            a[key] = np.array([nan if x is None else x for x in a[key]], dtype=np.float64)
        an = a["anisotropy"]
        for key in ("gamma", "gamma_error", "projection", "projection_error"):
            an[key] = np.array([nan if x is None else x for x in an[key]], dtype=np.float64)
        an["k"] = np.array(an["k"], dtype=np.int64)
        return a

    def to_usd(
        self,
        path: PathLike,
        frames: Optional[Tuple[Optional[int], Optional[int]]] = None,
        every: int = 1,
        force: bool = False,
        color: Optional[str] = None,
        colormap: Optional[str] = None,
    ) -> int:
        """Write the recording as USD text (``.usda``, or ``.usd``): ``forge export -o PATH``, the
        same code — a ``Points`` prim whose time sample K is frame K, with velocities, ids,
        widths, species colours and the world box as a guide. ``frames=(a, b)`` and ``every``
        as ``--frames`` and ``--every``; ``color`` and ``colormap`` as ``--color`` and
        ``--colormap`` (each agent's colour in every frame, as ``forge render`` colours it).
        Returns the frames written; Ctrl-C leaves no file."""
        out = _path("path", path)
        if os.path.splitext(out)[1].lower() not in (".usda", ".usd"):
            raise ValueError(f"path: {out!r} must end in .usda or .usd")
        frames = _frame_pair("frames", frames)
        every = _whole("every", every, 1)
        if not isinstance(force, bool):
            raise TypeError(f"force: must be True or False, got {_kind(force)}")
        for name, v in (("color", color), ("colormap", colormap)):
            if v is not None and not isinstance(v, str):
                raise TypeError(f"{name}: must be a str or None, got {_kind(v)}")
        colours = {k: v for k, v in (("color", color), ("colormap", colormap)) if v is not None}
        return _export(self._opened(), out, frames, every, force, colours or None)

    def _opened(self) -> str:
        """The path, where it still names the file this Recording opened: the methods that go
        by the path read that file, or none."""
        if not self._reader.same_file():
            raise RecordingError(
                f"{self.path}: not the file this Recording opened (replaced or removed since); "
                f"open it again with Recording({self.path!r})"
            )
        return self.path

    def _frame(self, k: int) -> Frame:
        step, pos, vel, absent = self._reader.read(k, self.verify)
        present = np.ones(pos.shape[1], dtype=bool)
        for lo, hi in absent:
            present[lo:hi] = False
        for a in (pos, vel, present):
            a.flags.writeable = False
        return Frame(self, k, step, pos.T, vel.T, present)

    def __getitem__(self, key: Union[int, slice]) -> Union[Frame, List[Frame]]:
        count = len(self)
        if isinstance(key, slice):
            return [self._frame(k) for k in range(*key.indices(count))]
        try:
            k = key.__index__()
        except AttributeError:
            raise TypeError(f"Recording indices must be integers or slices, not {type(key).__name__}") from None
        if k < 0:
            k += count
        if not 0 <= k < count:
            raise IndexError(f"frame {key} is out of range: {self.path} has frames 0..{count}")
        return self._frame(k)

    def __iter__(self) -> Iterator[Frame]:
        for k in range(len(self)):
            yield self._frame(k)

    def __repr__(self) -> str:
        h = self.header
        return (
            f"Recording({self.path!r}: {len(self)} frames of {h['agents']} agents, "
            f"{h['dim']}D {h['model']}, {h['format']})"
        )


class Image(np.ndarray):
    """An ``(H, W, 3)`` (or, with alpha, ``(H, W, 4)``) ``uint8`` array that Jupyter shows
    inline (``_repr_png_``)."""

    def _repr_png_(self) -> Optional[bytes]:
        a = np.asarray(self)
        if a.ndim != 3 or a.shape[2] not in (3, 4) or a.dtype != np.uint8:
            return None
        return encode_png(np.ascontiguousarray(a))


def _recording_path(recording: Union[PathLike, Recording]) -> str:
    if isinstance(recording, Recording):
        return recording._opened()
    return _path("recording", recording)


def still(recording: Union[PathLike, Recording], frame: int = 0, **look: Any) -> Image:
    """Frame ``frame`` of ``recording`` (negative from the end) rendered as ``forge still`` renders
    it, as an ``(H, W, 3)`` ``uint8`` array (an :class:`Image`, shown inline in Jupyter;
    ``(H, W, 4)``, straight alpha last, with ``alpha=True``). The
    keyword arguments are the keys of a scene's ``render`` section (``size=[320, 180]``,
    ``color="heading"``, …); an unknown key raises :class:`LookError` naming it, a frame the
    recording does not have :class:`IndexError`."""
    path = _recording_path(recording)
    try:
        k = operator.index(frame)
    except TypeError:
        raise TypeError(f"frame: must be a whole number, got {type(frame).__name__}") from None
    rec = recording if isinstance(recording, Recording) else Recording(path, verify=False)
    count = len(rec)
    if k < 0:
        k += count
    if not 0 <= k < count:
        raise IndexError(f"frame {frame} is out of range: {path} has frames 0..{count}")
    a = _still(path, k, look or None)
    return a.view(Image)


def render(
    recording: Union[PathLike, Recording],
    output: PathLike,
    frames: Optional[Tuple[Optional[int], Optional[int]]] = None,
    force: bool = False,
    **look: Any,
) -> Tuple[int, int, int]:
    """Render ``recording`` to the video ``output`` as ``forge render`` does (H.264 MP4 through
    FFmpeg; with ``alpha=True`` ProRes 4444 with alpha, into a ``.mov``), the look from the keys of
    a scene's ``render`` section; ``frames=(a, b)`` the
    recorded frames ``a..b``. Returns ``(frames, width, height)``. Ctrl-C raises
    ``KeyboardInterrupt`` and leaves no output."""
    return _render(_recording_path(recording), _path("output", output), frames, force, look or None)
