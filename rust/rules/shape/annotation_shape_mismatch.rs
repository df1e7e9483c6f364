use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP113
pub const RULE: Rule = Rule {
    code: "SHP113",
    name: "annotation-shape-mismatch",
    family: Family::Shape,
    status: RuleStatus::Stable,
    summary: "A tensor argument or return value contradicts its jaxtyping annotation under a runtime checker",
    messages: <AnnotationShapeMismatch as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Checks the calls of a function decorated with `@jaxtyped(typechecker=...)` (or `@jaxtyped`
together with `@beartype` or `@typechecked`): each tensor argument against its parameter's
jaxtyping annotation (`Float[Tensor, "batch 3 32 32"]`), and the returned tensor against the
return annotation. A dim named in several annotations is one size in a call, as jaxtyping
checks it; a number is that size. It reports only a certain contradiction: another rank, or a
size that is certainly not the one the annotation gives. The finding is at the call, the line
the runtime checker's error points to.

## Why is this bad?
The runtime checker raises (`jaxtyping.TypeCheckError: Type-check error whilst checking the
parameters of forward ... The problem arose whilst typechecking parameter 'x'`, or the same
for the return value) when the call runs. Without a runtime checker the annotation is only
documentation, and nothing is reported.

## Example
```python
@jaxtyped(typechecker=beartype)
def pool(x: Float[Tensor, "batch channels h w"]) -> Float[Tensor, "batch channels"]:
    return x.mean(dim=(1, 2))   # [batch, w]: the wrong dims

pooled = pool(torch.randn(8, 64, 7, 7))   # SHP113: the return is [8, 7]
```

Use instead:
```python
    return x.mean(dim=(2, 3))
```

## References
- [jaxtyping: runtime type checking](https://docs.kidger.site/jaxtyping/api/runtime-type-checking/)
"#,
};

crate::violation! {
    /// A tensor that contradicts its annotation in a runtime-checked call: `what` names it (a
    /// parameter, or the return value).
    pub enum AnnotationShapeMismatch for RULE {
        /// `spec` is the annotation's dims, `shape` the tensor's, `why` the first dim that
        /// does not fit.
        Mismatch { func, what, shape, spec, why } => "{func}: {what} {shape} does not fit its annotation \"{spec}\" ({why}); the runtime type checker raises at this call",
    }
}
