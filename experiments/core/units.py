"""Units and counts every stage shares, each defined once."""
MiB = 1024 * 1024


def flops(m, k, n):
    """Floating-point operations (int8: integer operations) of an (m, k) @ (k, n) product: one multiply
    and one add per term. Works on numbers and on array-likes (pandas columns) alike."""
    return 2 * m * k * n
