use std::rc::Rc;

use crate::ir::{FileId, Span};
use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP312
pub const RULE: Rule = Rule {
    code: "SHP312",
    name: "checkpoint-key-never-saved",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "A resume path reads a checkpoint key that no torch.save of the program writes (typically the optimizer or scheduler state)",
    messages: <CheckpointKeyNeverSaved as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows the keys of checkpoint dicts from `torch.save` to `torch.load`. Reports a subscript
`ckpt["key"]` of a checkpoint the program loads from a file it also saves to, when every
`torch.save` of the program writes a dict with known keys and none of them writes that key:
typically the optimizer or scheduler state, read by the resume path and never saved by the
training loop.

The file is matched by its value, however the program builds it from known values: a constant,
a variable, an argparse default, `os.path.join(save_dir, "last.pt")`, an f-string
(`f"{save_dir}/last.pt"`, `f"epoch_{epoch:03d}.pt"`), `"{}/last.pt".format(save_dir)`, `%`, `+`
and string methods such as `join` and `replace`. A path with a part the analysis cannot tell
(an epoch read from the command line, a float) matches nothing.

Nothing is reported when the program may write the key some way the analysis does not see: a
save whose dict it cannot follow, a call that saves by other means (`accelerator.save`, a helper
of another module), or a key the program tests for (`"optimizer" in ckpt`), reads with `.get`,
stores, lists or builds (only a key written as a string at the subscript is judged). A checkpoint the program never saves (pretrained weights) is never judged.

## Why is this bad?
`torch.load` gives back the dict that was saved; reading a key it lacks raises `KeyError` when
training resumes, typically after a long run was interrupted, which is the moment the checkpoint
was meant for. Saving only the weights also means the resumed run restarts the optimizer's
moments and the learning-rate schedule.

## Example
```python
torch.save({"model": model.state_dict(), "epoch": epoch}, "last.pt")
...
ckpt = torch.load("last.pt")
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])   # SHP312: never saved
```

Use instead:
```python
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "last.pt")
```

## References
- [Saving and loading a general checkpoint in PyTorch](https://pytorch.org/tutorials/recipes/recipes/saving_and_loading_a_general_checkpoint.html)
"#,
};

crate::violation! {
    /// A checkpoint key read that no save wrote.
    pub enum CheckpointKeyNeverSaved for RULE {
        /// `ckpt["key"]`, and what each save writes.
        Missing { key, saves } => "checkpoint key '{key}' is never saved: {saves}",
    }
}

/// One `torch.save` the analysis ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    pub site: Span,
    /// The file, when a known string.
    pub path: Option<Rc<str>>,
    /// The keys of the saved dict; `None` when it is not a dict with known string keys.
    pub keys: Option<Vec<Rc<str>>>,
}

/// `ckpt["key"]` on a checkpoint loaded from `path`.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub site: Span,
    pub path: Rc<str>,
    pub key: Rc<str>,
}

/// What the analysis saw of checkpoints, over all its entries.
#[derive(Debug, Default)]
pub struct Log {
    pub saves: Vec<Save>,
    pub reads: Vec<Read>,
}

