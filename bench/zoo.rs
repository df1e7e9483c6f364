//! Zoo benchmark: build each torchvision model and analyse one forward on a 224x224 batch.
//! `cargo run --release --example zoo` prints the median time per model, its engine steps and
//! the ratio to resnet18's time (how the cost grows with depth; path merging keeps every
//! model at one path, so the ratio follows the layer count).

use shape_lint::{Settings, engine, ir, parse};

const MODELS: &[&str] = &["resnet18", "resnet50", "resnet152", "vgg16_bn", "alexnet", "mobilenet_v2", "squeezenet1_1", "densenet121", "densenet201"];

fn program(name: &str) -> String {
    format!("import torch\nimport torchvision\nmodel = torchvision.models.{name}(weights=None)\ny = model(torch.randn(8, 3, 224, 224))\n")
}

fn median_ms(src: &str, settings: &Settings) -> f64 {
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let t = std::time::Instant::now();
            let _ = shape_lint::check_source(src, "zoo.py", settings);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

fn main() {
    let settings = Settings::default();
    // warm up (allocator, page faults) before the baseline
    let _ = median_ms(&program("resnet18"), &settings);
    let base = median_ms(&program("resnet18"), &settings);
    println!("{:<14} {:>10} {:>9} {:>6} {:>8}", "model", "median ms", "steps", "paths", "ratio");
    for name in MODELS {
        let src = program(name);
        let ms = median_ms(&src, &settings);
        let parsed = parse::parse(&src);
        let module = ir::lower::lower_module(&parsed);
        let (findings, stats) = engine::analyze_with_stats(&module, &parsed, &settings);
        assert!(findings.is_empty(), "{name}: {findings:?}");
        println!("{name:<14} {ms:>10.2} {:>9} {:>6} {:>8.2}", stats.steps, stats.max_paths, ms / base);
    }
}
