//! `SHP1xx`: definite tensor shape errors.
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
