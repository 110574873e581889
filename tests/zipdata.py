"""Where a member's bytes lie inside a zip file (``torch.save`` checkpoints, ``.npz`` graphs), to damage them in
place as disk or copy corruption would."""

from __future__ import annotations

import zipfile
from pathlib import Path


def member_span(path: Path, member: str | None = None) -> tuple[int, int]:
    """``(offset, stored size)`` of the bytes of zip member ``member``, or of the largest tensor of a ``torch.save``
    file (stored uncompressed, so a byte flipped there still loads)."""
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        info = (
            archive.getinfo(member)
            if member
            else max((i for i in infos if "/data/" in i.filename), key=lambda i: i.file_size)
        )
    header = Path(path).read_bytes()[info.header_offset : info.header_offset + 30]
    name_len, extra_len = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
    return info.header_offset + 30 + name_len + extra_len, info.compress_size


def flip_tensor_byte(path: Path) -> None:
    """Flip one bit in the middle of a checkpoint's largest tensor: the file still loads, with one value changed."""
    start, size = member_span(path)
    data = bytearray(Path(path).read_bytes())
    data[start + size // 2] ^= 0x10
    Path(path).write_bytes(bytes(data))
