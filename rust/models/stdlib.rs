//! Standard-library models: `argparse` (defaults of a run without arguments),
//! `collections.OrderedDict`, `dataclasses.field`, `math`, `os.path` of known strings.
//! Everything else is Unknown.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::models::ctx::ModelCtx;
use crate::ir::{Name, Span};
use crate::value::*;

/// Whether `path` names a standard-library object that `call` models (or knows to be Unknown).
pub fn handles(path: &str) -> bool {
    ["argparse.", "collections.", "dataclasses.", "math."].iter().any(|p| path.starts_with(p))
}

/// The `os.path` functions [`os_path`] models (`os.path.join`, `posixpath.join`, ...).
pub fn is_os_path(path: &str) -> bool {
    let f = path.strip_prefix("os.path.").or_else(|| path.strip_prefix("posixpath."));
    matches!(f, Some("join" | "basename" | "dirname" | "splitext"))
}

/// `os.path.join`, `basename`, `dirname`, `splitext` of known strings (POSIX semantics:
/// `posixpath`); `None` for anything else, whose call is not modelled.
pub fn os_path(path: &str, args: &[Value], kwargs: &[(Name, Value)]) -> Option<Value> {
    use super::text;
    let f = path.strip_prefix("os.path.").or_else(|| path.strip_prefix("posixpath."))?;
    if !kwargs.is_empty() {
        return None;
    }
    let parts: Vec<&str> = args.iter().map(|a| a.as_str()).collect::<Option<_>>()?;
    let s = |x: &str| Value::Str(Some(Rc::from(x)));
    match (f, parts.as_slice()) {
        ("join", [_, ..]) => Some(s(&text::path_join(&parts))),
        ("basename", [p]) => Some(s(text::basename(p))),
        ("dirname", [p]) => Some(s(text::dirname(p))),
        ("splitext", [p]) => {
            let (root, ext) = text::splitext(p);
            Some(Value::Tuple(Rc::new(vec![s(root), s(ext)])))
        }
        _ => None,
    }
}

