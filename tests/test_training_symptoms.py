"""The training-loop rules whose bug does not raise (`# warning:` markers in fixtures/training)
are shown here by their symptom under torch: the buggy fixture and its fixed twin run on the
same data, and the buggy one shows what the rule's documentation says goes wrong.

SHP308 (probabilities where a loss expects logits): a loss that applies softmax (sigmoid)
itself to probabilities cannot fall below a floor well above zero (for C classes,
log(1 + (C - 1) / e); for a sigmoid, -log(sigmoid(1)) = 0.31), so the buggy model trains to
a worse loss than its twin, which goes below that floor."""
import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TRAINING = Path(__file__).resolve().parent / "fixtures" / "training"


def load(name):
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", TRAINING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (the fixtures run their main only as scripts)
    return module


def separable(n=256, classes=4, seed=0):
    """Images whose class is written into their pixels: a model can fit them exactly."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = torch.randn(n, 1, 16, 16, generator=g) * 0.1
    x[torch.arange(n), 0, 0, y] += 3.0
    return x, y


def test_a_softmax_before_cross_entropy_keeps_the_loss_above_its_floor():
    classes, floor = 4, math.log(1 + 3 / math.e)
    x, y = separable(classes=classes)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)
    final = {}
    for name in ("softmax_head_cross_entropy", "softmax_head_cross_entropy_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.make_model(classes)
        criterion = torch.nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(15):
            final[name] = fixture.train_epoch(model, loader, criterion, optimizer)
    assert final["softmax_head_cross_entropy"] > floor, final
    assert final["softmax_head_cross_entropy_ok"] < floor / 2, final


def test_a_sigmoid_before_bce_with_logits_keeps_the_loss_above_its_floor():
    floor = -math.log(1 / (1 + math.exp(-1)))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 20, generator=g)
    tags = (x[:, :5] > 0).float()
    final = {}
    for name in ("sigmoid_head_bce_with_logits", "sigmoid_head_bce_with_logits_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.Tagger()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(300):
            loss = F.binary_cross_entropy_with_logits(model(x), tags)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        final[name] = loss.item()
    assert final["sigmoid_head_bce_with_logits"] > floor, final
    assert final["sigmoid_head_bce_with_logits_ok"] < floor / 2, final


def test_a_softmax_inside_the_distillation_loss_leaves_a_confident_student_a_large_hard_loss():
    labels = torch.arange(6).repeat(4)
    confident = F.one_hot(labels, 6).float() * 20.0  # the right class by a wide margin
    teacher = confident.clone()
    hard = {}
    for name in ("softmax_probs_in_distillation", "softmax_probs_in_distillation_ok"):
        hard[name] = load(name).distill_loss(confident, teacher, labels, alpha=0.0).item()
    assert hard["softmax_probs_in_distillation"] > math.log(1 + 5 / math.e) - 1e-3, hard
    assert hard["softmax_probs_in_distillation_ok"] < 1e-6, hard


def grad_norm(model):
    return float(sum(p.grad.norm() ** 2 for p in model.parameters() if p.grad is not None) ** 0.5)


def test_gradients_never_zeroed_keep_growing_while_zeroed_ones_do_not():
    """SHP301: without zeroing, each step applies the sum of every gradient so far."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 6), torch.randn(64)
    norms = {}
    for name in ("train_step_helper_without_zeroing", "train_step_helper_without_zeroing_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.Regressor()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # a step changes nothing: only the gradients differ
        seen = []
        for _ in range(5):
            fixture.train_step(model, optimizer, x, y)
            seen.append(grad_norm(model))
        norms[name] = seen
    buggy, fixed = norms["train_step_helper_without_zeroing"], norms["train_step_helper_without_zeroing_ok"]
    assert buggy[-1] == pytest.approx(5 * buggy[0], rel=1e-4), buggy
    assert fixed[-1] == pytest.approx(fixed[0], rel=1e-4), fixed


def test_a_step_after_zero_grad_leaves_the_weights_unchanged():
    """SHP303: the step finds no gradient; the twin's weights move."""
    moved = {}
    for name in ("zero_grad_after_backward", "zero_grad_after_backward_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        net = fixture.Net()
        before = [p.detach().clone() for p in net.parameters()]
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        images, labels = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
        fixture.train_step(net, optimizer, torch.nn.CrossEntropyLoss(), images, labels)
        moved[name] = max(float((p.detach() - b).abs().max()) for p, b in zip(net.parameters(), before))
    assert moved["zero_grad_after_backward"] == 0.0, moved
    assert moved["zero_grad_after_backward_ok"] > 0.0, moved


def test_clipping_after_the_step_lets_an_unclipped_update_through():
    """SHP304: with a huge gradient, the step after clipping moves the weights by at most
    lr * max_norm; clipping after the step does not bound the update."""
    updates = {}
    for name in ("clip_in_helper_after_step", "clip_in_helper_after_step_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        before = [p.detach().clone() for p in model.parameters()]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer.zero_grad()
        loss = (model(torch.randn(5, 8) * 100) * 1000).pow(2).mean()
        loss.backward()
        fixture.apply_gradients(model, optimizer, max_norm=1.0)
        updates[name] = float(sum(((p.detach() - b) ** 2).sum() for p, b in zip(model.parameters(), before)) ** 0.5)
    assert updates["clip_in_helper_after_step_ok"] <= 0.1 * 1.0 + 1e-6, updates
    assert updates["clip_in_helper_after_step"] > 100 * updates["clip_in_helper_after_step_ok"], updates


def test_an_optimizer_that_never_steps_leaves_the_weights_where_they_were():
    """SHP302: the epoch's backward passes fill the gradients, nothing applies them; the
    twin's weights move."""
    x = torch.randn(64, 6)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
    moved = {}
    for name in ("step_commented_out_in_helper", "step_commented_out_in_helper_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        before = [p.detach().clone() for p in model.parameters()]
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        fixture.train_epoch(model, loader, optimizer, torch.nn.MSELoss())
        assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in model.parameters()), name
        moved[name] = max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before))
    assert moved["step_commented_out_in_helper"] == 0.0, moved
    assert moved["step_commented_out_in_helper_ok"] > 0.0, moved


def graph_nodes(values):
    """The autograd nodes reachable from the grad_fn of each tensor among `values`."""
    seen, todo = set(), [v.grad_fn for v in values if isinstance(v, torch.Tensor) and v.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(next_fn for next_fn, _ in node.next_functions)
    return len(seen)


def locals_at_return(function, *args):
    """Run `function(*args)` and return its local variables as it returns."""
    import sys

    captured = {}

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is function.__code__:
            captured.update(frame.f_locals)

    sys.setprofile(profile)
    try:
        function(*args)
    finally:
        sys.setprofile(None)
    return captured


@pytest.mark.parametrize("name, accumulator", [("loss_history_list_in_helper", "losses"), ("weighted_epoch_loss_nested", "epoch_loss")])
def test_an_accumulated_loss_keeps_a_graph_that_grows_with_every_batch(name, accumulator):
    """SHP305: the accumulator holds the autograd graph of every batch (its node count grows
    with the number of batches); the twin's holds none."""
    nodes = {}
    for fixture_name in (name, name + "_ok"):
        fixture = load(fixture_name)
        for batches in (2, 4):
            torch.manual_seed(0)
            if name == "loss_history_list_in_helper":
                model = fixture.make_model()
                loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8 * batches, 24)), batch_size=8)
                found = locals_at_return(fixture.train_epoch, model, loader, torch.optim.Adam(model.parameters()))
                held = found[accumulator]
            else:
                model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
                x = torch.randn(5 * batches, 8)
                loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x[:, :2]), batch_size=5)
                found = locals_at_return(fixture.fit, model, loader, 1)
                held = [found[accumulator]]
            nodes[fixture_name, batches] = graph_nodes(held)
    assert nodes[name, 4] > nodes[name, 2] > 0, nodes
    assert nodes[name + "_ok", 2] == nodes[name + "_ok", 4] == 0, nodes


