//! Strings built from known values, rendered exactly as Python renders them: `str()`,
//! `format(v, spec)`, f-string fields, `str.format`, `%`-formatting and the `posixpath`
//! functions (`os.path.join`, `basename`, `dirname`, `splitext`).
//!
//! Every function answers `None` when it cannot render the result exactly (a value not known,
//! a float, a format spec or a conversion not modelled, a string Python would reject): the
//! caller's string then stays unknown. A known value is a known `str`, an `int` whose value is
//! a constant, a `bool` or `None`.

use crate::ir::{FPiece, Name};
use crate::value::*;

/// `str(v)` of a known str, int, bool or None.
pub fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::Str(Some(s)) => Some(s.to_string()),
        Value::Int(p) => p.as_const().map(|c| c.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_string()),
        Value::None => Some("None".to_string()),
        _ => None,
    }
}

/// `repr(v)` of a known ASCII str or None (an int or a bool may be a NumPy scalar, whose repr
/// differs: not rendered).
pub fn repr_of(v: &Value) -> Option<String> {
    match v {
        Value::Str(Some(s)) => repr_str(s),
        Value::None => Some("None".to_string()),
        _ => None,
    }
}

/// Python's `repr` of an ASCII string (`None` for other text, whose printable characters
/// follow Unicode tables).
pub fn repr_str(s: &str) -> Option<String> {
    if !s.is_ascii() {
        return None;
    }
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    Some(out)
}

/// A standard format spec, parsed (`[[fill]align][sign][z][#][0][width][grouping][.precision][type]`).
#[derive(Debug, Default, PartialEq)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    z: bool,
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn parse_spec(spec: &str) -> Option<Spec> {
    let cs: Vec<char> = spec.chars().collect();
    let mut s = Spec::default();
    let mut i = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '=' | '^');
    if cs.len() >= 2 && is_align(cs[1]) {
        s.fill = Some(cs[0]);
        s.align = Some(cs[1]);
        i = 2;
    } else if !cs.is_empty() && is_align(cs[0]) {
        s.align = Some(cs[0]);
        i = 1;
    }
    if i < cs.len() && matches!(cs[i], '+' | '-' | ' ') {
        s.sign = Some(cs[i]);
        i += 1;
    }
    if i < cs.len() && cs[i] == 'z' {
        s.z = true;
        i += 1;
    }
    if i < cs.len() && cs[i] == '#' {
        s.alt = true;
        i += 1;
    }
    if i < cs.len() && cs[i] == '0' {
        s.zero = true;
        i += 1;
    }
    let digits = |i: &mut usize| -> Option<usize> {
        let start = *i;
        while *i < cs.len() && cs[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| cs[start..*i].iter().collect::<String>().parse().ok()).flatten()
    };
    if let Some(w) = digits(&mut i) {
        s.width = w;
    }
    if i < cs.len() && matches!(cs[i], ',' | '_') {
        s.grouping = Some(cs[i]);
        i += 1;
    }
    if i < cs.len() && cs[i] == '.' {
        i += 1;
        s.precision = Some(digits(&mut i)?);
    }
    if i < cs.len() {
        s.ty = Some(cs[i]);
        i += 1;
    }
    (i == cs.len() && s.width <= 1 << 12).then_some(s)
}

/// `body` padded to the spec's width with its fill and alignment (`default` when none is
/// given); `sign` goes before the padding for `=`.
fn pad(s: &Spec, sign: &str, body: &str, default: char) -> String {
    let (fill, align) = match (s.fill, s.align, s.zero) {
        (f, Some(a), true) => (f.unwrap_or('0'), a),
        (None, None, true) => ('0', '='),
        (f, a, false) => (f.unwrap_or(' '), a.unwrap_or(default)),
        (Some(_), None, true) => unreachable!("a fill comes with an alignment"),
    };
    let len = sign.chars().count() + body.chars().count();
    let n = s.width.saturating_sub(len);
    let fills = |k: usize| std::iter::repeat_n(fill, k).collect::<String>();
    match align {
        '<' => format!("{sign}{body}{}", fills(n)),
        '>' => format!("{}{sign}{body}", fills(n)),
        '^' => format!("{}{sign}{body}{}", fills(n / 2), fills(n - n / 2)),
        _ => format!("{sign}{}{body}", fills(n)),
    }
}