/// Call a standard-library function or class by qualified name (`handles(path)` holds).
pub fn call(cx: &mut dyn ModelCtx, st: State, path: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let mut st = st;
    if path == "argparse.ArgumentParser" {
        let attrs = BTreeMap::from([(Rc::from("<defaults>"), Value::Tuple(Rc::new(Vec::new())))]);
                let id = st.alloc(Obj::Namespace { kind: Rc::from("ArgParser"), attrs });
        return vec![(st, Value::Ref(id))];
    }
    if path.starts_with("argparse.") {
        return vec![(st, Value::Unknown)];
    }
    if path == "collections.OrderedDict" {
        // an ordered dict of known pairs, like `dict(...)`
                let pairs = match args.first() {
            None => Some(Vec::new()),
            Some(a) => cx.iterate(&mut st, a, span).and_then(|items| {
                items
                    .into_iter()
                    .map(|p| match p {
                        Value::Tuple(t) if t.len() == 2 => Some((t[0].clone(), t[1].clone())),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
            }),
        };
        return match pairs {
            Some(mut pairs) if pairs.iter().all(|(k, _)| k.as_str().is_some() || k.as_const_int().is_some()) => {
                for (k, v) in kwargs {
                    pairs.push((Value::Str(Some(k)), v));
                }
                let id = st.alloc(Obj::Dict(pairs));
                vec![(st, Value::Ref(id))]
            }
            _ => vec![(st, Value::Unknown)],
        };
    }
    if path == "collections.Counter" && kwargs.is_empty() {
        return vec![counter(cx, st, args.first(), span)];
    }
    if path.starts_with("collections.") {
        return vec![(st, Value::Unknown)];
    }
    if path == "dataclasses.field" {
        let mut attrs = BTreeMap::new();
        for (k, v) in kwargs {
            if matches!(&*k, "default" | "default_factory") {
                attrs.insert(k, v);
            }
        }
                let id = st.alloc(Obj::Namespace { kind: Rc::from("Field"), attrs });
        return vec![(st, Value::Ref(id))];
    }
    if path.starts_with("dataclasses.") {
        return vec![(st, Value::Unknown)];
    }
    if let Some(f) = path.strip_prefix("math.") {
        return vec![(st, math(f, &args))];
    }
    vec![(st, Value::Unknown)]
}

/// `collections.Counter(items)`: a dict of each known string or int to its count; over items
/// the core does not list (alike items of unknown number, text not known), a dict of keys not
/// known to int counts, so that a count read by any key is an int (`dict_int_by_unknown_key`).
fn counter(cx: &mut dyn ModelCtx, st: State, items: Option<&Value>, span: Span) -> (State, Value) {
    let mut st = st;
    let Some(items) = items else {
        let id = st.alloc(Obj::Dict(Vec::new()));
        return (st, Value::Ref(id));
    };
    let known = |v: &Value| matches!(v, Value::Str(Some(_))) || v.as_const_int().is_some();
    let listed = match items {
        Value::LibMethod(_, n) if &**n == "<repeat>" => None,
        Value::Str(None) | Value::Unknown => None,
        v => cx.iterate(&mut st, v, span),
    };
    let pairs = match listed {
        Some(xs) if xs.iter().all(known) => {
            let mut pairs: Vec<(Value, Value)> = Vec::new();
            for x in xs {
                match pairs.iter_mut().find(|(k, _)| *k == x) {
                    Some((_, n)) => *n = Value::int(n.as_const_int().unwrap_or(0) + 1),
                    None => pairs.push((x, Value::int(1))),
                }
            }
            pairs
        }
        // (numbers or strings the core does not know: which keys, and how many, is not known)
        Some(xs) if xs.iter().all(|x| matches!(x, Value::Int(_) | Value::Str(_) | Value::Float(_) | Value::Bool(_))) => vec![(Value::Unknown, Value::Int(cx.fresh_int_sym("count", 1)))],
        Some(_) => return (st, Value::Unknown),
        None if matches!(items, Value::LibMethod(..) | Value::Str(None)) => vec![(Value::Unknown, Value::Int(cx.fresh_int_sym("count", 1)))],
        None => return (st, Value::Unknown),
    };
    let id = st.alloc(Obj::Dict(pairs));
    (st, Value::Ref(id))
}

fn math(f: &str, args: &[Value]) -> Value {
    let x = match args.first() {
        Some(Value::Float(Some(f))) => Some(*f),
        Some(v) => v.as_const_int().map(|c| c as f64),
        None => None,
    };
    match (f, x) {
        ("sqrt", Some(x)) if x >= 0.0 => Value::Float(Some(x.sqrt())),
        ("floor", Some(x)) if x.abs() < 1e30 => Value::int(x.floor() as i128),
        ("ceil", Some(x)) if x.abs() < 1e30 => Value::int(x.ceil() as i128),
        ("log", Some(x)) if x > 0.0 => Value::Float(Some(x.ln())),
        ("log2", Some(x)) if x > 0.0 => Value::Float(Some(x.log2())),
        ("exp", Some(x)) => Value::Float(Some(x.exp()).filter(|f| f.is_finite())),
        ("floor" | "ceil" | "gcd" | "prod" | "comb" | "factorial" | "isqrt", _) => Value::Unknown,
        _ => Value::Float(None),
    }
}

/// A phrase of a condition made from a program's text (a switch's flag), kept for the
/// process's life: each distinct text once.
fn intern(text: &str) -> &'static str {
    static SEEN: std::sync::Mutex<Option<std::collections::HashSet<&'static str>>> = std::sync::Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(Default::default);
    match seen.get(text) {
        Some(s) => s,
        None => {
            let s: &'static str = Box::leak(text.to_string().into_boxed_str());
            seen.insert(s);
            s
        }
    }
}

/// The most runs one `parse_args` stands for: the product of the choices of its options
/// without a usable default. Beyond, those options are Unknown.
const MAX_CHOICE_RUNS: usize = 8;

/// `ArgumentParser.add_argument` records the destination, its default and what a run that
/// must give the option may give (`spec`); `parse_args` returns a namespace of the defaults
/// (the values a run without arguments uses), where an option a run must give is what it may
/// be:
/// - `required=True` without `choices`: `type=int` is a fresh symbol `args.<dest>` (at least 0),
///   `type=str` (or none) an unknown string, `type=float` an unknown float, else Unknown;
/// - `choices=[...]` (known constants) with `required=True`, or without a default among them:
///   one run per choice. The runs are the alternatives of an assumption at the `parse_args`
///   call (`ModelCtx::assume`): a violation is reported only when every run fails, so a bug
///   that only one choice meets is not. With a default among the choices, the default.
#[allow(clippy::too_many_arguments)]
pub fn argparse_method(cx: &mut dyn ModelCtx, mut st: State, id: ObjId, attrs: BTreeMap<Name, Value>, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
    let Some(Value::Tuple(defaults)) = attrs.get("<defaults>").cloned() else { return vec![(st, Value::Unknown)] };
    match name {
        "add_argument" => {
            let flags: Vec<&str> = args.iter().filter_map(|a| a.as_str()).collect();
            let kw = |k: &str| kwargs.iter().find(|(n, _)| &**n == k).map(|(_, v)| v.clone());
            let dest = match kw("dest").as_ref().and_then(|d| d.as_str()) {
                Some(d) => d.to_string(),
                None => {
                    let long = flags.iter().find(|f| f.starts_with("--")).or(flags.first());
                    match long {
                        Some(f) => f.trim_start_matches('-').replace('-', "_"),
                        None => return vec![(st, Value::Unknown)],
                    }
                }
            };
            let action = kw("action");
            let default = match (kw("default"), action.as_ref().and_then(|a| a.as_str())) {
                (Some(d), _) => d,
                (None, Some("store_true")) => Value::Bool(false),
                (None, Some("store_false")) => Value::Bool(true),
                (None, _) => Value::None,
            };
            let ty = kw("type");
            // `type=int` (or `float`, `str`) with a string default converts it
            let default = match (&default, &ty) {
                (Value::Str(Some(s)), Some(Value::Builtin("int"))) => s.parse::<i64>().map(|i| Value::int(i as i128)).unwrap_or(Value::Unknown),
                (Value::Str(Some(s)), Some(Value::Builtin("float"))) => Value::Float(s.parse::<f64>().ok()),
                // `type=str`: the string itself (`--model`, default `'LSTM'`)
                (Value::Str(Some(_)), Some(Value::Builtin("str"))) => default.clone(),
                (Value::Str(_), Some(_)) => Value::Unknown,
                _ => default,
            };
            // the option's flag as the user writes it
            let flag = flags.iter().find(|f| f.starts_with("--")).or(flags.first()).map(|f| f.to_string());
            let spec = option_spec(&st, &kw, &default, flag.as_deref());
            // what the SHP902 run needs to make the option a free parameter: its flag and its
            // int choices (`free_option`)
            let single = kw("nargs").is_none() && action.is_none() && kw("const").is_none();
            let int_typed = matches!(ty, None | Some(Value::Builtin("int")));
            let free = match (flag, single && int_typed) {
                (Some(f), true) => Value::Str(Some(Rc::from(f.as_str()))),
                _ => Value::None,
            };
            let int_choices = match kw("choices") {
                Some(Value::Tuple(t)) => Some(t.as_ref().clone()),
                Some(Value::Ref(l)) => match st.get(l) {
                    Obj::List(items) => Some(items.clone()),
                    _ => None,
                },
                Some(_) => None,
                None => Some(Vec::new()),
            };
            let int_choices = match int_choices {
                Some(cs) if cs.iter().all(|c| c.as_const_int().is_some()) => Value::Tuple(Rc::new(cs)),
                _ => Value::Unknown,
            };
            let mut d = defaults.as_ref().clone();
            d.push(Value::Tuple(Rc::new(vec![Value::Str(Some(Rc::from(dest.as_str()))), default, spec, free, int_choices])));
            if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
                attrs.insert(Rc::from("<defaults>"), Value::Tuple(Rc::new(d)));
            }
            vec![(st, Value::Unknown)]
        }
        "parse_args" | "parse_known_args" => {
            let explicit = match args.first().or(kwargs.iter().find(|(k, _)| &**k == "args").map(|(_, v)| v)) {
                None | Some(Value::None) => false,
                Some(Value::Ref(l)) => !matches!(st.get(*l), Obj::List(items) if items.is_empty()),
                Some(Value::Tuple(t)) => !t.is_empty(),
                Some(_) => true,
            };
            if explicit {
                // an explicit, non-empty argument list: not modelled
                return vec![(st, Value::Unknown)];
            }
            let mut out = BTreeMap::new();
            // the options with choices: (dest, choices)
            let mut choices: Vec<(Name, Rc<Vec<Value>>)> = Vec::new();
            for d in defaults.iter() {
                let Value::Tuple(p) = d else { continue };
                let Some(k) = p[0].as_str() else { continue };
                let k: Name = Rc::from(k);
                let v = match p.get(2) {
                    Some(Value::Tuple(cs)) => {
                        choices.push((k.clone(), cs.clone()));
                        Value::Unknown
                    }
                    // a switch: given or not, a question each run answers (both paths, named by
                    // the flag in conditions: `(when --cuda is given)`)
                    Some(Value::Str(Some(t))) if let Some((action, flag)) = t.split_once(' ') && cx.switches() => {
                        let (given, not_given) = (intern(&format!("{flag} is given")), intern(&format!("{flag} is not given")));
                        let phrase = if action == "store_true" { (given, not_given) } else { (not_given, given) };
                        Value::Cond(cx.flag(&format!("args.{k}"), phrase))
                    }
                    Some(Value::Str(Some(t))) if t.contains(' ') => p[1].clone(),
                    Some(Value::Str(Some(t))) => match &**t {
                        "int" => Value::Int(cx.fresh_sym(&format!("args.{k}"), 0)),
                        "str" => Value::Str(None),
                        "float" => Value::Float(None),
                        _ => Value::Unknown,
                    },
                    _ => match free_option(cx, &mut st, p) {
                        Some(v) => v,
                        None => p[1].clone(),
                    },
                };
                out.insert(k, v);
            }
            let runs: usize = choices.iter().map(|(_, cs)| cs.len()).product();
            if runs > MAX_CHOICE_RUNS {
                choices.clear();
            }
            let alts = if choices.is_empty() { vec![st] } else { cx.assume(&st, span, runs) };
            alts.into_iter()
                .enumerate()
                .map(|(k, mut st)| {
                    let mut attrs = out.clone();
                    // run k takes the k-th combination of the choices (the first option varies slowest)
                    let mut rest = k;
                    for (dest, cs) in choices.iter().rev() {
                        attrs.insert(dest.clone(), cs[rest % cs.len()].clone());
                        rest /= cs.len();
                    }
                    let ns = Value::Ref(st.alloc(Obj::Namespace { kind: Rc::from("Namespace"), attrs }));
                    let v = if name == "parse_known_args" { Value::Tuple(Rc::new(vec![ns, Value::Unknown])) } else { ns };
                    (st, v)
                })
                .collect()
        }
        "set_defaults" => {
            // overrides defaults by dest: forget them all rather than guess
            if let Obj::Namespace { attrs, .. } = st.get_mut(id) {
                attrs.insert(Rc::from("<defaults>"), Value::Unknown);
            }
            vec![(st, Value::None)]
        }
        _ => vec![(st, Value::Unknown)],
    }
}

