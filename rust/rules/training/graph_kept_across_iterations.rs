use crate::rules::violation::Violation;
use crate::rules::{Family, Rule, RuleStatus};

/// SHP305
pub const RULE: Rule = Rule {
    code: "SHP305",
    name: "graph-kept-across-iterations",
    family: Family::TrainingLoop,
    status: RuleStatus::Stable,
    summary: "A loss that carries its graph is accumulated across iterations (total += loss)",
    messages: <GraphKeptAcrossIterations as Violation>::MESSAGES,
    default_enabled: true,
    raises: false,
    doc: r#"## What it does
Reports an accumulation across the iterations of a training loop (`total += loss`,
`total = total + loss`, `losses.append(loss)`) of a tensor that still carries its autograd
graph, in a loop whose body calls `backward()` on something else. A value accumulated in
every iteration without `.item()` or `.detach()` holds the graph of every iteration it came
from. Accumulating the loss of several steps and calling `backward()` on the sum once (a
recurrent decoder summing the loss over time steps) is correct and not reported, nor is an
accumulator reset in the body, or one that holds plain numbers.

## Why is this bad?
Nothing raises at first. `backward()` frees the buffers of each step's graph, but the graph
itself stays reachable from the accumulator, with the tensors its nodes saved, so memory
grows with every iteration until the process runs out, typically after many batches. The
sum is also a tensor where a number was meant, which makes logging slower.

## Example
```python
running_loss = 0.0
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running_loss += loss       # SHP305: keeps every iteration's graph
```

Use instead:
```python
    running_loss += loss.item()
```

## References
- [PyTorch FAQ: don't accumulate history across your training loop](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
"#,
};

crate::violation! {
    /// A tensor with a graph kept from one iteration to the next.
    pub enum GraphKeptAcrossIterations for RULE {
        /// `total += loss`.
        Sum { name } => "{name} accumulates a tensor that carries its autograd graph: every iteration's graph stays in memory (use .item() or .detach())",
        /// `losses.append(loss)`.
        Append { name } => "{name} keeps a tensor that carries its autograd graph from every iteration: memory grows each step (append .item() or .detach())",
    }
}
