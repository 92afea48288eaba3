//! `fs_read`: a 64 MiB file (in the page cache) read in 8 KiB `read` calls; ns per 8 KiB.
//!
//! Variant `2w` (64 MiB, 8 MiB with `--quick`): `fibra::fs::File` from the main fiber of a
//! 2-worker runtime vs `tokio::fs::File` (`AsyncReadExt::read`) from a task on a 2-worker
//! multi-thread runtime. The file is written once before the rounds and removed after; every
//! round checks the byte count and a checksum.
//!
//! # Measured (2026-12-05, the 2-core machine loaded by other work, load average 11–14)
//!
//! fibra 0.18–0.20× tokio's ns per 8 KiB (`--quick`, 5 runs): some 5× tokio's throughput.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;
/// Bytes per `read` call.
const PIECE: usize = 8 * 1024;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let size = if quick { 8 << 20 } else { 64 << 20 };
    let file = TestFile::new(size);
    let calls = (size / PIECE) as u64;
    let path = file.path.clone();
    let fibra_round = move |calls: u64| fibra(&path, calls);
    let path = file.path.clone();
    let tokio_round = move |calls: u64| tokio(&path, calls);
    compare_per_op(
        "fs_read",
        "2w",
        calls,
        ROUNDS,
        &[("fibra", &fibra_round), ("tokio", &tokio_round)],
    );
}

/// The file every round reads: byte `i` is `i % 251`, so the expected sum is known.
struct TestFile {
    path: PathBuf,
}

impl TestFile {
    fn new(size: usize) -> TestFile {
        let path = std::env::temp_dir().join(format!("fibra-bench-fs-read-{}", std::process::id()));
        let contents: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, contents).expect("write the bench file");
        TestFile { path }
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Checks a round's byte count and sum (`calls` pieces of the test file).
fn check(bytes: u64, sum: u64, calls: u64) {
    assert_eq!(bytes, calls * PIECE as u64, "short read");
    // The sum of `i % 251` over `0..bytes`, in closed form: summed byte by byte it took the
    // reading fiber (or task) about 60 ms, long enough for the runtime's monitor to warn.
    let (laps, rest) = (bytes / 251, bytes % 251);
    let expected = laps * (250 * 251 / 2) + rest * rest.saturating_sub(1) / 2;
    assert_eq!(sum, expected, "the bytes read are off");
}

/// fibra: `fibra::fs::File::read` in 8 KiB calls from the main fiber.
fn fibra(path: &Path, calls: u64) -> Duration {
    let path = path.to_owned();
    runtimes::fibra(WORKERS).block_on(move || {
        let mut file = fibra::fs::File::open(&path).expect("open");
        let mut piece = [0u8; PIECE];
        let (mut bytes, mut sum) = (0u64, 0u64);
        let start = Instant::now();
        loop {
            let n = file.read(&mut piece).expect("read");
            if n == 0 {
                break;
            }
            bytes += n as u64;
            sum += piece[..n].iter().map(|&b| b as u64).sum::<u64>();
        }
        let elapsed = start.elapsed();
        check(bytes, sum, calls);
        elapsed
    })
}

/// tokio: `tokio::fs::File` read in 8 KiB calls from a task.
fn tokio(path: &Path, calls: u64) -> Duration {
    use tokio::io::AsyncReadExt;

    let path = path.to_owned();
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let mut file = tokio::fs::File::open(&path).await.expect("open");
        let mut piece = [0u8; PIECE];
        let (mut bytes, mut sum) = (0u64, 0u64);
        let start = Instant::now();
        loop {
            let n = file.read(&mut piece).await.expect("read");
            if n == 0 {
                break;
            }
            bytes += n as u64;
            sum += piece[..n].iter().map(|&b| b as u64).sum::<u64>();
        }
        let elapsed = start.elapsed();
        check(bytes, sum, calls);
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_reads_every_byte() {
        let file = TestFile::new(20 * PIECE);
        fibra(&file.path, 20);
        tokio(&file.path, 20);
    }
}