/// In the SHP902 run (`ModelCtx::free_params`), an option with an int default that a user
/// may set to one int (no `nargs`, `action` or `const`; `type=int` or none) is a fresh symbol
/// tagged as a free parameter: at least 1 (a size, a count), or one of its `choices` (known
/// ints: the smallest as the bound, and the membership as an assumed fact of the path).
/// `None`: the default stands. In the concrete run of a counterexample
/// (`ModelCtx::param_value`), such an option is the counterexample's value when it is legal.
fn free_option(cx: &mut dyn ModelCtx, st: &mut State, p: &[Value]) -> Option<Value> {
    let flag = p.get(3)?.as_str()?.to_string();
    let bound = cx.param_value(&flag);
    if !cx.free_params() && bound.is_none() {
        return None;
    }
    let default = match p.get(1)? {
        Value::Int(d) => d.as_const()?,
        _ => return None,
    };
    let choices: Vec<i128> = match p.get(4)? {
        Value::Tuple(cs) => cs.iter().filter_map(|c| c.as_const_int()).collect(),
        _ => return None,
    };
    if default < 1 || (!choices.is_empty() && !choices.contains(&default)) {
        return None;
    }
    if let Some(v) = bound {
        return (v >= 1 && (choices.is_empty() || choices.contains(&v))).then(|| Value::int(v));
    }
    let lo = choices.iter().copied().min().unwrap_or(1).max(1);
    let sym = cx.fresh_int_sym(&flag, lo);
    cx.set_param(&sym, crate::shape::Param { name: flag, kind: crate::shape::ParamKind::Option, default: Some(default) });
    if !choices.is_empty() {
        let member = crate::shape::Formula::Or(choices.iter().map(|c| crate::shape::Formula::cmp(&sym, crate::shape::Rel::Eq, &crate::shape::Poly::constant(*c))).collect());
        cx.assume_formula(st, member);
    }
    Some(Value::Int(sym))
}

