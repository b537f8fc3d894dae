"""What the model-based families share: device and dtype choice, padded batches, token counts.

The same code runs on a GPU at full scale (the job asked the scheduler for one) and on the CPU
in the offline default; only `gpus` and `dtype` differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from selectlab.annotate.base import Annotator, length_sorted_batches
from selectlab.devices import select_device, torch_dtype

# No byte-level BPE or WordPiece token of natural text is anywhere near this long, so cutting a
# text at max_tokens * this many characters before tokenising never changes its first
# max_tokens tokens, and a 1 MB document costs no more than a short one.
CHARS_PER_TOKEN_BOUND = 64


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int):
    """Right-padded input ids and attention mask (LongTensors) for a list of token id lists."""
    import torch

    width = max(len(seq) for seq in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return ids, mask


def clip_texts(texts: Sequence[str], max_tokens: int) -> list[str]:
    limit = max_tokens * CHARS_PER_TOKEN_BOUND
    return [text[:limit] for text in texts]


class TorchAnnotator(Annotator):
    """An annotator whose scores come from a torch model run in length-sorted batches."""

    def __init__(self, model_dir: str, max_tokens: int, forward_batch_size: int, dtype: str,
                 gpus: int, model_label: str):
        self.model_dir = model_dir
        self.max_tokens = max_tokens
        self.forward_batch_size = forward_batch_size
        self.dtype_name = dtype
        self.gpus = gpus
        self.model_label = model_label
        self.device = "cpu"
        self._tokens_read = 0

    def setup(self) -> None:
        torch_dtype(self.dtype_name)  # fail on a bad dtype before the model loads
        self.device = select_device(self.gpus)

    @property
    def input_tokens(self) -> int:
        return self._tokens_read

    def count_tokens(self, mask) -> None:
        self._tokens_read += int(mask.sum())

    def sorted_batches(self, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        return length_sorted_batches([len(seq) for seq in sequences], self.forward_batch_size)

    def model_shape(self):
        from selectlab.flops import module_shape

        return module_shape(self._model, self.max_tokens)

    def peak_device_memory_gb(self) -> float | None:
        import torch

        if not self.device.startswith("cuda"):
            return None
        return torch.cuda.max_memory_allocated() / 1e9
