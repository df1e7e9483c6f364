//! SHP902 may-fail-for-some-values: a line that fails for some legal values of the program's
//! free parameters. The core exports the candidates (its `free_params` run); the counterexample
//! comes from Z3 in `python/shape_lint/may_fail.py`, which renders this rule's message.

use crate::rules::{Family, Rule, RuleStatus};

/// SHP902
pub const RULE: Rule = Rule {
    code: "SHP902",
    name: "may-fail-for-some-values",
    family: Family::MayFail,
    status: RuleStatus::Preview,
    summary: "A line that fails for some legal values of the program's options or constructor parameters, with a counterexample",
    messages: <MayFailForSomeValues as crate::rules::violation::Violation>::MESSAGES,
    default_enabled: false,
    raises: true,
    doc: r#"## What it does
Flags a line that works with the defaults but raises for other legal values of the program's
free parameters, and names values that break it: `(fails when --size=30)`,
`(fails when dim=12, heads=8)`, `(fails when len(dataset)=113)`. Opt-in: the core produces it only with `--may-fail`
(`may-fail = true`), and it must be selected (`--extend-select SHP9` under flake8).

The free parameters are:
- `argparse` options with an int default (`type=int` or none, one value): at least 1, or one of
  their `choices`; the default is one legal value, and the counterexample moves as few options
  as possible, as little as possible;
- the int constructor parameters of a module class the file does not build (at least 1), and
  the int defaults (at least 1) that the file's own construction of a module class leaves
  unpassed (`model = Net()`; an argument passed pins its parameter);
- the length of a dataset its files decide (`ImageFolder`: `len(dataset)`), so the last batch
  may be any size;
- the sizes of `forward`'s inputs (never enough alone: a line is reported only when, with the
  counterexample's options and constructor parameters, every input size fails).

A guard on the path excludes its values: `assert d % heads == 0`, `if size % 8: raise ...`,
rounding (`(n + 7) // 8 * 8`) and padding make the query for those values UNSAT, and the line is
silent. A line that fails for every value is a default finding (SHP1xx), not this one. Z3's
`unknown` or a timeout (per query and per file) is silence. The counterexample is checked by
analysing the program again with those values: the line is reported only when that run fails
there, and the message is that run's, with the shapes at those values and where they came from
(`Conv2d: input size 2x2 gives output size 0x0, which is too small (0 < 1) (2 from net[4] (line
17) at line 22) (fails when --size=30)`).

## Why is this bad?
A stack of unpadded stride-2 convs works at the default `--size` and shrinks to nothing at a
smaller legal one; a head split `d // heads` without a divisibility check works for the default
config only. The first user who changes the option meets the crash, far from the cause.

## Example
```python
parser.add_argument("--dim", type=int, default=64)
parser.add_argument("--heads", type=int, default=8)
args = parser.parse_args()
x = torch.randn(2, 10, args.dim)
q = x.view(2, 10, args.heads, args.dim // args.heads)  # SHP902 view: shape [2, 10, 9, 7] is invalid ... (fails when --heads=9)
```

Use instead:
```python
if args.dim % args.heads != 0:
    raise ValueError("--dim must be a multiple of --heads")
q = x.view(2, 10, args.heads, args.dim // args.heads)
```
"#,
};

crate::violation! {
    /// The core's message for the check that fails (both shapes, where each size came from),
    /// then the counterexample (`--size=30`, `dim=12, heads=8`).
    pub enum MayFailForSomeValues for RULE {
        Fails { message, values } => "{message} (fails when {values})",
    }
}
