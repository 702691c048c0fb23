"""The compile worker process: `python -m experiments.compile_study.worker TARGET [PROFILE_DIR]`.

Reads pickled (case, vmem_limit_bytes, profile) requests on stdin and writes one pickled result per
request to its original stdout. libtpu and the compiler write to file descriptors 1 and 2 directly,
so the worker moves fd 1 onto stderr and keeps a private copy of stdout for its replies.
"""
import os
import pickle
import sys


def main(target: str, profile_dir: str | None) -> None:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    from experiments.compile_study import tpu_compile

    tpu_compile.init_worker(target, profile_dir)
    requests = sys.stdin.buffer
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        if request == "platforms":  # a check: which platforms the worker's jax really uses
            pickle.dump(tpu_compile.worker_platforms(), replies)
            replies.flush()
            continue
        case, vmem_limit_bytes, profile = request
        pickle.dump(tpu_compile.compile_in_worker(case, vmem_limit_bytes, profile), replies)
        replies.flush()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None)
    except KeyboardInterrupt:  # Ctrl-C signals the whole process group: the run says so, once
        sys.exit(130)
