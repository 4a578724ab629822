"""Reading the PNG plots Lockstep writes (8-bit RGB, not interlaced) without an imaging library, so a test can
look at where a curve was drawn."""

import struct
import zlib
from pathlib import Path


def read_rgb(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of 3 * width bytes) of an 8-bit RGB PNG; anything else is an AssertionError."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None, f"{path}: no IHDR"
    width, height, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (8, 2, 0), f"{path}: not 8-bit RGB without interlace: {header}"
    raw, stride, rows, prior = zlib.decompress(idat), 3 * width, [], bytearray(3 * width)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - 3] if i >= 3 else 0
            up, up_left = prior[i], (prior[i - 3] if i >= 3 else 0)
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        prior = line
    return width, height, rows


def rows_with_colour(rows: list[bytes], colour: tuple[int, int, int], first: int, last: int) -> set[int]:
    """Indices of the rows in [first, last) holding at least one pixel of exactly `colour`."""
    needle = bytes(colour)
    found = set()
    for y in range(first, min(last, len(rows))):
        row = rows[y]
        if any(row[x:x + 3] == needle for x in range(0, len(row), 3)):
            found.add(y)
    return found
