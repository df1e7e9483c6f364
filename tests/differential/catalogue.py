"""The precondition catalogue: the error families torch raises for the APIs we model (issue 9, item 3).

How it was mined (`mine_catalogue.py`, run with torch's own install):
- Python-level checks: every `raise E(msg)` and `torch._check*(cond, lambda: msg)` of
  torch/nn/functional.py, torch/functional.py, torch/nn/_reduction.py and torch/nn/modules/*.py,
  listed with `python tests/differential/mine_catalogue.py [func]`; each family here names the
  raising function (`origin`, `nn/functional.py:interpolate`) and one literal piece of its message
  template (`mined`).
- C++ checks: no C++ sources ship in the wheel; a family's `mined` text is one literal piece of a
  `TORCH_CHECK` message, found in torch/lib/libtorch_cpu.so
  (`python tests/differential/mine_catalogue.py --binary "<text>"` shows the string around it).
  The C++ families were chosen from the errors the differential cases make torch raise
  (`Tally.unclassified` lists the ones no family matches) and from the core ops of the issue.
- `CPython:` families are errors of the interpreter itself that our APIs lead to (unpacking the
  pieces of chunk/split), found in the interpreter's binary.
`tests/test_catalogue.py` proves every `mined` text occurs where its origin says (mined, not
invented), and that every family is provoked by the differential suite.

A family applies to the spec APIs in `apis` (fnmatch patterns: `nn.Conv*`, `*`); a container or
model (`nn.Sequential`, torchvision) can raise anything its layers raise, so every family applies
to it. A torch error is classified (`classify`) as the first family of the API whose `regex`
(default: the escaped `mined` text) matches the message, so specific families come before generic
ones.

To regenerate after a torch upgrade: run the miner, compare its listing of the origins below
(a message that changed fails test_catalogue), and run the differential suite: its
"unclassified errors" list names the errors torch raises that no family matches.

Out of scope (`OUT_OF_SCOPE`, each with its reason): dtype and device families (a later issue:
the core does not track dtypes as preconditions), messages that are internal to a backend, and
the Python-level raises of APIs we do not model (fractional pooling, unpooling, grid_sample,
affine_grid, local_response_norm, the lazy modules, SyncBatchNorm, adaptive log-softmax,
linear_cross_entropy, the containers' indexing and the multi-margin/gaussian/poisson losses).
"""
from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re

FN = "nn/functional.py"
TF = "functional.py"
M = "nn/modules/"
CPP = "C++"
CPY = "CPython"


@dataclasses.dataclass(frozen=True)
class Family:
    id: str  # `api.precondition`
    apis: tuple[str, ...]  # spec api names, fnmatch patterns
    origin: str  # `nn/functional.py:interpolate`, `nn/modules/conv.py:_ConvNd.__init__`, C++, CPython
    mined: str  # a literal piece of torch's message, as it occurs in the origin
    regex: str | None = None  # matches torch's message; default: the escaped `mined` text

    @property
    def pattern(self) -> re.Pattern:
        return re.compile(self.regex or re.escape(self.mined.removeprefix("CPython:")), re.S)

    @property
    def kind(self) -> str:
        return "python" if self.origin not in (CPP, CPY) else self.origin.lower()

    def applies(self, api: str | None) -> bool:
        return api is None or is_container(api) or any(fnmatch.fnmatchcase(api, p) for p in self.apis)


def is_container(api: str) -> bool:
    return api in ("nn.Sequential", "nn.ModuleList", "nn.ModuleDict", "nn.DataParallel") or api.startswith("torchvision.")


def _f(fid: str, apis: str, origin: str, mined: str, regex: str | None = None) -> Family:
    return Family(fid, tuple(apis.split()), origin, mined, regex)


