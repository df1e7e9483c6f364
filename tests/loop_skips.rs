//! An unrolled `for` skips an item whose iteration would change nothing (`interp::loops`,
//! `skip_item`). Each test is a program where skipping wrongly would lose a report or make
//! one up, and says whether items were skipped, so that the tests cannot pass by never
//! skipping (the positive case) or by skipping blindly (the others).

mod common;

use common::analyse;


fn line_of(src: &str, text: &str) -> usize {
    src.lines().position(|l| l.trim() == text).map(|i| i + 1).expect(text)
}

const BLOCK: &str = r#"import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return x + torch.relu(self.fc(x))
"#;

/// Equal blocks: all but the first few are skipped, and the head bug is still found.
#[test]
fn equal_items_are_skipped() {
    let src = format!(
        "{BLOCK}
blocks = nn.ModuleList([Block(16) for _ in range(40)])
head = nn.Linear(32, 2)
x = torch.randn(4, 16)
for b in blocks:
    x = b(x)
y = head(x)
"
    );
    let (findings, stats) = analyse(&src);
    assert_eq!(findings, vec![(line_of(&src, "y = head(x)"), "SHP101")]);
    assert!(stats.loop_skips >= 35, "{} items skipped", stats.loop_skips);
}

/// One block in the middle is narrower: its iteration differs (the renaming cannot take an
/// equal block to it), so it runs and its error is reported at the block's `fc` call.
#[test]
fn a_different_item_after_skipped_ones_runs() {
    let src = format!(
        "{BLOCK}
blocks = nn.ModuleList([Block(16) for _ in range(20)] + [Block(8)] + [Block(16) for _ in range(5)])
x = torch.randn(4, 16)
for b in blocks:
    x = b(x)
"
    );
    let (findings, stats) = analyse(&src);
    assert_eq!(findings, vec![(line_of(&src, "return x + torch.relu(self.fc(x))"), "SHP101")]);
    assert!(stats.loop_skips >= 15, "{} items skipped", stats.loop_skips);
}

/// An iteration that counts changes the state: nothing is skipped, and the count after the
/// loop is exact (a wrong one would make the first `view` a false alarm and miss the second).
#[test]
fn an_iteration_that_changes_state_is_not_skipped() {
    let src = format!(
        "{BLOCK}
n = 0
blocks = nn.ModuleList([Block(16) for _ in range(12)])
x = torch.randn(4, 16)
for b in blocks:
    x = b(x)
    n += 1
y = torch.randn(n, 5).view(60)
z = torch.randn(n, 5).view(61)
"
    );
    let (findings, stats) = analyse(&src);
    assert_eq!(findings, vec![(line_of(&src, "z = torch.randn(n, 5).view(61)"), "SHP103")]);
    assert_eq!(stats.loop_skips, 0);
}

/// The body reads the list itself (`blocks[-1]`): the item's position matters, the
/// renaming fails (the list holds both items), and the last iteration's error is reported.
#[test]
fn an_iteration_that_reads_the_list_is_not_skipped() {
    let src = format!(
        "{BLOCK}
blocks = nn.ModuleList([Block(16) for _ in range(12)])
bad = nn.Linear(8, 4)
x = torch.randn(4, 16)
for b in blocks:
    x = b(x)
    if b is blocks[-1]:
        x = bad(x)
"
    );
    let (findings, _) = analyse(&src);
    assert_eq!(findings, vec![(line_of(&src, "x = bad(x)"), "SHP101")]);
}

/// A skipped item is read as if its iteration had run: the summary of a function looping
/// over a list covers every item, so a second call with a list that differs only in its last
/// item is not answered from the first call's summary.
#[test]
fn skipped_items_count_as_read_for_call_summaries() {
    let src = format!(
        "{BLOCK}
def run(blocks, x):
    for b in blocks:
        x = b(x)
    return x


good = nn.ModuleList([Block(16) for _ in range(10)])
bad = nn.ModuleList([Block(16) for _ in range(9)] + [Block(8)])
x = torch.randn(4, 16)
y = run(good, x)
z = run(bad, x)
"
    );
    let (findings, stats) = analyse(&src);
    assert_eq!(findings, vec![(line_of(&src, "return x + torch.relu(self.fc(x))"), "SHP101")]);
    assert!(stats.loop_skips >= 10, "{} items skipped", stats.loop_skips);
}

/// A loop too long to unroll runs one generalised iteration: the list it appends to and the
/// attribute it counts up are changed once per iteration, an unknown number of times, so
/// after it they are not known (they were the one-iteration values: a list of one part, and
/// the `view`s below false alarms).
#[test]
fn a_generalised_iteration_forgets_what_it_changed() {
    let src = r#"import torch


class Count:
    def __init__(self):
        self.n = 0


x = torch.randn(2, 600, 3)
outs = []
c = Count()
for t in x.unbind(1):
    outs.append(t)
    c.n = c.n + 1
y = torch.stack(outs, 1).view(2, 1800)
z = torch.zeros(c.n, 3).view(1800)
"#;
    let (findings, _) = analyse(src);
    assert_eq!(findings, vec![]);
}
