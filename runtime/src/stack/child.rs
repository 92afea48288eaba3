//! Test support for the stack tests: running one of them alone in a child process (through
//! `fibra-testing`), for tests that must die from a signal or that look at the whole address
//! space; and a recursion that overflows a stack.

use std::hint::black_box;
use std::process::Output;

pub(super) use fibra_testing::{assert_killed_by, assert_passed, is_child as in_child};

/// Runs test `name` of `module` (pass `module_path!()`) alone in a child process.
pub(super) fn run(module: &str, name: &str) -> Output {
    let (_crate, path) = module
        .split_once("::")
        .expect("module_path! names the crate");
    fibra_testing::run_child(&format!("{path}::{name}"), &[])
}

/// Recurses until the stack runs out: a 1 KiB frame that the optimiser can neither drop nor
/// turn into a loop.
#[inline(never)]
pub(super) fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth as u8; 1024]);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    recurse(depth + 1) + u64::from(frame[0])
}
