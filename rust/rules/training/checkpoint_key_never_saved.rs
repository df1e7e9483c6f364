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
