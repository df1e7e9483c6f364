//! The registry of modelled APIs: one typed entry per qualified name.
//!
//! Each model family declares its APIs in a `pub const APIS: &[Decl]` next to its models
//! (`torch/tensor.rs`, `torch/layers.rs`, ...). A `Decl` gives the API's qualified name
//! (`torch.cat`, `torch.Tensor.view`, `torch.nn.Linear`), its kind, its signature (the
//! parameters its model reads, with their defaults, in Python's syntax), for a module the
//! signature of its call, its functional twin, and the rules of the preconditions it checks.
//! The registry parses them once into `Api` entries and resolves a qualified name to its entry
//! (`lookup`); the dispatchers in `models/mod.rs` resolve each call once.
//!
//! **An argument the model does not read makes the result Unknown.** Before a model runs,
//! `Api::accepts` binds the call's arguments to the signature: a positional argument past
//! the parameters (without `*args`) or a keyword that names no parameter (without
//! `**kwargs`) means the call uses something the model ignores, so the call is Unknown, never
//! a guess. A parameter marked `~` (`~device=None`) is accepted and ignored because it
//! cannot change what the model computes (shapes, dtypes, preconditions); say why in the
//! family's table when that is not obvious.
//!
//! Signature syntax: `name`, `name=default`, `*` (keyword-only after it), `*name`, `**name`,
//! `/` (ignored), and a leading `~` for an accepted, ignored parameter.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::ir::Name;
use crate::rules::Rule;
use crate::value::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// `torch.cat`, `torch.nn.functional.relu`, `torchvision.transforms.ToTensor`.
    Function,
    /// `torch.Tensor.view`: called on a tensor (the receiver is not a parameter).
    Method,
    /// `torch.nn.Linear`: constructed (`params`), then called (`call_params`).
    Module,
}

impl ApiKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::Function => "function",
            ApiKind::Method => "method",
            ApiKind::Module => "module",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Positional or keyword.
    Positional,
    /// Keyword only (after `*` or `*args`).
    Keyword,
    /// `*args`.
    VarPositional,
    /// `**kwargs`.
    VarKeyword,
}

impl ParamKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::Positional => "positional",
            ParamKind::Keyword => "keyword",
            ParamKind::VarPositional => "var_positional",
            ParamKind::VarKeyword => "var_keyword",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamKind,
    /// The default as written in the signature (`None`, `0`, `"mean"`), when there is one.
    pub default: Option<&'static str>,
    /// False for a `~` parameter: accepted, and ignored by the model.
    pub read: bool,
}

/// One API as its family declares it (see the module doc for the signature syntax).
#[derive(Debug, Clone, Copy)]
pub struct Decl {
    pub name: &'static str,
    pub kind: ApiKind,
    pub signature: &'static str,
    /// A module's call (`forward`) signature; empty for functions and methods.
    pub call: &'static str,
    /// The functional twin of a module (`torch.nn.functional.linear`) or the module of a
    /// function.
    pub twin: Option<&'static str>,
    /// The rules of the preconditions the model checks.
    pub checks: &'static [&'static Rule],
}

impl Decl {
    pub const fn function(name: &'static str, signature: &'static str) -> Decl {
        Decl { name, kind: ApiKind::Function, signature, call: "", twin: None, checks: &[] }
    }
    pub const fn method(name: &'static str, signature: &'static str) -> Decl {
        Decl { name, kind: ApiKind::Method, signature, call: "", twin: None, checks: &[] }
    }
    pub const fn module(name: &'static str, signature: &'static str, call: &'static str) -> Decl {
        Decl { name, kind: ApiKind::Module, signature, call, twin: None, checks: &[] }
    }
    pub const fn twin(self, twin: &'static str) -> Decl {
        Decl { twin: Some(twin), ..self }
    }
    pub const fn checks(self, checks: &'static [&'static Rule]) -> Decl {
        Decl { checks, ..self }
    }
}

/// A resolved entry.
#[derive(Debug, Clone)]
pub struct Api {
    pub name: &'static str,
    /// The model family that declared it (`reduce`, `nn`, ...): its dispatcher runs it.
    pub family: &'static str,
    pub kind: ApiKind,
    pub params: Vec<Param>,
    pub call_params: Vec<Param>,
    pub twin: Option<&'static str>,
    pub checks: &'static [&'static Rule],
}