/// `format(v, spec)`: a str with `s` or no type (fill, alignment, width, precision), an int
/// with `d` or no type (fill, alignment, sign, `0`, width, `,`/`_` grouping), a bool as its
/// int under a non-empty spec, `None` under an empty one.
pub fn format_value(v: &Value, spec: &str) -> Option<String> {
    if spec.is_empty() {
        return str_of(v);
    }
    let s = parse_spec(spec)?;
    match v {
        Value::Str(Some(text)) => {
            if s.sign.is_some() || s.z || s.alt || s.zero || s.grouping.is_some() || s.align == Some('=') || !matches!(s.ty, None | Some('s')) {
                return None;
            }
            let body: String = match s.precision {
                Some(p) => text.chars().take(p).collect(),
                None => text.to_string(),
            };
            Some(pad(&s, "", &body, '<'))
        }
        Value::Int(_) | Value::Bool(_) => {
            let n = v.as_const_int()?;
            if s.z || s.alt || s.precision.is_some() || !matches!(s.ty, None | Some('d')) || (s.grouping.is_some() && s.zero) {
                return None;
            }
            let sign = match (n < 0, s.sign) {
                (true, _) => "-",
                (false, Some('+')) => "+",
                (false, Some(' ')) => " ",
                _ => "",
            };
            let mut digits = n.unsigned_abs().to_string();
            if let Some(g) = s.grouping {
                let b = digits.as_bytes();
                let mut out = String::new();
                for (k, d) in b.iter().enumerate() {
                    if k > 0 && (b.len() - k) % 3 == 0 {
                        out.push(g);
                    }
                    out.push(*d as char);
                }
                digits = out;
            }
            Some(pad(&s, sign, &digits, '>'))
        }
        _ => None,
    }
}

/// One f-string field or `str.format` replacement: `v` converted (`!s`, `!r`, `!a`) and then
/// formatted with `spec`.
pub fn field(v: &Value, conv: Option<char>, spec: &str) -> Option<String> {
    let converted = match conv {
        None => return format_value(v, spec),
        Some('s') => str_of(v)?,
        // an ASCII repr is its own ascii()
        Some('r' | 'a') => repr_of(v)?,
        Some(_) => return None,
    };
    format_value(&Value::Str(Some(converted.into())), spec)
}

/// The text of an f-string's `pieces`, its fields taking `values` (those of its expressions,
/// in order).
pub fn fstring<'v>(pieces: &[FPiece], values: &mut impl Iterator<Item = &'v Value>) -> Option<String> {
    let mut out = String::new();
    for p in pieces {
        match p {
            FPiece::Lit(s) => out.push_str(s),
            FPiece::Field { conv, spec } => {
                let v = values.next()?;
                let spec = fstring(spec, values)?;
                out.push_str(&field(v, *conv, &spec)?);
            }
            FPiece::Opaque { .. } => return None,
        }
    }
    Some(out)
}

