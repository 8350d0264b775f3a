"""Shape rules of ONNX Runtime's contrib ops (``com.microsoft``) and ORT's fusions.

The rules' arithmetic lives beside the ops' cost rules in :mod:`infercast.ops.contrib`
(one place for what each contrib op's inputs and attributes mean, from
onnxruntime's ``docs/ContribOperators.md``); this module enters them in the ONNX
shape-rule table. Checked against ONNX Runtime running each op
(``tests/test_contrib_ops.py``).
"""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import rule
from infercast.ops import contrib as c

MS = c.MS

rule(MS + "fused_conv")(c.fused_conv_shape)
rule(MS + "nhwc_conv")(c.nhwc_conv_shape)
rule(MS + "qlinear_conv")(c.qlinear_conv_shape)
rule(MS + "fused_mat_mul")(c.infer(c.fused_matmul_shape))
rule(MS + "mat_mul_integer16", MS + "mat_mul_integer_to_float")(c.integer_matmul_shape)
rule(MS + "dynamic_quantize_mat_mul")(c.dynamic_quantize_matmul_shape)
rule(MS + "mat_mul_n_bits")(c.infer(c.nbits_shape))
rule(MS + "q_gemm")(c.infer(c.qgemm_shape))
rule(MS + "fused_gemm")(c.infer(c.gemm_shape))
rule(
    MS + "quick_gelu", MS + "gelu", MS + "fast_gelu", MS + "bias_gelu", MS + "bias_add",
    MS + "bias_softmax", MS + "rotary_embedding",
    *(MS + name for name in c.QUNARY),
)(c.same_shape)  # fmt: skip
rule("simplified_layer_normalization")(c.simplified_layer_norm_shape)
rule(MS + "skip_layer_normalization", MS + "skip_simplified_layer_normalization")(c.skip_norm_shape)
rule(MS + "embed_layer_normalization")(c.infer(c.embed_shapes))
rule(MS + "attention")(c.infer(c.attention_shapes))
rule(MS + "multi_head_attention")(c.infer(c.mha_shapes))
rule(MS + "group_query_attention")(c.infer(c.gqa_shapes))
rule(MS + "dynamic_quantize_lstm")(c.infer(c.dq_lstm_shapes))
rule(MS + "q_linear_add", MS + "q_linear_mul")(c.infer(c.qbinary_shape))
rule(MS + "q_linear_global_average_pool")(c.infer(c.qgap_shape))
rule(MS + "q_linear_average_pool")(c.infer(c.qavgpool_shape))
rule(MS + "q_linear_concat")(c.infer(c.qconcat_shape))
