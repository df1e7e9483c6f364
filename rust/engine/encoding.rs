//! Reading the project's other files as Python reads source: the encoding is a UTF-8 BOM,
//! else a PEP 263 coding declaration on line 1 or 2 (line 2 only below a blank or comment
//! line), else UTF-8 — what `tokenize.detect_encoding` decides, which the Python layer uses
//! for the checked file itself (`shape_lint.cli.decode_source`).
//!
//! The core decodes UTF-8 (`utf-8`, `utf8`, `utf-8-*`), Latin-1 (`latin-1`, `iso-8859-1` and
//! their aliases), ASCII and cp1252 (Windows' Western code page). A file in another declared
//! encoding, one whose bytes are not valid in its encoding, or one with a BOM and another
//! declaration is not decoded: the caller treats it as unreadable (its import is Unknown).
//! Line ends are left as they are (the parser takes `\n`, `\r\n` and `\r`).

use std::path::Path;

/// The text of the Python source file at `path`, decoded as Python would, or `None`.
pub fn read_python_source(path: &Path) -> Option<String> {
    decode_python_source(&std::fs::read(path).ok()?)
}

/// Python source bytes as text, decoded as Python would (see the module doc), or `None`.
pub fn decode_python_source(bytes: &[u8]) -> Option<String> {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    let (bom, body) = match bytes.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    let encoding = match declared_encoding(body)? {
        None => Encoding::Utf8,
        Some(name) => {
            let encoding = encoding_named(&name)?;
            if bom && encoding != Encoding::Utf8 {
                return None; // Python: "encoding problem: ... with BOM"
            }
            encoding
        }
    };
    match encoding {
        Encoding::Utf8 => String::from_utf8(body.to_vec()).ok(),
        Encoding::Latin1 => Some(body.iter().map(|&b| b as char).collect()),
        Encoding::Ascii => body.is_ascii().then(|| String::from_utf8(body.to_vec()).ok())?,
        Encoding::Cp1252 => body.iter().map(|&b| cp1252(b)).collect(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Latin1,
    Ascii,
    Cp1252,
}

/// The coding declaration of line 1, or of line 2 when line 1 is blank or a comment:
/// `Some(None)` when there is none, `None` when a declaring line is not UTF-8/ASCII text.
fn declared_encoding(body: &[u8]) -> Option<Option<String>> {
    let mut lines = body.split_inclusive(|&b| b == b'\n');
    let Some(first) = lines.next() else { return Some(None) };
    if let Some(name) = cookie(first) {
        return Some(Some(name));
    }
    if !blank_or_comment(first) {
        return Some(None);
    }
    Some(lines.next().and_then(cookie))
}

/// `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)` on one line (PEP 263's pattern, as `tokenize`).
fn cookie(line: &[u8]) -> Option<String> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let start = text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\x0c'))?;
    if text[start] != b'#' {
        return None;
    }
    let comment = &text[start..];
    let mut from = 0;
    while let Some(i) = find(&comment[from..], b"coding").map(|i| i + from) {
        let after = &comment[i + 6..];
        if let Some((&sep, rest)) = after.split_first()
            && (sep == b':' || sep == b'=')
        {
            let rest = &rest[rest.iter().take_while(|b| matches!(b, b' ' | b'\t')).count()..];
            let name: Vec<u8> = rest.iter().copied().take_while(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')).collect();
            if !name.is_empty() {
                return Some(String::from_utf8(name).ok()?);
            }
        }
        from = i + 1;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `^[ \t\f]*(?:[#\r\n]|$)`: a line below which line 2 may still declare the encoding.
fn blank_or_comment(line: &[u8]) -> bool {
    match line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\x0c')) {
        None => true,
        Some(b) => matches!(b, b'#' | b'\r' | b'\n'),
    }
}

/// The encodings the core decodes, by the names Python's codec registry knows them by.
fn encoding_named(name: &str) -> Option<Encoding> {
    let lower = name.to_ascii_lowercase().replace('_', "-");
    // tokenize's `_get_normal_name`: `utf-8-*` is UTF-8, `latin-1-*` / `iso-8859-1-*` Latin-1
    if lower == "utf-8" || lower.starts_with("utf-8-") {
        return Some(Encoding::Utf8);
    }
    for prefix in ["latin-1", "iso-8859-1", "iso-latin-1"] {
        if lower == prefix || lower.strip_prefix(prefix).is_some_and(|r| r.starts_with('-')) {
            return Some(Encoding::Latin1);
        }
    }
    // the codec registry's aliases (`encodings.aliases`), spelled without separators
    let key: String = lower.chars().filter(|c| !matches!(c, '-' | '.' | ' ')).collect();
    match key.as_str() {
        "utf8" | "u8" | "utf" | "cp65001" => Some(Encoding::Utf8),
        "latin1" | "latin" | "l1" | "iso88591" | "iso885911987" | "isoir100" | "cp819" | "ibm819" | "8859" | "csisolatin1" => Some(Encoding::Latin1),
        "ascii" | "usascii" | "646" | "us" | "ansix341968" | "ansix341986" | "cp367" | "ibm367" | "iso646us" | "isoir6" | "csascii" => Some(Encoding::Ascii),
        "cp1252" | "windows1252" => Some(Encoding::Cp1252),
        _ => None,
    }
}

/// A byte of cp1252 as Python decodes it (five bytes are undefined: an error).
fn cp1252(b: u8) -> Option<char> {
    const HIGH: [u16; 32] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0, //
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ];
    match b {
        0x80..=0x9f => match HIGH[(b - 0x80) as usize] {
            0 => None,
            c => char::from_u32(c as u32),
        },
        _ => Some(b as char),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_the_default_and_a_bom_is_dropped() {
        assert_eq!(decode_python_source(b"x = 1\n").as_deref(), Some("x = 1\n"));
        assert_eq!(decode_python_source("s = 'é'\n".as_bytes()).as_deref(), Some("s = 'é'\n"));
        assert_eq!(decode_python_source(b"\xef\xbb\xbfx = 1\r\n").as_deref(), Some("x = 1\r\n"));
        assert_eq!(decode_python_source(b"\xef\xbb\xbf# coding: utf-8\n").as_deref(), Some("# coding: utf-8\n"));
        assert_eq!(decode_python_source(b""), Some(String::new()));
        assert_eq!(decode_python_source(b"s = '\xe9'\n"), None, "latin-1 bytes without a declaration");
    }

    #[test]
    fn a_coding_line_on_line_1_or_2_is_honoured() {
        let latin = b"# -*- coding: latin-1 -*-\ns = '\xe9'\n";
        assert_eq!(decode_python_source(latin).as_deref(), Some("# -*- coding: latin-1 -*-\ns = 'é'\n"));
        let second = b"#!/usr/bin/env python\n# vim: set fileencoding=iso-8859-1 :\ns = '\xe9'\n";
        assert!(decode_python_source(second).unwrap().ends_with("s = 'é'\n"));
        // below code, line 2 is no declaration (Python reads UTF-8, and these bytes are not)
        assert_eq!(decode_python_source(b"x = 1\n# coding: latin-1\ns = '\xe9'\n"), None);
        // line 3 is too late
        assert_eq!(decode_python_source(b"#\n#\n# coding: latin-1\ns = '\xe9'\n"), None);
        assert_eq!(decode_python_source(b"# coding=cp1252\ns = '\x80'\n").as_deref(), Some("# coding=cp1252\ns = '\u{20ac}'\n"));
        assert_eq!(decode_python_source(b"# coding: ascii\ns = 'x'\n").as_deref(), Some("# coding: ascii\ns = 'x'\n"));
    }

    #[test]
    fn what_the_core_cannot_decode_is_none() {
        assert_eq!(decode_python_source(b"# coding: ascii\ns = '\xe9'\n"), None);
        assert_eq!(decode_python_source(b"# coding: cp1252\ns = '\x81'\n"), None, "undefined in cp1252");
        assert_eq!(decode_python_source(b"# coding: shift_jis\nx = 1\n"), None, "not decoded by the core");
        assert_eq!(decode_python_source(b"# coding: no-such-codec\nx = 1\n"), None);
        assert_eq!(decode_python_source(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n"), None, "a BOM and another declaration");
    }

    #[test]
    fn encoding_names_follow_pythons_aliases() {
        for name in ["utf-8", "UTF8", "utf_8", "utf-8-unix"] {
            assert_eq!(encoding_named(name), Some(Encoding::Utf8), "{name}");
        }
        for name in ["latin-1", "latin1", "Latin_1", "iso-8859-1", "ISO8859-1", "iso-latin-1-unix", "l1"] {
            assert_eq!(encoding_named(name), Some(Encoding::Latin1), "{name}");
        }
        assert_eq!(encoding_named("us-ascii"), Some(Encoding::Ascii));
        assert_eq!(encoding_named("windows-1252"), Some(Encoding::Cp1252));
        assert_eq!(encoding_named("latin-15"), None);
    }
}
