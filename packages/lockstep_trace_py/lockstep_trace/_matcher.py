"""Pairing data messages with their headers by (channel, payload digest), as the Rust `HeaderMatcher` does.

Data and headers travel on two topics: either may arrive first, either may be lost, and a reliable transport
may redeliver a header. The content names its header: identical payloads share a digest and pair in arrival
order, harmless since their content is the same. Buffers are bounded and evict their oldest entry.
"""

from __future__ import annotations

from collections import deque

#: Unmatched data messages, and unmatched headers, kept per channel.
DEFAULT_CAPACITY = 256


class HeaderMatcher:
    """Pairs data (any object) with headers of one channel."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.capacity = max(1, int(capacity))
        self._data: deque = deque()  # (digest, item)
        self._headers: deque = deque()
        self._recent: deque = deque()  # (sequence, digest) of the latest headers accepted
        self.matched = self.unmatched_data = self.unmatched_headers = self.duplicate_headers = 0

    def push_data(self, digest: int, item):
        """A data message arrived: its header if already here (then returns it), else it waits."""
        for index, header in enumerate(self._headers):
            if header.payload_digest == digest:
                del self._headers[index]
                self.matched += 1
                return header
        self._data.append((digest, item))
        if len(self._data) > self.capacity:
            self._data.popleft()
            self.unmatched_data += 1
        return None

    def push_header(self, header):
        """A header arrived: the waiting data item it pairs with (then returns it), else the header waits. A
        redelivered header (same sequence and digest as one of the latest accepted) is counted and ignored."""
        key = (header.sequence_num, header.payload_digest)
        if key in self._recent:
            self.duplicate_headers += 1
            return None
        self._recent.append(key)
        if len(self._recent) > self.capacity:
            self._recent.popleft()
        for index, (digest, item) in enumerate(self._data):
            if digest == header.payload_digest:
                del self._data[index]
                self.matched += 1
                return item
        self._headers.append(header)
        if len(self._headers) > self.capacity:
            self._headers.popleft()
            self.unmatched_headers += 1
        return None

    def give_up(self, item) -> bool:
        """Stop waiting for the header of `item` (its header is lost); counted as unmatched."""
        for index, (_, waiting) in enumerate(self._data):
            if waiting is item:
                del self._data[index]
                self.unmatched_data += 1
                return True
        return False