/// The violation at the subscript `site` of the checked file `file` (text `source`; in a run
/// shared by every file a script loads, the read's own file), if every read logged
/// there is of a key no save wrote (`place` shows a save's site):
/// - the program saves something, and every save writes a dict with known string keys;
/// - every call in `source` whose name says it saves (`torch.save`, `save_checkpoint`,
///   `accelerator.save`, `img.save`, ...) ran as a `torch.save` the log holds, or calls a
///   function `source` defines (whose own saves are then in the log);
/// - the read spells its key as a string constant at the subscript (`ckpt["optimizer"]`, not
///   a key the program builds);
/// - some save wrote the file the read loaded (the same known string, however it was built):
///   a checkpoint the program never writes (pretrained weights) is not judged;
/// - the key is none of the keys any save wrote;
/// - the key appears in `source` only as a subscript read (`ckpt["key"]`) or a dict literal
///   key: a test (`"key" in ckpt`), a `.get("key")`, a store, a list of keys, all mean the
///   program expects it may be missing.
pub fn missing(log: &Log, file: FileId, source: &str, site: Span, place: &dyn Fn(Span) -> String) -> Option<CheckpointKeyNeverSaved> {
    let reads: Vec<&Read> = log.reads.iter().filter(|r| r.site == site).collect();
    let first = reads.first()?;
    if log.saves.is_empty() || log.saves.iter().any(|s| s.keys.is_none()) {
        return None;
    }
    let observed: Vec<(u32, u32)> = log.saves.iter().filter(|s| s.site.file == file).map(|s| (s.site.start, s.site.end)).collect();
    if unobserved_save_call(source, &observed) {
        return None;
    }
    for r in &reads {
        if r.site.file == file && !literal_at(source, r.site, &r.key) {
            return None;
        }
        if !log.saves.iter().any(|s| s.path.as_deref() == Some(&*r.path)) {
            return None;
        }
        if log.saves.iter().any(|s| s.keys.as_ref().is_some_and(|ks| ks.iter().any(|k| **k == *r.key))) {
            return None;
        }
        if !only_read_or_written(source, &r.key) {
            return None;
        }
    }
    // one line per save site, its keys in the order they were written
    let mut sites: Vec<(Span, Vec<Rc<str>>)> = Vec::new();
    for s in &log.saves {
        let keys = s.keys.clone().unwrap_or_default();
        match sites.iter_mut().find(|(at, _)| *at == s.site) {
            Some((_, ks)) => keys.into_iter().for_each(|k| {
                if !ks.contains(&k) {
                    ks.push(k)
                }
            }),
            None => sites.push((s.site, keys)),
        }
    }
    sites.sort_by_key(|(s, _)| (s.file.0, s.start));
    let saves = sites
        .iter()
        .map(|(at, ks)| {
            let ks: Vec<String> = ks.iter().map(|k| format!("'{k}'")).collect();
            let what = if ks.is_empty() { "an empty dict".to_string() } else { ks.join(", ") };
            format!("torch.save at {} writes {what}", place(*at))
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(CheckpointKeyNeverSaved::Missing { key: first.key.to_string(), saves })
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `source` has a call whose name contains `save` that is none of the `observed`
/// `torch.save` sites (byte ranges) and no call of a function `source` defines.
fn unobserved_save_call(source: &str, observed: &[(u32, u32)]) -> bool {
    let b = source.as_bytes();
    let lower = source.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("save").map(|i| i + from) {
        // the whole identifier around it
        let mut s = i;
        while s > 0 && is_ident(b[s - 1]) {
            s -= 1;
        }
        let mut e = i + 4;
        while e < b.len() && is_ident(b[e]) {
            e += 1;
        }
        from = e;
        let mut j = e;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j >= b.len() || b[j] != b'(' {
            continue;
        }
        let name = &source[s..e];
        let before = source[..s].trim_end();
        if before.ends_with("def") && before[..before.len() - 3].chars().last().is_none_or(|c| !c.is_alphanumeric() && c != '_') {
            continue;
        }
        if defines(source, name) {
            continue;
        }
        if observed.iter().any(|(a, z)| (*a as usize) <= s && e <= (*z as usize)) {
            continue;
        }
        return true;
    }
    false
}

/// Whether `source` defines a function `name` (`def name(`).
fn defines(source: &str, name: &str) -> bool {
    source.match_indices(name).any(|(i, _)| {
        let before = source[..i].trim_end_matches([' ', '\t']);
        let after = source[i + name.len()..].trim_start_matches([' ', '\t']);
        before.ends_with("def") && (i == 0 || !is_ident(source.as_bytes()[i - 1])) && after.starts_with('(')
    })
}

/// Whether the subscript at `site` spells `key` as a plain string constant (`ckpt["key"]`): a
/// key the program builds (`ckpt[f"{prefix}optimizer"]`, `ckpt[name]`) is not judged, as
/// [`only_read_or_written`] could not find its tests and stores in the text.
fn literal_at(source: &str, site: Span, key: &str) -> bool {
    let Some(text) = source.get(site.start as usize..site.end as usize) else { return false };
    ["\"", "'"].iter().any(|q| {
        let quoted = format!("{q}{key}{q}");
        text.match_indices(&quoted).any(|(i, _)| i == 0 || !is_ident(text.as_bytes()[i - 1]))
    })
}

/// Whether every quoted occurrence of `key` in `source` is a subscript read (`x["key"]` not
/// followed by `=`) or a dict literal's key (`{"key": ...}`, `, "key": ...`).
fn only_read_or_written(source: &str, key: &str) -> bool {
    let b = source.as_bytes();
    for q in ["\"", "'"] {
        let quoted = format!("{q}{key}{q}");
        for (i, _) in source.match_indices(&quoted) {
            let prev = source[..i].trim_end().bytes().last();
            let rest = source[i + quoted.len()..].trim_start();
            let next = rest.bytes().next();
            let subscript_read = prev == Some(b'[') && next == Some(b']') && {
                let after = rest[1..].trim_start();
                !(after.starts_with('=') && !after.starts_with("==")) && !after.starts_with(":=")
                    && !["+=", "-=", "*=", "/=", "|=", "&="].iter().any(|op| after.starts_with(op))
            };
            let dict_key = matches!(prev, Some(b'{') | Some(b',')) && next == Some(b':');
            // a prefix (`f"key"`, `b"key"`, `r"key"`): not a plain string constant
            let prefixed = i > 0 && is_ident(b[i - 1]);
            if prefixed || !(subscript_read || dict_key) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_calls_are_torch_saves_or_calls_of_local_functions() {
        let src = "def save_checkpoint(s, p):\n    torch.save(s, p)\nsave_checkpoint({}, 'a')\n";
        let at = src.find("torch.save").unwrap() as u32;
        assert!(!unobserved_save_call(src, &[(at, at + 16)]));
        assert!(unobserved_save_call(src, &[]));
        assert!(unobserved_save_call("img.save('x.png')\n", &[]));
        assert!(!unobserved_save_call("saved = 1\nprint(saved)\n", &[]));
    }

    #[test]
    fn only_a_key_spelled_at_the_read_is_judged() {
        let src = "a = ck['optimizer']\nb = ck[f'optimizer']\nc = ck[key]\nd = ck[\"sched\"]\n";
        let site = |line: &str| {
            let start = src.find(line).unwrap() + 4;
            Span { file: FileId::MAIN, start: start as u32, end: (start + line.len() - 4) as u32 }
        };
        assert!(literal_at(src, site("a = ck['optimizer']"), "optimizer"));
        assert!(!literal_at(src, site("b = ck[f'optimizer']"), "optimizer"));
        assert!(!literal_at(src, site("c = ck[key]"), "optimizer"));
        assert!(literal_at(src, site("d = ck[\"sched\"]"), "sched"));
        assert!(!literal_at(src, site("d = ck[\"sched\"]"), "sch"));
    }

    #[test]
    fn a_key_tested_fetched_with_get_or_stored_is_expected_missing() {
        assert!(only_read_or_written("c = {'model': 1}\nopt(ck['optimizer'])\n", "optimizer"));
        assert!(only_read_or_written("torch.save({\n  \"model\": m,\n  \"optimizer\": o}, p)\n", "optimizer"));
        assert!(!only_read_or_written("if 'optimizer' in ck:\n    opt(ck['optimizer'])\n", "optimizer"));
        assert!(!only_read_or_written("ck.get('optimizer')\n", "optimizer"));
        assert!(!only_read_or_written("ck['optimizer'] = {}\n", "optimizer"));
        assert!(!only_read_or_written("for k in ('model', 'optimizer'): pass\n", "optimizer"));
        assert!(only_read_or_written("ck['optimizer'] == 1\n", "optimizer"));
    }
}
