//! Files and directories with the shape of `std::fs`, run on the blocking pool so that a
//! slow disk parks only the calling fiber, never its worker.
//!
//! Whole-file functions ([`read()`], [`write()`], …) cost one pool round trip each. A [`File`]
//! buffers: reads fetch [`CHUNK`] bytes per pool trip and serve small `read` calls from
//! memory, and small writes are gathered until `CHUNK` bytes are pending, so reading or writing
//! a large file in 8 KiB calls costs one pool trip per 256 KiB, not one per call. On a plain
//! thread the same calls simply run there.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("fibra-doc-fs-{}", std::process::id()));
//! fibra::run(|| {
//!     fibra::fs::create_dir_all(&dir).unwrap();
//!     let path = dir.join("greeting.txt");
//!     fibra::fs::write(&path, "hello from a fiber").unwrap();
//!     assert_eq!(fibra::fs::read_to_string(&path).unwrap(), "hello from a fiber");
//!     assert_eq!(fibra::fs::metadata(&path).unwrap().len(), 18);
//!     fibra::fs::remove_dir_all(&dir).unwrap();
//! });
//! ```

mod file;
mod pool;

pub use file::{File, OpenOptions, CHUNK};
pub use std::fs::{FileType, Metadata, Permissions};

use pool::on_pool;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Reads the whole file at `path` (std's [`std::fs::read`]) in one pool round trip.
///
/// # Errors
///
/// `NotFound`, `PermissionDenied` and the OS's other errors.
///
/// ```
/// let path = std::env::temp_dir().join(format!("fibra-doc-read-{}", std::process::id()));
/// fibra::run(|| {
///     fibra::fs::write(&path, [1, 2, 3]).unwrap();
///     assert_eq!(fibra::fs::read(&path).unwrap(), [1, 2, 3]);
///     fibra::fs::remove_file(&path).unwrap();
/// });
/// ```
pub fn read<P: AsRef<Path>>(path: P) -> io::Result<Vec<u8>> {
    let path = path.as_ref().to_owned();
    on_pool(move || std::fs::read(path))
}

/// Reads the whole file at `path` as UTF-8.
///
/// # Errors
///
/// As [`read`]; `InvalidData` when the contents are not UTF-8.
pub fn read_to_string<P: AsRef<Path>>(path: P) -> io::Result<String> {
    let path = path.as_ref().to_owned();
    on_pool(move || std::fs::read_to_string(path))
}

/// Creates or truncates the file at `path` and writes `contents` to it.
///
/// # Errors
///
/// `NotFound` for a missing directory, `PermissionDenied` and the OS's other errors.
pub fn write<P: AsRef<Path>, C: AsRef<[u8]>>(path: P, contents: C) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    let contents = contents.as_ref().to_vec();
    on_pool(move || std::fs::write(path, contents))
}

/// The entries of the directory at `path`, read in one pool round trip.
///
/// # Errors
///
/// `NotFound`, `NotADirectory` and the OS's other errors; an entry that could not be read
/// appears as an `Err` item.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fibra-doc-read-dir-{}", std::process::id()));
/// fibra::run(|| {
///     fibra::fs::create_dir_all(dir.join("sub")).unwrap();
///     fibra::fs::write(dir.join("file"), b"").unwrap();
///     assert_eq!(fibra::fs::read_dir(&dir).unwrap().count(), 2);
///     fibra::fs::remove_dir_all(&dir).unwrap();
/// });
/// ```
pub fn read_dir<P: AsRef<Path>>(path: P) -> io::Result<ReadDir> {
    let path = path.as_ref().to_owned();
    let entries = on_pool(move || {
        std::fs::read_dir(path).map(|entries| {
            entries
                .map(|entry| entry.map(DirEntry::listed))
                .collect::<Vec<_>>()
        })
    })?;
    Ok(ReadDir {
        entries: entries.into_iter(),
    })
}

/// The iterator of [`read_dir`].
#[derive(Debug)]
pub struct ReadDir {
    entries: std::vec::IntoIter<io::Result<DirEntry>>,
}

impl Iterator for ReadDir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<io::Result<DirEntry>> {
        self.entries.next()
    }
}

