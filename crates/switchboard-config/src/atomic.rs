//! Replacing a file whole, the one way Switchboard writes the files it keeps: config files
//! it edits (`config add`, `remove`, `import`), and its state files (the tool lock, the
//! trust store, the era memo, the shell's history).
//!
//! [`replace_file`] writes a new file beside the old one (same folder, so the rename stays
//! on one file system; created exclusively, so nothing already there is followed or
//! reused), syncs it, renames it over the old name and syncs the folder: a crash or a kill
//! at any moment leaves the old file or the new one, never an empty or cut one, and a reader
//! never sees a half-written file. A symbolic link at the path is followed: its target is
//! replaced and the link kept.
//!
//! Permissions, because these files may hold secrets (a config's literal tokens, a shell
//! line's arguments): a file created here is `0600` and a folder created for it `0700`,
//! whatever the umask allows. A file replaced keeps the mode it had when its
//! [`Permissions`] is [`Permissions::KeepExisting`] (a config file: the user may have chosen
//! to share it, and a rewrite should not undo that choice), or is made `0600` with
//! [`Permissions::OwnerOnly`] (a state file: only Switchboard reads it). Folders that
//! already exist are left as they are.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of a file created here, and of a state file replaced.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of a folder created here.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Which permissions a replaced file gets (a new one is always `0600`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permissions {
    /// An existing file keeps its mode (a config file the user may have shared on purpose).
    KeepExisting,
    /// `0600`, whatever the file had (a state file only Switchboard reads).
    OwnerOnly,
}

/// Replaces the file at `path` with `contents`, atomically (see the module docs). Missing
/// folders are created `0700`.
pub fn replace_file(path: &Path, contents: &[u8], permissions: Permissions) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(&dir)?;
    let mode = match (permissions, std::fs::metadata(&target)) {
        (Permissions::KeepExisting, Ok(existing)) if existing.is_file() => {
            existing.permissions().mode() & 0o7777
        }
        _ => PRIVATE_FILE_MODE,
    };
    let temp = temp_name(&dir, &target);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&temp)?;
        // Set whole: the umask may have narrowed the mode at creation, or the old file's
        // mode may be wider than the one created.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, &target)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// A name for the new file beside `target`: hidden, unique to this process and moment.
fn temp_name(dir: &Path, target: &Path) -> PathBuf {
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    dir.join(format!(".{file_name}.{}.{nanos}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sb-atomic-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn a_new_file_is_private_in_private_new_folders() {
        let dir = scratch("new");
        let path = dir.join("a/b/state.json");
        replace_file(&path, b"{}", Permissions::KeepExisting).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"{}");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.join("a/b")), 0o700);
        assert_eq!(mode(&dir.join("a")), 0o700);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_replaced_file_is_a_new_inode_with_the_chosen_mode() {
        let dir = scratch("replace");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("f");
        std::fs::write(&path, "old").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let before = std::fs::metadata(&path).expect("stat").ino();
        replace_file(&path, b"new", Permissions::KeepExisting).expect("write");
        assert_eq!(
            mode(&path),
            0o640,
            "a config file keeps the mode its user chose"
        );
        assert_ne!(
            std::fs::metadata(&path).expect("stat").ino(),
            before,
            "renamed over, not truncated in place"
        );
        replace_file(&path, b"newer", Permissions::OwnerOnly).expect("write");
        assert_eq!(mode(&path), 0o600, "a state file is the owner's only");
        assert_eq!(std::fs::read(&path).expect("read"), b"newer");
        let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
