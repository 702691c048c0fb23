"""Block-size advice for a Pallas matmul of any (m, k, n), dtype and TPU generation, without a TPU:
candidates compiled deviceless, modelled by the timing model, ranked with ties said to be ties
(`advise` on the command line, `advise()` here; docs/advisor.md)."""


def advise(shapes, **options):
    """The ranked table of `shapes` ("MxKxN" or (m, k, n)); options as advise.cli.advise takes them
    (dtype, targets, kernel, vmem_limit, results, config). AdviceError in one line for a refused request."""
    from tpu_matmul_repro.advise.cli import advise as ranked

    return ranked(shapes, **options)
