//! The one reader of every file stormrig takes as input (scenarios, target models, faults
//! files, `ca_file`, run directories read back by `report`, `diff` and `merge`): a regular
//! file only, read whole under a ceiling chosen for its kind.
//!
//! A FIFO blocks the reader in `open` until someone writes (a `check` that never ends), and a
//! device such as `/dev/zero` never ends at all (818 MB read before the allocator gave up):
//! neither is opened for reading. The read itself is bounded too, in case the file grows
//! after it was measured.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What kind of input a file is, which sets its ceiling. The guide's Limits table lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scenario, target model or faults file (TOML people write): 16 MiB.
    Scenario,
    /// A PEM bundle of trust roots (`ca_file`): 16 MiB (a system bundle is about 200 KiB).
    Certificates,
    /// A file of a run directory (`summary.json`, `timeseries.csv`): 256 MiB, far above a
    /// 24 h run of 32 configs.
    RunFile,
    /// A shard's dump (`shard.json`): 1 GiB.
    ShardDump,
    /// A recorded load (`load.file`: a rate series or an access log): 256 MiB, about
    /// 1.5 million lines of an nginx `combined` log; a longer recording is cut with
    /// `from`/`to` only after it is read, so split it beforehand.
    Recording,
}

impl Kind {
    /// The largest file of this kind read, in bytes.
    pub const fn max_bytes(self) -> u64 {
        match self {
            Kind::Scenario | Kind::Certificates => 16 << 20,
            Kind::RunFile | Kind::Recording => 256 << 20,
            Kind::ShardDump => 1 << 30,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Scenario => "a scenario, target or faults file",
            Kind::Certificates => "a certificate file",
            Kind::RunFile => "a run directory's file",
            Kind::ShardDump => "a shard dump",
            Kind::Recording => "a recorded load",
        }
    }
}

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: cannot read the file: {error}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: io::Error,
    },
    /// A FIFO, socket, device or directory.
    #[error("{}: is {kind}, not a regular file; give a file", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{}: is larger than {} MiB, the limit for {}", path.display(), .limit >> 20, .what)]
    TooLarge {
        path: PathBuf,
        limit: u64,
        what: &'static str,
    },
}

impl InputError {
    /// The reason without the path (for messages that name the file their own way).
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let path = match self {
            InputError::Io { path, .. }
            | InputError::NotAFile { path, .. }
            | InputError::TooLarge { path, .. } => path.display().to_string(),
        };
        full.strip_prefix(&format!("{path}: "))
            .unwrap_or(&full)
            .to_string()
    }
}

/// Reads `path` whole if it is a regular file within the ceiling of `kind`.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, InputError> {
    let io = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    // Follows symbolic links: a link to a regular file is a regular file.
    let meta = std::fs::metadata(path).map_err(io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let what = if ft.is_dir() {
            "a directory"
        } else {
            "a FIFO, socket or device"
        };
        return Err(InputError::NotAFile {
            path: path.to_path_buf(),
            kind: what,
        });
    }
    let limit = kind.max_bytes();
    let too_large = || InputError::TooLarge {
        path: path.to_path_buf(),
        limit,
        what: kind.what(),
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(io)?;
    remember(path, &meta);
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Every file this process read as input, by device and inode (a path may name it through
/// a link or `..`): an output the command is about to truncate must be none of them.
static READ: std::sync::Mutex<Vec<(u64, u64, PathBuf)>> = std::sync::Mutex::new(Vec::new());

fn remember(path: &Path, meta: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    let mut read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !read
        .iter()
        .any(|(d, i, _)| (*d, *i) == (meta.dev(), meta.ino()))
    {
        read.push((meta.dev(), meta.ino(), path.to_path_buf()));
    }
}

/// The input file, read by this process, that `path` is (the same file, whatever the path
/// says), if any; `None` when `path` does not exist yet.
pub fn read_as(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    read.iter()
        .find(|(d, i, _)| (*d, *i) == (meta.dev(), meta.ino()))
        .map(|(_, _, p)| p.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_directories_are_refused_before_reading() {
        let e = read(Path::new("/dev/zero"), Kind::Certificates).unwrap_err();
        assert!(matches!(e, InputError::NotAFile { .. }), "{e}");
        assert!(e.to_string().starts_with("/dev/zero: "), "{e}");
        let e = read(Path::new("/"), Kind::Scenario).unwrap_err();
        assert!(e.reason().contains("a directory"), "{e}");
    }

    #[test]
    fn a_file_read_is_known_by_any_path_to_it() {
        let dir = std::env::temp_dir().join(format!("stormrig-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(&file, "x").unwrap();
        let other = dir.join("other.toml");
        std::fs::write(&other, "y").unwrap();
        read(&file, Kind::Scenario).unwrap();
        let roundabout = dir.join(".").join("s.toml");
        assert_eq!(read_as(&roundabout), Some(file.clone()));
        assert_eq!(read_as(&other), None, "never read");
        assert_eq!(read_as(&dir.join("absent")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
