//! A temporary directory for one test, removed when dropped.

use std::path::{Path, PathBuf};

/// A fresh, empty directory under the system's temporary directory, named after the test and
/// this process; removed with its contents on drop.
///
/// ```
/// let dir = fibra_testing::TempDir::new("doc");
/// std::fs::write(dir.path().join("a"), b"x").unwrap();
/// let path = dir.path().to_owned();
/// drop(dir);
/// assert!(!path.exists());
/// ```
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates the directory for the test called `name`.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("fibra-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating a test directory");
        TempDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
