//! What `torch.load` gives back (`models/torch/loaded.rs`): a value of unknown type, a tensor of
//! unknown shape where a use only a tensor allows tells, and nothing more anywhere else.

use shape_lint::{Settings, check_source};

/// The (row, code) of every finding of `body` after the imports (row 1 is the first line of
/// `body`).
fn found(body: &str) -> Vec<(usize, String)> {
    let src = format!("import sys\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{body}");
    check_source(&src, "train.py", &Settings::default()).into_iter().map(|f| (f.row - 4, f.rule.code.to_string())).collect()
}

fn one(row: usize, code: &str) -> Vec<(usize, String)> {
    vec![(row, code.to_string())]
}

#[test]
fn a_tensor_method_makes_it_a_tensor_refined_by_its_first_use() {
    // a known file and an unknown one
    assert_eq!(found("x = torch.load('features.pt')\nx = x.view(-1, 784)\nnn.Linear(700, 10)(x)\n"), one(3, "SHP101"));
    assert_eq!(found("x = torch.load(sys.argv[1])\nnn.Linear(700, 10)(x.reshape(-1, 784))\n"), one(2, "SHP101"));
    // the same tensor at every use: its first use fixed the rank
    assert_eq!(found("x = torch.load(sys.argv[1])\nb, t = x.shape\nx.mean(2)\n"), one(3, "SHP105"));
}

#[test]
fn a_move_or_cast_gives_back_the_loaded_object() {
    assert_eq!(found("x = torch.load(sys.argv[1]).to('cpu').float()\nnn.Linear(700, 10)(x.view(-1, 784))\n"), one(2, "SHP101"));
}

#[test]
fn an_operator_with_a_tensor_an_index_only_a_tensor_takes_and_a_torch_input_tell() {
    // (`b, t = x.shape` makes it a tensor of rank 2 first: the index model needs the rank)
    let width = |e: &str| found(&format!("x = torch.load(sys.argv[1])\nb, t = x.shape\nnn.Linear(700, 10)(({e}).view(-1, 784))\n"));
    assert_eq!(width("x[None]"), one(3, "SHP101"));
    assert_eq!(width("x[:, 1:]"), one(3, "SHP101"));
    assert_eq!(width("x * torch.randn(1)"), one(3, "SHP101"));
    assert_eq!(width("torch.randn(1) @ x"), one(3, "SHP101"));
    // (a slice, which a list takes too, and an operator with a number tell nothing)
    assert_eq!(width("x[1:]"), vec![]);
    assert_eq!(width("x * 2"), vec![]);
    // the input of a torch function, an F.* call and a layer
    assert_eq!(found("x = torch.relu(torch.load(sys.argv[1]))\nnn.Linear(700, 10)(x.view(-1, 784))\n"), one(2, "SHP101"));
    assert_eq!(found("h = F.embedding(torch.load(sys.argv[1]), torch.randn(100, 32))\nnn.Linear(64, 2)(h)\n"), one(2, "SHP101"));
    assert_eq!(found("h = nn.Embedding(100, 32)(torch.load(sys.argv[1]))\nnn.LSTM(64, 16)(h)\n"), one(2, "SHP107"));
}

#[test]
fn unpacking_keys_dict_methods_and_names_other_values_share_tell_nothing() {
    // unpacked (a tuple of tensors), indexed by key, iterated as a dict
    assert_eq!(found("a, b = torch.load(sys.argv[1])\nnn.Linear(700, 10)(a.view(-1, 784))\n"), vec![]);
    assert_eq!(found("ckpt = torch.load('ckpt.pt')\nnn.Linear(700, 10)(ckpt['x'].view(-1, 784))\n"), vec![]);
    assert_eq!(found("for k, v in torch.load(sys.argv[1]).items():\n    nn.Linear(700, 10)(v.view(-1, 784))\n"), vec![]);
    // NumPy's `repeat` is not torch's: not a tensor use
    assert_eq!(found("r = torch.load(sys.argv[1]).repeat(3, 1)\nnn.Linear(700, 10)(r.view(-1, 784))\n"), vec![]);
    // a whole pickled module: called, not a tensor
    assert_eq!(found("m = torch.load(sys.argv[1]).cuda()\nm.eval()\ny = m(torch.randn(2, 3))\nnn.Linear(700, 10)(y.view(-1, 784))\n"), vec![]);
    // handed to a module's load_state_dict
    assert_eq!(found("m = nn.Linear(4, 2)\nm.load_state_dict(torch.load(sys.argv[1]))\nm(torch.randn(3, 4))\n"), vec![]);
}

#[test]
fn a_tensor_on_one_path_and_a_dict_on_another_does_not_alarm() {
    let src = "obj = torch.load(sys.argv[1])\nif isinstance(obj, dict):\n    x = obj['x']\nelse:\n    x = obj.view(-1, 784)\nnn.Linear(784, 10)(x)\n";
    assert_eq!(found(src), vec![]);
}

#[test]
fn what_it_is_may_be_none_empty_or_no_tensor() {
    // `torch.load` gives back None when None was saved, a falsy value when one was
    let tests = ["y = torch.randn(2, 784) if x is None else torch.randn(2, 700)", "y = torch.randn(2, 700) if x else torch.randn(2, 784)", "y = torch.randn(2, 784) if torch.is_tensor(x) else torch.randn(2, 700)"];
    let alarmed: Vec<&str> = tests.into_iter().filter(|t| !found(&format!("x = torch.load(sys.argv[1])\n{t}\nnn.Linear(784, 10)(y)\n")).is_empty()).collect();
    assert!(alarmed.is_empty(), "decided what torch.load gave back: {alarmed:?}");
}
