use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP001
pub const RULE: Rule = Rule {
    code: "SHP001",
    name: "internal-error",
    family: Family::Meta,
    status: RuleStatus::Stable,
    summary: "The analyzer failed on this file (a bug in shape-lint); the file was not checked",
    messages: <InternalError as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Reports that the analyzer itself failed on this file (a bug in shape-lint, caught at the
boundary). It is always reported at line 1 with a short reason, and the rest of the lint run
goes on: flake8 and the CLI never crash because of it.

## Why is this bad?
It is not a problem in your code. It means shape-lint could not check this file, so shape
errors in it may go unnoticed. Please report it with the file that triggers it.

## Example
Any file that triggers a bug in the analyzer:
```python
import torch  # SHP001 shape-lint internal error: ...
```

Use instead:
Silence it with `# noqa: SHP001` on line 1 or `--ignore SHP001` until the bug is fixed.
"#,
};

crate::violation! {
    /// A panic in the analyzer, caught; `reason` is the first line of its message, cut to 120
    /// characters.
    pub enum InternalError for RULE {
        Panic { reason } => "shape-lint internal error: {reason}",
    }
}