def graph_flags(model):
    """Record, for every forward of `model`, whether its output carries an autograd graph."""
    flags = []
    model.register_forward_hook(lambda module, args, out: flags.append(out.grad_fn is not None))
    return flags


def run_sequential_evaluation(fixture):
    model = fixture.SmallCNN()
    flags = graph_flags(model)
    fixture.evaluate(model, fixture.make_loader(32))
    return flags


def run_trainer_validation(fixture):
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    flags = graph_flags(model)
    fixture.Trainer(model).validate(fixture.make_loaders()[1])
    return flags


def run_periodic_accuracy(fixture):
    model = fixture.BagOfWords()
    flags = graph_flags(model)
    fixture.accuracy(model, torch.randint(0, 100, (32, 10)), torch.randint(0, 3, (32,)))
    return flags


@pytest.mark.parametrize(
    "name, run",
    [
        ("eval_helper_lost_no_grad", run_sequential_evaluation),
        ("validation_loss_with_grad", run_trainer_validation),
        ("periodic_accuracy_with_grad", run_periodic_accuracy),
    ],
)
def test_an_evaluation_with_gradients_on_builds_a_graph_for_every_batch(name, run):
    """SHP306: every forward of the evaluation records a graph (its output has a grad_fn);
    the twin's outputs carry none."""
    torch.manual_seed(0)
    buggy, fixed = run(load(name)), run(load(name + "_ok"))
    assert buggy and all(buggy), buggy
    assert fixed and not any(fixed), fixed


