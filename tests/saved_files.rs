//! Values the program makes known in plain ways that are not a literal: a set of known members,
//! a file it saved and loads back (`engine/interp/files.rs`), the elements of a
//! `torch.randint` tensor taken by iteration, each an int within its bounds (`IntBounds::each`),
//! and a class looked up by name in `globals()`. Every reported case was run
//! under torch 2.13 (five draws each): the line is where torch raises, a silent case runs or
//! fails only for some executions.
use shape_lint::{Settings, check_source};

fn codes(src: &str) -> Vec<(usize, &'static str)> {
    let src = format!("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{src}");
    check_source(&src, "t.py", &Settings::default()).iter().map(|f| (f.row - 3, f.rule.code)).collect()
}

#[test]
fn a_file_saved_then_loaded_gives_back_what_was_saved() {
    let saved = |shape: &str| format!("torch.save(torch.randn({shape}), 'x.pt')\nx = torch.load('x.pt')\ny = nn.Linear(8, 2)(x)\n");
    assert_eq!(codes(&saved("4, 10")), [(3, "SHP101")]);
    assert_eq!(codes(&saved("4, 8")), []);
    // a tuple of a tensor and an int
    assert_eq!(codes("torch.save((torch.randn(4, 10), 7), 'x.pt')\nx, n = torch.load('x.pt')\ny = x.view(n, 5)\n"), [(3, "SHP103")]);
    // saved by one function, loaded by another, through a module constant
    let cache = "P = 'cache.pt'\ndef prep():\n    torch.save(torch.randint(0, 255, (6, 28, 28), dtype=torch.uint8), P)\ndef train():\n    x = torch.load(P).view(-1, 28 * 28).float()\n    return nn.Linear(32 * 32, 10)(x)\nprep()\ntrain()\n";
    assert_eq!(codes(cache), [(6, "SHP101")]);
    // the last save wins
    assert_eq!(codes("torch.save(torch.randn(4, 8), 'x.pt')\ntorch.save(torch.randn(4, 9), 'x.pt')\ny = nn.Linear(8, 2)(torch.load('x.pt'))\n"), [(3, "SHP101")]);
    // NumPy's: `np.save` adds `.npy`, `np.load` gives an array of the saved shape and dtype
    let np = |path: &str, shape: &str| format!("import numpy as np\nnp.save('{path}', np.zeros(({shape}), dtype=np.float32))\nx = torch.from_numpy(np.load('a.npy'))\ny = nn.Linear(8, 2)(x)\n");
    assert_eq!(codes(&np("a", "4, 10")), [(4, "SHP101")]);
    assert_eq!(codes(&np("a.npy", "4, 8")), []);
    // a file of the other library is not known
    assert_eq!(codes("import numpy as np\ntorch.save(torch.randn(4, 10), 'a.npy')\nx = torch.from_numpy(np.load('a.npy'))\ny = nn.Linear(8, 2)(x)\n"), []);
    // a copy: an in-place op after the save does not reach the file
    assert_eq!(codes("x = torch.randn(4, 8)\ntorch.save(x, 'x.pt')\nx.unsqueeze_(0)\ny = nn.Linear(8, 2)(torch.load('x.pt')).view(4, 2)\n"), []);
}

#[test]
fn a_file_not_known_to_hold_a_value_is_unknown() {
    // saved on one path only: reported on that path, with its condition (the other may find
    // another file there)
    let src = "import sys\nimport torch\nimport torch.nn as nn\nif len(sys.argv) > 1:\n    torch.save(torch.randn(4, 10), 'x.pt')\ny = nn.Linear(8, 2)(torch.load('x.pt'))\n";
    let found = check_source(src, "t.py", &Settings::default());
    assert_eq!(found.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), [(6, "SHP101")]);
    assert!(found[0].message.contains("(when 1 < n)"), "{}", found[0].message);
    // a save to a path not known may have replaced it
    assert_eq!(codes("import sys\ntorch.save(torch.randn(4, 10), 'x.pt')\ntorch.save(torch.randn(4, 8), sys.argv[1])\ny = nn.Linear(8, 2)(torch.load('x.pt'))\n"), []);
    // another file
    assert_eq!(codes("torch.save(torch.randn(4, 10), 'x.pt')\ny = nn.Linear(8, 2)(torch.load('y.pt'))\n"), []);
    // a dict is a checkpoint as before (SHP312 reads its keys), its tensors not known
    assert_eq!(codes("torch.save({'w': torch.randn(4, 10)}, 'x.pt')\ny = nn.Linear(8, 2)(torch.load('x.pt')['w'])\n"), []);
    // loaded onto a device not modelled: no device is known
    assert_eq!(codes("torch.save(torch.randn(4, 8), 'x.pt')\nw = torch.randn(8, 2)\ny = torch.load('x.pt', map_location='cuda:0') @ w\n"), []);
}

