//! The renaming of a summarised call's fresh shape variables and symbols in a replay
//! (`engine::memo`).

/// The shape variables or the symbols a summarised call created (`from .. from + count`, in
/// the first call's numbering) and where a replay puts them (`to ..`, past every one made
/// since): a second run of the call would have made as many, in the same order, from the
/// interpreter's counter. The first `keep` stay as they are: the refinements of variables from
/// before the call, which a second run would find in the caches (`Summary::kept`). Symbols
/// keep their order (those kept are below every one made since), so renamed polynomials stay
/// sorted (`Poly::rename_syms`).
#[derive(Clone, Copy, Default)]
pub struct Shift {
    pub(super) from: u32,
    pub(super) count: u32,
    pub(super) keep: u32,
    pub(super) to: u32,
}

impl Shift {
    pub(super) fn is_identity(&self) -> bool {
        self.count <= self.keep || self.from + self.keep == self.to
    }
    /// Whether `x` is one of the call's fresh ones, which a replay renames.
    pub(super) fn moves(&self, x: u32) -> bool {
        !self.is_identity() && x >= self.from + self.keep && x < self.from + self.count
    }
    pub(super) fn map(&self, x: u32) -> u32 {
        if self.moves(x) { x - self.from - self.keep + self.to } else { x }
    }
}