# API groups (spec names)
UPSAMPLE = "F.interpolate F.upsample nn.Upsample nn.UpsamplingNearest2d nn.UpsamplingBilinear2d"
DROPOUT = "nn.Dropout nn.Dropout1d nn.Dropout2d nn.Dropout3d nn.AlphaDropout F.dropout F.dropout1d F.dropout2d F.dropout3d F.alpha_dropout F.feature_alpha_dropout torch.dropout"
BN = "nn.BatchNorm1d nn.BatchNorm2d nn.BatchNorm3d F.batch_norm"
IN = "nn.InstanceNorm1d nn.InstanceNorm2d nn.InstanceNorm3d F.instance_norm"
MHA = "nn.MultiheadAttention nn.Transformer nn.TransformerEncoder nn.TransformerEncoderLayer nn.TransformerDecoder nn.TransformerDecoderLayer"
TRANSFORMER = "nn.Transformer nn.TransformerEncoder nn.TransformerEncoderLayer nn.TransformerDecoder nn.TransformerDecoderLayer"
RNN = "nn.RNN nn.LSTM nn.GRU"
PACKED = "torch.nn.utils.rnn.*"  # (their specs call the recurrent layers on packed batches)
CELLS = "nn.RNNCell nn.LSTMCell nn.GRUCell"
CONV = "nn.Conv1d nn.Conv2d nn.Conv3d nn.ConvTranspose1d nn.ConvTranspose2d nn.ConvTranspose3d F.conv1d F.conv2d F.conv3d F.conv_transpose1d F.conv_transpose2d F.conv_transpose3d"
CONV_MOD = "nn.Conv1d nn.Conv2d nn.Conv3d nn.ConvTranspose1d nn.ConvTranspose2d nn.ConvTranspose3d"
CONVT = "nn.ConvTranspose1d nn.ConvTranspose2d nn.ConvTranspose3d"
POOL = "nn.MaxPool* nn.AvgPool* F.max_pool* F.avg_pool*"
ADAPTIVE = "nn.Adaptive* F.adaptive_*"
LOSSES = "nn.*Loss F.cross_entropy F.nll_loss F.binary_cross_entropy F.binary_cross_entropy_with_logits F.soft_margin_loss F.mse_loss F.l1_loss F.smooth_l1_loss F.huber_loss F.kl_div F.cosine_embedding_loss F.margin_ranking_loss F.triplet_margin_loss F.ctc_loss"
NLL = "nn.CrossEntropyLoss nn.NLLLoss F.cross_entropy F.nll_loss"
PADS = "F.pad nn.ZeroPad* nn.ConstantPad* nn.ReflectionPad* nn.ReplicationPad* nn.CircularPad*"
FFT = "torch.fft.* torch.stft Tensor.stft"
WINDOWS = "torch.*_window"
EMB = "nn.Embedding F.embedding"
PIXEL = "nn.PixelShuffle nn.PixelUnshuffle F.pixel_shuffle F.pixel_unshuffle"
SPLITS = "torch.chunk Tensor.chunk torch.split Tensor.split torch.unbind Tensor.unbind torch.tensor_split Tensor.tensor_split"
ANY = "*"

