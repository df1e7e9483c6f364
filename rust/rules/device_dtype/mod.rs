//! `SHP2xx`: device and dtype errors.
pub mod device_mismatch;
pub mod dtype_mismatch;

pub use device_mismatch::DeviceMismatch;
pub use dtype_mismatch::DtypeMismatch;
