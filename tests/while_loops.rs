//! `while` loops (`interp::loops::while_loop`): a loop whose test each path decides is unrolled,
//! unless its paths part at the test after an iteration (some stop, some go on): the count of
//! iterations then hangs on a choice each iteration makes, and the rest runs as one generalised
//! iteration, as a loop of unknown count does.

mod common;

use common::analyse;


/// A prefetcher (SRGAN's `CUDAPrefetcher`): `next()` gives the batch it loaded and loads the
/// next one, None from its `except StopIteration:`. Each iteration leaves one path that stops
/// and one that goes on. Unrolled, the loop ran until its work budget (17,290 steps); it now
/// runs twice and then generalised (595).
const PREFETCHER: &str = r#"import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Prefetcher:
    def __init__(self, loader):
        self.loader = loader
        self.it = iter(loader)
        self.preload()

    def preload(self):
        try:
            self.batch = next(self.it)
        except StopIteration:
            self.batch = None

    def next(self):
        batch = self.batch
        self.preload()
        return batch


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
loader = DataLoader(TensorDataset(torch.randn(100, 8), torch.randint(0, 2, (100,))), batch_size=4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
pf = Prefetcher(loader)
batch = pf.next()
while batch is not None:
    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    batch = pf.next()
z = torch.randn(2, 4) @ torch.randn(5, 3)
"#;

#[test]
fn a_loop_that_goes_on_by_a_choice_of_each_iteration_is_not_unrolled_to_its_budget() {
    let (findings, stats) = analyse(PREFETCHER);
    assert_eq!(findings, vec![(36, "SHP101")]);
    assert!(stats.steps < 2_000, "{} steps", stats.steps);
}

/// The training-loop rules still see the generalised iterations: without `zero_grad()` the
/// step accumulates gradients (SHP301), as with a `for` over the loader.
#[test]
fn a_training_loop_over_a_prefetcher_is_still_judged() {
    let src = PREFETCHER.replace("    opt.zero_grad()\n", "");
    let (findings, _) = analyse(&src);
    assert_eq!(findings, vec![(32, "SHP301"), (35, "SHP101")]);
}

/// A counted loop: every path agrees at each test, so it is unrolled, and the size its third
/// iteration gives is known (a generalised loop would leave `width` unknown and lose the bug).
#[test]
fn a_counted_loop_is_unrolled() {
    let src = r#"import os
import torch
import torch.nn as nn

layers = []
width = 8
i = 0
while i < 3:
    layers.append(nn.Linear(width, width * 2))
    if os.environ.get("RELU"):
        layers.append(nn.ReLU())
    width = width * 2
    i += 1
model = nn.Sequential(*layers)
y = model(torch.randn(4, 8)) @ torch.randn(32, 2)
"#;
    let (findings, _) = analyse(src);
    assert_eq!(findings, vec![(15, "SHP101")]);
}

/// A retry loop (Rainbow's `while not valid:` around a sample it accepts or not): the paths
/// part after the first iteration, the rest runs generalised, and the loop's exits are joined
/// into one path, as the exits of its unrolled iterations were past eight; kept apart, they
/// multiplied the paths of the training loop after it (the repository's shared script run took
/// 1.6 times as long). The loop was unrolled until its work budget before, each time.
#[test]
fn the_exits_of_a_loop_of_unknown_count_are_joined() {
    let src = r#"import torch


def sample():
    valid = False
    while not valid:
        samples = torch.rand(4)
        if torch.all(samples > 0.1):
            valid = True
    return samples


for step in range(3):
    s = sample()
    t = sample()
    u = sample()
z = torch.randn(2, 4) @ torch.randn(5, 3)
"#;
    let (findings, stats) = analyse(src);
    assert_eq!(findings, vec![(17, "SHP101")]);
    // (unrolled until their work budget and kept apart: 647,724 steps and 10 paths)
    assert!(stats.max_paths <= 2, "{} paths", stats.max_paths);
    assert!(stats.steps < 5_000, "{} steps", stats.steps);
}