#[test]
fn each_element_of_a_randint_tensor_is_an_int_within_its_bounds() {
    // nanoGPT's batches: `data[i:i + block]` for `i` below `len(data) - block` is `block` long
    let batch = |high: u32, n: u32| format!("data = torch.randn(100, 3)\nix = torch.randint({high}, (4,))\nx = torch.stack([data[i:i + 10] for i in ix])\ny = x.view({n})\n");
    assert_eq!(codes(&batch(90, 160)), [(4, "SHP103")]);
    assert_eq!(codes(&batch(90, 120)), []);
    // past the end for some draws only (all of them 93: 7 rows each): the length is not known
    assert_eq!(codes(&batch(95, 120)), []);
    // `int(i)` and `i.item()` read the same int
    assert_eq!(codes("data = torch.randn(100, 3)\nfor i in torch.randint(50, (3,)):\n    a = data[int(i):int(i) + 8].view(8 * 3)\n    b = data[i.item():i.item() + 8].view(25)\n"), [(4, "SHP103")]);
}

#[test]
fn a_set_of_known_members_has_a_known_length() {
    // a vocabulary of characters of known texts
    assert_eq!(codes("chars = sorted({c for t in ['ab', 'bc'] for c in t})\nemb = nn.Embedding(len(chars), 4)\ny = emb(torch.tensor([3]))\n"), [(3, "SHP110")]);
    assert_eq!(codes("chars = sorted({c for t in ['ab', 'bc'] for c in t})\nemb = nn.Embedding(len(chars), 4)\ny = emb(torch.tensor([2]))\n"), []);
    // a set literal keeps one of equal members
    assert_eq!(codes("tags = {'B', 'I', 'B', 'O'}\nhead = nn.Linear(8, len(tags))\ny = head(torch.randn(2, 8)).view(2, 4)\n"), [(3, "SHP103")]);
    // of members not known: not known
    assert_eq!(codes("import sys\ntags = {sys.argv[0], 'B'}\nhead = nn.Linear(8, len(tags))\ny = head(torch.randn(2, 8)).view(2, 4)\n"), []);
}

#[test]
fn a_class_looked_up_by_name_in_globals_is_that_class() {
    let build = |name: &str| format!("class A(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.fc = nn.Linear(n, 2)\n    def forward(self, x):\n        return self.fc(x)\ndef build(name, *args):\n    return globals()[name](*args)\nbuild({name}, 4)(torch.randn(2, 5))\n");
    assert_eq!(codes(&build("'A'")), [(6, "SHP101")]);
    // a name not known: not known
    assert_eq!(codes(&build("__import__('sys').argv[1]")), []);
}

/// A path that saved what the store does not keep (a whole model) and one that saved nothing
/// know the same files, none: they are one state and merge (`set_files` writes no variable
/// for no file). Before, eight epochs that each may save the best model kept two paths apart
/// (an empty store against none), each running the rest of the file.
#[test]
fn saving_what_is_not_kept_and_saving_nothing_are_one_path() {
    let src = "import random\nimport torch\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 2)\nfor epoch in range(8):\n    if random.random() > 0.5:\n        torch.save(model, 'best.pt')\nout = torch.randn(3, 4) @ torch.randn(5, 6)\n";
    let parsed = shape_lint::parse::parse(src);
    let module = shape_lint::ir::lower::lower_module(&parsed);
    let (findings, stats) = shape_lint::engine::analyze_with_stats(&module, &parsed, &Settings::default());
    assert_eq!(stats.max_paths, 1, "{stats:?}");
    assert_eq!(findings.iter().map(|f| (f.row, f.rule.code)).collect::<Vec<_>>(), [(9, "SHP101")]);
}
