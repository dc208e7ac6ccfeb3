//! Shared by the integration tests: running one test of the current test binary as the two
//! processes of a timely job over 127.0.0.1.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs test `child` of this test binary twice, as processes 0 and 1 of a 2-process timely job on
/// free loopback ports (the timely arguments are passed in the environment variable `env`), and
/// returns the text each child printed after `prefix` on a line of its stdout, process 0 first.
/// Panics (failing the calling test) when a child fails, prints no result, or the pair does not
/// finish within 60 s.
pub fn two_processes(child: &str, env: &str, prefix: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("chronobloom-2p-{child}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listeners: Vec<_> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let lines: Vec<String> = listeners
        .iter()
        .map(|l| format!("127.0.0.1:{}", l.local_addr().unwrap().port()))
        .collect();
    drop(listeners);
    let hosts = dir.join("hosts.txt");
    std::fs::write(&hosts, lines.join("\n") + "\n").unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..2)
        .map(|p| {
            Command::new(&exe)
                .args(["--exact", child, "--nocapture", "--test-threads=1"])
                .env(env, format!("-w 1 -n 2 -p {p} -h {}", hosts.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("the two processes did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let results = children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "child failed: {stdout}\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            stdout
                .lines()
                .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest.to_string()))
                .unwrap_or_else(|| panic!("no result in child output: {stdout}"))
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    results
}