FAMILIES: list[Family] = [
    # ---- Python-level: torch/nn/functional.py, torch/functional.py, torch/nn/_reduction.py
    _f("interpolate.mode_rank", UPSAMPLE, FN + ":interpolate", "but linear mode needs 3D input", r"Got \dD input, but \w+ mode needs \dD input"),
    _f("interpolate.input_rank", UPSAMPLE, FN + ":interpolate", "Input Error: Only 3D, 4D and 5D input Tensors supported"),
    _f("interpolate.align_corners_mode", UPSAMPLE, FN + ":interpolate", "align_corners option can only be set with the interpolating modes"),
    _f("interpolate.size_and_scale", UPSAMPLE, FN + ":interpolate", "only one of size or scale_factor should be defined"),
    _f("interpolate.no_size", UPSAMPLE, FN + ":interpolate", "either size or scale_factor should be defined"),
    _f("interpolate.size_rank", UPSAMPLE, FN + ":interpolate", "Input and output must have the same number of spatial dimensions"),
    _f("interpolate.scale_rank", UPSAMPLE, FN + ":interpolate", "Input and scale_factor must have the same number of spatial dimensions"),
    _f("interpolate.recompute_with_size", UPSAMPLE, FN + ":interpolate", "recompute_scale_factor is not meaningful with an explicit size."),
    _f("interpolate.antialias", UPSAMPLE, FN + ":interpolate", "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes"),
    _f("dropout.p_range", DROPOUT, FN + ":dropout", "dropout probability has to be between 0 and 1"),
    _f("dropout1d.rank", "nn.Dropout1d F.dropout1d", FN + ":dropout1d", "dropout1d: Expected 2D or 3D input, but received a"),
    _f("glu.scalar", "nn.GLU F.glu", FN + ":glu", "glu does not support scalars because halving size must be even"),
    _f("hardtanh.min_max", "F.hardtanh F.hardtanh_", FN + ":hardtanh", "min_val cannot be greater than max_val"),
    _f("embedding.padding_idx", EMB, FN + ":embedding", "Padding_idx must be within num_embeddings"),
    _f("embedding_bag.weight_rank", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "weight has to be a 2D Tensor, but got Tensor of dimension"),
    _f("embedding_bag.input_rank", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "input has to be 1D or 2D Tensor, but got Tensor of dimension"),
    _f("embedding_bag.offsets_2d", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "if input is 2D, then offsets has to be None"),
    _f("embedding_bag.offsets_rank", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "offsets has to be a 1D Tensor"),
    _f("embedding_bag.per_sample_weights", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "then it must have the same shape as the input"),
    _f("embedding_bag.mode", "nn.EmbeddingBag F.embedding_bag", FN + ":embedding_bag", "mode has to be one of sum, mean or max"),
    _f("batch_norm.one_value", BN + " nn.GroupNorm F.group_norm", FN + ":_verify_batch_size", "Expected more than 1 value per channel when training"),
    _f("batch_norm.eps", BN, FN + ":batch_norm", "batch_norm eps must be"),
    _f("instance_norm.spatial", IN, FN + ":_verify_spatial_size", "Expected more than 1 spatial element when training"),
    _f("group_norm.rank", "nn.GroupNorm F.group_norm", FN + ":group_norm", "Expected at least 2 dimensions for input tensor but received"),
    _f("loss.reduction", LOSSES, "nn/_reduction.py:get_enum", "is not a valid value for reduction"),
    _f("loss.reduction_weighted", "F.mse_loss F.l1_loss F.huber_loss", FN + ":mse_loss", "Invalid reduction mode: "),
    _f("loss.weight_size", "F.mse_loss F.l1_loss F.huber_loss", FN + ":mse_loss", "Weights and input must have the same size."),
    _f("bce.target_size", "nn.BCELoss F.binary_cross_entropy", FN + ":binary_cross_entropy", "that is different to the input size"),
    _f("bce_logits.target_size", "nn.BCEWithLogitsLoss F.binary_cross_entropy_with_logits", FN + ":binary_cross_entropy_with_logits", "must be the same as input size"),
    _f("margin_ranking.rank", "nn.MarginRankingLoss F.margin_ranking_loss", FN + ":margin_ranking_loss", "All input tensors should have same dimension but got sizes"),
    _f("triplet.rank", "nn.TripletMarginLoss F.triplet_margin_loss", FN + ":triplet_margin_with_distance_loss", "The anchor, positive, and negative tensors are expected to have the same number of dimensions"),
    _f("triplet.margin", "F.triplet_margin_loss", FN + ":triplet_margin_loss", "margin must be greater than 0, got"),
    _f("mha.embed_dim", MHA, FN + ":multi_head_attention_forward", "was expecting embedding dimension of"),
    _f("mha.key_value_batch", MHA, FN + ":multi_head_attention_forward", "do not match value's"),
    _f("mha.key_value_shape", MHA, FN + ":multi_head_attention_forward", "does not match value shape"),
    _f("mha.attn_mask_2d", MHA, FN + ":multi_head_attention_forward", "The shape of the 2D attn_mask is"),
    _f("mha.attn_mask_3d", MHA, FN + ":multi_head_attention_forward", "The shape of the 3D attn_mask is"),
    _f("mha.key_padding_batch", MHA, FN + ":_check_key_padding_mask", "Expected key_padded_mask.shape[0] to be"),
    _f("mha.key_padding_len", MHA, FN + ":_check_key_padding_mask", "Expected key_padded_mask.shape[1] to be"),
    _f("mha.key_padding_rank", MHA, FN + ":_mha_shape_check", "expected `key_padding_mask` to be `None` or"),
    _f("mha.key_rank", MHA, FN + ":_mha_shape_check", "expected `key` and `value` to be"),
    _f("mha.attn_mask_rank", MHA, FN + ":_mha_shape_check", "expected `attn_mask` to be `None`, 2-D or 3-D"),
    _f("mha.query_rank", MHA, FN + ":_mha_shape_check", "query should be unbatched 2D or batched 3D tensor"),
    _f("mha.kv_proj", MHA, FN + ":_in_projection", "weights shape of"),
    _f("einsum.operands", "torch.einsum", TF + ":einsum", "must specify the equation string and at least one operand"),
    _f("stft.align_to_window", "torch.stft Tensor.stft", TF + ":stft", "stft align_to_window should only be set when center = false"),
    # ---- Python-level: torch/nn/modules/*.py
    _f("hardtanh.module_min_max", "nn.Hardtanh", M + "activation.py:Hardtanh.__init__", "must be greater than min_val"),
    _f("mha.embed_dim_heads", MHA, M + "activation.py:MultiheadAttention.__init__", "embed_dim must be divisible by num_heads"),
    _f("mha.positive", MHA, M + "activation.py:MultiheadAttention.__init__", "embed_dim and num_heads must be greater than 0"),
    _f("batchnorm1d.rank", "nn.BatchNorm1d", M + "batchnorm.py:BatchNorm1d._check_input_dim", "expected 2D or 3D input (got"),
    _f("batchnorm2d.rank", "nn.BatchNorm2d", M + "batchnorm.py:BatchNorm2d._check_input_dim", "expected 4D input (got"),
    _f("batchnorm3d.rank", "nn.BatchNorm3d", M + "batchnorm.py:BatchNorm3d._check_input_dim", "expected 5D input (got"),
    _f("instancenorm.rank", "nn.InstanceNorm*", M + "instancenorm.py:InstanceNorm2d._check_input_dim", "D input (got", r"expected \dD or \dD input \(got"),
    _f("instancenorm.num_features", "nn.InstanceNorm*", M + "instancenorm.py:_InstanceNorm.forward", "to match num_features"),
    _f("circularpad.rank", "nn.CircularPad*", M + "padding.py:CircularPad2d._check_input_dim", "D input (got", r"expected \dD or \dD input \(got"),
    _f("conv.groups_positive", CONV_MOD, M + "conv.py:_ConvNd.__init__", "groups must be a positive integer"),
    _f("conv.in_channels_groups", CONV_MOD, M + "conv.py:_ConvNd.__init__", "in_channels must be divisible by groups"),
    _f("conv.out_channels_groups", CONV_MOD, M + "conv.py:_ConvNd.__init__", "out_channels must be divisible by groups"),
    _f("conv.padding_string", CONV_MOD, M + "conv.py:_ConvNd.__init__", "Invalid padding string"),
    _f("conv.same_strided", CONV_MOD + " F.conv1d F.conv2d F.conv3d", M + "conv.py:_ConvNd.__init__", "padding='same' is not supported for strided convolutions"),
    _f("conv.padding_mode", CONV_MOD, M + "conv.py:_ConvNd.__init__", "padding_mode must be one of"),
    _f("convtranspose.output_size_range", CONVT, M + "conv.py:_ConvTransposeNd._output_padding", "requested an output size of"),
    _f("convtranspose.output_size_len", CONVT, M + "conv.py:_ConvTransposeNd._output_padding", "output_size must have"),
    _f("convtranspose.padding_mode", CONVT, M + "conv.py:_ConvTransposeNd.__init__", "padding mode is supported for"),
    _f("adaptive.none_size_rank", ADAPTIVE, M + "utils.py:_list_with_default", "Input dimension should be at least"),
    _f("groupnorm.divisible", "nn.GroupNorm", M + "normalization.py:GroupNorm.__init__", "must be divisible by num_groups ("),
    _f("rnn.input_rank", RNN, M + "rnn.py:RNN.forward", "Expected input to be 2D or 3D, got"),
    _f("rnn.input_size", RNN + " " + PACKED, M + "rnn.py:RNNBase.check_input", "input.size(-1) must be equal to input_size"),
    _f("rnn.hidden_size", RNN + " " + PACKED, M + "rnn.py:RNNBase.check_hidden_size", "Expected hidden size {}, got {}", r"Expected hidden(\[\d\])? size \("),
    _f("rnn.hx_rank", RNN, M + "rnn.py:RNN.forward", "hx should also be", r"hx (and cx )?should also be"),
    _f("rnn.proj_size", "nn.LSTM", M + "rnn.py:RNNBase.__init__", "proj_size has to be smaller than hidden_size"),
    _f("rnn.proj_size_other", "nn.RNN nn.GRU", M + "rnn.py:RNN.__init__", "proj_size argument is only supported for LSTM"),
    _f("rnn.dropout_range", RNN, M + "rnn.py:RNNBase.__init__", "dropout should be a number in range [0, 1]"),
    _f("rnn.positive_sizes", RNN, M + "rnn.py:RNNBase.__init__", "must be greater than zero", r"(input_size|hidden_size|num_layers) must be greater than zero"),
    _f("rnn.nonlinearity", "nn.RNN nn.RNNCell", M + "rnn.py:RNN.__init__", "Unknown nonlinearity", r"Unknown nonlinearity"),
    _f("rnncell.input_rank", CELLS, M + "rnn.py:RNNCell.forward", "Expected input to be 1D or 2D, got"),
    _f("rnncell.hidden_rank", CELLS, M + "rnn.py:RNNCell.forward", "Expected hidden to be 1D or 2D, got", r"Expected (hidden|hx\[\d\]) to be 1D or 2D"),
    _f("transformer.batch", "nn.Transformer", M + "transformer.py:Transformer.forward", "the batch number of src and tgt must be equal"),
    _f("transformer.d_model", "nn.Transformer", M + "transformer.py:Transformer.forward", "the feature number of src and tgt must be equal to d_model"),
    _f("transformer.activation", TRANSFORMER, M + "transformer.py:_get_activation_fn", "activation should be relu/gelu, not"),
    _f("triplet.module_margin", "nn.TripletMarginLoss", M + "loss.py:TripletMarginLoss.__init__", "expected margin to be greater than 0"),
    # ---- C++ checks of the modelled ops (libtorch_cpu.so): specific families first
    _f("embedding.index_range", EMB + " torch.index_select Tensor.index_select", CPP, "index out of range in self"),
    _f("embedding_bag.index_range", "nn.EmbeddingBag F.embedding_bag", CPP, "which is not in the valid range"),
    _f("one_hot.class_range", "F.one_hot", CPP, "Class values must be smaller than num_classes."),
    _f("one_hot.negative", "F.one_hot", CPP, "Class values must be non-negative."),
    _f("nll.target_range", NLL, CPP, " is out of bounds.", r"^Target -?\d+ is out of bounds"),
    _f("nll.batch", NLL, CPP, "Expected input batch_size ("),
    _f("nll.class_weight", NLL, CPP, "weight tensor should be defined either for all"),
    _f("nll.target_rank", NLL + " nn.CosineEmbeddingLoss F.cosine_embedding_loss", CPP, "multi-target not supported"),
    _f("nll.spatial_target", NLL, CPP, "only batches of spatial targets supported"),
    _f("nll.spatial_size", NLL, CPP, "size mismatch (got input: "),
    _f("nll.target_size", NLL, CPP, "Expected target size "),
    _f("cosine_embedding.target_rank", "nn.CosineEmbeddingLoss F.cosine_embedding_loss", CPP, "D target tensor expects ", r"\dD target tensor expects \dD input tensors"),
    _f("ctc.lengths", "nn.CTCLoss F.ctc_loss", CPP, "input_lengths must be of size batch_size"),
    _f("ctc.target_size", "nn.CTCLoss F.ctc_loss", CPP, "ctc_loss_allocate_outputs"),
    _f("matmul.mat1_mat2", ANY, CPP, "mat1 and mat2 shapes cannot be multiplied"),
    _f("matmul.bmm_batch", ANY, CPP, "Expected size for first two dimensions of batch2 tensor to be: "),
    _f("matmul.bmm_rank", ANY, CPP, "batch1 must be a 3D tensor", r"batch[12] must be a 3D tensor"),
    _f("matmul.mv", ANY, CPP, "vector + matrix @ vector expected, got "),
    _f("matmul.mv_size", ANY, CPP, "size mismatch, got input ("),
    _f("matmul.matrix", ANY, CPP, "must be a matrix", r"^(self|mat[12]) must be a matrix"),
    _f("matmul.dot_rank", ANY, CPP, "1D tensors expected, but got "),
    _f("matmul.dot_size", ANY, CPP, "inconsistent tensor size, expected tensor ["),
    _f("matmul.outer", ANY, CPP, ": Expected 1-D argument ", r"outer: Expected 1-D argument"),
    _f("matmul.at_least_1d", ANY, CPP, "both arguments to matmul need to be at least 1D"),
    _f("bilinear.size", "nn.Bilinear F.bilinear", CPP, "bilinear(): input1 size does not match weight size", r"bilinear\(\): input\d size does not match weight size"),
    _f("bilinear.batch", "nn.Bilinear F.bilinear", CPP, "bilinear(): input batch dimensions do not match"),
    _f("einsum.subscripts", "torch.einsum", CPP, "einsum(): the number of subscripts in the equation ("),
    _f("einsum.broadcast", "torch.einsum", CPP, "which does not broadcast with previously seen size"),
    _f("conv.channels", ANY, CPP, " channels, but got "),
    _f("conv.input_rank", ANY, CPP, "(batched) input to "),
    _f("conv.kernel_too_large", ANY, CPP, "Calculated padded input size per channel: "),
    _f("conv.weight_at_least", ANY, CPP, ", expected weight to be at least "),
    _f("conv.weight_divisible", ANY, CPP, ", expected weight to be divisible by "),
    _f("conv.output_padding", ANY, CPP, "output padding must be smaller than either stride or dilation"),
    _f("pool.output_too_small", ANY, CPP, "Output size is too small"),
    _f("pool.pad_half_kernel", ANY, CPP, "pad should be at most half of effective kernel size"),
    _f("pool.pad_half_kernel_avg", ANY, CPP, "pad should be smaller than or equal to half of kernel size"),
    _f("pool.max_padding", ANY, CPP, "padding should be at most half of kernel size"),
    _f("pool.kernel_larger_3d", ANY, CPP, "input image ", r"input image \(T: \d+ H: \d+ W: \d+\) smaller than kernel size"),
    _f("pool.input_rank", ANY, CPP, "(batch mode) tensor", r"\(batch mode\) tensor"),
    _f("pool.dim_range", ANY, CPP, "-dimensional tensor for ", r"Expected \d+ to \d+ dimensions, but got \d+-dimensional tensor for argument"),
    _f("pool.nonpositive", ANY, CPP, "should be greater than zero, but got ", r"(kernel size|stride|dilation) should be greater than zero"),
    _f("pool.invalid_output", ANY, CPP, "Invalid computed output size: "),
    _f("adaptive.rank", ANY, CPP, "(): Expected 3D or 4D tensor, but got", r"\(\): Expected \dD or \dD tensor, but got"),
    _f("adaptive.sizes_positive", ANY, CPP, "Input and output sizes should be greater than 0"),
    _f("fold.blocks", "nn.Fold F.fold nn.Unfold F.unfold", CPP, "calculated shape of the array of sliding blocks"),
    _f("fold.num_blocks", "nn.Fold F.fold", CPP, "to match the calculated number of "),
    _f("fold.kernel_divisible", "nn.Fold F.fold", CPP, "to be divisible by the product of kernel_size"),
    _f("fold.param_len", "nn.Fold F.fold nn.Unfold F.unfold", CPP, "It is expected ", r"It is expected \w+ equals to \d+"),
    _f("layer_norm.shape", "nn.LayerNorm F.layer_norm nn.RMSNorm nn.Transformer*", CPP, "Given normalized_shape="),
    _f("group_norm.channels", "nn.GroupNorm F.group_norm", CPP, "Expected number of channels in input to be divisible by "),
    _f("group_norm.weight", "nn.GroupNorm F.group_norm", CPP, "Expected weight to be a vector of size equal to the number of "),
    _f("batch_norm.running_stats", BN + " " + IN, CPP, " should contain ", r"running_(mean|var) should contain \d+ elements not \d+"),
    _f("prelu.channels", "nn.PReLU", CPP, "Mismatch of parameter numbers and input channel size"),
    _f("glu.halving", "nn.GLU F.glu", CPP, "Halving dimension must be even"),
    _f("feature_dropout.rank", DROPOUT, CPP, "Feature dropout requires at least 2 dimensions in the input"),
    _f("pixel_shuffle.channels", PIXEL, CPP, "dimension to be divisible by the square of upscale_factor"),
    _f("pixel_shuffle.rank", PIXEL, CPP, "expects input to have at least 3 dimensions"),
    _f("pixel_unshuffle.spatial", PIXEL, CPP, " to be divisible by downscale_factor", r"expects (height|width) to be divisible by downscale_factor"),
    _f("pad.divisible", PADS, CPP, "Padding length must be divisible by 2"),
    _f("pad.too_long", PADS, CPP, "Padding length should be less than or equal to two times the input dimension"),
    _f("pad.reflect_size", PADS + " torch.stft Tensor.stft", CPP, "Padding size should be less than the corresponding input dimension"),
    _f("pad.circular_wrap", PADS, CPP, "Padding value causes wrapping around more than once."),
    _f("pad.mode_rank", PADS, CPP, "is not supported for ", r"Padding size \d+ is not supported for \d+D input tensor"),
    _f("rnn.input_size_cpp", CELLS + " " + RNN, CPP, "input has inconsistent input_size: got "),
    _f("rnn.hidden_size_cpp", CELLS + " " + RNN, CPP, " has inconsistent hidden_size: got ", r"hidden\d has inconsistent hidden_size"),
    _f("rnn.hidden_batch", CELLS + " " + RNN, CPP, " batch size ", r"Input batch size \d+ doesn't match hidden\d batch size"),
    _f("cat.sizes", ANY, CPP, "Sizes of tensors must match except in dimension "),
    _f("cat.rank", ANY, CPP, "Tensors must have same number of dimensions: got "),
    _f("cat.zero_dim", ANY, CPP, "zero-dimensional tensor (at position "),
    _f("cat.empty", ANY, CPP, "expected a non-empty list of Tensors"),
    _f("stack.sizes", ANY, CPP, "stack expects each tensor to be equal size, but got "),
    _f("stack.empty", ANY, CPP, "stack expects a non-empty TensorList"),
    _f("view.numel", ANY, CPP, "' is invalid for input of size ", r"shape '\[[-\d, ]*\]' is invalid for input of size"),
    _f("view.one_inferred", ANY, CPP, "only one dimension can be inferred"),
    _f("view.negative", ANY, CPP, "Trying to create tensor with negative dimension "),
    _f("view.stride", ANY, CPP, "view size is not compatible with input tensor's size and stride"),
    _f("unflatten.product", ANY, CPP, "don't multiply up to the size of dim "),
    _f("flatten.order", ANY, CPP, "start_dim cannot come after end_dim"),
    _f("permute.duplicate", ANY, CPP, "duplicate dims are not allowed."),
    _f("permute.length", ANY, CPP, "does not match the length of the desired ordering of dimensions"),
    _f("dims.repeated", ANY, CPP, " appears multiple times in the list of dims", r"dim -?\d+ appears multiple times in the list of dims"),
    _f("fft.dims_unique", ANY, CPP, "FFT dims must be unique"),
    _f("movedim.repeated", ANY, CPP, "movedim: repeated dim in `", r"movedim: repeated dim in `(source|destination)`"),
    _f("movedim.length", ANY, CPP, "movedim: Invalid source or destination dims: source ("),
    _f("roll.align", ANY, CPP, "shifts and dimensions must align. shifts: "),
    _f("roll.shifts_required", ANY, CPP, "`shifts` required"),
    _f("expand.leading", ANY, CPP, "isn't allowed in a leading, non-existing dimension "),
    _f("expand.size", ANY, CPP, "The expanded size of the tensor ("),
    _f("expand.count", ANY, CPP, "the number of sizes provided ("),
    _f("repeat.rank", ANY, CPP, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    _f("repeat_interleave.size", ANY, CPP, "repeats must have the same size as input along dim"),
    _f("split.sizes", ANY, CPP, "split_with_sizes expects split_sizes to sum exactly to "),
    _f("chunk.positive", ANY, CPP, "chunk expects `chunks` to be greater than 0"),
    _f("split.nonnegative", ANY, CPP, "split expects split_size be non-negative"),
    _f("narrow.start", ANY, CPP, "start out of range (expected to be in range of ["),
    _f("narrow.length", ANY, CPP, ") exceeds dimension size ("),
    _f("select.index", ANY, CPP, "select(): index "),
    _f("index.out_of_bounds", ANY, CPP, " is out of bounds for dimension ", r"index -?\d+ is out of bounds for dimension \d+ with size \d+"),
    _f("index.too_many", ANY, CPP, "too many indices for tensor of dimension "),
    _f("index_select.vector", ANY, CPP, "Index is supposed to be a vector"),
    _f("gather.rank", ANY, CPP, "Index tensor must have the same number of dimensions as input tensor"),
    _f("scatter.rank", ANY, CPP, "Index tensor must have the same number of dimensions as self tensor"),
    _f("scatter.sizes", ANY, CPP, "to be no larger than self "),
    _f("topk.k_range", ANY, CPP, "selected index k out of range"),
    _f("kthvalue.k_range", ANY, CPP, "selected number k out of range for dimension "),
    _f("tril.rank", ANY, CPP, ": input tensor must have at least 2 dimensions", r"^(tril|triu): input tensor must have at least 2 dimensions"),
    _f("t.rank", ANY, CPP, " expects a tensor with <= 2 dimensions, but self is ", r"t\(\) expects a tensor with <= 2 dimensions"),
    _f("mT.rank", ANY, CPP, "is only supported on matrices or batches of matrices. Got "),
    _f("diag.rank", ANY, CPP, "diag(): Supports 1D or 2D tensors. Got "),
    _f("trace.rank", ANY, CPP, "trace: expected a matrix, but got tensor with dim "),
    _f("tensor_unfold.size", ANY, CPP, "maximum size for tensor at dimension "),
    _f("tensor_unfold.step", ANY, CPP, "but must be > 0", r"step is -?\d+ but must be > 0"),
    _f("tensor_unfold.size_negative", ANY, CPP, "but must be >= 0", r"size is -?\d+ but must be >= 0"),
    _f("broadcast.sizes", ANY, CPP, ") must match the size of tensor b (", r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at non-singleton dimension"),
    _f("broadcast.inplace", ANY, CPP, " doesn't match the broadcast shape "),
    _f("fft.points", FFT, CPP, "Invalid number of data points ("),
    _f("fft.norm", FFT, CPP, "Invalid normalization mode: "),
    _f("fft.no_axis", FFT, CPP, " must transform at least one axis"),
    _f("fft.dim_shape_len", FFT, CPP, "When given, dim and shape arguments must have the same length"),
    _f("fft.shape_rank", FFT, CPP, " values but input tensor only has ", r"Got shape with \d+ values but input tensor only has \d+ dimensions"),
    _f("stft.return_complex", "torch.stft Tensor.stft", CPP, "stft requires the return_complex parameter be given for real inputs"),
    _f("stft.n_fft", "torch.stft Tensor.stft", CPP, " < n_fft < ", r": expected 0 < n_fft < "),
    _f("stft.hop_length", "torch.stft Tensor.stft", CPP, "expected hop_length > 0, but got hop_length="),
    _f("stft.win_length", "torch.stft Tensor.stft", CPP, "expected 0 < win_length <= n_fft, but got win_length="),
    _f("stft.window_size", "torch.stft Tensor.stft", CPP, "expected a 1D window tensor of size equal to win_length="),
    _f("stft.input_rank", "torch.stft Tensor.stft", CPP, "expected a 1D or 2D tensor"),
    _f("window.length", WINDOWS, CPP, " requires non-negative window_length, got window_length="),
    _f("norm.matrix_dims", "torch.norm Tensor.norm", CPP, "linalg.matrix_norm: dim must be a 2-tuple. Got "),
    _f("arange.step_sign", "torch.arange", CPP, "upper bound and lower bound inconsistent with step sign"),
    _f("linspace.steps", "torch.linspace torch.logspace", CPP, "number of steps must be non-negative"),
    _f("tensor.ragged", "torch.tensor torch.as_tensor", CPP, "expected sequence of length "),
    _f("numel.overflow", ANY, CPP, "numel: integer multiplication overflow"),
    _f("dim.no_dims", ANY, CPP, " but tensor has no dimensions", r"Dimension specified as -?\d+ but tensor has no dimensions"),
    _f("dim.out_of_range", ANY, CPP, "Dimension out of range (expected to be in range of ["),
    _f("flip.rank", "torch.flipud torch.fliplr Tensor.flipud Tensor.fliplr", CPP, "Input must be >= "),
    _f("rms_norm.rank", "nn.RMSNorm", CPP, "Input tensor must have at least "),
    _f("unfold.padding_negative", "nn.Unfold F.unfold nn.Fold F.fold", CPP, "padding should be non-negative, but got "),
    _f("tensor.not_sequence", "torch.tensor torch.as_tensor", CPP, "not a sequence"),
    _f("packed.lengths_batch", PACKED, CPP, "Expected `len(lengths)` to be equal to batch_size, but got "),
    _f("tensor_dataset.sizes", "torch.utils.data.*", "utils/data/dataset.py:TensorDataset.__init__", "Size mismatch between tensors"),
    # ---- the interpreter: unpacking the pieces of chunk/split/unbind into another number of names
    _f("unpack.count", SPLITS, CPY, "CPython:not enough values to unpack", r"(not enough|too many) values to unpack"),
    _f("shape.index", "Tensor.shape Tensor.size", CPY, "CPython:tuple index out of range"),
]

# Mined errors deliberately left out of the catalogue, with the reason (a pattern of the message
# and its origin): they are no shape/size/rank/dim/value-range preconditions of an API we model.
OUT_OF_SCOPE: list[tuple[str, str, str]] = [
    ("result type .* can't be cast to the desired output type", CPP, "dtype promotion (a later issue: dtype families)"),
    ('not implemented for', CPP, "dtype support of a kernel (dtype families)"),
    ("one_hot is only applicable to index tensor of type LongTensor", CPP, "dtype (dtype families)"),
    ("expects floating point dtypes", CPP, "window dtype (dtype families)"),
    ("requires a floating point or complex dtype", CPP, "fftfreq dtype (dtype families)"),
    ("expects a real input tensor", CPP, "complex input of rfft/ihfft (dtype families)"),
    ("Only Tensors of floating point and complex dtype can require gradients", CPP, "dtype (dtype families)"),
    ("to have one of the following scalar types", CPP, "index dtype (dtype families)"),
    ("expected target dtype to be Long or Byte", CPP, "target dtype (dtype families)"),
    ("expected scalar type", CPP, "dtype (dtype families)"),
    ("only bool and floating types of", FN + ":_canonical_mask", "mask dtype (dtype families)"),
    ("Expected theta to have floating point type", FN + ":affine_grid", "dtype (dtype families); affine_grid is not modelled"),
    ("expected input tensor to be on GPU", M + "batchnorm.py:SyncBatchNorm.forward", "device (device families)"),
    ("could not construct a memory descriptor", CPP, "oneDNN internal (a backend detail, not a precondition)"),
    ("MKL FFT error", CPP, "MKL internal (a backend detail, not a precondition)"),
    ("received an invalid combination of arguments", CPP, "argument parsing (no overload): not a shape precondition"),
    ("is unexpectedly None", FN + ":interpolate", "internal assertions that user code cannot reach"),
    ("fractional_max_pool", FN + ":fractional_max_pool2d_with_indices", "API not modelled"),
    ("max_unpooling", FN + ":_unpool_output_size", "API not modelled"),
    ("grid_sample", FN + ":grid_sample", "API not modelled"),
    ("affine matrices", FN + ":affine_grid", "API not modelled"),
    ("Expected 3D or higher dimensionality", FN + ":local_response_norm", "API not modelled"),
    ("linear_cross_entropy", FN + ":linear_cross_entropy", "API not modelled"),
    ("var has negative entry", FN + ":gaussian_nll_loss", "API not modelled"),
    ("only p == 1 and p == 2 supported", FN + ":multi_margin_loss", "API not modelled"),
    ("cutoffs should be", M + "adaptive.py:AdaptiveLogSoftmaxWithLoss.__init__", "API not modelled"),
    ("must be an UninitializedParameter", M + "lazy.py", "lazy modules are not modelled"),
    ("SyncBatchNorm", M + "batchnorm.py:SyncBatchNorm.forward", "API not modelled"),
    ("is out of range", M + "container.py:Sequential._get_item_by_idx", "container indexing: not a tensor precondition"),
    ("Softmax2d: expected input to be 3D or 4D", M + "activation.py:Softmax2d.forward", "API not modelled"),
    ("tensordot expects", TF + ":tensordot", "API not modelled"),
    ("is not a valid value for compute_mode", TF + ":cdist", "API not modelled"),
    ("Lanczos mode", FN + ":interpolate", "lanczos mode is not modelled"),
    ("max mode does not support scaling the gradient", FN + ":embedding_bag", "a gradient option, not a shape"),
    ("If input is nested", FN + ":embedding_bag", "nested tensors are not modelled"),
    ("Need attn_mask if specifying the is_causal hint", FN + ":multi_head_attention_forward", "a mask option (is_causal), not a shape"),
    ("bias cannot be added to static", FN + ":multi_head_attention_forward", "static_k/static_v are not modelled"),
    ("use_separate_proj_weight is", FN + ":multi_head_attention_forward", "internal: the module always passes the weights"),
    ("should be of type", M + "rnn.py:RNNBase.__init__", "argument types (TypeError), not shapes"),
    ("input must have {} dimensions, got", M + "rnn.py:RNNBase.check_input", "unreachable from the modules' forward: the rank is checked first (RNN.forward)"),
    ("only valid string values are 'fro' and 'nuc'", TF + ":norm", "a string p reaches linalg first in the cases we model (\"Order .. not supported\"); not provoked"),
    ("is not a Module subclass", M + "module.py:Module.add_module", "a container built from a dict: an argument type, not a shape"),
    ("StopIteration", CPY, "an exhausted DataLoader iterator (drop_last): control flow, not a message"),
]


@functools.lru_cache(maxsize=None)
def families_of(api: str | None) -> tuple[Family, ...]:
    return tuple(f for f in FAMILIES if f.applies(api))


def classify(api: str | None, message: str) -> str | None:
    """The id of the first family of `api` whose pattern matches torch's message, or None."""
    for fam in families_of(api):
        if fam.pattern.search(message):
            return fam.id
    return None


def by_id() -> dict[str, Family]:
    return {f.id: f for f in FAMILIES}
