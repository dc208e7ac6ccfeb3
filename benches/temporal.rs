//! Temporal filter benchmarks (placeholder until the benchmark suite lands).
fn main() {}
