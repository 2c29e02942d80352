#[test] fn stub() {}
