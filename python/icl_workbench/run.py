"""The experiment file reader: :func:`open` returns a :class:`Run`.

Layout (docs/file-format.md in the repository)::

    /                      attrs format="icl-workbench", format_version, app_version, created
    /config                attr json: the resolved config
    /checkpoints/<step:09d>  attrs step, train_loss, wall_time_s; params/<name>, optimizer/...
    /metrics/<series>      1-D float64, one row per evaluation ("step", "eval_loss", "baseline/gd_1", ...)
    /analysis/<kind>/<id>  attrs checkpoint_step, seed, created, options (JSON), json (the result) and, for
                           activation captures, datasets <activation name>, x, y
    /task/<name>           fixed arrays of the task (e.g. Guo et al.'s representation Phi*)
    /import                attr json: provenance of an imported run

Every read opens the file, reads and closes it again, so a run being trained can be re-opened to see new
checkpoints. The trainer commits in place (docs/file-integrity.md, "Commit cost"); while a commit overwrites
pages it holds a lock on byte 0 of the file, and every read here takes a shared lock on it (``fcntl.lockf``)
so it never sees a commit half done. A ``RUN.h5.journal`` left by a killed commit is refused with one line:
``icl-cli recover RUN.h5`` (or the next ``train --resume``) rolls it back; this reader never writes.

Files may come from anyone: every value is checked before it is used (one number where one number belongs, a
dataset no larger than the memory budget, JSON nested at most 64 deep), and anything else is refused with
:class:`ExperimentFileError`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import h5py
import numpy as np

from icl_workbench.layouts import garg_state_dict

#: The value of the root attribute ``format`` of every experiment file.
FILE_FORMAT = "icl-workbench"

#: Format versions this reader understands (docs/file-format.md, "Format versions").
SUPPORTED_FORMAT_VERSIONS: Tuple[int, ...] = (1, 2)

#: Deepest nesting of JSON read from a file (as core/io/bounded_json.h).
MAX_JSON_DEPTH = 64


class ExperimentFileError(Exception):
    """A file that cannot be read as an ICL Workbench experiment file (missing, not HDF5, truncated or damaged,
    another program's HDF5 file, a newer format version, no such checkpoint). The message is one line that
    names the file and the reason."""


@dataclass(frozen=True)
class CheckpointInfo:
    """Attributes of one saved checkpoint (/checkpoints/<step>)."""

    step: int
    train_loss: float  #: NaN for imported checkpoints
    wall_time_s: float  #: seconds of training when the checkpoint was written


@dataclass
class Analysis:
    """One stored analysis result (/analysis/<kind>/<id>).

    ``result`` is the stored JSON with every list of numbers turned into a NumPy array (``null`` in a list of
    numbers, JSON's NaN, becomes ``nan``); ``raw`` is the JSON as stored. ``datasets`` names the HDF5 datasets
    of the group (only activation captures have any; read them through :attr:`Run.captures`).
    """

    kind: str
    id: str
    group: str  #: HDF5 path, "/analysis/<kind>/<id>"
    checkpoint_step: int
    seed: int
    created: str  #: ISO 8601, UTC
    options: Dict[str, Any]
    result: Optional[Dict[str, Any]]
    raw: Optional[Any]
    datasets: List[str] = field(default_factory=list)


class Capture:
    """An activation capture of the inspector (``icl-cli analyze RUN.h5 attention --prompts N``): one array per
    captured activation, [n_prompts, ...] float32 (e.g. ``resid_post.1`` [n, T, d_model], ``attn.pattern.0``
    [n, H, T, T]), and the prompts: ``x`` [n, N+1, d] and ``y`` [n, N+1] (float64).

    Arrays are read when asked for (captures can be large): ``capture["resid_post.1"]``, ``capture.x``.
    """

    def __init__(self, file: str, group: str, attrs: Mapping[str, Any], datasets: List[str]):
        self.file = file
        self.group = group
        self.checkpoint_step: int = int(attrs.get("checkpoint_step", -1))
        self.seed: int = int(attrs.get("seed", 0))
        self.created: str = _text(attrs.get("created", ""))
        self.source: str = _text(attrs.get("source", ""))
        self.options: Dict[str, Any] = _json(attrs.get("options"), file, group + ": attribute 'options'") or {}
        self.names: List[str] = _json(attrs.get("names"), file, group + ": attribute 'names'") or [
            d for d in datasets if d not in ("x", "y")
        ]
        self.datasets = datasets

    def __repr__(self) -> str:
        return f"Capture({self.file!r}, group={self.group!r}, names={self.names}, n_prompts={self.n_prompts})"

    def _read(self, name: str) -> np.ndarray:
        if name not in self.datasets:
            raise KeyError(f"{self.file}:{self.group}: no captured array {name!r} (has {', '.join(self.datasets)})")
        with _open_h5(self.file) as f:
            return _read_dataset(f, self.group.rstrip("/") + "/" + name, self.file)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._read(name)

    def __contains__(self, name: object) -> bool:
        return name in self.datasets

    def keys(self) -> List[str]:
        """The captured activation names (without x and y)."""
        return list(self.names)

    @property
    def n_prompts(self) -> int:
        """Number of captured prompts (rows of every array)."""
        with _open_h5(self.file) as f:
            node = f[self.group]
            return int(node["y"].shape[0]) if "y" in node else 0

    @property
    def x(self) -> np.ndarray:
        """Prompt inputs [n_prompts, N+1, d], the query last."""
        return self._read("x")

    @property
    def y(self) -> np.ndarray:
        """Prompt labels [n_prompts, N+1], the query's last."""
        return self._read("y")

    @property
    def activations(self) -> Dict[str, np.ndarray]:
        """Every captured activation, name -> array (reads them all)."""
        with _open_h5(self.file) as f:
            return {n: _read_dataset(f, self.group.rstrip("/") + "/" + n, self.file) for n in self.names}


class Run:
    """An open experiment file. Create with :func:`icl_workbench.open`.

    Attributes read at open: ``path``, ``format_version``, ``app_version``, ``created``, ``config``,
    ``checkpoints``, ``metrics``, ``analyses``, ``captures``; arrays of checkpoints are read on demand.
    """

    def __init__(self, path: "os.PathLike[str] | str"):
        self.path: str = os.fspath(path)
        with _open_experiment(self.path) as f:
            try:
                self.format_version: int = int(_number(f.attrs["format_version"], self.path, "/", "format_version"))
                self.app_version: str = _text(f.attrs.get("app_version", ""))
                self.created: str = _text(f.attrs.get("created", ""))
                if "config" not in f or "json" not in f["config"].attrs:
                    raise ExperimentFileError(f"{self.path}: damaged experiment file (no /config)")
                self.config: Dict[str, Any] = _json(f["config"].attrs["json"], self.path, "/config")
                self._checkpoints = self._read_checkpoints(f)
                self.metrics: Dict[str, np.ndarray] = _read_tree(f["metrics"], self.path) if "metrics" in f else {}
                if "metrics" in f:
                    _verify_series(f["metrics"], self.metrics, self.path)
                self.analyses: List[Analysis] = self._read_analyses(f)
                self.task_arrays: Dict[str, np.ndarray] = _read_tree(f["task"], self.path) if "task" in f else {}
                self.import_provenance: Optional[Dict[str, Any]] = (
                    _json(f["import"].attrs.get("json"), self.path, "/import") if "import" in f else None
                )
            except ExperimentFileError:
                raise
            except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
                raise ExperimentFileError(f"{self.path}: damaged experiment file ({_one_line(e)})") from None

    def __repr__(self) -> str:
        model = self.config.get("model", {}).get("kind", "?")
        task = self.config.get("task", {}).get("kind", "?")
        return f"Run({self.path!r}, model={model}, task={task}, checkpoints={self.checkpoints})"

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    # --- checkpoints -------------------------------------------------------------------------------------------

    @property
    def checkpoints(self) -> List[int]:
        """Saved checkpoint steps, ascending."""
        return [c.step for c in self._checkpoints]

    @property
    def checkpoint_info(self) -> List[CheckpointInfo]:
        """Step, train loss and wall time of every saved checkpoint, ascending by step."""
        return list(self._checkpoints)

    def _step(self, step: Optional[int]) -> int:
        if not self._checkpoints:
            raise ExperimentFileError(f"{self.path}: no checkpoints")
        if step is None:
            return self._checkpoints[-1].step
        if step < 0:
            return self.checkpoints[step]
        if step not in self.checkpoints:
            saved = ", ".join(str(s) for s in self.checkpoints)
            raise ExperimentFileError(f"{self.path}: no checkpoint at step {step} (saved: {saved})")
        return int(step)

    def weights(self, step: Optional[int] = None) -> Dict[str, np.ndarray]:
        """Parameters of a checkpoint (default: the last; negative steps count from the end), name -> float32
        array, named as the model's named_parameters(): ``"blocks.0.attn.W_Q"`` [H, d_model, d_head], ...
        """
        s = self._step(step)
        with _open_experiment(self.path) as f:
            group = _group(f, _checkpoint_group(s), self.path)
            arrays = _read_tree(_group(f, _checkpoint_group(s) + "/params", self.path), self.path)
            _verify_arrays(group, arrays, "params/", self.path, _checkpoint_group(s) + "/params")
            return arrays

    def optimizer_state(self, step: Optional[int] = None) -> Tuple[Dict[str, np.ndarray], Dict[str, float]]:
        """Optimizer state of a checkpoint: arrays ``"<param>/exp_avg"``, ``"<param>/exp_avg_sq"`` (Adam) and
        scalars ``"<param>/step"``. Both empty for a checkpoint without optimizer state (imported runs)."""
        s = self._step(step)
        with _open_experiment(self.path) as f:
            g = _group(f, _checkpoint_group(s), self.path)
            if "optimizer" not in g:
                return {}, {}
            arrays = _read_tree(g["optimizer"], self.path)
            scalars: Dict[str, float] = {}

            def visit(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Group):
                    for key, value in obj.attrs.items():
                        scalars[f"{name}/{key}"] = float(_number(value, self.path, obj.name, key))

            g["optimizer"].visititems(visit)
            return arrays, scalars

    def state_dict(self, step: Optional[int] = None, layout: str = "workbench") -> Dict[str, np.ndarray]:
        """A checkpoint's weights as a dict of NumPy arrays that ``{k: torch.from_numpy(v) ...}`` turns into a
        state dict. ``layout="workbench"``: the workbench's names (as :meth:`weights`); ``layout="garg"``: Garg et
        al.'s ``TransformerModel`` over transformers 4.17's ``GPT2Model`` (gpt2 regression runs only), exactly as
        ``icl-cli export-weights --layout garg`` writes it, buffers included."""
        if layout == "workbench":
            return self.weights(step)
        if layout == "garg":
            return garg_state_dict(self.weights(step), self.config)
        raise ValueError(f"layout: expected 'workbench' or 'garg', got {layout!r}")

    # --- analyses ----------------------------------------------------------------------------------------------

    def analysis(self, kind: str, index: int = -1) -> Analysis:
        """The stored analysis of one kind (``"gd_alignment"``, ``"icl_curve"``, ``"probe"``, ...); by default
        the most recent."""
        found = [a for a in self.analyses if a.kind == kind]
        if not found:
            kinds = ", ".join(sorted({a.kind for a in self.analyses})) or "none"
            raise KeyError(f"{self.path}: no stored analysis of kind {kind!r} (stored: {kinds})")
        return found[index]

    @property
    def captures(self) -> List[Capture]:
        """Activation captures stored in the file (groups under /analysis holding datasets)."""
        return [
            Capture(self.path, a.group, {"checkpoint_step": a.checkpoint_step, "seed": a.seed, "created": a.created,
                                         "options": json.dumps(a.options), **self._capture_attrs(a.group)},
                    a.datasets)
            for a in self.analyses
            if a.datasets
        ]

    def _capture_attrs(self, group: str) -> Dict[str, Any]:
        with _open_experiment(self.path) as f:
            attrs = f[group].attrs
            return {k: attrs[k] for k in ("names", "source") if k in attrs}

    # --- reading -----------------------------------------------------------------------------------------------

    def _read_checkpoints(self, f: h5py.File) -> List[CheckpointInfo]:
        if "checkpoints" not in f:
            return []
        out = []
        for name, g in f["checkpoints"].items():
            if name.startswith("."):
                continue  # an unfinished temporary group of an interrupted commit
            where = f"/checkpoints/{name}"
            out.append(CheckpointInfo(step=int(_number(_attr(g, "step", self.path, where), self.path, where, "step")),
                                      train_loss=float(_number(_attr(g, "train_loss", self.path, where), self.path,
                                                               where, "train_loss")),
                                      wall_time_s=float(_number(_attr(g, "wall_time_s", self.path, where),
                                                                self.path, where, "wall_time_s"))))
        return sorted(out, key=lambda c: c.step)

    def _read_analyses(self, f: h5py.File) -> List[Analysis]:
        if "analysis" not in f:
            return []
        out = []
        for kind, kind_group in f["analysis"].items():
            if not isinstance(kind_group, h5py.Group):
                continue
            for ident, g in kind_group.items():
                where = f"/analysis/{kind}/{ident}"
                raw = _json(g.attrs["json"], self.path, where) if "json" in g.attrs else None
                out.append(Analysis(
                    kind=kind, id=ident, group=where,
                    checkpoint_step=int(_number(g.attrs.get("checkpoint_step", -1), self.path, where,
                                                "checkpoint_step")),
                    seed=int(_number(g.attrs.get("seed", 0), self.path, where, "seed")),
                    created=_text(g.attrs.get("created", "")),
                    options=_json(g.attrs.get("options"), self.path, where + ": attribute 'options'") or {},
                    result=_with_arrays(raw) if isinstance(raw, dict) else None,
                    raw=raw,
                    datasets=[n for n, obj in g.items() if isinstance(obj, h5py.Dataset)],
                ))
        return out


def open(path: "os.PathLike[str] | str") -> Run:  # noqa: A001 - the documented entry point
    """Opens an experiment file written by ICL Workbench (icl-cli or the GUI).

    Raises :class:`ExperimentFileError` with one line naming the file and the reason for a missing file, a file
    that is not HDF5 or is truncated, another program's HDF5 file, or a format version newer than this reader.
    """
    return Run(path)


def open_capture(path: "os.PathLike[str] | str") -> Capture:
    """Opens an activation capture written to its own file (``icl-cli analyze RUN.h5 attention --prompts N
    --out acts.h5``): arrays at the root, attrs checkpoint_step, seed, created, names, source, options."""
    p = os.fspath(path)
    with _open_h5(p) as f:
        if "names" not in f.attrs or "y" not in f:
            raise ExperimentFileError(f"{p}: not an ICL Workbench activation capture (no 'names' attribute or "
                                      "no prompts y)")
        attrs = {k: f.attrs[k] for k in f.attrs}
        datasets = [n for n, obj in f.items() if isinstance(obj, h5py.Dataset)]
    return Capture(p, "/", attrs, datasets)


# --- helpers ---------------------------------------------------------------------------------------------------


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


class _LockedFile(h5py.File):
    """An h5py.File that holds a shared lock on byte 0 of the file until it is closed: the lock a commit of the
    workbench takes exclusively while it overwrites pages in place (core/io/hdf5_journal.h)."""

    def __init__(self, path: str, lock_fd: int):
        self._icl_lock_fd = lock_fd
        super().__init__(path, "r")

    def close(self) -> None:
        try:
            super().close()
        finally:
            fd, self._icl_lock_fd = self._icl_lock_fd, -1
            if fd >= 0:
                os.close(fd)


def _open_h5(path: str) -> h5py.File:
    if not os.path.exists(path):
        raise ExperimentFileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ExperimentFileError(f"{path}: is a directory, not an experiment file")
    fd = -1
    try:
        # Never blocks on a FIFO; read-only: this reader never writes a run file or its journal.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ExperimentFileError(f"{path}: not a regular file, not an experiment file")
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH, 1, 0)  # waits while a commit overwrites pages
        except OSError:
            pass  # a file system without locks: read unlocked
        journal = path + ".journal"
        if os.path.lexists(journal):
            raise ExperimentFileError(
                f"{path}: an interrupted commit left {journal}; run `icl-cli recover {path}` (or the next "
                "`train --resume`) to roll it back")
        if not h5py.is_hdf5(path):
            raise ExperimentFileError(f"{path}: not an ICL Workbench experiment file (not HDF5, or truncated)")
        f = _LockedFile(path, fd)
        fd = -1
        return f
    except ExperimentFileError:
        raise
    except (OSError, ValueError, RuntimeError) as e:
        raise ExperimentFileError(f"{path}: cannot open (damaged or truncated HDF5 file: {_one_line(e)})") from None
    finally:
        if fd >= 0:
            os.close(fd)


def _open_experiment(path: str) -> h5py.File:
    """Opens and validates the root attributes; the caller closes the file (a context manager)."""
    f = _open_h5(path)
    try:
        fmt = _text(f.attrs["format"]) if "format" in f.attrs else None
        if fmt is None:
            raise ExperimentFileError(f"{path}: not an ICL Workbench experiment file (no 'format' attribute)")
        if fmt != FILE_FORMAT:
            raise ExperimentFileError(
                f"{path}: not an ICL Workbench experiment file (format is {fmt!r}, expected {FILE_FORMAT!r})")
        if "format_version" not in f.attrs:
            raise ExperimentFileError(f"{path}: damaged experiment file (no 'format_version' attribute)")
        version = _number(f.attrs["format_version"], path, "/", "format_version")
        if version not in SUPPORTED_FORMAT_VERSIONS:
            newest = max(SUPPORTED_FORMAT_VERSIONS)
            what = "newer than this reader" if version > newest else "unknown"
            raise ExperimentFileError(
                f"{path}: format_version {version} is {what} (icl_workbench reads "
                f"{', '.join(str(v) for v in SUPPORTED_FORMAT_VERSIONS)}); update the icl_workbench package")
        return f
    except ExperimentFileError:
        f.close()
        raise
    except (OSError, KeyError, ValueError, TypeError) as e:
        f.close()
        raise ExperimentFileError(f"{path}: damaged experiment file ({_one_line(e)})") from None


def _checkpoint_group(step: int) -> str:
    return f"/checkpoints/{step:09d}"


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _text(value[()])
        raise TypeError(f"an array of {value.size} values where one string belongs")
    return str(value)


def _number(value: Any, path: str, where: str, name: str) -> float:
    """One number (an attribute must hold exactly one); anything else is refused naming the attribute."""
    if isinstance(value, np.ndarray):
        if value.shape != ():
            raise ExperimentFileError(
                f"{path}: damaged: {where} (attribute '{name}' holds {value.size} values, expected one number)")
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ExperimentFileError(f"{path}: damaged: {where} (attribute '{name}' is not a number)")
    return float(value) if isinstance(value, (float, np.floating)) else int(value)


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth(text: str) -> int:
    """Deepest nesting of arrays and objects in JSON text, strings skipped (no recursion)."""
    depth = deepest = 0
    for m in _JSON_TOKENS.finditer(text):
        t = m.group()
        if t in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif t in "]}":
            depth -= 1
    return deepest


def _json(value: Any, path: str, where: str) -> Any:
    if value is None:
        return None
    try:
        text = _text(value)
        if _json_depth(text) > MAX_JSON_DEPTH:
            raise ExperimentFileError(f"{path}:{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        return json.loads(text)
    except (ValueError, TypeError, RecursionError) as e:
        raise ExperimentFileError(f"{path}:{where}: not valid JSON ({_one_line(e)})") from None


def _memory_budget() -> int:
    """Bytes one read may allocate on a file's say-so: ICL_MAX_MEMORY ("512M", "2G") or a quarter of RAM, as
    core/io/memory_budget.h."""
    text = os.environ.get("ICL_MAX_MEMORY", "")
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT]?)(?:i?B)?\s*", text)
    if m:
        try:
            return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))
        except ValueError:
            pass
    try:
        return max(1 << 30, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4)
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def _checked_read(obj: "h5py.Dataset", path: str) -> np.ndarray:
    """A dataset's values, after checking that they are numbers and that their size fits the memory budget."""
    if obj.dtype.kind not in "fiu":
        raise ExperimentFileError(f"{path}: damaged: {obj.name} (holds {obj.dtype}, expected numbers)")
    size = int(np.prod(obj.shape, dtype=object)) * obj.dtype.itemsize
    budget = _memory_budget()
    if size > budget:
        raise ExperimentFileError(f"{path}: refused: {obj.name} would need {size} bytes, over the memory budget of "
                                  f"{budget} bytes (ICL_MAX_MEMORY)")
    return np.asarray(obj[()])


