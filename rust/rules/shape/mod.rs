//! `SHP1xx`: definite tensor shape errors.
pub mod annotation_shape_mismatch;
pub mod broadcast_shape_mismatch;
pub mod concat_shape_mismatch;
pub mod dim_out_of_range;
pub mod index_out_of_range;
pub mod invalid_shape_argument;
pub mod layer_channel_mismatch;
pub mod layer_input_rank_mismatch;
pub mod loss_target_mismatch;
pub mod matmul_shape_mismatch;
pub mod output_size_too_small;
pub mod reshape_size_mismatch;
pub mod view_non_contiguous;

pub use annotation_shape_mismatch::AnnotationShapeMismatch;
pub use broadcast_shape_mismatch::BroadcastShapeMismatch;
pub use concat_shape_mismatch::ConcatShapeMismatch;
pub use dim_out_of_range::DimOutOfRange;
pub use index_out_of_range::IndexOutOfRange;
pub use invalid_shape_argument::InvalidShapeArgument;
pub use layer_channel_mismatch::LayerChannelMismatch;
pub use layer_input_rank_mismatch::LayerInputRankMismatch;
pub use loss_target_mismatch::LossTargetMismatch;
pub use matmul_shape_mismatch::MatmulShapeMismatch;
pub use output_size_too_small::OutputSizeTooSmall;
pub use reshape_size_mismatch::ReshapeSizeMismatch;
pub use view_non_contiguous::ViewNonContiguous;
