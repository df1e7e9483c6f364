//! The call-stack context a summarised call's outcomes depend on. A check about a tensor the
//! caller handed in reports where it entered the user's code (`ModelCtx::entry_sites`): the
//! call of the checked file that handed it on, which may be the summarised call itself or one
//! around it. Such an outcome's site is a span of the stack at the call, so the summary is
//! replayed only under the same spans from that depth down to the call (`matches`); a replay
//! elsewhere would record a passing check at a site the program there never reached.

use std::rc::Rc;

use crate::ir::Span;

/// The spans of the call stack from index `from` (the shallowest an entry site was taken
/// from) down to the call's own span, outermost first.
#[derive(Clone, Debug)]
pub struct Context {
    pub(super) from: usize,
    spans: Rc<[Span]>,
}

impl Context {
    /// The context of a call at `span` under the stack `calls` (the call's own span not yet
    /// on it), when the shallowest entry site its run took is at index `from` of the stack
    /// with the call on it; `None` when every one was inside the call.
    pub fn of(calls: &[Span], span: Span, from: usize) -> Option<Context> {
        (from <= calls.len()).then(|| Context { from, spans: calls[from..].iter().copied().chain([span]).collect() })
    }

    /// Whether a call at `span` under `calls` has the same spans at the same depths.
    pub fn matches(&self, calls: &[Span], span: Span) -> bool {
        calls.len() + 1 == self.from + self.spans.len() && calls[self.from..].iter().chain([&span]).eq(self.spans.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FileId;

    fn at(start: u32) -> Span {
        Span { file: FileId::MAIN, start, end: start + 1 }
    }

    #[test]
    fn a_context_matches_the_same_spans_at_the_same_depths_only() {
        // entry site at index 1 of [10, 20] + the call at 30
        let c = Context::of(&[at(10), at(20)], at(30), 1).unwrap();
        assert!(c.matches(&[at(10), at(20)], at(30)));
        assert!(c.matches(&[at(99), at(20)], at(30)), "spans above the entry site do not matter");
        assert!(!c.matches(&[at(10), at(21)], at(30)), "another call site on the way");
        assert!(!c.matches(&[at(10), at(20)], at(31)), "the call from elsewhere");
        assert!(!c.matches(&[at(5), at(10), at(20)], at(30)), "another depth");
        // the call's own span as the entry site
        let own = Context::of(&[at(10)], at(30), 1).unwrap();
        assert!(own.matches(&[at(77)], at(30)) && !own.matches(&[at(77)], at(31)));
        assert!(Context::of(&[at(10)], at(30), 2).is_none(), "entry sites inside the call");
    }
}