/// An entry of a directory read by [`read_dir`]: std's [`std::fs::DirEntry`], with the calls
/// that may touch the disk on the blocking pool. Its type was looked up with the listing, so
/// [`file_type`](Self::file_type) costs no pool round trip when that succeeded.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fibra-doc-dir-entry-{}", std::process::id()));
/// fibra::run(|| {
///     fibra::fs::create_dir_all(&dir).unwrap();
///     fibra::fs::write(dir.join("file"), b"four").unwrap();
///     let entry = fibra::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
///     assert_eq!(entry.file_name(), "file");
///     assert!(entry.file_type().unwrap().is_file());
///     assert_eq!(entry.metadata().unwrap().len(), 4);
///     fibra::fs::remove_dir_all(&dir).unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct DirEntry {
    std: Arc<std::fs::DirEntry>,
    /// `None` when the lookup failed: asked again, it reports its error.
    file_type: Option<FileType>,
}

impl DirEntry {
    /// Runs on the pool with the listing: the type usually comes with the entry, and looking
    /// it up otherwise is a `stat` that must not run on a worker.
    fn listed(std: std::fs::DirEntry) -> DirEntry {
        DirEntry {
            file_type: std.file_type().ok(),
            std: Arc::new(std),
        }
    }

    /// The entry's full path: the directory's path joined with its name.
    pub fn path(&self) -> PathBuf {
        self.std.path()
    }

    /// The entry's name in its directory.
    pub fn file_name(&self) -> OsString {
        self.std.file_name()
    }

    /// The entry's metadata, not following a symlink ([`std::fs::DirEntry::metadata`]), read
    /// on the blocking pool.
    ///
    /// # Errors
    ///
    /// `NotFound` when the entry was removed since the listing, and the OS's other errors.
    pub fn metadata(&self) -> io::Result<Metadata> {
        let std = self.std.clone();
        on_pool(move || std.metadata())
    }

    /// The entry's type, not following a symlink ([`std::fs::DirEntry::file_type`]).
    ///
    /// # Errors
    ///
    /// The OS's errors, when the type was not had with the listing and cannot be now.
    pub fn file_type(&self) -> io::Result<FileType> {
        if let Some(file_type) = self.file_type {
            return Ok(file_type);
        }
        let std = self.std.clone();
        on_pool(move || std.file_type())
    }
}

macro_rules! path_functions {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ident),*) -> $ret:ty;)*) => {$(
        $(#[$doc])*
        ///
        /// # Errors
        ///
        /// The std function's errors (`NotFound`, `PermissionDenied`, `AlreadyExists`, …).
        pub fn $name<$($ty: AsRef<Path>),*>($($arg: $ty),*) -> io::Result<$ret> {
            $(let $arg: PathBuf = $arg.as_ref().to_owned();)*
            on_pool(move || std::fs::$name($($arg),*))
        }
    )*};
}

path_functions! {
    /// Creates a directory and all its missing parents ([`std::fs::create_dir_all`]).
    fn create_dir_all(path: P) -> ();
    /// Creates one directory ([`std::fs::create_dir`]).
    fn create_dir(path: P) -> ();
    /// Removes a file ([`std::fs::remove_file`]).
    fn remove_file(path: P) -> ();
    /// Removes an empty directory ([`std::fs::remove_dir`]).
    fn remove_dir(path: P) -> ();
    /// Removes a directory and everything in it ([`std::fs::remove_dir_all`]).
    fn remove_dir_all(path: P) -> ();
    /// Renames a file or directory ([`std::fs::rename`]).
    fn rename(from: P, to: Q) -> ();
    /// Copies a file's contents and permissions, returning the bytes copied
    /// ([`std::fs::copy`]).
    fn copy(from: P, to: Q) -> u64;
    /// The metadata of `path`, following symlinks ([`std::fs::metadata`]).
    fn metadata(path: P) -> Metadata;
    /// The metadata of `path` itself, not following symlinks
    /// ([`std::fs::symlink_metadata`]).
    fn symlink_metadata(path: P) -> Metadata;
    /// The canonical absolute form of `path` ([`std::fs::canonicalize`]).
    fn canonicalize(path: P) -> PathBuf;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::pool::trips;

    #[test]
    fn a_dir_entrys_metadata_is_read_on_the_pool() {
        let dir = std::env::temp_dir().join(format!("fibra-net-unit-entry-{}", std::process::id()));
        let runtime = fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap();
        runtime.block_on(move || {
            create_dir_all(&dir).unwrap();
            write(dir.join("file"), b"four").unwrap();
            let entry = read_dir(&dir).unwrap().next().unwrap().unwrap();
            let before = trips::so_far();
            let metadata = entry.metadata().unwrap();
            assert_eq!(trips::so_far() - before, 1);
            assert_eq!(metadata.len(), 4);
            assert!(entry.file_type().unwrap().is_file());
            assert_eq!(entry.path(), dir.join("file"));
            remove_dir_all(&dir).unwrap();
        });
    }
}