/// What a run that must give the option may give (see `argparse_method`): `None` when the
/// default stands, a tuple of the choices, or the name of the type of a required option
/// (`"int"`, `"str"`, `"float"`, `"?"`).
fn option_spec(st: &State, kw: &dyn Fn(&str) -> Option<Value>, default: &Value, flag: Option<&str>) -> Value {
    let required = matches!(kw("required"), Some(Value::Bool(true)));
    // a switch whose default is the value without it: `store_true` (false), `store_false` (true)
    let action = kw("action");
    match (action.as_ref().and_then(|a| a.as_str()), default, flag) {
        (Some("store_true"), Value::Bool(false), Some(f)) => return Value::Str(Some(Rc::from(format!("store_true {f}")))),
        (Some("store_false"), Value::Bool(true), Some(f)) => return Value::Str(Some(Rc::from(format!("store_false {f}")))),
        _ => {}
    }
    // several values, a count or a constant: not a single value of the type
    let single = kw("nargs").is_none() && kw("action").is_none() && kw("const").is_none();
    if let Some(c) = kw("choices") {
        let items: Option<Vec<Value>> = match &c {
            Value::Tuple(t) => Some(t.as_ref().clone()),
            Value::Ref(l) => match st.get(*l) {
                Obj::List(items) => Some(items.clone()),
                _ => None,
            },
            Value::Range(a, b, s) => match (a.as_const(), b.as_const(), s.as_const()) {
                (Some(a), Some(b), Some(s)) if s > 0 && b > a && (b - a + s - 1) / s <= MAX_CHOICE_RUNS as i128 => {
                    Some((0..).map(|i| a + i * s).take_while(|v| *v < b).map(Value::int).collect())
                }
                _ => None,
            },
            _ => None,
        };
        let known = |v: &Value| v.as_const_int().is_some() || v.as_str().is_some() || matches!(v, Value::Float(Some(_)));
        let defaulted = !required && items.as_ref().is_some_and(|cs| cs.iter().any(|c| c == default));
        return match items {
            // the default stands (choices this model cannot list keep it, as before)
            None if !required => Value::None,
            _ if defaulted => Value::None,
            Some(cs) if single && !cs.is_empty() && cs.len() <= MAX_CHOICE_RUNS && cs.iter().all(known) => Value::Tuple(Rc::new(cs)),
            _ => Value::Str(Some(Rc::from("?"))),
        };
    }
    if !required {
        return Value::None;
    }
    let ty = match kw("type") {
        _ if !single => "?",
        None | Some(Value::Builtin("str")) => "str",
        Some(Value::Builtin("int")) => "int",
        Some(Value::Builtin("float")) => "float",
        Some(_) => "?",
    };
    Value::Str(Some(Rc::from(ty)))
}
