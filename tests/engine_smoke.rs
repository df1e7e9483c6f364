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
