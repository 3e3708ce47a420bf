"""Read ICL Workbench experiment files (HDF5) from Python: h5py + NumPy only.

    >>> import icl_workbench
    >>> run = icl_workbench.open("RUN.h5")
    >>> run.config["model"]["kind"], run.checkpoints[-1]
    >>> run.metrics["eval_loss"], run.weights(run.checkpoints[-1])["read_out.weight"]
    >>> run.state_dict(layout="garg")       # Garg et al.'s GPT-2 state dict (torch.from_numpy each value)

The file layout is documented in the repository's docs/file-format.md. A file that is not an experiment file
(another HDF5 file, a truncated one, a newer format version) raises ExperimentFileError with one line naming
the file and the reason.
"""

from icl_workbench.run import (
    SUPPORTED_FORMAT_VERSIONS,
    Analysis,
    Capture,
    CheckpointInfo,
    ExperimentFileError,
    Run,
    open,
    open_capture,
)
from icl_workbench.layouts import GPT2_VOCAB_SIZE, garg_state_dict

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED_FORMAT_VERSIONS",
    "GPT2_VOCAB_SIZE",
    "Analysis",
    "Capture",
    "CheckpointInfo",
    "ExperimentFileError",
    "Run",
    "garg_state_dict",
    "open",
    "open_capture",
]
