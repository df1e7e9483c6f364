"""The second iteration of a loop run generalised (`loops::second_iteration`): some rules judge
what the first iteration leaves for the next one by running the body once more from there,
recording only their own violations. SHP314 does it for a hidden state whose graph a backward
freed; SHP307 for a model the iteration left in eval mode after training it (an evaluation at
the end of each epoch of a loop whose number of epochs is not known). The probing run must
leave no other trace: neither the sites it passes nor summaries of the calls it makes."""
from shape_lint import _core

SRC = """import os
import random
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
clip = random.random() < 2.0

def train_epoch():
    for i in range(10):
        x = torch.randn(16, 4)
        opt.zero_grad()
        loss = model(x).sum()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss.backward()
        opt.step()

def evaluate():
    model.eval()
    with torch.no_grad():
        return model(torch.randn(16, 4)).sum().item()

model.train()
for epoch in range(int(os.environ.get("EPOCHS", "3"))):
    train_epoch()
    evaluate()
"""


def findings(src):
    return sorted((f["code"], f["row"]) for f in _core.check_source(src, "second.py", {}))


def test_an_evaluation_that_ends_each_epoch_of_an_unknown_number_leaves_the_next_in_eval_mode():
    # the clip before backward (after an opaque choice) stays reported: the probing run of
    # the next epoch passes its site without counting as a path that reaches it
    assert findings(SRC) == [("SHP304", 16), ("SHP307", 17)]


def test_an_epoch_that_starts_with_train_is_not_reported():
    src = SRC.replace("    train_epoch()\n", "    model.train()\n    train_epoch()\n")
    assert findings(src) == [("SHP304", 16)]


def test_an_evaluation_on_some_epochs_is_reported_with_its_condition():
    src = SRC.replace("    evaluate()\n", "    if epoch % 5 == 0:\n        continue\n    evaluate()\n")
    got = [(f["code"], f["row"], f["message"]) for f in _core.check_source(src, "second.py", {}) if f["code"] == "SHP307"]
    assert [(c, r) for c, r, _ in got] == [("SHP307", 17)], got
    assert got[0][2].endswith("(when epoch % 5 != 0)"), got
