//! Torch library models.
