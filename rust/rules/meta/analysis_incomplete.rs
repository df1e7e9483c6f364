use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP002
pub const RULE: Rule = Rule {
    code: "SHP002",
    name: "analysis-incomplete",
    family: Family::Meta,
    status: RuleStatus::Stable,
    summary: "A budget cut the analysis of this file short: part of it was not checked",
    messages: <AnalysisIncomplete as Violation>::MESSAGES,
    default_enabled: false,
    raises: false,
    doc: r#"## What it does
Says that the analysis of this file stopped before its end because a budget was spent, and
names what was not analysed: the module's top level, a `forward`, a script that imports the
file. It is reported at line 1 and names the line the analysis had reached.

The budgets count work, not time: the interpreter's steps per file (`max-steps`) and the live
paths of one entry (`max-paths`). The same file is cut at the same place on every machine, in
the CLI, flake8 and the editor. A wall-clock limit (`timeout-ms`, 30 s by default) remains as a
safety net for hostile input; a file cut by it says so, and that result may differ between
machines. The Z3 bridge has its own: a number of queries per file, and a safety net.

It is a notice about the analysis, not about your code, so it is not selected by default:
- `shape-lint check` prints a `warning:` line on stderr for each such file, whatever the
  selection, and does not print "All checks passed!"; with `--extend-select SHP002` it is
  also a diagnostic (and the run exits 1);
- the JSON, JSON-lines and SARIF outputs always carry it;
- the language server publishes it as an information diagnostic;
- under flake8 it is off unless selected by name (`--extend-select SHP002`; `--select SHP`
  does not include it).

## Why is this bad?
A linter must never pass what it did not check. Without this notice, a file whose analysis
ran out of budget would look exactly like a clean one: a bug past the cut would go unreported.

## Example
A generated file whose analysis takes more steps than the budget:
```python
import torch  # SHP002 analysis incomplete: the step budget (...) ran out at line 9000 ...
```

Use instead:
Split the file, or raise the budget (`max-steps` in `[tool.shape-lint]`, `--max-steps`).
"#,
};

crate::violation! {
    /// A budget abandoned part of the analysis. `reason` says which budget and where; `rest`
    /// names what else was not analysed (may be empty).
    pub enum AnalysisIncomplete for RULE {
        Cut { reason, rest } => "analysis incomplete: {reason}{rest}",
    }
}
