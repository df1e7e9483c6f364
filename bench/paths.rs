//! Path explosion benchmark: a model of N identical residual blocks, each with an internal
//! `if` on an opaque value (`self.training`), analysed with path merging on and off.
//! `cargo run --release --example paths` prints both side by side; the ratio column is
//! (time without pruning) / (time with pruning).

use shape_lint::{Settings, engine, ir, parse};

fn model(blocks: usize) -> String {
    format!(
        r#"import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        if self.training:
            out = self.drop(h)
        else:
            out = x
        return x + out


class Net(nn.Module):
    def __init__(self, dim=64, depth={blocks}):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, 10)

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

fn run(src: &str, prune: bool) -> (engine::Stats, f64, usize) {
    let settings = Settings { prune, max_paths: 1 << 12, timeout_ms: 20_000, max_steps: 50_000_000, ..Settings::default() };
    let parsed = parse::parse(src);
    let module = ir::lower::lower_module(&parsed);
    let t = std::time::Instant::now();
    let (findings, stats) = engine::analyze_with_stats(&module, &parsed, &settings);
    (stats, t.elapsed().as_secs_f64() * 1000.0, findings.len())
}

fn main() {
    println!("{:>7} | {:>10} {:>10} {:>9} | {:>12} {:>10} {:>9} | {:>7}", "blocks", "paths", "ms", "abandoned", "paths(off)", "ms(off)", "abandoned", "ratio");
    for blocks in [1usize, 4, 8, 12, 24, 100] {
        let src = model(blocks);
        let (on, t_on, f_on) = run(&src, true);
        let (off, t_off, _) = run(&src, false);
        assert_eq!(f_on, 0, "the benchmark model is correct: no findings expected");
        let cap = if off.abandoned > 0 { ">=" } else { "" };
        println!(
            "{:>7} | {:>10} {:>10.2} {:>9} | {:>12} {:>10.2} {:>9} | {:>6.1}x",
            blocks,
            on.max_paths,
            t_on,
            on.abandoned,
            format!("{cap}{}", off.max_paths),
            t_off,
            off.abandoned,
            t_off / t_on.max(1e-9)
        );
    }
    println!("paths: the most live paths at any point; abandoned: entry points that hit the path cap (4096)");
}
