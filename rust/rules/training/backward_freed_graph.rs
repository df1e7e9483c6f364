use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP314
pub const RULE: Rule = Rule {
    code: "SHP314",
    name: "backward-through-freed-graph",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "backward() through a graph an earlier backward() already freed (a hidden state or an output not detached, a loss reused)",
    messages: <BackwardFreedGraph as Violation>::MESSAGES,
    default_enabled: true,
    raises: true,
    doc: r#"## What it does
Follows the graph nodes that save tensors for the backward pass (a layer's call, `*`, `@`,
`exp`, an activation, a loss) and the `backward()` calls that free them. Reports `backward()`
on a loss whose graph goes through a node that an earlier `backward()` without
`retain_graph=True` already freed: a hidden state carried into the next batch without
`detach()`, a generator's output used by the discriminator's loss and then by the generator's,
a loss that keeps accumulating after its `backward()`.

A node is followed only while the path made it once at its line since it was last freed; the
same line run twice before a `backward()` (two calls of one layer) names no node, and is never
reported.

## Why is this bad?
PyTorch raises `RuntimeError: Trying to backward through the graph a second time (or directly
access saved tensors after they have already been freed)` at the second `backward()`.

## Example
```python
h = None
for x, y in batches:
    out, h = rnn(x, h)        # h still holds the previous batch's graph
    loss = loss_fn(out, y)
    loss.backward()           # SHP314 on the second batch
```

Use instead:
```python
    out, h = rnn(x, h)
    h = h.detach()            # (for an LSTM: tuple(t.detach() for t in h))
```

## References
- [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
"#,
};

crate::violation! {
    /// `backward()` through a freed graph.
    pub enum BackwardFreedGraph for RULE {
        /// A node of the loss's graph was freed by an earlier `backward()`.
        Freed { node, freed_at } => "backward(): the graph of this loss goes through the op at {node}, whose saved tensors the backward() at {freed_at} already freed; detach() what carries the old graph, or pass retain_graph=True to the first backward()",
    }
}