impl Api {
    /// The part after the family prefix: `view` for `torch.Tensor.view`, `Linear` for
    /// `torch.nn.Linear`.
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }

    /// Whether the model reads every argument of this call (the construction or plain call).
    pub fn accepts(&self, args: &[Value], kwargs: &[(Name, Value)]) -> bool {
        accepts(&self.params, args.len(), kwargs)
    }

    /// Whether a module's model reads every argument of a call of the module.
    pub fn accepts_call(&self, args: &[Value], kwargs: &[(Name, Value)]) -> bool {
        accepts(&self.call_params, args.len(), kwargs)
    }
}

fn accepts(params: &[Param], n_positional: usize, kwargs: &[(Name, Value)]) -> bool {
    let positional = params.iter().filter(|p| p.kind == ParamKind::Positional).count();
    let var_pos = params.iter().any(|p| p.kind == ParamKind::VarPositional);
    let var_kw = params.iter().any(|p| p.kind == ParamKind::VarKeyword);
    if n_positional > positional && !var_pos {
        return false;
    }
    kwargs.iter().all(|(k, _)| {
        var_kw
            || params.iter().enumerate().any(|(i, p)| {
                p.name == &**k
                    && match p.kind {
                        // a keyword for a parameter the positional arguments already filled is a
                        // TypeError in Python: not modelled
                        ParamKind::Positional => params[..i].iter().filter(|q| q.kind == ParamKind::Positional).count() >= n_positional,
                        ParamKind::Keyword => true,
                        _ => false,
                    }
            })
    })
}

/// Parse a signature in Python's syntax (see the module doc). Panics on a malformed one: the
/// registry's tests parse every declared signature.
pub fn parse_signature(sig: &'static str) -> Vec<Param> {
    let mut out = Vec::new();
    let mut keyword_only = false;
    for raw in split_top_level(sig) {
        let mut part = raw.trim();
        if part.is_empty() || part == "/" {
            continue;
        }
        if part == "*" {
            keyword_only = true;
            continue;
        }
        let read = !part.starts_with('~');
        part = part.trim_start_matches('~').trim();
        let (kind, rest) = if let Some(r) = part.strip_prefix("**") {
            (ParamKind::VarKeyword, r)
        } else if let Some(r) = part.strip_prefix('*') {
            keyword_only = true;
            (ParamKind::VarPositional, r)
        } else if keyword_only {
            (ParamKind::Keyword, part)
        } else {
            (ParamKind::Positional, part)
        };
        let (name, default) = match rest.split_once('=') {
            Some((n, d)) => (n.trim(), Some(d.trim())),
            None => (rest.trim(), None),
        };
        assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "bad parameter {raw:?} in signature {sig:?}");
        out.push(Param { name, kind, default, read });
    }
    out
}

/// Split on commas outside brackets and quotes (`size=(1, 1), mode="a,b"`).
fn split_top_level(s: &'static str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0usize);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Every family's declarations, with the family's name.
fn families() -> Vec<(&'static str, &'static [Decl])> {
    super::torch::families()
}

pub struct Registry {
    /// Entries by the qualified name's prefix (`torch.Tensor`) and last part (`view`), so a
    /// dispatcher looks a call up without building its name.
    by_prefix: FxHashMap<&'static str, FxHashMap<&'static str, Api>>,
    sorted: Vec<(&'static str, &'static str)>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut by_prefix: FxHashMap<&'static str, FxHashMap<&'static str, Api>> = FxHashMap::default();
        for (family, decls) in families() {
            for d in decls {
                let api = Api { name: d.name, family, kind: d.kind, params: parse_signature(d.signature), call_params: parse_signature(d.call), twin: d.twin, checks: d.checks };
                let (prefix, last) = d.name.rsplit_once('.').unwrap_or(("", d.name));
                let old = by_prefix.entry(prefix).or_default().insert(last, api);
                debug_assert!(old.is_none(), "{} is declared twice", d.name);
            }
        }
        let mut sorted: Vec<(&'static str, &'static str)> = by_prefix.iter().flat_map(|(p, m)| m.keys().map(move |l| (*p, *l))).collect();
        sorted.sort_unstable_by_key(|(p, l)| by_prefix[p][l].name);
        Registry { by_prefix, sorted }
    })
}

