//! The `trace_dedup` example binary for the tests that run the main job as a user does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `trace_dedup` binary next to this test's profile, built once per test binary: `cargo
/// test` builds examples, `cargo test --test NAME` does not, and building a fresh binary costs
/// nothing.
pub fn trace_dedup() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // target/<profile>/deps/<test>-<hash> → target/<profile>
        let exe = std::env::current_exe().unwrap();
        let profile = exe.parent().and_then(Path::parent).unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "--example", "trace_dedup"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if let Some(target) = profile.parent() {
            build.env("CARGO_TARGET_DIR", target);
        }
        if profile.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let built = build.status().is_ok_and(|s| s.success());
        let path = profile
            .join("examples")
            .join(format!("trace_dedup{}", std::env::consts::EXE_SUFFIX));
        assert!(
            built || path.exists(),
            "cannot build {}; run `cargo build --example trace_dedup`",
            path.display()
        );
        path
    })
}
