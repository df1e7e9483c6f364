//! Where a tensor dimension came from (`Dim::why`): the origin chain a message ends with
//! (`2304 = 64·6·6 from pool (line 9) flattened at line 16`) and that `--output-format full`,
//! hover and the editor's related information show whole.
//!
//! An origin names places by span; `models::origins` renders them only when a
//! message, a hover or a summary needs the text. Two origins are equal when they would render
//! the same text: the memo replays a call only for arguments whose dims agree on their origins
//! (`memo::Iso::value`), so a replayed message never names another caller's lines.

use std::rc::Rc;

use super::Dim;
use crate::ir::Span;
use crate::shape::Poly;

/// A dim's origin, shared by the dims that carry it.
pub type Why = Rc<Origin>;

/// How many steps back an origin chain reaches: an output of a layer keeps the origin of the
/// input dim it was computed from while the chain is shorter than this, and starts a new one
/// otherwise (bounded work and memory on deep models; the full form shows this many steps).
pub const MAX_DEPTH: u8 = 8;

/// At most this many parts make a merged origin (a product of more, or a concatenation of more
/// tensors, has none: a message line stays readable, and the work bounded on hostile input).
pub const MAX_PARTS: usize = 8;

#[derive(Debug)]
pub enum Origin {
    /// A size a layer or a data source fixes, as text: `out_channels of conv2 (line 8)`.
    Said(Rc<str>),
    /// A size written as an argument of the call `by` at `at` (`torch.randn(16, 3, 32, 32)`),
    /// the `pos`-th dim from the end of the tensor it made.
    Written { by: Rc<str>, at: Span, pos: u8 },
    /// Computed by the layer or op `by` called at `at`: the `pos`-th dim from the end of its
    /// output, from the input dim `from` (when the chain is not too long).
    Output { by: Rc<str>, at: Span, pos: u8, from: Option<Dim>, depth: u8 },
    /// The product of `parts`, made one dim by `how` (`flattened`, `viewed`) at `at`, the
    /// `pos`-th dim from the end of the result; their sum when `how` is `concatenated`; with an
    /// empty `how`, a product a message shows (a tensor's element count), made nowhere.
    Merged { how: &'static str, at: Span, pos: u8, parts: Vec<Dim>, depth: u8 },
}

impl Origin {
    pub fn said(text: impl Into<Rc<str>>) -> Why {
        Rc::new(Origin::Said(text.into()))
    }

    /// The text of a `Said` origin (the data model's markers).
    pub fn said_text(&self) -> Option<&str> {
        match self {
            Origin::Said(t) => Some(t),
            _ => None,
        }
    }

    pub fn depth(&self) -> u8 {
        match self {
            Origin::Said(_) | Origin::Written { .. } => 1,
            Origin::Output { depth, .. } | Origin::Merged { depth, .. } => *depth,
        }
    }

    /// The output dim `pos` from the end of `by` called at `at`, computed from `from`.
    pub fn output(by: Rc<str>, at: Span, pos: usize, from: Option<&Dim>) -> Why {
        let from = from.filter(|d| d.v.is_some() && d.why.as_ref().is_some_and(|w| w.depth() < MAX_DEPTH)).cloned();
        let depth = from.as_ref().and_then(|d| d.why.as_ref()).map_or(1, |w| w.depth() + 1);
        Rc::new(Origin::Output { by, at, pos: pos.min(u8::MAX as usize) as u8, from, depth })
    }

    /// The product of `parts` made one dim at `at`; `None` when no part has an origin (nothing
    /// to tell beyond the product) or a part is not known.
    pub fn merged(how: &'static str, at: Span, pos: usize, parts: &[Dim]) -> Option<Why> {
        if parts.len() < 2 || parts.len() > MAX_PARTS || parts.iter().any(|d| d.v.is_none()) || parts.iter().all(|d| d.why.is_none()) {
            return None;
        }
        let mut parts = parts.to_vec();
        for d in &mut parts {
            if d.why.as_ref().is_some_and(|w| w.depth() >= MAX_DEPTH) {
                d.why = None;
            }
        }
        let depth = 1 + parts.iter().filter_map(|d| d.why.as_ref()).map(|w| w.depth()).max().unwrap_or(0);
        Some(Rc::new(Origin::Merged { how, at, pos: pos.min(u8::MAX as usize) as u8, parts, depth }))
    }

    /// The same origin with the polynomials of its dims renamed (a replayed call summary).
    pub fn rename(&self, f: &dyn Fn(&Poly) -> Poly) -> Origin {
        let dim = |d: &Dim| Dim { v: d.v.as_ref().map(f), why: d.why.as_ref().map(|w| Rc::new(w.rename(f))) };
        match self {
            Origin::Said(t) => Origin::Said(t.clone()),
            Origin::Written { by, at, pos } => Origin::Written { by: by.clone(), at: *at, pos: *pos },
            Origin::Output { by, at, pos, from, depth } => Origin::Output { by: by.clone(), at: *at, pos: *pos, from: from.as_ref().map(dim), depth: *depth },
            Origin::Merged { how, at, pos, parts, depth } => Origin::Merged { how, at: *at, pos: *pos, parts: parts.iter().map(dim).collect(), depth: *depth },
        }
    }

