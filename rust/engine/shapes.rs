//! What an editor shows beside the findings, from the same analysis run:
//! - the tensors each span of the checked file evaluated to (an assignment's target, or an
//!   expression), over every path and entry point that reached it, with dtype, device and the
//!   origin of each dimension that has one (hover, inlay hints);
//! - the places of the checked file that a finding's trace names (related information).
//!
//! Recording only observes values: findings are the same with it on or off.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::interp::Interp;
use crate::diagnostics::{Related, SpanShapes, TensorView};
use crate::ir::{FileId, Span};
use crate::parse::ParsedFile;
use crate::value::*;

/// The tensors seen per span `(start, end)` of the checked file: the name bound there (for an
/// assignment target) and the distinct views.
pub type SpanLog = BTreeMap<(u32, u32), (Option<Rc<str>>, BTreeSet<TensorView>)>;

/// torch's name of a dtype (`None`: one the core does not tell apart).
fn dtype_name(d: DType) -> Option<&'static str> {
    (d != DType::Other).then(|| crate::models::torch::dtype::name(d))
}

impl Interp<'_> {
    /// Record that `span` evaluated to `v` on the path `st` (tensors of the checked file only).
    pub fn log_span(&mut self, st: &State, span: Span, name: Option<&str>, v: &Value) {
        if span.file != FileId::MAIN || span.start >= span.end {
            return;
        }
        let Value::Tensor(t) = v else { return };
        let view = self.tensor_view(st, t);
        let Some(log) = self.span_log.as_mut() else { return };
        let entry = log.entry((span.start, span.end)).or_insert_with(|| (name.map(Rc::from), BTreeSet::new()));
        if entry.1.len() < SpanShapes::MAX_VIEWS {
            entry.1.insert(view);
        }
    }

    fn tensor_view(&self, st: &State, t: &Tensor) -> TensorView {
        let shape = st.resolve(&t.shape);
        let mut origins = Vec::new();
        // each dim's origin chain (`models::origins`), once for dims that tell the same
        let mut firsts: Vec<String> = Vec::new();
        self.quietly(|i| {
            for d in &shape.dims {
                let chain = crate::models::origins::chain(i, st, d);
                if let Some(first) = chain.first()
                    && !firsts.contains(&first.text)
                {
                    firsts.push(first.text.clone());
                    origins.extend(crate::models::origins::lines(&chain));
                }
            }
        });
        TensorView {
            shape: show_shape(&self.syms, st, &t.shape),
            dtype: t.dtype.and_then(dtype_name).map(String::from),
            device: t.device.map(|d| d.name().to_string()),
            origins,
        }
    }
}

/// The recorded spans as 1-based rows and code-point columns, in source order.
pub fn spans_of(f: &ParsedFile, log: SpanLog) -> Vec<SpanShapes> {
    log.into_iter()
        .map(|((start, end), (name, views))| {
            let (row, col) = f.location(start);
            let (end_row, end_col) = f.location(end);
            SpanShapes { row, col, end_row, end_col, name: name.map(|n| n.to_string()), views: views.into_iter().collect() }
        })
        .collect()
}

/// The places that the lines of `trace` name, each with its line: every place text the
/// analysis rendered (`line 8` in the checked file, `model.py:14` in another file of the
/// project), found in a trace line and not followed by a digit (`line 8` is not `line 80`).
pub fn related(interp: &Interp, trace: &[String]) -> Vec<Related> {
    let places = interp.places.borrow();
    if places.is_empty() || trace.is_empty() {
        return Vec::new();
    }
    related_among(places.iter().map(|(text, span)| (text.as_str(), *span)), trace, |span| place_of(interp, *span))
}

/// Where a rendered place is: its file (`None`: the checked file) and its start and end.
pub type PlaceAt = (Option<String>, (usize, usize), (usize, usize));

/// The place a span of this analysis names (`related`).
pub fn place_of(interp: &Interp, span: crate::ir::Span) -> PlaceAt {
    match interp.project.module_of(span.file) {
        Some(m) => (Some(m.path.display().to_string()), m.lines.location(span.start), m.lines.location(span.end)),
        None => (None, interp.file.location(span.start), interp.file.location(span.end)),
    }
}

/// `related` over rendered places: each text (in the order of the texts) with what `at` tells
/// where it is.
pub fn related_among<'p, T: 'p>(places: impl Iterator<Item = (&'p str, T)> + Clone, trace: &[String], at: impl Fn(&T) -> PlaceAt) -> Vec<Related> {
    let mut out = Vec::new();
    for line in trace {
        for (text, place) in places.clone() {
            let named = line.match_indices(text).any(|(i, _)| {
                !line[i + text.len()..].starts_with(|c: char| c.is_ascii_digit())
                    && !line[..i].ends_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '\\'))
            });
            if named {
                let (path, (row, col), (end_row, end_col)) = at(&place);
                out.push(Related { message: line.clone(), path, row, col, end_row, end_col });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::Settings;

    fn analyze(src: &str) -> (Vec<crate::Finding>, Vec<crate::SpanShapes>) {
        let parsed = crate::parse::parse(src);
        let module = crate::ir::lower::lower_module(&parsed);
        let (findings, _, spans) = super::super::analyze_with_shapes(&module, &parsed, &Settings::default());
        (findings, spans)
    }

    const NET: &str = "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc1 = nn.Linear(16, 120)\n        self.fc2 = nn.Linear(80, 84)\n\n    def forward(self, x):\n        h = self.fc1(x)\n        return self.fc2(h)\n\n\nmodel = Net()\nx = torch.randn(4, 16)\ny = model(x)\n";

    #[test]
    fn related_points_at_the_layers_the_trace_names() {
        let (findings, _) = analyze(NET);
        assert_eq!(findings.len(), 1);
        let rows: Vec<(usize, &str)> = findings[0].related.iter().map(|r| (r.row, r.message.as_str())).collect();
        assert!(rows.contains(&(8, "120 from out_features of fc1 (line 8)")), "{rows:?}");
        assert!(rows.iter().any(|(row, m)| *row == 9 && m.starts_with("fc2 (line 9)")), "{rows:?}");
    }

    #[test]
    fn bindings_and_expressions_carry_shape_dtype_device_and_origins() {
        let (_, spans) = analyze(NET);
        // the public entry (with its verified fixes) reports what the CLI's does
        let (findings, _, _) = crate::analyze_source(NET, "<test>", &Settings::default());
        let (plain, _) = crate::check_source_undecided(NET, "<test>", &Settings::default());
        assert_eq!(findings, plain);
        let h = spans.iter().find(|s| s.row == 12 && s.name.as_deref() == Some("h")).expect("h bound at line 12");
        let concrete = h.views.iter().find(|v| v.shape == "[4, 120]").expect("the script's run");
        assert_eq!(concrete.dtype.as_deref(), Some("float32"));
        assert_eq!(concrete.device.as_deref(), Some("cpu"));
        assert_eq!(concrete.origins, vec!["4 from torch.randn at line 17".to_string(), "120 from out_features of fc1 (line 8)".to_string()]);
        // the expression `self.fc1(x)` (columns 13 to 24) has the same tensors
        assert!(spans.iter().any(|s| s.row == 12 && s.col == 13 && s.name.is_none() && s.views.contains(concrete)));
        // a name read: `h` in `self.fc2(h)`
        assert!(spans.iter().any(|s| s.row == 13 && s.name.is_none() && s.views.contains(concrete)));
    }
}
