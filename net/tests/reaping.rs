//! Reaping of dropped children after their runtime has ended. In a test binary of its own:
//! another test's runtime could sweep tokio's orphans and hide a missing reaper.

use fibra_net::os::Command;
use std::time::{Duration, Instant};

#[test]
fn a_child_dropped_while_running_is_reaped_after_the_runtime_ended() {
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
