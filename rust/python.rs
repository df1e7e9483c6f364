//! PyO3 bindings: type conversion only. Built with the `python` feature (maturin sets it).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{Finding, Settings, check_source as core_check};

fn settings_from(options: Option<&Bound<'_, PyDict>>) -> PyResult<Settings> {
    let mut s = Settings::default();
    if let Some(d) = options {
        if let Some(v) = d.get_item("may_fail")? {
            s.may_fail = v.extract()?;
        }
        if let Some(v) = d.get_item("free_params")? {
            s.free_params = v.extract()?;
        }
        if let Some(v) = d.get_item("param_values")? {
            let values: std::collections::BTreeMap<String, i128> = v.extract()?;
            s.param_values = values.into_iter().collect();
        }
        if let Some(v) = d.get_item("max_paths")? {
            s.max_paths = v.extract()?;
        }
        if let Some(v) = d.get_item("max_steps")? {
            s.max_steps = v.extract()?;
        }
        if let Some(v) = d.get_item("timeout_ms")? {
            s.timeout_ms = v.extract()?;
        }
        if let Some(v) = d.get_item("check_sites")? {
            s.check_sites = v.extract()?;
        }
        if let Some(v) = d.get_item("share_scripts")? {
            s.share_scripts = v.extract()?;
        }
        if let Some(v) = d.get_item("script_cache")? {
            s.script_cache = v.extract()?;
        }
    }
    Ok(s)
}

/// Analyse one file's text. Returns a list of dicts (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn check_source<'py>(
    py: Python<'py>,
    source: &str,
    filename: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyList>> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let findings = py.detach(move || core_check(&src, &name, &settings));
    findings_list(py, &findings)
}

fn finding_dict<'py>(py: Python<'py>, f: &Finding) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("code", f.rule.code)?;
    d.set_item("name", f.rule.name)?;
    d.set_item("message", &f.message)?;
    d.set_item("row", f.row)?;
    d.set_item("col", f.col)?;
    d.set_item("end_row", f.end_row)?;
    d.set_item("end_col", f.end_col)?;
    d.set_item("trace", &f.trace)?;
    d.set_item("condition", &f.condition)?;
    let origins = PyList::empty(py);
    for o in &f.origins {
        let od = PyDict::new(py);
        od.set_item("text", &o.text)?;
        od.set_item("value", o.value)?;
        od.set_item("kind", o.kind)?;
        od.set_item("place", &o.place)?;
        od.set_item("pos", o.pos)?;
        od.set_item("by", &o.by)?;
        od.set_item("depth", o.depth)?;
        origins.append(od)?;
    }
    d.set_item("origins", origins)?;
    let related = PyList::empty(py);
    for r in &f.related {
        let rd = PyDict::new(py);
        rd.set_item("message", &r.message)?;
        rd.set_item("path", &r.path)?;
        rd.set_item("row", r.row)?;
        rd.set_item("col", r.col)?;
        rd.set_item("end_row", r.end_row)?;
        rd.set_item("end_col", r.end_col)?;
        related.append(rd)?;
    }
    d.set_item("related", related)?;
    if let Some(fix) = &f.fix {
        let fd = PyDict::new(py);
        fd.set_item("message", &fix.message)?;
        fd.set_item("applicability", "unsafe")?;
        let edits = PyList::empty(py);
        for e in &fix.edits {
            let ed = PyDict::new(py);
            ed.set_item("content", &e.content)?;
            ed.set_item("row", e.row)?;
            ed.set_item("col", e.col)?;
            ed.set_item("end_row", e.end_row)?;
            ed.set_item("end_col", e.end_col)?;
            edits.append(ed)?;
        }
        fd.set_item("edits", edits)?;
        d.set_item("fix", fd)?;
    }
    Ok(d)
}

fn findings_list<'py>(py: Python<'py>, findings: &[Finding]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for f in findings {
        out.append(finding_dict(py, f)?)?;
    }
    Ok(out)
}

/// Like `check_source`, plus the undecided checks with their SMT-LIB queries:
/// `(findings, undecided)` (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn check_source_undecided<'py>(
    py: Python<'py>,
    source: &str,
    filename: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let (findings, undecided) = py.detach(move || crate::check_source_undecided(&src, &name, &settings));
    Ok((findings_list(py, &findings)?, undecided_list(py, &undecided)?))
}

