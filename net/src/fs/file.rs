//! `File`: std's file with its calls on the blocking pool, buffered in chunks.

use crate::fs::pool::on_pool;
use crate::fs::{Metadata, Permissions};
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path;
use std::sync::Arc;

/// Bytes a [`File`] moves per blocking-pool round trip: reads fetch this much ahead, writes
/// gather this much before they go out.
///
/// Measured on a 64 MiB file in the page cache, read in 8 KiB calls from a fiber (release
/// build, 2 workers): one pool trip per call ran at about a tenth of std's speed (0.5 vs
/// 5.5 GB/s), while 256 KiB chunks reached about four fifths of it (4.5 GB/s): a trip costs
/// a few microseconds, small next to copying 256 KiB but large next to copying 8 KiB.
pub const CHUNK: usize = 256 * 1024;

/// An open file: [`std::fs::File`]'s shape, with every system call on the blocking pool
/// (inline on a plain thread), parking only the calling fiber.
///
/// Reads and writes are buffered in [`CHUNK`]-sized pieces, so small calls do not each cost a
/// pool round trip. Written data reaches the OS at [`flush`](Write::flush), when a chunk is
/// full, before a read or seek, at [`sync_all`](Self::sync_all), and at drop (where an error
/// cannot be reported: call `flush` or `sync_all` to see it).
///
/// Reading ahead needs a file position to give unconsumed data back by seeking, so on a file
/// that cannot seek (a FIFO, a terminal, a socket taken over with [`from_std`](Self::from_std))
/// a read fetches no more than the caller asked for, one pool round trip per call.
///
/// Waiting for the pool is a cancellation point. A pool job cannot be interrupted, so a
/// cancelled call's read or write may still take place: unlike a socket's, a cancelled file
/// read may have moved the file position past data it never returned, and a cancelled write
/// may or may not have written its chunk.
///
/// ```
/// use std::io::{Read, Seek, SeekFrom, Write};
///
/// let path = std::env::temp_dir().join(format!("fibra-doc-file-{}", std::process::id()));
/// fibra::run(|| {
///     let mut file = fibra::fs::File::options()
///         .read(true)
///         .write(true)
///         .create(true)
///         .truncate(true)
///         .open(&path)
///         .unwrap();
///     for line in 0..100 {
///         writeln!(file, "line {line}").unwrap();
///     }
///     file.seek(SeekFrom::Start(0)).unwrap();
///     let mut text = String::new();
///     file.read_to_string(&mut text).unwrap();
///     assert_eq!(text.lines().count(), 100);
///     fibra::fs::remove_file(&path).unwrap();
/// });
/// ```
pub struct File {
    std: Arc<std::fs::File>,
    /// Read ahead (`Reading`, consumed up to `pos`) or not yet written (`Writing`).
    buf: Vec<u8>,
    pos: usize,
    mode: Mode,
    /// Whether the file has a position (`lseek` works); only then is data read ahead.
    seekable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Idle,
    Reading,
    Writing,
}

