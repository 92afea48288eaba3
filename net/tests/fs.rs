//! Files: a 64 MiB round trip with a checksum, directories, and error kinds.

use fibra_net::fs::{self, File};
use fibra_testing::TempDir;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// FNV-1a over 8-byte words: cheap, and sensitive to order and position.
fn checksum(words: &[u8], mut hash: u64) -> u64 {
    for word in words.chunks(8) {
        let mut padded = [0u8; 8];
        padded[..word.len()].copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(padded)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}

#[test]
fn a_64_mib_file_round_trips_in_8_kib_calls_with_the_same_checksum() {
    const SIZE: usize = 64 << 20;
    const PIECE: usize = 8 << 10;
    let dir = TempDir::new("big");
    let path = dir.path().join("big.bin");
    let (written, read, len) = fibra_runtime::run(move || {
        let mut file = File::create(&path).unwrap();
        let mut written = 0xcbf2_9ce4_8422_2325u64;
        let mut piece = [0u8; PIECE];
        for i in 0..SIZE / PIECE {
            for (j, word) in piece.chunks_mut(8).enumerate() {
                word.copy_from_slice(&((i * PIECE / 8 + j) as u64).to_le_bytes());
            }
            written = checksum(&piece, written);
            file.write_all(&piece).unwrap();
        }
        file.sync_all().unwrap();
        drop(file);
        // A second fiber reads a copy at the same time, through whole-file `read`.
        let whole = fibra_runtime::spawn({
            let path = path.clone();
            move || checksum(&fs::read(path).unwrap(), 0xcbf2_9ce4_8422_2325)
        });
        let mut file = File::open(&path).unwrap();
        let mut read = 0xcbf2_9ce4_8422_2325u64;
        loop {
            let n = file.read(&mut piece).unwrap();
            if n == 0 {
                break;
            }
            assert_eq!(n % 8, 0, "chunks are multiples of the piece size");
            read = checksum(&piece[..n], read);
        }
        assert_eq!(whole.join().unwrap(), read);
        (written, read, fs::metadata(&path).unwrap().len())
    });
    assert_eq!(len, SIZE as u64);
    assert_eq!(written, read);
}

#[test]
fn directories_and_renames() {
    let dir = TempDir::new("dirs");
    let root = dir.path().to_owned();
    fibra_runtime::run(move || {
        let nested = root.join("a/b/c");
        fs::create_dir_all(&nested).unwrap();
        for name in ["x", "y", "z"] {
            fs::write(nested.join(name), name).unwrap();
        }
        let mut names: Vec<_> = fs::read_dir(&nested)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["x", "y", "z"]);
        fs::rename(nested.join("x"), root.join("moved")).unwrap();
        assert_eq!(fs::read_to_string(root.join("moved")).unwrap(), "x");
        assert_eq!(
            fs::copy(root.join("moved"), root.join("copied")).unwrap(),
            1
        );
        fs::remove_file(root.join("moved")).unwrap();
        assert!(fs::metadata(root.join("copied")).unwrap().is_file());
        assert!(fs::symlink_metadata(&nested).unwrap().is_dir());
        assert_eq!(
            fs::canonicalize(root.join("a/./b")).unwrap(),
            fs::canonicalize(root.join("a/b")).unwrap()
        );
        fs::remove_dir_all(root.join("a")).unwrap();
        fs::create_dir(root.join("empty")).unwrap();
        fs::remove_dir(root.join("empty")).unwrap();
    });
}

#[test]
fn errors_are_std_kinds() {
    let dir = TempDir::new("errors");
    let root = dir.path().to_owned();
    fibra_runtime::run(move || {
        let missing = root.join("missing");
        assert_eq!(
            File::open(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs::read(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs::remove_file(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs::read_dir(&missing).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let file = root.join("file");
        fs::write(&file, [0xff, 0xfe]).unwrap();
        let exists = File::options()
            .write(true)
            .create_new(true)
            .open(&file)
            .unwrap_err();
        assert_eq!(exists.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            fs::create_dir(&root).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(
            fs::read_to_string(&file).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let nowhere = fs::write(missing.join("child"), "x").unwrap_err();
        assert_eq!(nowhere.kind(), io::ErrorKind::NotFound);
        // Writing through a read-only handle fails when the data goes out.
        let mut read_only = File::open(&file).unwrap();
        read_only.write_all(b"no").unwrap();
        assert!(read_only.flush().is_err());
        read_only.seek(SeekFrom::Start(0)).unwrap();
    });
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Linux's `O_NONBLOCK` (the test crate does not depend on libc).
const O_NONBLOCK: i32 = 0o4000;

/// Reads what is in the FIFO at `path` now, without blocking.
fn drain_fifo(path: &std::path::Path) -> Vec<u8> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .unwrap();
    let mut rest = vec![0; 64];
    let n = reader.read(&mut rest).unwrap_or(0);
    rest.truncate(n);
    rest
}

#[test]
fn a_fifo_read_takes_no_more_than_asked_so_writes_and_into_std_keep_working() {
    let dir = TempDir::new("fifo");
    let path = dir.path().join("fifo");
    mkfifo(&path);
    let (write, rest, into_std) = fibra_runtime::run(move || {
        // Read and write on one descriptor: the FIFO is its own peer.
        let mut fifo = File::options().read(true).write(true).open(&path).unwrap();
        fifo.write_all(b"abc").unwrap();
        fifo.flush().unwrap();
        let mut one = [0; 1];
        fifo.read_exact(&mut one).unwrap();
        assert_eq!(&one, b"a");
        let write = fifo.write_all(b"d").and_then(|()| fifo.flush());
        let rest = drain_fifo(&path);
        fifo.write_all(b"ef").unwrap();
        fifo.read_exact(&mut one).unwrap();
        // The std file keeps the FIFO, and with it the byte not read, open.
        let std = fifo.into_std();
        let after = drain_fifo(&path);
        (
            write.map_err(|e| e.kind()),
            (rest, after),
            std.map(drop).map_err(|e| e.kind()),
        )
    });
    assert_eq!(write, Ok(()));
    assert_eq!(rest, (b"bcd".to_vec(), b"f".to_vec()));
    assert_eq!(into_std, Ok(()));
}

#[test]
fn a_write_after_reading_to_the_end_of_the_read_ahead_writes_only_itself() {
    let dir = TempDir::new("read-then-write");
    let path = dir.path().join("file");
    let all = fibra_runtime::run(move || {
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.write_all(b"0123456789").unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut all = [0; 10];
        file.read_exact(&mut all).unwrap();
        file.write_all(b"ab").unwrap();
        drop(file);
        fs::read(&path).unwrap()
    });
    assert_eq!(all, b"0123456789ab");
}
