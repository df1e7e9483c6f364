use shape_lint::{Settings, check_source};

#[test]
fn lenet_example_reports_fc2() {
    let src = std::fs::read_to_string("examples/lenet_cifar.py").unwrap();
    let f = check_source(&src, "examples/lenet_cifar.py", &Settings::default());
    for x in &f {
        eprintln!("{}:{} {} {} {:?}", x.row, x.col, x.rule.code, x.message, x.trace);
    }
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule.code, "SHP101");
}

#[test]
fn hostile_nesting_does_not_overflow() {
    let cases = [
        format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}\n", vec!["1"; 100_000].join(" + ")),
        format!("x = {}0{}\n", "[".repeat(50_000), "]".repeat(50_000)),
        format!("x = {}\n", "-".repeat(200_000) + "1"),
        format!("x = {}1{}\n", "f(".repeat(20_000), ")".repeat(20_000)),
    ];
    for c in &cases {
        let f = check_source(c, "deep.py", &Settings::default());
        assert!(f.iter().all(|x| x.rule.code != "SHP001"), "{:?}", f);
    }
}