impl File {
    /// Opens `path` for reading.
    ///
    /// # Errors
    ///
    /// `NotFound`, `PermissionDenied` and the OS's other `open` errors.
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        File::options().read(true).open(path)
    }

    /// Creates (or truncates) `path` for writing.
    ///
    /// # Errors
    ///
    /// `NotFound` for a missing directory, `PermissionDenied` and the OS's other errors.
    pub fn create<P: AsRef<Path>>(path: P) -> io::Result<File> {
        File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    /// Options for opening a file in other ways (std's `File::options`).
    pub fn options() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Takes over an open std file.
    pub fn from_std(file: std::fs::File) -> File {
        // Asking for the position moves nothing and does no I/O, so it may run right here.
        let seekable = (&file).stream_position().is_ok();
        File {
            std: Arc::new(file),
            buf: Vec::new(),
            pos: 0,
            mode: Mode::Idle,
            seekable,
        }
    }

    /// Gives back the std file, after writing out buffered data and moving the file position
    /// back over data read ahead but not consumed.
    ///
    /// # Errors
    ///
    /// Errors of the pending write or the seek (or of duplicating the descriptor, when a
    /// cancelled call's pool job still holds the file).
    pub fn into_std(mut self) -> io::Result<std::fs::File> {
        self.settle()?;
        let std = self.std.clone();
        drop(self);
        // A pool job abandoned by a cancelled call may still hold the file: then hand out a
        // duplicate descriptor of the same open file (same position).
        Arc::try_unwrap(std).or_else(|shared| shared.try_clone())
    }

    /// Writes out buffered data and waits until the OS has it on disk, data and metadata.
    ///
    /// # Errors
    ///
    /// The pending write's errors and the OS's `fsync` errors.
    pub fn sync_all(&mut self) -> io::Result<()> {
        self.settle()?;
        self.on_file(|file| file.sync_all())
    }

    /// Like [`sync_all`](Self::sync_all), but without waiting for metadata to be on disk.
    ///
    /// # Errors
    ///
    /// As [`sync_all`](Self::sync_all).
    pub fn sync_data(&mut self) -> io::Result<()> {
        self.settle()?;
        self.on_file(|file| file.sync_data())
    }

    /// Truncates or extends the file to `size` bytes.
    ///
    /// # Errors
    ///
    /// The pending write's errors and the OS's `ftruncate` errors.
    pub fn set_len(&mut self, size: u64) -> io::Result<()> {
        self.settle()?;
        self.on_file(move |file| file.set_len(size))
    }

    /// The file's metadata (buffered writes not yet out are not counted in its length).
    ///
    /// # Errors
    ///
    /// The OS's `fstat` errors.
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.on_file(|file| file.metadata())
    }

    /// Changes the file's permissions.
    ///
    /// # Errors
    ///
    /// The OS's `fchmod` errors.
    pub fn set_permissions(&self, permissions: Permissions) -> io::Result<()> {
        self.on_file(move |file| file.set_permissions(permissions))
    }

    fn on_file<T: Send + 'static>(
        &self,
        f: impl FnOnce(&std::fs::File) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let file = self.std.clone();
        on_pool(move || f(&file))
    }

    /// Brings the OS file position in line with the caller's view and leaves no buffered
    /// data: pending writes go out, unconsumed read-ahead is given back by seeking.
    fn settle(&mut self) -> io::Result<()> {
        match self.mode {
            Mode::Idle => Ok(()),
            Mode::Writing => self.write_out(),
            Mode::Reading => {
                let unread = (self.buf.len() - self.pos) as i64;
                if unread > 0 {
                    // Moving the position does no I/O, so it may run right here. Should it
                    // fail, the data stays buffered for the next read rather than being lost.
                    (&*self.std).seek(SeekFrom::Current(-unread))?;
                }
                self.buf.clear();
                self.pos = 0;
                self.mode = Mode::Idle;
                Ok(())
            }
        }
    }

    /// Writes the pending buffer out in one pool round trip.
    fn write_out(&mut self) -> io::Result<()> {
        let pending = mem::take(&mut self.buf);
        self.mode = Mode::Idle;
        if pending.is_empty() {
            return Ok(());
        }
        let file = self.std.clone();
        let (result, mut emptied) = on_pool(move || {
            let result = (&*file).write_all(&pending);
            (result, pending)
        });
        emptied.clear();
        self.buf = emptied;
        result
    }

    /// Fetches the next chunk, or only the `wanted` bytes when the file cannot seek; `Ok(0)`
    /// at end of file.
    fn read_ahead(&mut self, wanted: usize) -> io::Result<usize> {
        let mut buf = mem::take(&mut self.buf);
        let size = if self.seekable {
            CHUNK
        } else {
            wanted.min(CHUNK)
        };
        buf.resize(size, 0);
        let file = self.std.clone();
        let (result, mut buf) = on_pool(move || {
            let result = (&*file).read(&mut buf);
            (result, buf)
        });
        let n = *result.as_ref().unwrap_or(&0);
        buf.truncate(n);
        self.buf = buf;
        self.pos = 0;
        self.mode = if n > 0 { Mode::Reading } else { Mode::Idle };
        result
    }
}

impl Read for File {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.mode == Mode::Writing {
            self.write_out()?;
        }
        if self.mode != Mode::Reading && self.read_ahead(out.len())? == 0 {
            return Ok(0);
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.buf.len() {
            // Emptied, not just left: a write appends to this buffer and would send the
            // consumed bytes out again.
            self.buf.clear();
            self.pos = 0;
            self.mode = Mode::Idle;
        }
        Ok(n)
    }
}

impl Write for File {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.mode == Mode::Reading {
            self.settle()?;
        }
        if self.buf.len() + data.len() > CHUNK && !self.buf.is_empty() {
            self.write_out()?;
        }
        let n = data.len().min(CHUNK);
        if self.buf.capacity() < CHUNK {
            self.buf.reserve_exact(CHUNK - self.buf.len());
        }
        self.buf.extend_from_slice(&data[..n]);
        self.mode = Mode::Writing;
        if self.buf.len() == CHUNK {
            self.write_out()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.mode == Mode::Writing {
            self.write_out()?;
        }
        Ok(())
    }
}

impl Seek for File {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.settle()?;
        match pos {
            // The end is the file's size, which a network or FUSE file system may have to ask
            // its server for.
            SeekFrom::End(_) => self.on_file(move |mut file| file.seek(pos)),
            SeekFrom::Start(_) | SeekFrom::Current(_) => (&*self.std).seek(pos),
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if self.mode == Mode::Writing {
            // Nobody can be told of an error here; `flush` and `sync_all` report them.
            let _ = self.write_out();
        }
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.std.as_fd()
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.std.as_raw_fd()
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("std", &self.std)
            .field("buffered", &(self.buf.len() - self.pos))
            .field("mode", &self.mode)
            .finish()
    }
}

