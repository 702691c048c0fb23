"""Every string a figure shows, in English and 简体中文. Both catalogs must have the same keys
(tests/test_figures.py checks), so the two languages cannot drift apart."""

LABELS = {
    "en": {
        "size": "Matrix size (M = K = N)",
        "tflops": "TFLOP/s",
        "tops": "TOP/s (int8)",
        "estimated_tops_axis": "Estimated TOP/s (int8)",
        "vmem": "VMEM (MiB)",
        "intensity": "Arithmetic intensity (FLOP per HBM byte)",
        "estimated_axis": "Estimated TFLOP/s",
        "device_axis": "Modelled TFLOP/s (device time, estimated)",
        "device_tops_axis": "Modelled TOP/s (int8, device time, estimated)",
        "modelled_post": "modelled estimate, timed as the post",
        "flagged_xla": "! XLA @ {sizes}: libtpu's cost-model estimate falls as size grows "
                       "(flagged: a cost-model artefact); the modelled line uses the best smaller "
                       "size's rate",
        "interval_band": "shaded: the timing model's 80 % prediction interval, from its held-out errors on "
                         "the post's v5e numbers",
        "interval_unchecked": "; no measurement on {target} checks it",
        "source_modelled_post": "dashed: libtpu {libtpu}'s estimate for {target} ({device_kind}) through the "
                                "timing model, timed as the post did (one blocked call);\nan estimate "
                                "fitted to the post's numbers, not a measurement; no TPU used",
        "reference_axis": "{source} TFLOP/s",
        "xla": "XLA jnp.matmul",
        "kernel": "Pallas {kernel}",
        "blocks": "blocks ({bm}, {bk}, {bn})",
        "splits": "N = {n}",
        "estimate": "estimated",
        "measured": "measured",
        "published": "published (the post)",
        "source_estimate": "dashed: estimated by libtpu {libtpu} for {target} ({device_kind}), no TPU used",
        "source_measured": "solid: measured on {device_kind}",
        "source_published": "hollow: published in the post, read off its figure (about ±2 %); TPU v5e per "
                            "its repository's set-up (v5litepod-1)",
        "dodged": "hollow points at the same size are spread sideways so that none hides another",
        "peak": "peak {peak:.0f}",
        "failed_estimate": "✗ {label}: VMEM {need:.1f} MiB > {limit:.0f} MiB",
        "failed_estimate_bound": "✗ {label}: VMEM ≥ {need:.1f} MiB > {limit:.0f} MiB physical (not compiled)",
        "failed_other": "✗ {label}: {status}",
        "failed_published": "✗ {label}: failed in the post",
        "title_experiment": "{experiment}: {description} ({dtype}, {target})",
        "title_vmem": "VMEM used against the limit ({target}, estimated by libtpu {libtpu})",
        "title_roofline": "Roofline ({target}, estimated by libtpu {libtpu})",
        "title_search": "{experiment} block search: estimated {unit}, best bk per cell ({dtype}, {target})",
        "title_fidelity": "Estimates against {source} numbers ({target})",
        "title_generations": "{experiment} across TPU generations ({dtype}, estimated)",
        "limit_default": "default scoped limit {limit:.0f} MiB",
        "ok_default": "fits the default limit",
        "ok_raised_any": "fits a raised limit",
        "oom": "out of VMEM",
        "hbm_roof": "HBM {bw:.0f} GB/s",
        "compute_roof": "peak {peak:.0f} TFLOP/s ({dtype})",
        "size_panel": "M = K = N = {size}",
        "bm": "bm",
        "bn": "bn",
        "best_bk": "bk {bk}",
        "no_data": "no data for this figure",
        "identity": "y = x",
        "agreement": "n = {n}, median ratio {ratio:.2f}, Spearman {spearman:.2f}",
        "best_pallas": "best Pallas {target}",
        "best_pallas_model_only": "best Pallas {target}, model only",
        "xla_target": "XLA {target}",
        "generations_note": "filled: from libtpu's cycle estimate (static profile) through the timing model; "
                            "hollow, dotted: model only (no compiler cycles: libtpu's static profiler "
                            "aborts for this target), from the chip's peak, HBM bandwidth and the model's "
                            "constants alone, less certain",
        "missing_cycles": "no estimate drawn at {sizes} for {label}: {reason}",
        "reason_profiler_crashed": "libtpu's static profiler crashed (it compiles: VMEM verdict kept)",
        "reason_no_static_profile": "this libtpu has no static profile",
        "reason_extrapolation_failed": "a small grid of the same blocks could not be profiled",
        "reason_model_only": "; a model-only estimate is in the generations figure",
        "description_v1": "naive, whole arrays in VMEM",
        "description_v2": "row/column split grid",
        "description_v3": "3-D block grid",
        "description_v4": "block-size search",
        "description_v5": "low-precision inputs + float32 accumulator",
        "description_v5_int8": "int8 inputs + int32 accumulator",
        "description_other": "Pallas kernel",
        "caption_estimate": "estimated by libtpu {libtpu} for {target} without a TPU (dashed lines)",
        "caption_modelled": "modelled from libtpu {libtpu}'s estimates for {target} by the timing model "
                            "fitted on the post's numbers, timed as the post did, without a TPU "
                            "(dashed lines)",
        "caption_measured": "measured on {device_kind} (solid lines)",
        "caption_published": "the post's published numbers, read off its figures (hollow markers)",
        "others_published": "the post's published numbers",
        "others_measured": "measurements",
        "subtitle_estimate": "estimated by libtpu (dashed)",
        "subtitle_modelled_post": "modelled from libtpu's estimates (dashed)",
        "subtitle_measured": "measured (solid)",
        "subtitle_published": "published in the post (hollow)",
        "search_legend": "Each cell: the best estimated {unit} over bk (top) and that bk (bottom). ×: every "
                         "bk runs out of VMEM (or fails to compile); blank: no configuration with this "
                         "(bm, bn), neither the post's nor the search's.",
    },
    "zh": {
        "size": "矩阵大小（M = K = N）",
        "tflops": "TFLOP/s",
        "tops": "TOP/s (int8)",
        "estimated_tops_axis": "估计 TOP/s (int8)",
        "vmem": "VMEM (MiB)",
        "intensity": "算术强度（每 HBM 字节的 FLOP）",
        "estimated_axis": "估计 TFLOP/s",
        "device_axis": "模型 TFLOP/s (设备时间，估计值)",
        "device_tops_axis": "模型 TOP/s (int8，设备时间，估计值)",
        "modelled_post": "模型估计，按原文方式计时",
        "flagged_xla": "! XLA @ {sizes}：libtpu 代价模型的估计随尺寸增大反而下降"
                       "（已标记：代价模型的假象）；模型曲线改用更小尺寸中的最佳速率",
        "interval_band": "阴影：计时模型的 80 % 预测区间，由其在原文 v5e 数据上的留出误差得出",
        "interval_unchecked": "；{target} 上没有任何实测检验过它",
        "source_modelled_post": "虚线：libtpu {libtpu} 对 {target} ({device_kind}) 的估计经计时模型换算，"
                                "按原文方式计时 "
                                "(单次阻塞调用)；\n这是拟合原文数据的估计值，不是实测；未使用 TPU",
        "reference_axis": "{source} TFLOP/s",
        "xla": "XLA jnp.matmul",
        "kernel": "Pallas {kernel}",
        "blocks": "分块 ({bm}, {bk}, {bn})",
        "splits": "N = {n}",
        "estimate": "估计值",
        "measured": "实测值",
        "published": "原文数据",
        "source_estimate": "虚线：libtpu {libtpu} 为 {target}（{device_kind}）给出的估计，未使用 TPU",
        "source_measured": "实线：在 {device_kind} 上实测",
        "source_published": "空心点：原文数据，从原文的图中读取（约 ±2 %）；芯片据原文仓库的配置为 TPU v5e (v"
                            "5litepod-1)",
        "dodged": "同一大小的空心点左右错开，以免相互遮挡",
        "peak": "峰值 {peak:.0f}",
        "failed_estimate": "× {label}：VMEM {need:.1f} MiB > {limit:.0f} MiB",
        "failed_estimate_bound": "× {label}：VMEM ≥ {need:.1f} MiB > 物理容量 {limit:.0f} MiB（未编译）",
        "failed_other": "× {label}：{status}",
        "failed_published": "× {label}：原文中运行失败",
        "title_experiment": "{experiment}：{description}（{dtype}，{target}）",
        "title_vmem": "VMEM 用量与上限（{target}，libtpu {libtpu} 估计）",
        "title_roofline": "Roofline 模型（{target}，libtpu {libtpu} 估计）",
        "title_search": "{experiment} 分块搜索：估计 {unit}，每格取最优 bk（{dtype}，{target}）",
        "title_fidelity": "估计值与{source}对比（{target}）",
        "title_generations": "{experiment} 在各代 TPU 上的表现（{dtype}，估计）",
        "limit_default": "默认 scoped VMEM 上限 {limit:.0f} MiB",
        "ok_default": "默认上限内可编译",
        "ok_raised_any": "调高上限后可编译",
        "oom": "VMEM 不足",
        "hbm_roof": "HBM {bw:.0f} GB/s",
        "compute_roof": "峰值 {peak:.0f} TFLOP/s ({dtype})",
        "size_panel": "M = K = N = {size}",
        "bm": "bm",
        "bn": "bn",
        "best_bk": "bk {bk}",
        "no_data": "此图无数据",
        "identity": "y = x",
        "agreement": "n = {n}，比值中位数 {ratio:.2f}，Spearman 相关系数 {spearman:.2f}",
        "best_pallas": "最优 Pallas {target}",
        "best_pallas_model_only": "最优 Pallas {target}，仅模型",
        "xla_target": "XLA {target}",
        "generations_note": "实心：libtpu 的周期估计（静态剖析）经计时模型换算；空心、点线：仅模型"
                            "（无编译器周期：libtpu 的静态剖析器在此代芯片上崩溃），只由芯片峰值、HBM 带宽"
                            "和模型常数得出，可信度较低",
        "missing_cycles": "{sizes} 处未画出估计：{label}。原因：{reason}",
        "reason_profiler_crashed": "libtpu 的静态剖析器崩溃（可以编译：保留 VMEM 结论）",
        "reason_no_static_profile": "此版本 libtpu 没有静态剖析",
        "reason_extrapolation_failed": "同分块的小网格无法剖析",
        "reason_model_only": "；仅模型的估计见各代 TPU 对比图",
        "description_v1": "朴素实现：整个矩阵放入 VMEM",
        "description_v2": "按行、列切分的网格",
        "description_v3": "三维分块网格",
        "description_v4": "分块大小搜索",
        "description_v5": "低精度输入 + float32 累加器",
        "description_v5_int8": "int8 输入 + int32 累加器",
        "description_other": "Pallas 算子",
        "caption_estimate": "虚线为 libtpu {libtpu} 在无 TPU 的机器上为 {target} 做的估计",
        "caption_modelled": "虚线为 libtpu {libtpu} 在无 TPU 的机器上为 {target} 做的估计，经以原文数据拟合的"
                            "计时模型按原文的计时方式换算",
        "caption_measured": "实线为在 {device_kind} 上的实测",
        "caption_published": "空心点为原文数据（从原文的图中读取）",
        "others_published": "原文数据",
        "others_measured": "实测值",
        "subtitle_estimate": "libtpu 估计（虚线）",
        "subtitle_modelled_post": "由 libtpu 估计经计时模型换算（虚线）",
        "subtitle_measured": "实测（实线）",
        "subtitle_published": "原文数据（空心点）",
        "search_legend": "每格：上为各 bk 中最高的估计 {unit}，下为对应的 bk。×：所有 bk 均 VMEM 不足（或编译"
                         "失败）；"
                         "空白：原文和搜索中都没有这一 (bm, bn) 组合。",
    },
}