/// The entry of a qualified name (`torch.cat`, `torch.Tensor.view`, `torch.nn.Linear`).
pub fn lookup(name: &str) -> Option<&'static Api> {
    let (prefix, last) = name.rsplit_once('.').unwrap_or(("", name));
    lookup_in(prefix, last)
}

/// The entry of `prefix.last` (`lookup_in("torch.Tensor", "view")`).
pub fn lookup_in(prefix: &str, last: &str) -> Option<&'static Api> {
    registry().by_prefix.get(prefix)?.get(last)
}

/// Every entry, sorted by name.
pub fn all() -> impl Iterator<Item = &'static Api> {
    let r = registry();
    r.sorted.iter().map(move |(p, l)| &r.by_prefix[p][l])
}

/// The registry as JSON: a list of objects with `name`, `family`, `kind`, `params` (each with `name`,
/// `kind`, `default` and `read`), `call_params`, `twin` and `checks` (rule codes).
pub fn to_json<'a>(apis: impl Iterator<Item = &'a Api>) -> String {
    fn s(x: &str) -> String {
        let mut o = String::from("\"");
        for c in x.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
                c => o.push(c),
            }
        }
        o.push('"');
        o
    }
    fn params(ps: &[Param]) -> String {
        let items: Vec<String> = ps
            .iter()
            .map(|p| format!("{{\"name\": {}, \"kind\": {}, \"default\": {}, \"read\": {}}}", s(p.name), s(p.kind.as_str()), p.default.map(s).unwrap_or("null".into()), p.read))
            .collect();
        format!("[{}]", items.join(", "))
    }
    let items: Vec<String> = apis
        .map(|a| {
            let checks: Vec<String> = a.checks.iter().map(|r| s(r.code)).collect();
            format!(
                "{{\"name\": {}, \"family\": {}, \"kind\": {}, \"params\": {}, \"call_params\": {}, \"twin\": {}, \"checks\": [{}]}}",
                s(a.name),
                s(a.family),
                s(a.kind.as_str()),
                params(&a.params),
                params(&a.call_params),
                a.twin.map(s).unwrap_or("null".into()),
                checks.join(", ")
            )
        })
        .collect();
    format!("[{}]", items.join(",\n "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_parse() {
        let p = parse_signature("input, dim=None, keepdim=False, *, ~out=None, dtype=None");
        assert_eq!(p.iter().map(|p| p.name).collect::<Vec<_>>(), ["input", "dim", "keepdim", "out", "dtype"]);
        assert_eq!(p[1].default, Some("None"));
        assert_eq!(p[3].kind, ParamKind::Keyword);
        assert!(!p[3].read && p[4].read);
        let p = parse_signature("*size, size=(1, 2), mode=\"a,b\", **kwargs");
        assert_eq!(p.len(), 4);
        assert_eq!(p[0].kind, ParamKind::VarPositional);
        assert_eq!(p[1].kind, ParamKind::Keyword);
        assert_eq!(p[2].default, Some("\"a,b\""));
        assert_eq!(p[3].kind, ParamKind::VarKeyword);
        assert!(parse_signature("").is_empty());
    }

    #[test]
    fn unread_arguments_are_refused() {
        let params = parse_signature("input, dim=0, *, keepdim=False");
        let kw = |k: &str| (Name::from(k), Value::None);
        assert!(accepts(&params, 2, &[]));
        assert!(!accepts(&params, 3, &[]), "a third positional argument is not read");
        assert!(accepts(&params, 1, &[kw("keepdim"), kw("dim")]));
        assert!(!accepts(&params, 2, &[kw("dim")]), "dim given twice");
        assert!(!accepts(&params, 1, &[kw("out")]), "an unknown keyword is not read");
        let star = parse_signature("*size, dtype=None");
        assert!(accepts(&star, 5, &[kw("dtype")]));
    }

    #[test]
    fn every_declaration_parses_and_names_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for (_, decls) in families() {
            for d in decls {
                assert!(seen.insert(d.name), "{} is declared twice", d.name);
                parse_signature(d.signature);
                parse_signature(d.call);
                assert!(d.kind == ApiKind::Module || d.call.is_empty(), "{}: only a module has a call signature", d.name);
            }
        }
    }
}
