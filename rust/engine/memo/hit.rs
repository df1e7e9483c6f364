//! A matched summary's accessors (`Hit`): what a replay takes from the counters, the
//! label and the context it reads, the refinements it makes again.

use super::{Hit, Refined};

impl Hit {
    /// The work the call's first run took (`Interp::work`).
    pub fn work(&self) -> u64 {
        self.summary.work
    }

    /// How many shape variables the call created (a replay takes as many from the counter),
    /// but for those it keeps (`Shift::keep`).
    pub fn fresh_vars(&self) -> u32 {
        self.summary.fresh_vars.1 - self.summary.kept.0
    }

    /// The symbols the call created (a replay makes as many, with the same infos), but for
    /// those it keeps.
    pub fn fresh_syms(&self) -> &[crate::shape::SymInfo] {
        &self.summary.fresh_syms.1[self.summary.kept.1 as usize..]
    }

    /// Whether the call read the caller's assignment label (`Summary::label`).
    pub fn reads_label(&self) -> bool {
        self.summary.label.is_some()
    }

    /// The refinements the call made, renamed as `replay` renames its result (the same
    /// `next_var` and `next_sym`).
    pub fn refined(&self, next_var: u32, next_sym: u32) -> Vec<Refined> {
        let s = &self.summary;
        let (vars, syms) = (s.var_shift(next_var), s.sym_shift(next_sym));
        // (a refinement's key holds no variable that another stands for: those are pinned)
        s.refined.iter().map(|r| r.renamed(&|v| vars.map(v), &|x| syms.map(x))).collect()
    }

    /// The shallowest call-stack index the call's outcomes took an entry site from
    /// (`Context`): a replay reads the caller's context as the first run did.
    pub fn context_from(&self) -> Option<usize> {
        self.summary.context.as_ref().map(|c| c.from)
    }
}
