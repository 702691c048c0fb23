"""Units and counts every stage shares, each defined once."""
MiB = 1024 * 1024
TERA = 1e12


def flops(m, k, n):
    """Floating-point operations (int8: integer operations) of an (m, k) @ (k, n) product: one multiply
    and one add per term. Works on numbers and on array-likes (pandas columns) alike."""
    return 2 * m * k * n


def unit_name(dtype: str) -> str:
    """The unit of a rate in `dtype`: integer products are operations, not floating-point ones."""
    return "TOP/s" if dtype == "int8" else "TFLOP/s"


def tflops(work, seconds):
    """TFLOP/s of `work` operations done in `seconds` (numbers or columns): the one place a rate is
    made from a time, for every source alike."""
    return work / seconds / TERA


def seconds_at(work, rate_tflops):
    """The time `work` operations take at `rate_tflops` (the inverse of tflops)."""
    return work / rate_tflops / TERA