SOURCE_NAMES = {
    "en": {"published": "published", "measured": "measured", "estimate": "estimated"},
    "zh": {"published": "原文数据", "measured": "实测值", "estimate": "估计值"},
}


def text(lang: str, key: str, **values) -> str:
    return LABELS[lang][key].format(**values)


# Fixed terms: the same Chinese word for the same thing in every figure and in the report
# (tests/test_report.py checks the catalogs against the variants on the right).
GLOSSARY = [
    ("kernel", "算子"),
    ("block (bm, bk, bn)", "分块"),
    ("accumulator", "累加器"),
    ("pipelining", "流水线"),
    ("contraction (K) dimension", "归约维（K 维）"),
    ("out of VMEM", "VMEM 不足"),
    ("scoped-VMEM limit", "scoped VMEM 上限"),
    ("estimated / measured / published", "估计值 / 实测值 / 原文数据"),
]
AVOID = {  # variant (a regular expression) -> the glossary term to use instead
    "内核": "算子", "核函数": "算子", "收缩维": "归约维", "规约维": "归约维", "内存不足": "VMEM 不足",
    "内存耗尽": "VMEM 不足", "原文发布": "原文数据", "(?<!分)块大小": "分块大小", "累积器": "累加器",
    "管线": "流水线", "流水(?!线)": "流水线",
}