/// How to open a [`File`]: std's [`std::fs::OpenOptions`], opening on the blocking pool.
///
/// ```
/// let path = std::env::temp_dir().join(format!("fibra-doc-append-{}", std::process::id()));
/// fibra::run(|| {
///     use std::io::Write;
///     for word in ["a", "b"] {
///         let mut file = fibra::fs::File::options().append(true).create(true).open(&path).unwrap();
///         file.write_all(word.as_bytes()).unwrap();
///     }
///     assert_eq!(fibra::fs::read_to_string(&path).unwrap(), "ab");
///     fibra::fs::remove_file(&path).unwrap();
/// });
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions(std::fs::OpenOptions);

impl OpenOptions {
    /// No access at all, like std's `OpenOptions::new`.
    pub fn new() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Read access.
    pub fn read(&mut self, read: bool) -> &mut OpenOptions {
        self.0.read(read);
        self
    }

    /// Write access.
    pub fn write(&mut self, write: bool) -> &mut OpenOptions {
        self.0.write(write);
        self
    }

    /// Writes go to the end of the file.
    pub fn append(&mut self, append: bool) -> &mut OpenOptions {
        self.0.append(append);
        self
    }

    /// Truncate the file to 0 bytes on opening.
    pub fn truncate(&mut self, truncate: bool) -> &mut OpenOptions {
        self.0.truncate(truncate);
        self
    }

    /// Create the file if it does not exist.
    pub fn create(&mut self, create: bool) -> &mut OpenOptions {
        self.0.create(create);
        self
    }

    /// Create the file, failing with `AlreadyExists` if it exists.
    pub fn create_new(&mut self, create_new: bool) -> &mut OpenOptions {
        self.0.create_new(create_new);
        self
    }

    /// Opens `path` with these options on the blocking pool.
    ///
    /// # Errors
    ///
    /// `NotFound`, `AlreadyExists`, `PermissionDenied`, `InvalidInput` for contradictory
    /// options, and the OS's other `open` errors.
    pub fn open<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let (options, path) = (self.0.clone(), path.as_ref().to_owned());
        on_pool(move || options.open(path)).map(File::from_std)
    }
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::pool::trips;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("fibra-net-unit-{name}-{}", std::process::id()))
    }

    #[test]
    fn small_reads_and_writes_cost_one_pool_trip_per_chunk() {
        const SIZE: usize = 4 * CHUNK;
        let path = temp("chunks");
        let runtime = fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap();
        runtime.block_on(move || {
            let mut file = File::create(&path).unwrap();
            let before = trips::so_far();
            for _ in 0..SIZE / 8192 {
                file.write_all(&[3; 8192]).unwrap();
            }
            assert_eq!(trips::so_far() - before, SIZE / CHUNK);
            drop(file);
            let mut file = File::open(&path).unwrap();
            let before = trips::so_far();
            let mut buf = [0; 8192];
            let mut total = 0;
            loop {
                let n = file.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                total += n;
            }
            assert_eq!(total, SIZE);
            // One trip per chunk and one that finds the end.
            assert_eq!(trips::so_far() - before, SIZE / CHUNK + 1);
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn a_seek_from_the_end_asks_for_the_size_on_the_pool() {
        let path = temp("seek-end");
        fibra_runtime::run(move || {
            let mut file = File::create(&path).unwrap();
            file.write_all(b"0123456789").unwrap();
            file.flush().unwrap();
            let before = trips::so_far();
            assert_eq!(file.seek(SeekFrom::End(-3)).unwrap(), 7);
            assert_eq!(trips::so_far() - before, 1);
            assert_eq!(file.seek(SeekFrom::Current(1)).unwrap(), 8);
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn seeking_and_switching_between_reads_and_writes_keep_positions_right() {
        let path = temp("mixed");
        fibra_runtime::run(move || {
            let mut file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            file.write_all(b"0123456789").unwrap();
            file.seek(SeekFrom::Start(2)).unwrap();
            let mut two = [0; 2];
            file.read_exact(&mut two).unwrap();
            assert_eq!(&two, b"23");
            // The read fetched ahead; a write now lands right after what was consumed.
            file.write_all(b"ab").unwrap();
            assert_eq!(file.stream_position().unwrap(), 6);
            file.seek(SeekFrom::Current(-6)).unwrap();
            let mut all = String::new();
            file.read_to_string(&mut all).unwrap();
            assert_eq!(all, "0123ab6789");
            file.set_len(4).unwrap();
            assert_eq!(file.metadata().unwrap().len(), 4);
            let std = file.into_std().unwrap();
            drop(std);
            std::fs::remove_file(&path).unwrap();
        });
    }
}