def _attr(obj: Any, name: str, path: str, where: str) -> Any:
    if name not in obj.attrs:
        raise ExperimentFileError(f"{path}:{where}: attribute '{name}' is missing")
    return obj.attrs[name]


def _group(f: h5py.File, name: str, path: str) -> h5py.Group:
    try:
        g = f[name]
    except (KeyError, OSError, ValueError) as e:
        raise ExperimentFileError(f"{path}:{name}: cannot open ({_one_line(e)}; damaged file?)") from None
    if not isinstance(g, h5py.Group):
        raise ExperimentFileError(f"{path}:{name}: is not a group (damaged file?)")
    return g


def _read_dataset(f: h5py.File, name: str, path: str) -> np.ndarray:
    try:
        obj = f[name]
        if not isinstance(obj, h5py.Dataset):
            raise ExperimentFileError(f"{path}:{name}: is not a dataset (damaged file?)")
        return _checked_read(obj, path)
    except (OSError, KeyError, ValueError, RuntimeError, MemoryError) as e:
        raise ExperimentFileError(f"{path}:{name}: cannot read ({_one_line(e)}; damaged file?)") from None


def _read_tree(group: h5py.Group, path: str) -> Dict[str, np.ndarray]:
    """Every dataset below `group`, named by its path relative to the group ("baseline/gd_1")."""
    out: Dict[str, np.ndarray] = {}

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            try:
                out[name] = _checked_read(obj, path)
            except (OSError, ValueError, RuntimeError, MemoryError) as e:
                raise ExperimentFileError(
                    f"{path}:{obj.name}: cannot read ({_one_line(e)}; damaged file?)") from None

    group.visititems(visit)
    return out