/// Like `check_source_undecided`, plus the parser's syntax errors from the same parse:
/// `(findings, undecided, syntax_errors)` (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn check_source_parsed<'py>(
    py: Python<'py>,
    source: &str,
    filename: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, Vec<crate::SyntaxError>)> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let (findings, undecided, errors) = py.detach(move || crate::check_source_parsed(&src, &name, &settings));
    Ok((findings_list(py, &findings)?, undecided_list(py, &undecided)?, errors))
}

fn undecided_list<'py>(py: Python<'py>, undecided: &[crate::Undecided]) -> PyResult<Bound<'py, PyList>> {
    let und = PyList::empty(py);
    for u in undecided {
        let d = finding_dict(py, &u.finding)?;
        d.set_item("smt", &u.context)?;
        d.set_item("precondition", &u.precondition)?;
        let params = PyList::empty(py);
        for p in &u.params {
            let pd = PyDict::new(py);
            pd.set_item("smt", &p.smt)?;
            pd.set_item("name", &p.name)?;
            pd.set_item("kind", p.kind)?;
            pd.set_item("default", p.default)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        d.set_item("free", u.free)?;
        und.append(d)?;
    }
    Ok(und)
}

/// Like `check_source_undecided`, plus the analysis statistics: `(findings, undecided, stats)`
/// (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn check_source_stats<'py>(
    py: Python<'py>,
    source: &str,
    filename: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, Bound<'py, PyDict>)> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let (findings, undecided, stats) = py.detach(move || crate::check_source_stats(&src, &name, &settings));
    let d = PyDict::new(py);
    d.set_item("entries", stats.entries)?;
    d.set_item("abandoned", stats.abandoned)?;
    d.set_item("steps", stats.steps)?;
    d.set_item("script_runs", stats.script_runs)?;
    let c = stats.checks;
    d.set_item("holds", c.holds)?;
    d.set_item("violated", c.violated)?;
    d.set_item("undecided", c.undecided)?;
    d.set_item("exported", c.exported)?;
    d.set_item("witnessed", c.witnessed)?;
    let sites: Vec<_> = stats.check_sites.iter().map(|(r, c, n)| (*r, *c, n.holds, n.violated, n.undecided, n.exported)).collect();
    d.set_item("check_sites", sites)?;
    Ok((findings_list(py, &findings)?, undecided_list(py, &undecided)?, d))
}

/// The Unknown-cause report of one file (`shape-lint coverage`; see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn coverage_source<'py>(py: Python<'py>, source: &str, filename: &str, options: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyDict>> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let out = py.detach(move || crate::coverage_source(&src, &name, &settings));
    let d = PyDict::new(py);
    match out {
        Err(reason) => {
            d.set_item("error", reason)?;
        }
        Ok((findings, r)) => {
            d.set_item("findings", findings.len())?;
            d.set_item("exprs", r.exprs)?;
            d.set_item("unknown", r.unknown)?;
            d.set_item("tensors", r.tensors)?;
            d.set_item("rank_known", r.rank_known)?;
            d.set_item("dtype_known", r.dtype_known)?;
            d.set_item("device_known", r.device_known)?;
            d.set_item("backward", r.backward)?;
            d.set_item("backward_graph_known", r.backward_graph_known)?;
            d.set_item("backward_optimizer_known", r.backward_optimizer_known)?;
            d.set_item("incomplete", r.incomplete)?;
            let origins = PyList::empty(py);
            for o in &r.origins {
                let od = PyDict::new(py);
                od.set_item("kind", o.kind)?;
                od.set_item("label", &o.label)?;
                od.set_item("count", o.count)?;
                od.set_item("row", o.row)?;
                od.set_item("col", o.col)?;
                origins.append(od)?;
            }
            d.set_item("origins", origins)?;
        }
    }
    Ok(d)
}