def test_an_evaluation_in_training_mode_changes_batch_norm_and_is_not_repeatable():
    """SHP307: without model.eval(), evaluating updates batch norm's running statistics and
    dropout makes two evaluations of the same data differ; the twin changes nothing."""
    seen = {}
    for name in ("bn_net_evaluated_in_training_mode", "bn_net_evaluated_in_training_mode_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.make_model()
        bn = model[1]
        before = bn.running_mean.clone()
        x = torch.randn(64, 1, 16, 16)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.zeros(64, dtype=torch.long)), batch_size=64)
        fixture.evaluate(model, loader)
        with torch.no_grad():
            first = model(x)
            second = model(x)
        seen[name] = (float((bn.running_mean - before).abs().max()), float((first - second).abs().max()))
    assert seen["bn_net_evaluated_in_training_mode"][0] > 0.0, seen
    assert seen["bn_net_evaluated_in_training_mode"][1] > 0.0, seen
    assert seen["bn_net_evaluated_in_training_mode_ok"] == (0.0, 0.0), seen


def test_training_after_an_evaluation_without_model_train_runs_in_eval_mode():
    """SHP307: once the validation helper switched the model to eval mode, every later
    training forward runs with dropout (batch norm) off; the twin trains in training mode."""
    modes = {}
    for name in ("train_mode_set_once_before_epochs", "train_mode_set_once_before_epochs_ok"):
        fixture = load(name)
        seen = []

        class Recording(fixture.MLP):
            def forward(self, x):
                if torch.is_grad_enabled():
                    seen.append(self.drop.training)
                return super().forward(x)

        fixture.MLP = Recording
        fixture.main(epochs=3)
        modes[name] = seen
    buggy, fixed = modes["train_mode_set_once_before_epochs"], modes["train_mode_set_once_before_epochs_ok"]
    assert buggy[:4] == [True] * 4 and not any(buggy[4:]) and len(buggy) == 12, buggy
    assert all(fixed) and len(fixed) == 12, fixed
    modes = {}
    for name in ("trainer_never_switches_back_to_train", "trainer_never_switches_back_to_train_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.TabularNet()
        seen = []
        model.register_forward_hook(lambda module, args, out: seen.append(module.body[1].training) if torch.is_grad_enabled() else None)
        fixture.Trainer(model, fixture.make_loader(), fixture.make_loader(32)).fit(epochs=2)
        modes[name] = seen
    assert modes["trainer_never_switches_back_to_train"] == [True] * 4 + [False] * 4, modes
    assert modes["trainer_never_switches_back_to_train_ok"] == [True] * 8, modes


def test_softmax_probabilities_into_nll_loss_give_a_loss_in_minus_one_to_zero():
    """NLLLoss negates its input at the target: on probabilities the loss is -p, in [-1, 0],
    where log-probabilities give a cross entropy that falls towards zero from above."""
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, 100, (160, 12), generator=g)
    intents = tokens[:, 0] % 5  # the first token decides the intent: learnable exactly
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens, intents), batch_size=32)
    final = {}
    for name in ("softmax_into_nll_loss", "softmax_into_nll_loss_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model = fixture.IntentNet()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(10):
            final[name] = fixture.train_epoch(model, loader, torch.nn.NLLLoss(), optimizer)
    assert -1.0 <= final["softmax_into_nll_loss"] <= 0.0, final
    assert final["softmax_into_nll_loss_ok"] > 0.0, final


def test_an_inline_validation_loop_with_gradients_on_builds_a_graph_for_every_batch():
    """SHP306 for a loop written inline: every validation forward (the model in eval mode)
    records a graph; the twin's, under torch.no_grad(), records none."""
    seen = {}
    for name in ("inline_validation_with_grad", "inline_validation_with_grad_ok"):
        fixture = load(name)
        flags = []

        class Recording(fixture.MLP):
            def forward(self, x):
                out = super().forward(x)
                if not self.training:
                    flags.append(out.grad_fn is not None)
                return out

        fixture.MLP = Recording
        torch.manual_seed(0)
        fixture.main(epochs=2)
        seen[name] = flags
    assert len(seen["inline_validation_with_grad"]) == 4 and all(seen["inline_validation_with_grad"]), seen
    assert len(seen["inline_validation_with_grad_ok"]) == 4 and not any(seen["inline_validation_with_grad_ok"]), seen


def test_an_inline_validation_loop_in_training_mode_updates_batch_norm():
    """SHP307 for a loop written inline: the validation forwards (under no_grad) run in
    training mode and move batch norm's running statistics; the twin's run in eval mode."""
    seen = {}
    for name in ("inline_validation_train_mode", "inline_validation_train_mode_ok"):
        fixture = load(name)
        modes = []
        make = fixture.make_model

        def recording_model():
            model = make()
            model.register_forward_hook(lambda m, a, out: modes.append(m.training) if not torch.is_grad_enabled() else None)
            return model

        fixture.make_model = recording_model
        torch.manual_seed(0)
        fixture.main(epochs=2)
        seen[name] = modes
    assert seen["inline_validation_train_mode"] == [True] * 4, seen
    assert seen["inline_validation_train_mode_ok"] == [False] * 4, seen


def test_zeroing_every_micro_batch_leaves_each_step_only_the_last_micro_batch_gradients():
    """SHP303 every k: with `zero_grad()` at every micro-batch and `step()` every ACCUM, the
    gradients the step applies are those of the last micro-batch alone; the twin, zeroing
    after the step only, applies the sum of all ACCUM of them."""
    seen = {}
    for name in ("accumulation_zeroed_every_micro_batch", "accumulation_zeroed_every_micro_batch_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        model, loader = fixture.Regressor(), fixture.make_loader()
        batches = list(loader)[: fixture.ACCUM]
        expected = {}
        for k in (1, fixture.ACCUM):  # the last micro-batch alone; all of them
            model.zero_grad()
            for x, y in batches[-k:]:
                (torch.nn.functional.mse_loss(model(x), y) / fixture.ACCUM).backward()
            expected[k] = model.body[0].weight.grad.clone()
        model.zero_grad()
        applied = []

        class Recording(torch.optim.SGD):
            def step(self, closure=None):
                applied.append(model.body[0].weight.grad.clone())
                return super().step(closure)

        fixture.train_epoch(model, batches, Recording(model.parameters(), lr=0.0))
        seen[name] = applied[0]
        kind = 1 if name.endswith("batch") else fixture.ACCUM
        assert torch.allclose(applied[0], expected[kind], atol=1e-6), name
        assert not torch.allclose(expected[1], expected[fixture.ACCUM], atol=1e-6)
    assert not torch.allclose(seen["accumulation_zeroed_every_micro_batch"], seen["accumulation_zeroed_every_micro_batch_ok"])


def test_a_rollout_update_without_zero_grad_adds_the_last_episodes_gradients():
    """SHP301 through a rollout list: each update walks the list the episode appended to, and
    without zeroing, the second update's gradients are those of both episodes."""
    norms = {}
    for name in ("rollout_list_policy_no_zero_grad", "rollout_list_policy_no_zero_grad_ok"):
        fixture = load(name)
        torch.manual_seed(0)
        pi = fixture.Policy()
        pi.optimizer.param_groups[0]["lr"] = 0.0  # a step changes nothing: only the gradients differ
        states = torch.randn(5, 4)
        seen = []
        for _ in range(2):
            for s in states:
                prob = pi(s)
                pi.put_data((1.0, prob[0]))
            pi.train_net()
            seen.append(grad_norm(pi))
        norms[name] = seen
    buggy, fixed = norms["rollout_list_policy_no_zero_grad"], norms["rollout_list_policy_no_zero_grad_ok"]
    assert buggy[1] == pytest.approx(2 * buggy[0], rel=1e-4), buggy
    assert fixed[1] == pytest.approx(fixed[0], rel=1e-4), fixed


def test_epochs_of_unknown_number_train_in_eval_mode_after_the_first_evaluation(monkeypatch):
    """SHP307 in a loop over a number of epochs the analysis does not know: after the first
    epoch's evaluation, every training forward runs with dropout off; the twin, which calls
    model.train() at the start of each epoch, trains in training mode."""
    monkeypatch.setenv("EPOCHS", "3")
    modes = {}
    for name in ("epochs_from_environment_eval_not_restored", "epochs_from_environment_eval_not_restored_ok"):
        fixture = load(name)
        seen = []

        class Recording(fixture.MLP):
            def forward(self, x):
                if torch.is_grad_enabled():
                    seen.append(self.drop.training)
                return super().forward(x)

        fixture.MLP = Recording
        fixture.main()
        modes[name] = seen
    buggy, fixed = modes["epochs_from_environment_eval_not_restored"], modes["epochs_from_environment_eval_not_restored_ok"]
    assert buggy[:4] == [True] * 4 and not any(buggy[4:]) and len(buggy) == 12, buggy
    assert all(fixed) and len(fixed) == 12, fixed