    /// Whether renaming may change this origin (it holds a symbolic dim).
    pub fn symbolic(&self) -> bool {
        let dim = |d: &Dim| d.v.as_ref().is_some_and(|p| p.as_const().is_none()) || d.why.as_ref().is_some_and(|w| w.symbolic());
        match self {
            Origin::Said(_) | Origin::Written { .. } => false,
            Origin::Output { from, .. } => from.as_ref().is_some_and(dim),
            Origin::Merged { parts, .. } => parts.iter().any(dim),
        }
    }
}

/// Dims equal with their origins (what the text of a message shows of them).
fn same_dim(a: &Dim, b: &Dim) -> bool {
    a.v == b.v && a.why == b.why
}

impl PartialEq for Origin {
    fn eq(&self, o: &Origin) -> bool {
        use Origin::*;
        match (self, o) {
            (Said(a), Said(b)) => a == b,
            (Written { by: b1, at: a1, pos: p1 }, Written { by: b2, at: a2, pos: p2 }) => b1 == b2 && a1 == a2 && p1 == p2,
            (Output { by: b1, at: a1, pos: p1, from: f1, .. }, Output { by: b2, at: a2, pos: p2, from: f2, .. }) => {
                b1 == b2
                    && a1 == a2
                    && p1 == p2
                    && match (f1, f2) {
                        (Some(x), Some(y)) => same_dim(x, y),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (Merged { how: h1, at: a1, pos: p1, parts: x, .. }, Merged { how: h2, at: a2, pos: p2, parts: y, .. }) => {
                h1 == h2 && a1 == a2 && p1 == p2 && x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_dim(a, b))
            }
            _ => false,
        }
    }
}

impl Eq for Origin {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FileId;

    fn at(start: u32) -> Span {
        Span { file: FileId::MAIN, start, end: start + 1 }
    }

    fn written(v: i128, start: u32) -> Dim {
        Dim::known(Poly::constant(v), Some(Rc::new(Origin::Written { by: Rc::from("torch.randn"), at: at(start), pos: 1 })))
    }

    #[test]
    fn a_chain_reaches_max_depth_steps_back_then_starts_anew() {
        let mut d = written(64, 0);
        for i in 0..20 {
            d = Dim::known(Poly::constant(64), Some(Origin::output(Rc::from("conv"), at(10 + i), 1, Some(&d))));
            assert!(d.why.as_ref().unwrap().depth() <= MAX_DEPTH, "step {i}");
        }
        // the eighth output keeps no input: its chain starts again
        let depths: Vec<u8> = {
            let mut d = written(64, 0);
            (0..10)
                .map(|i| {
                    d = Dim::known(Poly::constant(64), Some(Origin::output(Rc::from("conv"), at(10 + i), 1, Some(&d))));
                    d.why.as_ref().unwrap().depth()
                })
                .collect()
        };
        assert_eq!(depths, vec![2, 3, 4, 5, 6, 7, 8, 1, 2, 3]);
    }

    #[test]
    fn a_product_of_many_parts_or_of_parts_without_origins_has_none() {
        let many: Vec<Dim> = (0..=MAX_PARTS as u32).map(|i| written(2, i)).collect();
        assert!(Origin::merged("flattened", at(100), 1, &many).is_none());
        assert!(Origin::merged("flattened", at(100), 1, &many[..MAX_PARTS]).is_some());
        assert!(Origin::merged("flattened", at(100), 1, &[Dim::konst(4), Dim::konst(5)]).is_none());
        // an unknown part: no product to tell
        assert!(Origin::merged("flattened", at(100), 1, &[written(4, 0), Dim::unknown()]).is_none());
    }

    #[test]
    fn origins_are_equal_when_their_text_would_be() {
        let a = Origin::output(Rc::from("pool"), at(5), 2, Some(&written(32, 0)));
        let b = Origin::output(Rc::from("pool"), at(5), 2, Some(&written(32, 0)));
        let other_input = Origin::output(Rc::from("pool"), at(5), 2, Some(&written(32, 1)));
        assert_eq!(a, b);
        assert_ne!(a, other_input);
        // a renaming reaches the dims inside
        let sym = Dim::known(Poly::constant(7), None);
        let m = Origin::merged("flattened", at(9), 1, &[written(3, 0), sym]).unwrap();
        assert!(!m.symbolic());
        let renamed = m.rename(&|p| p.add_const(1).unwrap());
        match renamed {
            Origin::Merged { parts, .. } => assert_eq!(parts.iter().map(|d| d.as_const()).collect::<Vec<_>>(), vec![Some(4), Some(8)]),
            o => panic!("{o:?}"),
        }
    }
}