/// One analysis for an editor: `{"findings", "undecided", "shapes"}` (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn analyze_source<'py>(py: Python<'py>, source: &str, filename: &str, options: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyDict>> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    let (findings, undecided, spans) = py.detach(move || crate::analyze_source(&src, &name, &settings));
    let und = PyList::empty(py);
    for u in &undecided {
        let d = finding_dict(py, &u.finding)?;
        d.set_item("smt", &u.context)?;
        d.set_item("precondition", &u.precondition)?;
        und.append(d)?;
    }
    let shapes = PyList::empty(py);
    for s in &spans {
        let d = PyDict::new(py);
        d.set_item("row", s.row)?;
        d.set_item("col", s.col)?;
        d.set_item("end_row", s.end_row)?;
        d.set_item("end_col", s.end_col)?;
        d.set_item("name", &s.name)?;
        let views = PyList::empty(py);
        for v in &s.views {
            let vd = PyDict::new(py);
            vd.set_item("shape", &v.shape)?;
            vd.set_item("dtype", &v.dtype)?;
            vd.set_item("device", &v.device)?;
            vd.set_item("origins", &v.origins)?;
            views.append(vd)?;
        }
        d.set_item("views", views)?;
        shapes.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("findings", findings_list(py, &findings)?)?;
    out.set_item("undecided", und)?;
    out.set_item("shapes", shapes)?;
    Ok(out)
}

/// The `--show-shapes` view: `[(line, text), ...]`.
#[pyfunction]
#[pyo3(signature = (source, filename, options=None))]
fn show_shapes(py: Python<'_>, source: &str, filename: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(usize, String)>> {
    let settings = settings_from(options)?;
    let src = source.to_owned();
    let name = filename.to_owned();
    Ok(py.detach(move || crate::show_shapes(&src, &name, &settings)))
}

/// The parser's syntax errors: `[(message, row, col, end_row, end_col), ...]`.
#[pyfunction]
fn syntax_errors(py: Python<'_>, source: &str) -> Vec<(String, usize, usize, usize, usize)> {
    let src = source.to_owned();
    py.detach(move || crate::syntax_errors(&src))
}

fn dims_py<'py>(py: Python<'py>, dims: &Option<Vec<crate::engine::summary::DimText>>) -> PyResult<Bound<'py, PyAny>> {
    use crate::engine::summary::DimText;
    let Some(dims) = dims else { return Ok(py.None().into_bound(py)) };
    let out = PyList::empty(py);
    for d in dims {
        match d {
            DimText::Int(i) => out.append(*i as i64)?,
            DimText::Sym(s) => out.append(s)?,
        }
    }
    Ok(out.into_any())
}

