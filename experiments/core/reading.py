"""Reading a file the project is given or keeps: a regular file, of bounded size (LIMITS), decoded as
UTF-8; each refusal one line naming the file (docs/reliability.md). No pandas: compile workers import it.
"""
import os
import stat

KiB, MiB = 1 << 10, 1 << 20

# The largest file of each kind that is read: a hundred times or more what the project's own largest
# holds (config/config.yaml ~9 KB, advise/whole_models.yaml ~3 KB, a fidelity.csv ~20 KB, a compile cache
# entry ~1 KB), and for a carried measurement file what measure.max_carried_rows' default of 200,000
# rows with their samples takes.
LIMITS = {
    "config file": 1 * MiB,
    "shapes file": 1 * MiB,
    "results table": 16 * MiB,
    "carried file": 512 * MiB,
    "cache entry": 1 * MiB,
}


class ReadError(ValueError):
    """A file that cannot be read as its kind; the message is one line naming the file."""


def _type_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _size(amount: int) -> str:
    for unit, name in ((MiB, "MiB"), (KiB, "KiB")):
        if amount >= unit and amount % unit == 0:
            return f"{amount // unit} {name}"
    return f"{amount} bytes"


def _limit(kind: str) -> int:
    if kind not in LIMITS:
        raise KeyError(f"no read limit for {kind!r}: one of {', '.join(LIMITS)}")
    return LIMITS[kind]


def _too_large(path, kind: str, size: str) -> ReadError:
    return ReadError(f"{path}: {size}, more than the {_size(LIMITS[kind])} a {kind} may hold")


def _open(path, kind: str) -> int:
    """A descriptor of `path`, opened without blocking (a FIFO with no writer would wait for one) and
    checked by its own type and size (fstat, so what is read is what was checked)."""
    limit = _limit(kind)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ReadError(f"{path}: a folder, not a {kind}") from None
    except OSError as e:
        raise ReadError(f"{path}: cannot be read: {e.strerror or e}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ReadError(f"{path}: {_type_of(info.st_mode)}, not a {kind}")
    if info.st_size > limit:
        os.close(fd)
        raise _too_large(path, kind, f"{info.st_size} bytes")
    return fd


def check_file(path, kind: str) -> int:
    """The size of `path`, a regular file within its kind's limit, else ReadError (for parquet)."""
    fd = _open(path, kind)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def read_bytes(path, kind: str) -> bytes:
    """The bytes of `path`, a regular file of at most LIMITS[kind] bytes; ReadError naming it otherwise
    (also when it grows past the limit while read)."""
    limit = _limit(kind)
    fd = _open(path, kind)
    try:
        with os.fdopen(fd, "rb", closefd=True) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ReadError(f"{path}: cannot be read: {e.strerror or e}") from None
    if len(data) > limit:
        raise _too_large(path, kind, f"more than {limit} bytes once read")
    return data


def decoded(data: bytes, path) -> str:
    """`data` as UTF-8; ReadError naming `path` and the first byte that is not UTF-8, its offset and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ReadError(f"{path}: not UTF-8 text: byte 0x{data[e.start]:02X} at byte offset {e.start} "
                        f"(line {line}); save it as UTF-8") from None


def read_text(path, kind: str) -> str:
    """The text of `path` (read_bytes, then decoded as UTF-8)."""
    return decoded(read_bytes(path, kind), path)

