//! `SHP1xx`: definite tensor shape errors.
pub mod matmul_shape_mismatch;