/// `shape-lint summary`: one dict per model call (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (source, filename, model=None, options=None, input_size=None))]
fn model_summary<'py>(
    py: Python<'py>,
    source: &str,
    filename: &str,
    model: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
    input_size: Option<Vec<Vec<i64>>>,
) -> PyResult<Bound<'py, PyList>> {
    let settings = settings_from(options)?;
    let (src, name, model) = (source.to_owned(), filename.to_owned(), model.map(str::to_owned));
    let sizes: Option<Vec<Vec<i128>>> = input_size.map(|v| v.into_iter().map(|s| s.into_iter().map(i128::from).collect()).collect());
    let calls = py.detach(move || crate::model_summary(&src, &name, &settings, model.as_deref(), sizes.as_deref()));
    let out = PyList::empty(py);
    for c in &calls {
        let d = PyDict::new(py);
        d.set_item("model", &c.model)?;
        d.set_item("line", c.line)?;
        d.set_item("input_ranks", c.input_ranks.as_ref().map(|r| r.iter().map(|x| x.map(|n| n as i64)).collect::<Vec<_>>()))?;
        d.set_item("output_shape", dims_py(py, &c.output_shape)?)?;
        d.set_item("total_params", c.total_params.map(|n| n as i64))?;
        let layers = PyList::empty(py);
        for l in &c.layers {
            let ld = PyDict::new(py);
            ld.set_item("name", &l.name)?;
            ld.set_item("type", &l.kind)?;
            ld.set_item("output_shape", dims_py(py, &l.output_shape)?)?;
            ld.set_item("params", l.params.map(|n| n as i64))?;
            ld.set_item("depth", l.depth)?;
            layers.append(ld)?;
        }
        d.set_item("layers", layers)?;
        d.set_item("incomplete", c.incomplete.clone())?;
        let accepts = PyList::empty(py);
        for k in &c.accepts {
            let kd = PyDict::new(py);
            kd.set_item("names", k.names.clone())?;
            kd.set_item("inputs", k.inputs.clone())?;
            kd.set_item("dims", k.dims.clone())?;
            kd.set_item("params", k.params.clone())?;
            kd.set_item("smt", &k.smt)?;
            let clauses = PyList::empty(py);
            for cl in &k.clauses {
                let cd = PyDict::new(py);
                cd.set_item("text", &cl.text)?;
                cd.set_item("line", cl.line)?;
                cd.set_item("fixed", cl.fixed)?;
                cd.set_item("smt", &cl.smt)?;
                clauses.append(cd)?;
            }
            kd.set_item("clauses", clauses)?;
            accepts.append(kd)?;
        }
        d.set_item("accepts", accepts)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every rule of the registry as a dict (see `_core.pyi`).
#[pyfunction]
fn rules(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for r in crate::rules::ALL {
        let d = PyDict::new(py);
        d.set_item("code", r.code)?;
        d.set_item("name", r.name)?;
        d.set_item("summary", r.summary)?;
        d.set_item("messages", r.messages.to_vec())?;
        d.set_item("doc", r.doc)?;
        d.set_item("default_enabled", r.default_enabled)?;
        d.set_item("raises", r.raises)?;
        d.set_item(
            "status",
            match r.status {
                crate::rules::RuleStatus::Stable => "stable",
                crate::rules::RuleStatus::Preview => "preview",
                crate::rules::RuleStatus::Removed => "removed",
            },
        )?;
        out.append(d)?;
    }
    Ok(out)
}

/// One directory's `.gitignore` patterns (and `.git/info/exclude`'s), matched by the `ignore`
/// crate with git's rules: the CLI's file discovery asks it about each path it walks.
#[pyclass(frozen, module = "shape_lint._core")]
struct GitIgnore {
    matcher: ignore::gitignore::Gitignore,
}

#[pymethods]
impl GitIgnore {
    /// Compile `lines` (the files' lines, in order) for the directory `root`. A malformed
    /// pattern matches nothing, as git skips it.
    #[new]
    fn new(root: &str, lines: Vec<String>) -> Self {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
        for line in &lines {
            // an invalid glob is skipped (git ignores the line), the others still apply
            let _ = builder.add_line(None, line);
        }
        let matcher = builder.build().unwrap_or_else(|_| ignore::gitignore::Gitignore::empty());
        GitIgnore { matcher }
    }

    /// `rel` (relative to the root, `/`-separated) or a directory above it: True when the
    /// last pattern that matches ignores it, False when it re-includes it (`!pattern`), None
    /// when none matches.
    fn check(&self, rel: &str, is_dir: bool) -> Option<bool> {
        match self.matcher.matched_path_or_any_parents(rel, is_dir) {
            ignore::Match::None => None,
            ignore::Match::Ignore(_) => Some(true),
            ignore::Match::Whitelist(_) => Some(false),
        }
    }
}

/// The registry of modelled APIs as JSON text (see `models::registry::to_json`).
#[pyfunction]
fn api_json() -> String {
    crate::models::registry::to_json(crate::models::registry::all())
}

/// The qualified name of the registry entry a library path resolves to (through the aliases
/// the dispatchers accept, e.g. `torchvision.models.resnet.resnet18`), or None.
#[pyfunction]
fn api_resolve(path: &str) -> Option<&'static str> {
    crate::models::resolve_api(path).map(|a| a.name)
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_source, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_undecided, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_parsed, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_stats, m)?)?;
    m.add_function(wrap_pyfunction!(rules, m)?)?;
    m.add_function(wrap_pyfunction!(show_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_source, m)?)?;
    m.add_function(wrap_pyfunction!(coverage_source, m)?)?;
    m.add_function(wrap_pyfunction!(syntax_errors, m)?)?;
    m.add_function(wrap_pyfunction!(model_summary, m)?)?;
    m.add_function(wrap_pyfunction!(api_json, m)?)?;
    m.add_function(wrap_pyfunction!(api_resolve, m)?)?;
    m.add_class::<GitIgnore>()?;
    m.add("__version__", crate::VERSION)?;
    Ok(())
}