/// `template.format(*args, **kwargs)`: fields `{}`, `{0}`, `{name}` with an optional
/// conversion and a spec without nested fields; `{{` and `}}`.
pub fn str_format(template: &str, args: &[Value], kwargs: &[(Name, Value)]) -> Option<String> {
    let cs: Vec<char> = template.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    // automatic numbering (`{}`) and manual (`{0}`) cannot be mixed
    let (mut auto, mut manual) = (0usize, false);
    while i < cs.len() {
        match cs[i] {
            '{' if cs.get(i + 1) == Some(&'{') => {
                out.push('{');
                i += 2;
            }
            '}' if cs.get(i + 1) == Some(&'}') => {
                out.push('}');
                i += 2;
            }
            '}' => return None,
            '{' => {
                let end = (i + 1..cs.len()).find(|&k| cs[k] == '}')?;
                let inner: String = cs[i + 1..end].iter().collect();
                if inner.contains('{') {
                    return None;
                }
                let (head, spec) = match inner.split_once(':') {
                    Some((h, s)) => (h, s),
                    None => (inner.as_str(), ""),
                };
                let (name, conv) = match head.split_once('!') {
                    Some((n, c)) if c.chars().count() == 1 => (n, c.chars().next()),
                    Some(_) => return None,
                    None => (head, None),
                };
                let v = if name.is_empty() {
                    if manual {
                        return None;
                    }
                    auto += 1;
                    args.get(auto - 1)?
                } else if name.bytes().all(|b| b.is_ascii_digit()) {
                    if auto > 0 {
                        return None;
                    }
                    manual = true;
                    args.get(name.parse::<usize>().ok()?)?
                } else if name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    &kwargs.iter().find(|(k, _)| &**k == name)?.1
                } else {
                    // `{0.attr}`, `{d[key]}`
                    return None;
                };
                out.push_str(&field(v, conv, spec)?);
                i = end + 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// `template % args` (`args` the items of a tuple, or the one value on the right): `%s`, `%r`,
/// `%d`/`%i` with the flags `-`, `+`, ` `, `0` and a width, `%.Ns`, and `%%`.
pub fn percent_format(template: &str, args: &[Value]) -> Option<String> {
    let cs: Vec<char> = template.chars().collect();
    let mut out = String::new();
    let mut next = args.iter();
    let mut i = 0;
    while i < cs.len() {
        if cs[i] != '%' {
            out.push(cs[i]);
            i += 1;
            continue;
        }
        i += 1;
        let (mut left, mut plus, mut space, mut zero) = (false, false, false, false);
        while let Some(c) = cs.get(i) {
            match c {
                '-' => left = true,
                '+' => plus = true,
                ' ' => space = true,
                '0' => zero = true,
                _ => break,
            }
            i += 1;
        }
        let start = i;
        while cs.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        let width: usize = if i > start { cs[start..i].iter().collect::<String>().parse().ok()? } else { 0 };
        let mut precision = None;
        if cs.get(i) == Some(&'.') {
            i += 1;
            let p0 = i;
            while cs.get(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            precision = Some(if i > p0 { cs[p0..i].iter().collect::<String>().parse::<usize>().ok()? } else { 0 });
        }
        let ty = *cs.get(i)?;
        i += 1;
        if width > 1 << 12 {
            return None;
        }
        let (sign, body) = match ty {
            '%' if width == 0 && precision.is_none() && !(left || plus || space || zero) => {
                out.push('%');
                continue;
            }
            's' | 'r' if !zero && !plus && !space => {
                let v = next.next()?;
                let text = if ty == 's' { str_of(v)? } else { repr_of(v)? };
                let text = match precision {
                    Some(p) => text.chars().take(p).collect(),
                    None => text,
                };
                (String::new(), text)
            }
            'd' | 'i' if precision.is_none() => {
                let n = next.next()?.as_const_int()?;
                let sign = if n < 0 { "-" } else if plus { "+" } else if space { " " } else { "" };
                (sign.to_string(), n.unsigned_abs().to_string())
            }
            _ => return None,
        };
        let n = width.saturating_sub(sign.chars().count() + body.chars().count());
        let spaces = " ".repeat(n);
        if left {
            out.push_str(&format!("{sign}{body}{spaces}"));
        } else if zero {
            out.push_str(&format!("{sign}{}{body}", "0".repeat(n)));
        } else {
            out.push_str(&format!("{spaces}{sign}{body}"));
        }
    }
    // every argument used (`"%s" % (a, b)` raises)
    next.next().is_none().then_some(out)
}

/// `posixpath.join(a, *p)`: an absolute part starts over; a `/` goes between parts unless the
/// path so far is empty or ends with one.
pub fn path_join(parts: &[&str]) -> String {
    let mut path = String::new();
    for (k, b) in parts.iter().enumerate() {
        if k == 0 || b.starts_with('/') {
            path = b.to_string();
        } else if path.is_empty() || path.ends_with('/') {
            path.push_str(b);
        } else {
            path.push('/');
            path.push_str(b);
        }
    }
    path
}

/// `posixpath.basename(p)`: what follows the last `/`.
pub fn basename(p: &str) -> &str {
    &p[p.rfind('/').map_or(0, |i| i + 1)..]
}

/// `posixpath.dirname(p)`: what precedes the last `/`, its trailing slashes removed unless it
/// is all slashes.
pub fn dirname(p: &str) -> &str {
    let head = &p[..p.rfind('/').map_or(0, |i| i + 1)];
    if !head.is_empty() && head.bytes().any(|b| b != b'/') { head.trim_end_matches('/') } else { head }
}

/// `posixpath.splitext(p)`: the root and the extension (from the last `.` of the last part
/// that is not all leading dots).
pub fn splitext(p: &str) -> (&str, &str) {
    let sep = p.rfind('/').map(|i| i as isize).unwrap_or(-1);
    if let Some(dot) = p.rfind('.')
        && dot as isize > sep
        && p[(sep + 1) as usize..dot].bytes().any(|b| b != b'.')
    {
        return (&p[..dot], &p[dot..]);
    }
    (p, "")
}

/// Python's whitespace among ASCII characters (`str.isspace`).
fn py_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' | '\x1c' | '\x1d' | '\x1e' | '\x1f')
}

/// `s.strip(chars)`, `lstrip`, `rstrip` (`which`); with no `chars`, Python's whitespace, for
/// an ASCII string only.
pub fn strip(s: &str, which: &str, chars: Option<&str>) -> Option<String> {
    let set: Box<dyn Fn(char) -> bool> = match chars {
        Some(cs) => {
            let cs: Vec<char> = cs.chars().collect();
            Box::new(move |c| cs.contains(&c))
        }
        None if s.is_ascii() => Box::new(py_space),
        None => return None,
    };
    Some(match which {
        "strip" => s.trim_matches(|c| set(c)),
        "lstrip" => s.trim_start_matches(|c| set(c)),
        _ => s.trim_end_matches(|c| set(c)),
    }
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn s(x: &str) -> Value {
        Value::Str(Some(Rc::from(x)))
    }

    #[test]
    fn str_and_repr_of_known_values() {
        assert_eq!(str_of(&Value::int(-3)).as_deref(), Some("-3"));
        assert_eq!(str_of(&Value::Bool(true)).as_deref(), Some("True"));
        assert_eq!(str_of(&Value::None).as_deref(), Some("None"));
        assert_eq!(str_of(&Value::Float(Some(0.5))), None);
        assert_eq!(str_of(&Value::Str(None)), None);
        assert_eq!(repr_of(&s("a'b")).as_deref(), Some("\"a'b\""));
        assert_eq!(repr_of(&s("a'b\"\n\\")).as_deref(), Some("'a\\'b\"\\n\\\\'"));
        assert_eq!(repr_of(&s("\x01")).as_deref(), Some("'\\x01'"));
        assert_eq!(repr_of(&s("é")), None);
        assert_eq!(repr_of(&Value::int(1)), None);
    }

    #[test]
    fn format_specs_python_renders() {
        // (value, spec, what Python 3.11 gives)
        let cases: &[(Value, &str, &str)] = &[
            (Value::Bool(true), ">5", "    1"),
            (Value::Bool(true), "", "True"),
            (Value::int(5), "^6", "  5   "),
            (Value::int(-5), "=6", "-    5"),
            (Value::int(-5), "06", "-00005"),
            (Value::int(5), "<05", "50000"),
            (Value::int(7), "03d", "007"),
            (Value::int(7), " ", " 7"),
            (Value::int(-7), "+05", "-0007"),
            (Value::int(5), "x^7", "xxx5xxx"),
            (Value::int(1234567), ",", "1,234,567"),
            (Value::int(-1234), "_d", "-1_234"),
            (s("ab"), "^5", " ab  "),
            (s("abc"), ".2", "ab"),
            (s("ab"), "*>4s", "**ab"),
        ];
        for (v, spec, want) in cases {
            assert_eq!(format_value(v, spec).as_deref(), Some(*want), "format({v:?}, {spec:?})");
        }
        // not rendered: floats, other types, specs Python rejects or this does not follow
        for (v, spec) in [(Value::Float(Some(0.5)), ".2f"), (Value::int(5), "x"), (Value::int(5), ".2"), (s("ab"), "05"), (s("a"), "+"), (Value::None, ">6"), (Value::int(1), "07,")] {
            assert_eq!(format_value(&v, spec), None, "format({v:?}, {spec:?})");
        }
        assert_eq!(field(&s("a'b"), Some('r'), "").as_deref(), Some("\"a'b\""));
        assert_eq!(field(&Value::None, Some('s'), ">6").as_deref(), Some("  None"));
        assert_eq!(field(&Value::int(3), Some('r'), ""), None);
    }

    #[test]
    fn str_format_fields() {
        let k = |n: &str, v: Value| (Name::from(n), v);
        assert_eq!(str_format("{}/last.pt", &[s("ckpt")], &[]).as_deref(), Some("ckpt/last.pt"));
        assert_eq!(str_format("{0}_{1:03d}_{0}", &[s("a"), Value::int(7)], &[]).as_deref(), Some("a_007_a"));
        assert_eq!(str_format("{name}-{{x}}", &[], &[k("name", s("r"))]).as_deref(), Some("r-{x}"));
        assert_eq!(str_format("{!r}", &[s("a")], &[]).as_deref(), Some("'a'"));
        assert_eq!(str_format("{}{0}", &[s("a")], &[]), None);
        assert_eq!(str_format("{0.x}", &[s("a")], &[]), None);
        assert_eq!(str_format("{}{}", &[s("a")], &[]), None);
        assert_eq!(str_format("{:{w}}", &[s("a")], &[k("w", Value::int(3))]), None);
        assert_eq!(str_format("a}b", &[], &[]), None);
        assert_eq!(str_format("{}", &[Value::Str(None)], &[]), None);
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(
            percent_format("%5s|%-5s|%03d|%+d|% d|%d|100%%", &[s("a"), s("b"), Value::int(7), Value::int(3), Value::int(4), Value::Bool(true)]).as_deref(),
            Some("    a|b    |007|+3| 4|1|100%")
        );
        assert_eq!(percent_format("%s_%d.pt", &[s("run"), Value::int(-2)]).as_deref(), Some("run_-2.pt"));
        assert_eq!(percent_format("%.2s %r", &[s("abc"), s("x")]).as_deref(), Some("ab 'x'"));
        assert_eq!(percent_format("%s", &[s("a"), s("b")]), None);
        assert_eq!(percent_format("%s %s", &[s("a")]), None);
        assert_eq!(percent_format("%d", &[s("a")]), None);
        assert_eq!(percent_format("%f", &[Value::int(1)]), None);
        assert_eq!(percent_format("%(k)s", &[s("a")]), None);
    }

    #[test]
    fn posix_paths() {
        assert_eq!(path_join(&["checkpoints", "last.pt"]), "checkpoints/last.pt");
        assert_eq!(path_join(&["a", "/b", "c/", "d", ""]), "/b/c/d/");
        assert_eq!(path_join(&["", "x"]), "x");
        assert_eq!(path_join(&["a"]), "a");
        assert_eq!(basename("a/b/"), "");
        assert_eq!(basename("a/b.pt"), "b.pt");
        assert_eq!(dirname("/a//"), "/a");
        assert_eq!(dirname("//x"), "//");
        assert_eq!(dirname("x"), "");
        assert_eq!(splitext(".bashrc"), (".bashrc", ""));
        assert_eq!(splitext("a/b.c.d"), ("a/b.c", ".d"));
        assert_eq!(splitext("a.b/c"), ("a.b/c", ""));
        assert_eq!(splitext("a/..x"), ("a/..x", ""));
        assert_eq!(splitext("a/..x.y"), ("a/..x", ".y"));
    }

    #[test]
    fn strips() {
        assert_eq!(strip(" \x1c a \n", "strip", None).as_deref(), Some("a"));
        assert_eq!(strip("xxaxx", "lstrip", Some("x")).as_deref(), Some("axx"));
        assert_eq!(strip("xxaxy", "rstrip", Some("xy")).as_deref(), Some("xxa"));
        assert_eq!(strip(" é ", "strip", None), None);
    }
}
