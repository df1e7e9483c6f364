//! User subclasses of modelled library layers (`class MyLinear(nn.Linear)`): what is reported
//! and what stays Unknown. Every case was run under torch 2.13: a reported line is where torch
//! raises, a silent program runs (or raises for a reason the model must not guess).
use shape_lint::{Settings, check_source};

fn codes(src: &str) -> Vec<(usize, &'static str)> {
    let src = format!("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{src}");
    check_source(&src, "t.py", &Settings::default()).iter().map(|f| (f.row - 3, f.rule.code)).collect()
}

#[test]
fn a_subclass_keeps_the_layers_construction_and_call() {
    // no `__init__`: the class's arguments build the layer
    assert_eq!(codes("class L(nn.Linear):\n    pass\nL(7, 4)(torch.randn(2, 3))\n"), [(3, "SHP101")]);
    // `super().__init__(...)` with other arguments; `super(C, self)` too
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self, i, o):\n        super().__init__(i, o, bias=False)\nL(5, 4)(torch.randn(2, 3))\n"), [(4, "SHP101")]);
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self, i, o):\n        super(L, self).__init__(i, o)\nL(5, 4)(torch.randn(2, 3))\n"), [(4, "SHP101")]);
    // through a user base that defines nothing
    assert_eq!(codes("class B(nn.Linear):\n    pass\nclass L(B):\n    def __init__(self):\n        super().__init__(5, 4)\nL()(torch.randn(2, 3))\n"), [(6, "SHP101")]);
    // `super().forward(x)` in the user's forward, reported where torch raises
    assert_eq!(codes("class C(nn.Conv2d):\n    def forward(self, x):\n        return super().forward(x) * 2\nC(4, 8, 3)(torch.randn(1, 3, 8, 8))\n"), [(3, "SHP107")]);
    // the layer's attributes as torch stores them: `self.weight`, a tuple `self.stride`
    let ws = "class C(nn.Conv2d):\n    def forward(self, x):\n        return F.conv2d(x, self.weight * 2, self.bias, self.stride, self.padding, self.dilation, self.groups)\n";
    assert_eq!(codes(&format!("{ws}y = C(3, 8, 3, stride=2)(torch.randn(1, 3, 9, 9))\nz = y.view(8 * 4 * 4)\nk = C(3, 8, 3).kernel_size[0] * 4\nw = y.view(8 * k)\n")), [(7, "SHP103")]);
    assert_eq!(codes("class L(nn.Linear):\n    pass\nm = L(3, 4, bias=False)\nassert m.bias is None\ny = m.weight.view(3, 4)\nz = m.weight.view(5)\n"), [(6, "SHP103")]);
}

#[test]
fn what_the_model_cannot_follow_is_unknown() {
    // torch's forward calls the user's `_conv_forward`: runs under torch
    assert_eq!(codes("class C(nn.Conv2d):\n    def _conv_forward(self, input, weight, bias):\n        return input\nC(4, 8, 3)(torch.randn(1, 3, 8, 8))\n"), []);
    // `reset_parameters` (which torch's `__init__` calls) replaced: not followed
    assert_eq!(codes("class L(nn.Linear):\n    def reset_parameters(self):\n        pass\nL(3, 4)(torch.randn(2, 5))\n"), []);
    // a stored attribute torch's forward ignores (`in_features`) or a weight of another shape
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self):\n        super().__init__(3, 4)\n        self.in_features = 5\nL()(torch.randn(2, 3))\n"), []);
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self):\n        super().__init__(3, 4)\n        self.weight = nn.Parameter(torch.randn(4, 5))\nL()(torch.randn(2, 5))\n"), []);
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self):\n        super().__init__(3, 4)\n        self.weight = nn.Parameter(torch.randn(4, 5))\nL()(torch.randn(2, 3))\n"), [(5, "SHP101")]);
    // no `super().__init__`: no layer (torch raises an AttributeError, not a shape error)
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self):\n        self.k = 1\nL()(torch.randn(2, 3))\n"), []);
    // an attribute of the layer's set before `super().__init__`, which torch's overwrites
    assert_eq!(codes("class S(nn.Softmax):\n    def __init__(self):\n        self.dim = 5\n        super().__init__(dim=1)\ns = S()\ny = torch.randn(2, 3).sum(s.dim)\n"), []);
    // an unmodelled base beside the layer
    assert_eq!(codes("import foo\nclass L(nn.Linear, foo.Mixin):\n    pass\nL(5, 4)(torch.randn(2, 3))\n"), []);
    // the user's own attribute names are theirs; a user method is called as written
    assert_eq!(codes("class L(nn.Linear):\n    def __init__(self, i, o):\n        super().__init__(i, o)\n        self.gain = 2\n    def forward(self, x):\n        return self.scaled(x)\n    def scaled(self, x):\n        return super().forward(x) * self.gain\nL(3, 4)(torch.randn(2, 3))\n"), []);
}
