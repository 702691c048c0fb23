"""The few Pallas TPU names that differ between the jax releases the project compiles with.

The same kernels run under the project's own jax (requirements.txt) and under older toolchains
(config `toolchains`, e.g. the post's jax 0.4.36 of December 2024). Only what differs lives here,
each with the release that changed it, so a kernel reads as the post wrote it.
"""
from jax.experimental.pallas import tpu as pltpu


def compiler_params_class():
    """Mosaic's compiler parameters: `pltpu.CompilerParams` in the project's jax (0.10.2, which no
    longer has the old name), `pltpu.TPUCompilerParams` in jax 0.4.36 (which has only that one)."""
    cls = getattr(pltpu, "CompilerParams", None) or getattr(pltpu, "TPUCompilerParams", None)
    if cls is None:
        import jax

        raise ImportError(f"jax {jax.__version__}: neither pltpu.CompilerParams nor pltpu.TPUCompilerParams "
                          "exists; kernels/compat.py does not know this release")
    return cls


def compiler_params(**kwargs):
    """`compiler_params=` for `pl.pallas_call`, e.g. compiler_params(vmem_limit_bytes=...)."""
    return compiler_params_class()(**kwargs)


def flat(fn):
    """`fn` with every nested `jax.jit` call inlined into one program, for jax releases whose
    libtpu refuses the HLO of nested calls, else `fn` itself.

    Why: the kernels' wrappers call a jitted function, so `jax.jit(wrapper)` nests one jit inside
    another. jaxlib 0.4.36 numbers the instructions of a called computation with its id in the upper
    32 bits, and libtpu 0.0.5 rejects them ("RET_CHECK failure ... Instruction with id > INT_MAX"):
    every compile failed. The project's jax (0.10.2) compiles nested calls, and keeps them, so its
    results do not change. Seen with 0.4.36 only; releases between are treated like it.
    """
    import jax

    if tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 5):
        return fn

    def inlined(*args):
        closed = jax.make_jaxpr(fn)(*args)
        return _eval_inlined(closed.jaxpr, closed.consts, *args)

    return inlined


def _eval_inlined(jaxpr, consts, *args):
    """Evaluate a jaxpr like jax.core.eval_jaxpr, but run the bodies of nested jit calls in place."""
    env = {}

    def read(v):
        return v.val if type(v).__name__ == "Literal" else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        if eqn.primitive.name == "pjit":
            inner = eqn.params["jaxpr"]
            outvals = _eval_inlined(inner.jaxpr, inner.consts, *invals)
        else:
            outvals = eqn.primitive.bind(*invals, **eqn.params)
            outvals = outvals if eqn.primitive.multiple_results else [outvals]
        for var, value in zip(eqn.outvars, outvals):
            env[var] = value
    return [read(v) for v in jaxpr.outvars]