# --- checksums (format version 2; docs/file-integrity.md) ---------------------------------------------------------
# The same digests as core/io/checksums.cpp: SHA-256 over a tag, the name, the shape and the raw little-endian
# values, every integer as 8 little-endian bytes and every string as its length then its bytes.


def _u64(v: int) -> bytes:
    return int(v).to_bytes(8, "little", signed=False)


def _str(v: str) -> bytes:
    b = v.encode("utf-8")
    return _u64(len(b)) + b


def _array_digest(key: str, a: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(_str("array") + _str(key) + _u64(a.ndim))
    for n in a.shape:
        h.update(_u64(n))
    h.update(_u64(a.size))
    h.update(np.ascontiguousarray(a, dtype="<f4").tobytes())
    return h.hexdigest()


def _series_digest(name: str, v: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update(_str("series") + _str(name) + _u64(v.size))
    h.update(np.ascontiguousarray(v, dtype="<f8").tobytes())
    return h.hexdigest()


def _verify_arrays(group: h5py.Group, arrays: Dict[str, np.ndarray], prefix: str, path: str, where: str) -> None:
    """Checks `arrays` (name -> values) against the group's ``manifest`` (keys ``prefix + name``): every array's
    digest matches and none is missing. Files without a manifest (format version 1) are read as they are."""
    if "manifest" not in group.attrs:
        return
    manifest = _json(group.attrs["manifest"], path, group.name + "@manifest")
    for name, values in arrays.items():
        stored = manifest.get(prefix + name)
        if stored is None:
            raise ExperimentFileError(f"{path}: damaged: {where}/{name} (not in the checksum manifest)")
        if stored != _array_digest(prefix + name, values):
            raise ExperimentFileError(f"{path}: damaged: {where}/{name} (checksum mismatch)")
    for key in manifest:
        if key.startswith(prefix) and key[len(prefix):] not in arrays:
            raise ExperimentFileError(f"{path}: damaged: {where}/{key[len(prefix):]} (missing)")


def _verify_series(group: h5py.Group, series: Dict[str, np.ndarray], path: str) -> None:
    """Checks each metric series that carries a ``sha256`` attribute (format version 2) against its values."""
    for name, values in series.items():
        stored = group[name].attrs.get("sha256")
        if stored is not None and _text(stored) != _series_digest(name, np.asarray(values, dtype=np.float64)):
            raise ExperimentFileError(f"{path}: damaged: /metrics/{name} (checksum mismatch)")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _with_arrays(value: Any) -> Any:
    """JSON value with every rectangular list of numbers as an array: int64 when all are integers, else float64
    (None inside it as NaN)."""
    if isinstance(value, dict):
        return {k: _with_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            try:
                return np.array(value, dtype=np.int64)
            except OverflowError:
                return list(value)  # beyond int64 (e.g. 64-bit seeds): kept as Python ints
        if value and all(_is_number(v) or v is None for v in value) and any(_is_number(v) for v in value):
            return np.array([math.nan if v is None else v for v in value], dtype=np.float64)
        items = [_with_arrays(v) for v in value]
        if items and all(isinstance(v, np.ndarray) for v in items) and len({v.shape for v in items}) == 1:
            return np.stack(items)
        return items
    return value

