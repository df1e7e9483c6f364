//! The block kinds of the path-explosion benchmark (`bench/paths.rs`) and its regression test
//! (`tests/paths.rs`): a model of N residual blocks of one kind, with a planted head bug after
//! them (`nn.Linear(dim * 2, 10)` on a `dim`-wide input). Each kind branches on something the
//! analyser cannot decide (`self.training`, a random draw), and both sides of the branch
//! produce an equal abstract tensor through a different object, so the paths must join:
//! - `identity`: stochastic depth, the skip branch returns its input object;
//! - `fresh`: the skip branch returns a fresh tensor of the same shape (`torch.zeros_like`);
//! - `scale`: dropout-like scaling by a random mask (a local that exists on one side only);
//! - `proj`: a projection shortcut on every other block (`nn.Linear` or the input itself).

/// The kinds, with the body of `Block.forward`.
pub const KINDS: [(&str, &str); 4] = [
    (
        "identity",
        "        if self.training and torch.rand(1).item() < self.p:
            return x
        return x + torch.relu(self.fc(x))",
    ),
    (
        "fresh",
        "        if self.training and torch.rand(1).item() < self.p:
            return torch.zeros_like(x)
        return torch.relu(self.fc(x))",
    ),
    (
        "scale",
        "        h = torch.relu(self.fc(x))
        if self.training:
            keep = 1.0 - self.p
            mask = (torch.rand(x.shape[0], 1) < keep).float()
            h = h * mask / keep
        return x + h",
    ),
    (
        "proj",
        "        if self.proj is not None:
            shortcut = self.proj(x)
        else:
            shortcut = x
        return shortcut + torch.relu(self.fc(x))",
    ),
];

/// The 1-based line of the planted bug (`return self.head(x)`) in a model's source.
pub fn bug_line(src: &str) -> usize {
    src.lines().position(|l| l.trim() == "return self.head(x)").map_or(0, |i| i + 1)
}

/// A model of `blocks` blocks whose `forward` is `body`; under torch it raises at its
/// [`bug_line`] (`mat1 and mat2 shapes cannot be multiplied (8x64 and 128x10)`).
pub fn model(body: &str, blocks: usize) -> String {
    format!(
        r#"import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, p=0.1, project=False):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.p = p
        self.proj = nn.Linear(dim, dim) if project else None

    def forward(self, x):
{body}


class Net(nn.Module):
    def __init__(self, dim=64, depth={blocks}):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, project=(i % 2 == 0)) for i in range(depth)])
        self.head = nn.Linear(dim * 2, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


if __name__ == "__main__":
    net = Net()
    print(net(torch.randn(8, 64)).shape)
"#
    )
}
