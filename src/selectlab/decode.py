"""Lines of a .jsonl, .jsonl.gz or .jsonl.zst file, with damage detected and located.

Compressed input is decoded block by block with a decompressor object per frame (zstd) or
member (gzip), so the reader knows where every decoded byte came from and whether the last
frame was complete. Three kinds of damage are told apart, each with the compressed byte offset
where decoding stopped and the last whole line read before it:

- truncated: the file ends inside a frame or member (a download or copy cut short);
- corrupt: the decoder rejects the data (flipped bits, a file of another format under a
  .zst or .gz name, which fails at offset 0);
- a partial last line of a damaged file is never a document: it is dropped with the damage.

A plain .jsonl file has no framing, so a cut one is indistinguishable from a complete one
whose last line lacks its newline; that line is parsed like any other.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Compressed bytes per decoder call: the precision of a corrupt offset, and (times the
# compression ratio) what one call decodes into memory, so the reader's memory stays flat.
BLOCK_BYTES = 1 << 14
GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS


class DamagedFileError(ValueError):
    """A shard file is truncated or corrupt and the reader's policy is to stop."""


@dataclass(frozen=True)
class Damage:
    path: str
    kind: str  # "truncated" or "corrupt"
    offset: int  # compressed byte where decoding stopped (the start of the rejected block)
    size: int  # the file's size in bytes
    line: int  # last whole line read before the damage
    error: str
    partial: bytes = b""  # the incomplete line the damage cut off

    def describe(self) -> str:
        where = (f"at compressed byte {self.offset:,} of {self.size:,}" if self.kind == "corrupt"
                 else f"at its end (byte {self.size:,})")
        return (f"{self.path} is {self.kind} {where}, after line {self.line:,}: {self.error}")

    def as_record(self) -> dict:
        return {"file": self.path, "kind": self.kind, "offset": self.offset, "size": self.size,
                "after_line": self.line, "error": self.error}


class _Corrupt(Exception):
    pass


class _Truncated(Exception):
    pass


def _frames(handle, new_decoder, errors: tuple[type[Exception], ...]) -> Iterator[bytes]:
    """Decoded bytes of a stream of frames; `_Corrupt(offset, error)` where the decoder
    rejects a block, `_Truncated` when the stream ends inside a frame."""
    decoder, in_frame, offset = new_decoder(), False, 0
    while block := handle.read(BLOCK_BYTES):
        data = block
        while data:
            try:
                out = decoder.decompress(data)
            except errors as error:
                raise _Corrupt(offset, str(error)) from None
            in_frame = not decoder.eof
            data = decoder.unused_data if decoder.eof else b""
            if decoder.eof:
                decoder = new_decoder()
            yield out
        offset += len(block)
    if in_frame:
        raise _Truncated()


def _zstd_decoder():
    import zstandard  # imported where used: see selectlab.shards.write_documents

    return zstandard.ZstdDecompressor().decompressobj()


def _gzip_decoder():
    return zlib.decompressobj(GZIP_OR_ZLIB)


class DecodedLines:
    """Iterate (line number, raw line) of one file; `damage` is set if decoding stopped early.

    Iteration ends at the damage instead of raising, so the caller can keep what came before
    and apply its own policy.
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        self.damage: Damage | None = None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        size = os.path.getsize(self.path)
        line_no, pending = 0, b""
        with open(self.path, "rb") as handle:
            try:
                for data in self._chunks(handle):
                    pending += data
                    *whole, pending = pending.split(b"\n")
                    for raw in whole:
                        line_no += 1
                        yield line_no, raw + b"\n"
            except _Truncated:
                self.damage = Damage(self.path, "truncated", size, size, line_no,
                                     "the file ends inside a compressed frame", pending)
                return
            except _Corrupt as corrupt:
                offset, error = corrupt.args
                self.damage = Damage(self.path, "corrupt", offset, size, line_no,
                                     f"the decoder rejects the data ({error})", pending)
                return
        if pending:
            yield line_no + 1, pending

    def _chunks(self, handle) -> Iterator[bytes]:
        if self.path.endswith(".zst"):
            import zstandard

            return _frames(handle, _zstd_decoder, (zstandard.ZstdError,))
        if self.path.endswith(".gz"):
            return _frames(handle, _gzip_decoder, (zlib.error,))
        return iter(lambda: handle.read(BLOCK_BYTES), b"")


@contextlib.contextmanager
def open_binary(path: str | Path):
    """The raw lines of a whole .jsonl(.gz|.zst) file, for `for line in handle`; a damaged
    file raises `DamagedFileError` naming the file and offset when the damage is reached."""
    lines = DecodedLines(path)

    def stream() -> Iterator[bytes]:
        for _, raw in lines:
            yield raw
        if lines.damage is not None:
            raise DamagedFileError(lines.damage.describe())

    yield stream()
