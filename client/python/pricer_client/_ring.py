"""The client's side of a shared-memory output ring (price(shared_memory=True);
docs/shared-memory.md, proto/pricer/v1/shared_memory.proto): a sealed memfd of
this process that a server on the same host, started with
--shared-memory-output, writes SC's chunks into instead of the socket. The
layout is client_protocol.proto's SharedRingLayout, which the server and the
C++ client (client/lib/shared_output.cc) read too."""

import ctypes
import mmap
import os
import platform
import secrets
import sys

from pricer_client._errors import contradiction
from pricer_client._protocol import SHARED_RING

MAGIC = SHARED_RING.magic  # b"PRICERRG"
TOKEN_OFFSET, TOKEN_BYTES = SHARED_RING.token_offset, SHARED_RING.token_bytes
RELEASED_OFFSET = SHARED_RING.released_offset  # the uint32 the client counts its releases in
HEADER_BYTES = SHARED_RING.header_bytes  # slot 0 starts here
SLOT_ALIGNMENT = SHARED_RING.slot_alignment
SLOT_BYTES = SHARED_RING.min_slot_bytes  # the smallest slot: the largest chunk at any phase
SLOTS = SHARED_RING.client_slots  # as the CLI's --shared-memory: 32 MiB

_SYS_FUTEX_X86_64, _FUTEX_WAKE = 202, 1


def check_supported():
    """Raises ValueError where the ring cannot be used: it needs Linux
    (memfd, futex) on x86-64, whose stores are not reordered with earlier
    loads, so that the plain store of `released` comes after the reads of the
    slot (Python has no release fence)."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        raise ValueError(f"shared_memory needs Linux on x86-64, not {sys.platform} on "
                         f"{platform.machine()}")


class SharedRing:
    """One call's ring of SLOTS slots of SLOT_BYTES, its pages allocated,
    with a random token. take() gives a chunk's values where they lie in
    their slot; release() hands the slot back to the server."""

    def __init__(self):
        import fcntl  # here: the package imports on systems without it (Windows)

        self._taken = 0
        size = HEADER_BYTES + SLOTS * SLOT_BYTES
        self._fd = os.memfd_create("pricer-output", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self._fd, size)
            # Its size fixed, the server's writes into it cannot fault (SIGBUS).
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS,
                        fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self._map = mmap.mmap(self._fd, size,
                                  flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        except BaseException:
            os.close(self._fd)
            raise
        self.token = secrets.token_bytes(TOKEN_BYTES)
        self._map[0:len(MAGIC)] = MAGIC
        self._map[TOKEN_OFFSET:TOKEN_OFFSET + TOKEN_BYTES] = self.token
        self._released = ctypes.c_uint32.from_buffer(self._map, RELEASED_OFFSET)
        self._released_address = ctypes.c_void_p(ctypes.addressof(self._released))
        self._libc = ctypes.CDLL(None)  # this process's C library, for syscall()

    def describe(self, ring):
        """Fills a request's output.shared_memory (a SharedMemoryRing)."""
        ring.pid, ring.fd, ring.slots, ring.slot_bytes, ring.phase = (
            os.getpid(), self._fd, SLOTS, SLOT_BYTES, 0)
        ring.token = self.token

    def take(self, chunk):
        """The chunk's values in its slot (a memoryview, valid until
        release()); a contradiction when the server names a slot other than
        the next or values that do not fit it."""
        expected = self._taken % SLOTS
        if chunk.shared_slot - 1 != expected:
            raise contradiction(f"a chunk in shared-memory slot {chunk.shared_slot - 1} where "
                                f"slot {expected} was next")
        size = 4 * chunk.rows * (chunk.column_end - chunk.column_begin)
        offset = (4 * chunk.rows * chunk.column_begin) % SLOT_ALIGNMENT  # phase 0
        if chunk.rows < 0 or size < 0 or offset + size > SLOT_BYTES:
            raise contradiction(f"a chunk of {chunk.column_end - chunk.column_begin} columns of "
                                f"{chunk.rows} rows in a shared-memory slot of {SLOT_BYTES} "
                                "bytes")
        self._taken += 1
        start = HEADER_BYTES + expected * SLOT_BYTES + offset
        return memoryview(self._map)[start:start + size]

    def release(self):
        """The chunk taken last has been handled: adds 1 to `released` (one
        aligned store; this process is its only writer) and wakes the server
        if it waits for it (else it polls every 10 ms)."""
        self._released.value += 1
        self._libc.syscall(_SYS_FUTEX_X86_64, self._released_address, _FUTEX_WAKE, 1, None, None,
                           0)

    def close(self):
        """Unmaps the ring (again: nothing); a server that still has it
        mapped keeps its own mapping of the memfd, so its writes cannot
        fault."""
        if self._map.closed:
            return
        del self._released  # the ctypes view holds the map's buffer
        self._map.close()
        os.close(self._fd)
