"""Process set-up shared by the Snakemake scripts: JAX platform choice and logging to the job's log."""
import contextlib
import errno
import logging
import os
import signal
import sys
import threading
import time


def use_cpu_jax() -> None:
    """Run JAX on the CPU (call before importing jax): otherwise an installed libtpu is probed at start-up
    and prints errors on a machine without a TPU."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    if "jax" in sys.modules:  # imported already (e.g. by unpickling Snakemake's params): not too late
        sys.modules["jax"].config.update("jax_platforms", "cpu")  # until its first device is used


class UserError(Exception):
    """Input a user can fix (a bad carried file, ...): logged as its message alone, without a traceback."""


# The last second Python's datetime holds (9999-12-31T23:59:59Z): a later SOURCE_DATE_EPOCH failed late
# in both report jobs (after Snakemake had removed the previous reports) and in matplotlib's PDFs.
MAX_SOURCE_DATE_EPOCH = 253402300799


def source_date_epoch() -> int | None:
    """$SOURCE_DATE_EPOCH (the date the report and figures state) or None where unset or empty; UserError
    in one line for anything but whole seconds since 1970 that a date can hold."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "")
    if value == "":
        return None
    if not (value.isascii() and value.isdigit() and int(value) <= MAX_SOURCE_DATE_EPOCH):
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise UserError(f"SOURCE_DATE_EPOCH={shown!r} is not a time: whole seconds since 1970-01-01 UTC, "
                        f"at most {MAX_SOURCE_DATE_EPOCH} (the year 9999), e.g. `git log -1 --format=%ct`; "
                        "or unset it (the report then states the commit's date)")
    return int(value)


QUIET_LIBRARIES = ("fontTools", "weasyprint")


@contextlib.contextmanager
def logged(log_path):
    """Send this job's stdout, stderr and `logging` output to its Snakemake log file, emptied and then
    appended to, so that workers appending their own stderr interleave with it."""
    open(log_path, "w").close()
    last_word = []  # a full disk's message, for stderr when the log itself cannot take it
    root = logging.getLogger()
    before = (root.handlers[:], root.level)  # restored after: no handler outlives the file it writes to
    try:
        with open(log_path, "a") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            logging.basicConfig(stream=log, level=logging.INFO, force=True,
                                format="%(asctime)s %(levelname)s %(message)s")
            # Libraries that log every step at INFO (fontTools: ~150 lines per font it subsets for a PDF;
            # WeasyPrint: each step of each PDF) would bury the job's own lines; their warnings still come.
            for noisy in QUIET_LIBRARIES:
                logging.getLogger(noisy).setLevel(logging.WARNING)
            logger = logging.getLogger("tpu-matmul-repro")
            try:
                yield logger
            except UserError as e:  # bad input, not a bug: its one-line message is the whole story
                logger.error("%s", e)
                raise SystemExit(1) from None
            except KeyboardInterrupt:  # Ctrl-C: the workflow says so once (Snakefile, onerror)
                logger.error("interrupted")
                raise SystemExit(130) from None
            except OSError as e:
                if not disk_full(e):
                    logger.exception("job failed")
                    raise
                last_word.append(disk_full_message(e))
                logger.error("%s", last_word[0])
                raise SystemExit(1) from None
            except BaseException:  # the reason a job failed belongs in its log (show-failed-logs prints it)
                logger.exception("job failed")
                raise
    except OSError as e:  # the log could not be written either (a disk full to the last block)
        if not disk_full(e):
            raise
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(log_path))
        print(last_word[0] if last_word else disk_full_message(full), file=sys.__stderr__)
        raise SystemExit(1) from None
    finally:
        for handler in root.handlers[:]:
            if handler not in before[0]:
                root.removeHandler(handler)
        root.handlers[:0] = [h for h in before[0] if h not in root.handlers]
        root.setLevel(before[1])


def record_interrupts() -> list:
    """A list that gets an entry for each Ctrl-C this process receives, then handled as before: the
    Snakefile's onerror tells an interrupted run from a failed one. Left alone where SIGINT is not default."""
    received = []

    def note(signum, frame):
        received.append(signum)
        signal.default_int_handler(signum, frame)

    if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, note)
    return received


def disk_full(e: OSError) -> bool:
    """A full disk, as the OS says it (errno 28) or as pyarrow does (errno only in the message)."""
    return e.errno == errno.ENOSPC or "No space left on device" in str(e) or "[errno 28]" in str(e).lower()


def disk_full_message(e: OSError) -> str:
    where = f" writing {e.filename}" if getattr(e, "filename", None) else ""
    return (f"no space left on the device{where}: free some space (or point TMPDIR and "
            "TPU_MATMUL_REPRO_CACHE elsewhere) and run the same command again; what is finished is kept")


class Progress:
    """Per-job progress in the job's log: "12/40 (30 %) <what>; 1 min 5 s elapsed, about 2 min 31 s left"."""

    def __init__(self, total: int, log: logging.Logger, clock=time.monotonic):
        self.total, self.done, self.log, self.clock = total, 0, log, clock
        self.start = clock()

    def step(self, what: str) -> str:
        self.done += 1
        elapsed = self.clock() - self.start
        left = elapsed / self.done * (self.total - self.done)
        line = (f"{self.done}/{self.total} ({100 * self.done // max(self.total, 1)} %) {what}; "
                f"{duration(elapsed)} elapsed, about {duration(left)} left")
        self.log.info(line)
        return line


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
