//! Reaping of dropped children after their runtime has ended, and the process descriptors
//! waits open. In a test binary of its own: another test's runtime could sweep tokio's orphans
//! and hide a missing reaper, and other tests' children would open descriptors of their own.

use fibra_net::os::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Held by each test: one counts the process descriptors the other's reaper opens.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Process descriptors (pidfds) open in this process.
fn pidfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.to_str() == Some("anon_inode:[pidfd]"))
        .count()
}

#[test]
fn a_child_dropped_while_running_is_reaped_after_the_runtime_ended() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The reaper must leave children spawned some other way to their owners.
    let mut std_child = std::process::Command::new("sh")
        .args(["-c", "exit 3"])
        .spawn()
        .unwrap();
    let pid = fibra_runtime::run(|| {
        let child = Command::new("sleep").arg("0.2").spawn().unwrap();
        child.id()
    });
    // Until it is reaped the exited child stays a zombie with a /proc entry; bounded wait.
    let proc_entry = format!("/proc/{pid}");
    let give_up = Instant::now() + Duration::from_secs(20);
    while std::path::Path::new(&proc_entry).exists() {
        assert!(Instant::now() < give_up, "{proc_entry} is still there");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(std_child.wait().unwrap().code(), Some(3));
}

/// A wait opens the child's pidfd; a kept `Child` that has been reaped held it (and its
/// reactor registration) until dropped: one descriptor per finished child.
#[test]
fn a_reaped_child_keeps_no_process_descriptor_open() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A descriptor the other test's reaper still holds may close meanwhile: at most as many.
    let before = pidfds();
    let finished = fibra_runtime::run(|| {
        (0..10)
            .map(|_| {
                let mut child = Command::new("sleep").arg("0.05").spawn().unwrap();
                assert!(child.wait().unwrap().success());
                child
            })
            .collect::<Vec<_>>()
    });
    assert!(pidfds() <= before, "{} pidfds, {before} before", pidfds());
    drop(finished);
}
